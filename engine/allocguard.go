package engine

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strconv"
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
	// promiseBytes is what Promise.all and its kin take for each element
	// of their array: a promise, its reaction and resolving functions
	// (FuzzBuiltins: Promise.all of 2**20 holes passed 2 GiB).
	promiseBytes = 2048
	// maxNativeSteps is the most elements a built-in that loops over a
	// length the script names (indexOf, reverse, sort, ... of an
	// array-like or a sparse array) may be asked to visit in one call:
	// goja's loop in Go does not see the time limit's interrupt, and
	// 2**25 steps take about a second.
	maxNativeSteps = 1 << 25
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
// allocation of n bytes for what would pass the worker's memory (see
// allocRefusal).
func (rl *realm) checkAlloc(n float64, what string) {
	if msg := rl.allocRefusal(n, what); msg != "" {
		rl.throw("RangeError", "%s", msg)
	}
}

// allocRefusal says why an allocation of n bytes for what would pass the
// worker's memory: with a MemoryLimit, the limit less the heap in use
// (collected first, when garbage may be what is in the way); without one,
// the cap of allocCap. It is "" when the allocation fits.
func (rl *realm) allocRefusal(n float64, what string) string {
	if n < allocCheckMin {
		return ""
	}
	limit := rl.eng.allocCap
	if rl.eng.opts.MemoryLimit == 0 {
		if n > float64(limit) {
			return fmt.Sprintf("%s of %s is more than one allocation of this worker may take (%s, half of its memory): "+
				"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit))
		}
		return ""
	}
	if n > float64(limit) {
		return fmt.Sprintf("%s of %s is more than the worker's memory limit of %s: "+
			"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit))
	}
	heap := heapInUse()
	if n+float64(heap) <= float64(limit) {
		return ""
	}
	runtime.GC()
	heap = heapInUse()
	if n+float64(heap) > float64(limit) {
		return fmt.Sprintf("%s of %s would pass the worker's memory limit of %s (%s in use): "+
			"the worker refused it rather than run out of memory", what, formatSize(n), formatBytes(limit), formatBytes(heap))
	}
	return ""
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
// Also checked: String.prototype.replace and replaceAll with a string
// replacement, by its matches; Function.prototype.apply, Reflect.apply and
// Reflect.construct by the length of their list of arguments;
// Array.from of an array-like and Array.prototype.concat, sort, splice,
// slice, map, with, toSorted, toReversed and toSpliced by the array they
// make; %TypedArray%.prototype.join by its string; Promise.all,
// allSettled, any and race of an array by its length; BigInt.asIntN and
// asUintN by their bits. Built-ins that loop in
// Go over a length the script names (Array.prototype indexOf,
// lastIndexOf, includes, reverse, copyWithin, shift, unshift, join, flat,
// the methods that take a callback, which a sparse array's holes never
// call, and those above), where the time limit's interrupt is not seen, refuse a
// length past maxNativeSteps on an object that is not an array that could
// be dense; String.raw is replaced by a JavaScript loop. FuzzBuiltins
// found each of them.
//
// Not checked: split by a RegExp, and string concatenation (s + t,
// s += s), which has no hook in goja; the memory guard (memGuard) bounds
// them.
func bindAllocLimits(rl *realm) error {
	v, err := allocLimitsProgram.Run(rl.rt)
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
	refuseLoop := func(call goja.FunctionCall) goja.Value {
		rl.throw("RangeError", "%s of length %s: the worker refuses a loop of more than %d elements in one built-in call, "+
			"which its time limit could not interrupt (iterate in JavaScript instead)", call.Argument(1).String(),
			strconv.FormatFloat(call.Argument(0).ToFloat(), 'f', -1, 64), maxNativeSteps)
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
		rl.rt.ToValue(valueBytes), rl.rt.ToValue(pieceBytes), rl.rt.ToValue(wrap), rl.rt.ToValue(refuseLoop),
		rl.rt.ToValue(maxNativeSteps), rl.rt.ToValue(float64(rl.eng.allocCap)/valueBytes), rl.rt.ToValue(promiseBytes))
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
	return function install(check, countSplit, min, valueBytes, pieceBytes, wrapCtors, refuseLoop, maxSteps, denseMax, promiseBytes) {
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

		// replace and replaceAll with a string replacement build their
		// string in Go: at most the string itself and, for each match, the
		// replacement with each $ pattern ($&, $1, ...) as long as the
		// whole string. A string search counts its matches; a global
		// RegExp's are counted by match when the bound by one per
		// character is large. A function replacement is JavaScript, which
		// the limits reach.
		const origReplace = S.replace, origReplaceAll = S.replaceAll, origMatch = S.match;
		const dollars = (r) => {
			let n = 0;
			for (let i = r.indexOf('$'); i >= 0; i = r.indexOf('$', i + 1)) n++;
			return n;
		};
		const checkReplace = (s, search, r, all, name) => {
			if (typeof r !== 'string') return;
			const per = r.length + dollars(r) * s.length;
			if ((s.length + (s.length + 1) * per) * 2 < min) return;
			let m = 1;
			if (typeof search === 'string') {
				if (all) m = search === '' ? s.length + 1 : countSplit(s, search) - 1;
			} else if (search instanceof RegExp && search.global) {
				m = s.length + 1;
				if ((s.length + m * per) * 2 >= min) {
					const found = origMatch.call(s, search);
					m = found === null ? 0 : found.length;
				}
			}
			if ((s.length + m * per) * 2 >= min) check((s.length + m * per) * 2, 'String.prototype.' + name + ': a string');
		};
		def(S, 'replace', function replace(search, replacement) {
			if (this !== null && this !== undefined) checkReplace(String(this), search, replacement, false, 'replace');
			return origReplace.call(this, search, replacement);
		});
		def(S, 'replaceAll', function replaceAll(search, replacement) {
			if (this !== null && this !== undefined) checkReplace(String(this), search, replacement, true, 'replaceAll');
			return origReplaceAll.call(this, search, replacement);
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
			if (n > maxSteps && !(Array.isArray(O) && n <= denseMax)) refuseLoop(n, 'Array.prototype.join on an object');
			if (Array.isArray(O)) return origJoin.call(O, sep);
			return origJoin.call(Object.create(O, { length: { value: n } }), sep);
		});

		// Methods that loop over this's length in Go, which the time limit
		// cannot interrupt: a length past maxSteps is refused, unless this
		// is an array that could be dense (its elements then exist, and
		// the loop is as long as building them was). Those that make an
		// array of that length check its size too. A method that does not
		// write to this gets an object whose own length is the one read
		// here (a getter of length could give the original a larger one).
		const create = Object.create, isArray = Array.isArray, apply = Reflect.apply;
		// A method that writes to this, and concat, read this's length
		// again themselves: a length that is a getter could give them a
		// larger one than the check saw. Such an object is refused.
		const gopd = Object.getOwnPropertyDescriptor, getProto = Object.getPrototypeOf;
		const dataLength = (O, name) => {
			for (let o = O; o !== null; o = getProto(o)) {
				const d = gopd(o, 'length');
				if (d === undefined) continue;
				if (d.get !== undefined || d.set !== undefined) {
					throw new TypeError('Array.prototype.' + name + ' on an object whose length is a getter: ' +
						'the worker refuses it (the built-in would read the length again, unchecked); give it an array, or an object with a plain length');
				}
				return;
			}
		};
		const steps = (O, name, alloc) => {
			const arr = isArray(O);
			const n = arr ? O.length : len(O.length);
			if (n > maxSteps && !(arr && n <= denseMax)) refuseLoop(n, 'Array.prototype.' + name + ' on an object');
			if (alloc && n * valueBytes >= min) check(n * valueBytes, 'Array.prototype.' + name + ': an array');
			return n;
		};
		const bounded = (name, alloc, writes) => {
			const orig = A[name];
			if (typeof orig !== 'function') return;
			const f = {
				[name](...args) {
					if (this === null || this === undefined) return apply(orig, this, args);
					const O = Object(this);
					const n = steps(O, name, alloc);
					if (writes && !isArray(O)) dataLength(O, name);
					if (writes || isArray(O)) return apply(orig, O, args);
					return apply(orig, create(O, { length: { value: n } }), args);
				},
			}[name];
			Object.defineProperty(f, 'length', { configurable: true, value: orig.length });
			def(A, name, f);
		};
		for (const name of ['indexOf', 'lastIndexOf', 'includes']) bounded(name, false, false);
		for (const name of ['slice', 'with', 'toReversed', 'toSorted', 'toSpliced']) bounded(name, true, false);
		bounded('flat', false, false);
		// A callback gets this itself as its third argument.
		bounded('map', true, true);
		for (const name of ['every', 'some', 'forEach', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex',
			'reduce', 'reduceRight', 'flatMap']) bounded(name, false, true);
		for (const name of ['reverse', 'copyWithin', 'shift', 'unshift']) bounded(name, false, true);
		for (const name of ['sort', 'splice']) bounded(name, true, true);

		// concat spreads each spreadable argument (an array, or an object
		// whose Symbol.isConcatSpreadable is true) by its length, in Go.
		const origConcat = A.concat, spreadable = Symbol.isConcatSpreadable;
		const concat = {
			concat(...items) {
				const O = Object(this);
				let total = 0;
				for (const E of [O, ...items]) {
					if (E === null || (typeof E !== 'object' && typeof E !== 'function')) {
						total++;
						continue;
					}
					const sp = E[spreadable];
					const arr = isArray(E);
					if (sp !== undefined ? !sp : !arr) {
						total++;
						continue;
					}
					if (!arr) dataLength(E, 'concat');
					const n = arr ? E.length : len(E.length);
					if (n > maxSteps && !(arr && n <= denseMax)) refuseLoop(n, 'Array.prototype.concat of an object');
					total += n;
				}
				if (total * valueBytes >= min) check(total * valueBytes, 'Array.prototype.concat: an array');
				return apply(origConcat, O, items);
			},
		}.concat;
		Object.defineProperty(concat, 'length', { configurable: true, value: 1 });
		def(A, 'concat', concat);

		// Array.from of an array-like (not an iterable) makes an array of
		// its length.
		const origFrom = Array.from;
		const from = {
			from(items, mapfn, thisArg) {
				if (items === null || items === undefined || typeof items[Symbol.iterator] === 'function') {
					return apply(origFrom, this, [items, mapfn, thisArg]);
				}
				const O = Object(items);
				const n = len(O.length);
				if (n > maxSteps) refuseLoop(n, 'Array.from of an array-like');
				if (n * valueBytes >= min) check(n * valueBytes, 'Array.from: an array');
				return apply(origFrom, this, [create(O, { length: { value: n } }), mapfn, thisArg]);
			},
		}.from;
		Object.defineProperty(from, 'length', { configurable: true, value: 1 });
		def(Array, 'from', from);

		// A call's list of arguments from an array-like (apply,
		// Reflect.apply, Reflect.construct) is made in Go of its length.
		const argList = (a, name) => {
			if (a === null || a === undefined || (typeof a !== 'object' && typeof a !== 'function')) return a;
			const arr = isArray(a);
			const n = arr ? a.length : len(a.length);
			if (n * valueBytes >= min) check(n * valueBytes, name + ': a list of arguments');
			return arr ? a : create(a, { length: { value: n } });
		};
		const F = Function.prototype, origApply = F.apply;
		def(F, 'apply', function apply(thisArg, args) {
			return origApply.call(this, thisArg, argList(args, 'Function.prototype.apply'));
		});
		const R = Reflect, origConstruct = R.construct;
		// (A method's name, unlike a function expression's, is no binding
		// in its body: apply there is Reflect.apply's original.)
		def(R, 'apply', {
			apply(target, thisArg, args) {
				return apply(target, thisArg, argList(args, 'Reflect.apply'));
			},
		}.apply);
		def(R, 'construct', function construct(target, args, ...nt) {
			return apply(origConstruct, R, [target, argList(args, 'Reflect.construct'), ...nt]);
		});

		// Promise.all, allSettled, any and race make, in Go, a promise
		// and its functions for each element of an array (about 2 KiB).
		const P = Promise;
		for (const name of ['all', 'allSettled', 'any', 'race']) {
			const orig = P[name];
			if (typeof orig !== 'function') continue;
			const f = {
				[name](iterable) {
					if (isArray(iterable) && iterable.length * promiseBytes >= min) {
						check(iterable.length * promiseBytes, 'Promise.' + name + ': promises');
					}
					return apply(orig, this, [iterable]);
				},
			}[name];
			def(P, name, f);
		}

		// BigInt.asIntN and asUintN work, in math/big, with numbers of as
		// many bits as they are asked for (2 ** bits), whatever the value.
		const B = G.BigInt;
		if (typeof B === 'function') {
			for (const name of ['asIntN', 'asUintN']) {
				const orig = B[name];
				const f = {
					[name](bits, bigint) {
						const n = len(bits);
						if (n / 4 >= min) check(n / 4, 'BigInt.' + name + ': a number of ' + n + ' bits');
						return apply(orig, this, [bits, bigint]);
					},
				}[name];
				def(B, name, f);
			}
		}

		// String.raw, in JavaScript: its loop over the template's raw
		// length can be interrupted, and the memory guard sees the string
		// grow.
		def(String, 'raw', function raw(template, ...subs) {
			const r = Object(Object(template).raw);
			const n = len(r.length);
			if (n > maxSteps) refuseLoop(n, 'String.raw of a template');
			let s = '';
			for (let i = 0; i < n; i++) {
				s += String(r[i]);
				if (i + 1 < n && i < subs.length) s += String(subs[i]);
			}
			return s;
		});

		// %TypedArray%.prototype.join builds its string in Go.
		const TA = Object.getPrototypeOf(Int8Array.prototype), origTAJoin = TA.join;
		def(TA, 'join', function join(sep) {
			if (ArrayBuffer.isView(this) && !(this instanceof DataView)) {
				const n = this.length;
				const w = (sep === undefined ? 1 : String(sep).length) + 1;
				if (n * w * 2 >= min) check(n * w * 2, '%TypedArray%.prototype.join: a string');
			}
			return origTAJoin.call(this, sep);
		});
	};
})()`

// allocLimitsProgram is allocLimitsScript, compiled once.
var allocLimitsProgram = jsvalue.NewScript(allocLimitsScript)
