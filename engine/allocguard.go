package engine

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/sysmem"
)

// Sizes of the allocation check (bindAllocLimits).
const (
	// allocCheckMin is the smallest request the check looks at: smaller
	// ones are left to the memory guard, which sees them within a few
	// milliseconds, long before many of them add up.
	allocCheckMin = 1 << 20
	// allocCapShare is the share of the machine's memory (sysmem.Total)
	// that one allocation may take when the engine has no MemoryLimit.
	allocCapShare = 0.5
	// allocCapDefault is the cap of one allocation when the engine has no
	// MemoryLimit and the machine's memory cannot be read.
	allocCapDefault = 4 << 30
	// Bytes per element the check counts: a goja value (an interface) in
	// an array, and a string of a split (its value and its header).
	valueBytes = 16
	pieceBytes = 32
)

// allocCap returns the cap of one allocation: Options.MemoryLimit, or when
// that is unset a share of the machine's memory.
func allocCap(opts *Options) uint64 {
	if opts.MemoryLimit > 0 {
		return opts.MemoryLimit
	}
	if total, err := sysmem.Total(); err == nil && total > 0 {
		return uint64(float64(total) * allocCapShare)
	}
	return allocCapDefault
}

// heapInUse returns the bytes of heap objects, live or not yet collected.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// checkAlloc throws a RangeError into the calling script when an
// allocation of n bytes for what would pass the worker's memory: with a
// MemoryLimit, the limit less the heap in use (collected first, when
// garbage may be what is in the way); without one, the cap of allocCap.
func (rl *realm) checkAlloc(n float64, what string) {
	if n < allocCheckMin {
		return
	}
	limit := rl.eng.allocCap
	if rl.eng.opts.MemoryLimit == 0 {
		if n > float64(limit) {
			rl.throw("RangeError", "%s of %s is more than one allocation of this worker may take (%s, half of its memory): "+
				"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit))
		}
		return
	}
	if n > float64(limit) {
		rl.throw("RangeError", "%s of %s is more than the worker's memory limit of %s: "+
			"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit))
	}
	heap := heapInUse()
	if n+float64(heap) <= float64(limit) {
		return
	}
	runtime.GC()
	heap = heapInUse()
	if n+float64(heap) > float64(limit) {
		rl.throw("RangeError", "%s of %s would pass the worker's memory limit of %s (%s in use): "+
			"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit), formatBytes(heap))
	}
}

// formatSize is formatBytes of a size that may pass what a uint64 holds.
func formatSize(n float64) string {
	if n >= math.MaxUint64 || math.IsNaN(n) {
		return "more than 16 EiB"
	}
	return formatBytes(uint64(n))
}

// bindAllocLimits makes the built-ins that allocate a size the script
// names in one uninterruptible call check that size first (checkAlloc),
// and throw a RangeError when it would pass the worker's memory instead
// of dying of it: a Go "fatal error: out of memory" ends the process, and
// no recover catches it.
//
// Checked: new ArrayBuffer(n); new (typed array)(n), and (typed
// array)(arrayLike) and (typed array).from(arrayLike) by its length;
// String.prototype.repeat, padStart, padEnd and split; and
// Array.prototype.fill and join. A string's characters count as two bytes
// (goja keeps a string with any non-ASCII character as UTF-16).
//
// The constructors are replaced by Go functions (wrapCtor), the methods by
// JavaScript ones; both are installed before any user code runs.
//
// Not checked: split by a RegExp, and string concatenation (s + t,
// s += s), which has no hook in goja; the memory guard (memGuard) bounds
// them.
func bindAllocLimits(rl *realm) error {
	v, err := rl.rt.RunScript(jsvalue.InternalFile, allocLimitsScript)
	if err != nil {
		return err
	}
	install, ok := goja.AssertFunction(v)
	if !ok {
		return fmt.Errorf("engine: the allocation limits script gave %v, not a function", v)
	}
	check := func(call goja.FunctionCall) goja.Value {
		rl.checkAlloc(call.Argument(0).ToFloat(), call.Argument(1).String())
		return goja.Undefined()
	}
	countSplit := func(call goja.FunctionCall) goja.Value {
		return rl.rt.ToValue(countPieces(call.Argument(0).String(), call.Argument(1).String()))
	}
	wrap := func(call goja.FunctionCall) goja.Value {
		slow, ok1 := goja.AssertFunction(call.Argument(0))
		construct, ok2 := goja.AssertFunction(call.Argument(1))
		adopt, ok3 := goja.AssertFunction(call.Argument(2))
		if !ok1 || !ok2 || !ok3 {
			panic(rl.rt.NewTypeError("wrapCtors: want three functions"))
		}
		for _, name := range allocCtors {
			C, ok := rl.rt.GlobalObject().Get(name).(*goja.Object)
			if !ok {
				continue
			}
			W := rl.wrapCtor(name, C, slow, construct)
			if _, err := adopt(goja.Undefined(), W, C, rl.rt.ToValue(name)); err != nil {
				panic(err)
			}
		}
		return goja.Undefined()
	}
	_, err = install(goja.Undefined(), rl.rt.ToValue(check), rl.rt.ToValue(countSplit), rl.rt.ToValue(allocCheckMin),
		rl.rt.ToValue(valueBytes), rl.rt.ToValue(pieceBytes), rl.rt.ToValue(wrap))
	return err
}

// allocCtors are the constructors whose size wrapCtor checks.
var allocCtors = []string{"ArrayBuffer", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"}

// wrapCtor returns a constructor, in Go (a call of it costs much less
// than one of a JavaScript function), that checks the size that
// constructor C is asked for and then constructs C. A length or size is
// checked here; an object argument goes to slow(C, newTarget, a, b, c),
// and a subclass's construction to construct(C, newTarget, a, b, c).
func (rl *realm) wrapCtor(name string, C *goja.Object, slow, construct goja.Callable) *goja.Object {
	size := 1.0
	if name != "ArrayBuffer" {
		size = C.Get("BYTES_PER_ELEMENT").ToFloat()
	}
	var W *goja.Object
	W = rl.rt.ToValue(func(call goja.ConstructorCall) *goja.Object {
		// goja gives no NewTarget for new W(...) itself, nor for a call
		// of W without new, which therefore constructs too.
		nt := call.NewTarget
		if nt == nil || nt == W {
			nt = C
		}
		a, b, c := call.Argument(0), call.Argument(1), call.Argument(2)
		var v goja.Value
		var err error
		if _, ok := a.(*goja.Object); ok {
			v, err = slow(goja.Undefined(), C, nt, a, b, c)
		} else {
			n := 0.0
			if !goja.IsUndefined(a) && !goja.IsNull(a) {
				if f := math.Trunc(a.ToFloat()); f > 0 {
					n = f
				}
			}
			rl.checkAlloc(n*size, name)
			if nt == C {
				o, err := rl.rt.New(C, call.Arguments...)
				if err != nil {
					panic(err)
				}
				return o
			}
			v, err = construct(goja.Undefined(), C, nt, a, b, c)
		}
		if err != nil {
			panic(err)
		}
		return v.ToObject(rl.rt)
	}).(*goja.Object)
	return W
}

// countPieces returns how many strings s.split(sep) makes, sep not empty.
func countPieces(s, sep string) int {
	if sep == "" {
		return len(s)
	}
	return strings.Count(s, sep) + 1
}

const allocLimitsScript = `(function () {
	return function install(check, countSplit, min, valueBytes, pieceBytes, wrapCtors) {
		const def = (obj, name, value) => Object.defineProperty(obj, name, { writable: true, configurable: true, value });
		const len = (v) => { const n = Math.trunc(Number(v)); return n > 0 ? n : 0; };
		const str = (v, name) => {
			if (v === null || v === undefined) throw new TypeError('String.prototype.' + name + ' called on null or undefined');
			return String(v);
		};
		const G = globalThis;

		// Constructors (wrapCtors, in Go): slow builds from an object
		// argument, construct for a subclass; adopt gives the wrapper W the
		// original's prototype (so that instanceof holds for every buffer
		// or array, however made), own properties and [[Prototype]]
		// (%TypedArray%'s from and of).
		const AB = G.ArrayBuffer;
		const slow = (C, nt, a, b, c) => {
			if (C === AB) {
				const n = len(a);
				if (n >= min) check(n, C.name);
			} else if (!(a instanceof AB) && !AB.isView(a)) {
				const size = C.BYTES_PER_ELEMENT;
				if (typeof a[Symbol.iterator] === 'function') {
					if (Array.isArray(a) && a.length * size >= min) check(a.length * size, C.name);
				} else {
					// An array-like is copied here, by the length read once
					// for the check: a getter of length cannot give the
					// original constructor a larger one.
					const n = len(a.length);
					if (n * size >= min) check(n * size, C.name);
					const t = Reflect.construct(C, [n], nt);
					for (let i = 0; i < n; i++) t[i] = a[i];
					return t;
				}
			}
			return Reflect.construct(C, [a, b, c], nt);
		};
		const construct = (C, nt, a, b, c) => Reflect.construct(C, [a, b, c], nt);
		const adopt = (W, C, name) => {
			const own = Object.getOwnPropertyDescriptors(C);
			for (const k of Reflect.ownKeys(own)) Object.defineProperty(W, k, own[k]);
			Object.setPrototypeOf(W, Object.getPrototypeOf(C));
			def(C.prototype, 'constructor', W);
			def(G, name, W);
		};
		wrapCtors(slow, construct, adopt);

		const S = String.prototype;
		const origRepeat = S.repeat, origPadStart = S.padStart, origPadEnd = S.padEnd, origSplit = S.split;
		def(S, 'repeat', function repeat(count) {
			const s = str(this, 'repeat'); const n = len(count);
			if (n !== Infinity && s.length * n >= min / 2) check(s.length * n * 2, 'String.prototype.repeat: a string');
			return origRepeat.call(s, count);
		});
		def(S, 'padStart', function padStart(n, fill) {
			const s = str(this, 'padStart');
			if (len(n) >= min / 2) check(len(n) * 2, 'String.prototype.padStart: a string');
			return origPadStart.call(s, n, fill);
		});
		def(S, 'padEnd', function padEnd(n, fill) {
			const s = str(this, 'padEnd');
			if (len(n) >= min / 2) check(len(n) * 2, 'String.prototype.padEnd: a string');
			return origPadEnd.call(s, n, fill);
		});
		def(S, 'split', function split(sep, limit) {
			const s = str(this, 'split');
			if (typeof sep === 'string' && s.length * pieceBytes >= min) {
				let n = sep === '' ? s.length : countSplit(s, sep);
				if (limit !== undefined) n = Math.min(n, limit >>> 0);
				check(n * pieceBytes, 'String.prototype.split: an array');
			}
			return origSplit.call(this, sep, limit);
		});

		const A = Array.prototype;
		const origFill = A.fill, origJoin = A.join;
		const rel = (v, n, dflt) => {
			if (v === undefined) return dflt;
			let k = Math.trunc(Number(v)) || 0;
			if (k < 0) k = Math.max(n + k, 0); else k = Math.min(k, n);
			return k;
		};
		// An object that is not an array is filled here, by the length read
		// once for the check (a getter of length could give the original a
		// larger one); a loop of JavaScript can be interrupted.
		def(A, 'fill', function fill(value, start, end) {
			if (this === null || this === undefined) return origFill.call(this, value, start, end);
			const O = Object(this);
			const n = Array.isArray(O) ? O.length : len(O.length);
			const from = rel(start, n, 0), to = rel(end, n, n);
			if ((to - from) * valueBytes >= min) check((to - from) * valueBytes, 'Array.prototype.fill: an array');
			if (Array.isArray(O)) return origFill.call(O, value, start, end);
			for (let k = from; k < to; k++) O[k] = value;
			return O;
		});
		// An object that is not an array is joined through an object whose
		// own length is the one read for the check, and whose elements are
		// the object's (its prototype).
		def(A, 'join', function join(sep) {
			if (this === null || this === undefined) return origJoin.call(this, sep);
			const O = Object(this);
			const n = Array.isArray(O) ? O.length : len(O.length);
			const w = sep === undefined ? 1 : String(sep).length;
			if ((n - 1) * w * 2 >= min) check((n - 1) * w * 2, 'Array.prototype.join: a string');
			if (Array.isArray(O)) return origJoin.call(O, sep);
			return origJoin.call(Object.create(O, { length: { value: n } }), sep);
		});
	};
})()`
