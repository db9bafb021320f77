package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// hugeAllocs are workunits that each ask one built-in for far more memory
// than a worker with a 256 MiB limit has, in one call; what names the
// allocation in the RangeError's message.
var hugeAllocs = []struct{ name, src, what string }{
	{"ArrayBuffer", `new ArrayBuffer(8 * 2 ** 30)`, "ArrayBuffer of 8.0 GiB"},
	{"ArrayBuffer1T", `new ArrayBuffer(2 ** 40)`, "ArrayBuffer of 1.0 TiB"},
	{"Float64Array", `new Float64Array(2 ** 30)`, "Float64Array of 8.0 GiB"},
	{"Uint8ArrayLike", `new Uint8Array({length: 2 ** 33})`, "Uint8Array of 8.0 GiB"},
	{"TypedArrayFrom", `Float64Array.from({length: 2 ** 30})`, "Float64Array of 8.0 GiB"},
	{"Subclass", `class Big extends Int32Array {}; new Big(2 ** 31)`, "Int32Array of 8.0 GiB"},
	{"repeat", `'ab'.repeat(2 ** 28)`, "String.prototype.repeat: a string of 1.0 GiB"},
	{"padStart", `'a'.padStart(2 ** 28)`, "String.prototype.padStart: a string of 512.0 MiB"},
	{"padEnd", `'a'.padEnd(2 ** 28, 'xy')`, "String.prototype.padEnd: a string of 512.0 MiB"},
	{"fill", `new Array(2 ** 32 - 1).fill(0)`, "Array.prototype.fill: an array of 64.0 GiB"},
	{"join", `new Array(2 ** 28).join('abcd')`, "Array.prototype.join: a string of 2.0 GiB"},
	{"toString", `new Array(2 ** 30).toString()`, "Array.prototype.join: a string of 2.0 GiB"},
	{"split", `'x'.repeat(2 ** 24).split('')`, "String.prototype.split: an array of 512.0 MiB"},
	// Lengths read by a getter (TestAllocLimits_Ordinary: one that grows
	// after the check's read).
	{"lengthGetterTypedBig", `(() => { let c = 0; return new Float64Array({get length() { return c++ ? 2 ** 37 : 2 ** 30 }}) })()`, "Float64Array of 8.0 GiB"},
	{"lengthGetterJoin", `(() => { let c = 0; return Array.prototype.join.call({get length() { return c++ ? 2 ** 32 - 1 : 2 ** 28 }}, 'abcd') })()`, "Array.prototype.join: a string of 2.0 GiB"},
	{"fillObject", `Array.prototype.fill.call({length: 2 ** 40}, 0)`, "Array.prototype.fill: an array of 16.0 TiB"},
	// Found by FuzzBuiltins: an out-of-memory end of the process, or a
	// Go panic (makeslice: cap out of range) for a length past 2**50.
	{"apply", `Math.max.apply(null, {length: 2 ** 32})`, "Function.prototype.apply: a list of arguments of 64.0 GiB"},
	{"applyPanic", `Math.max.apply(null, {length: 2 ** 53 - 1})`, "Function.prototype.apply: a list of arguments of 128.0 PiB"},
	{"applyArray", `Math.max.apply(null, new Array(2 ** 32 - 1))`, "Function.prototype.apply: a list of arguments of 64.0 GiB"},
	{"reflectApply", `Reflect.apply(Math.min, null, {length: 2 ** 53 - 1})`, "Reflect.apply: a list of arguments of 128.0 PiB"},
	{"reflectConstruct", `Reflect.construct(Array, {length: 2 ** 32})`, "Reflect.construct: a list of arguments of 64.0 GiB"},
	{"from", `Array.from({length: 2 ** 25})`, "Array.from: an array of 512.0 MiB"},
	{"sort", `Array.prototype.sort.call({length: 2 ** 25})`, "Array.prototype.sort: an array of 512.0 MiB"},
	{"map", `new Array(2 ** 25).map(x => x)`, "Array.prototype.map: an array of 512.0 MiB"},
	{"replaceRegExp", `'é'.repeat(1000).replace(/(?:)/g, 'ab'.repeat(2 ** 19))`, "String.prototype.replace: a string of 2.0 GiB"},
	{"replaceAll", `'x'.repeat(2 ** 20).replaceAll('x', 'abcd'.repeat(256))`, "String.prototype.replaceAll: a string of 2.0 GiB"},
	{"replaceDollar", "'x'.repeat(2 ** 16).replaceAll('x', '$`')", "String.prototype.replaceAll: a string of 8.0 GiB"},
	{"promiseAll", `Promise.all(new Array(2 ** 20))`, "Promise.all: promises of 2.0 GiB"},
	{"asIntN", `BigInt.asIntN(2 ** 32 - 1, 1n)`, "BigInt.asIntN: a number of 4294967295 bits of 1024.0 MiB"},
	{"asUintN", `BigInt.asUintN(2 ** 53 - 1, -1n)`, "BigInt.asUintN: a number of 9007199254740991 bits"},
	{"concatArrays", `[].concat(new Array(2 ** 24), new Array(2 ** 24))`, "Array.prototype.concat: an array of 512.0 MiB"},
	{"typedJoin", `new Uint8Array(2 ** 20).join('x'.repeat(255))`, "%TypedArray%.prototype.join: a string of 512.0 MiB"},
}

// TestAllocLimits: each huge allocation throws a RangeError naming its
// size and the limit, and the worker goes on.
func TestAllocLimits(t *testing.T) {
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20})
	for _, c := range hugeAllocs {
		t.Run(c.name, func(t *testing.T) {
			werr, _ := evalError(t, e, evalReq(c.src))
			assert.Equal(t, workunit.Thrown, werr.Kind)
			assert.Equal(t, "RangeError", werr.Name)
			assert.Contains(t, werr.Message, c.what)
			assert.Contains(t, werr.Message, "256.0 MiB")
			assert.Equal(t, float64(3), evalValue(t, e, "1 + 2"))
		})
	}
}

// TestAllocLimits_NoLimit: without a MemoryLimit, one allocation may take
// at most half the machine's memory.
func TestAllocLimits_NoLimit(t *testing.T) {
	e := newEngine(t, Options{Slots: 1})
	werr, _ := evalError(t, e, evalReq(`new ArrayBuffer(2 ** 50)`))
	assert.Equal(t, "RangeError", werr.Name)
	assert.Contains(t, werr.Message, "ArrayBuffer of 1.0 PiB is more than one allocation of this worker may take")
	assert.Equal(t, float64(3), evalValue(t, e, "1 + 2"))
}

// TestAllocLimits_Ordinary: what ordinary scripts do with the wrapped
// built-ins still works, and sizes under the limit are allowed.
func TestAllocLimits_Ordinary(t *testing.T) {
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20})
	for src, want := range map[string]any{
		`new ArrayBuffer(16).byteLength`:                                   float64(16),
		`new ArrayBuffer(8 << 20).byteLength`:                              float64(8 << 20),
		`new Float64Array([1, 2, 3]).length`:                               float64(3),
		`new Uint8Array(new ArrayBuffer(8), 2, 4).length`:                  float64(4),
		`new Uint8Array(4) instanceof Uint8Array`:                          true,
		`new ArrayBuffer(4) instanceof ArrayBuffer`:                        true,
		`new Uint8Array(4).constructor === Uint8Array`:                     true,
		`new Float64Array(2).map(x => x + 1).constructor === Float64Array`: true,
		`new Uint8Array(4).buffer instanceof ArrayBuffer`:                  true,
		`Uint8Array.name + Uint8Array.length`:                              "Uint8Array3",
		`Uint8Array.BYTES_PER_ELEMENT`:                                     float64(1),
		`Float32Array.from([1, 2]).length`:                                 float64(2),
		`Object.getPrototypeOf(new Int8Array(1)) === Int8Array.prototype`:  true,
		`class B extends Uint8Array { x() { return 7 } }; new B(2).x()`:    float64(7),
		`'ab'.repeat(3)`:                                             "ababab",
		`'x'.repeat(1 << 20).length`:                                 float64(1 << 20),
		`'a,b,c'.split(',').length`:                                  float64(3),
		`'a,b,c'.split(',', 2).join('|')`:                            "a|b",
		`'a1b2'.split(/\d/).length`:                                  float64(3),
		`[1, 2, 3].join()`:                                           "1,2,3",
		`new Array(3).fill(7).join('')`:                              "777",
		`Array.prototype.fill.call({length: 2}, 1)[1]`:               float64(1),
		`[1, 2, 3, 4].fill(0, 1, -1).join('')`:                       "1004",
		`String.prototype.split.name + String.prototype.repeat.name`: "splitrepeat",
		`'x'.repeat(1 << 20).split('').length`:                       float64(1 << 20),
		`(() => { let c = 0; return new Float64Array({get length() { return c++ ? 2 ** 37 : 2 }, 0: 1, 1: 2}).join() })()`:                "1,2",
		`(() => { let c = 0; return Array.prototype.join.call({get length() { return c++ ? 2 ** 32 - 1 : 3 }, 0: 'a', 2: 'c'}, '-') })()`: "a--c",
		`(() => { const o = {length: 3}; Array.prototype.fill.call(o, 5, 1); return o[0] === undefined && o[1] === 5 && o[2] === 5 })()`:  true,
		`new Uint8Array(new Set([1, 2])).length`:                                                                                           float64(2),
		`new Uint8Array('3').length`:                                                                                                       float64(3),
		`new ArrayBuffer({valueOf() { return 8 }}).byteLength`:                                                                             float64(8),
		`new Uint16Array(new Uint8Array([1, 2])).length`:                                                                                   float64(2),
		`typeof ArrayBuffer.isView`:                                                                                                        "function",
		`[1, 2, 3].indexOf(2) + [1, 2].lastIndexOf(1) + [1].includes(1)`:                                                                   float64(2),
		`Array.prototype.indexOf.call({length: 2, 1: 'a'}, 'a')`:                                                                           float64(1),
		`[3, 1, 2].sort().join() + [3, 1, 2].toSorted((a, b) => b - a).join()`:                                                             "1,2,33,2,1",
		`Array.prototype.slice.call({length: 2, 0: 'a'}, 0).length`:                                                                        float64(2),
		`[1, 2, 3].splice(1, 1).join() + [1, 2].reverse().join()`:                                                                          "22,1",
		`(() => { const o = {length: 2, 0: 'a'}; Array.prototype.reverse.call(o); return o[1] })()`:                                        "a",
		`[1].concat([2], 3, {length: 1, 0: 4, [Symbol.isConcatSpreadable]: true}).join()`:                                                  "1,2,3,4",
		`[].concat.length + [].indexOf.length + Array.from.length + Function.prototype.apply.length`:                                       float64(5),
		`Array.from({length: 3}, (x, i) => i * 2).join() + Array.from('ab').join()`:                                                        "0,2,4a,b",
		`Math.max.apply(null, [1, 5, 2]) + (function () { return arguments.length }).apply(null, {length: 3})`:                             float64(8),
		`Reflect.apply(Math.min, null, [4, 2]) + Reflect.construct(Date, [7]).getTime()`:                                                   float64(9),
		`(() => { class A { constructor() { this.t = new.target } } class B extends A {}; return Reflect.construct(A, [], B).t === B })()`: true,
		"String.raw`a${1}b\\n` + String.raw({raw: ['x', 'y', 'z']}, 1)":                                                                    "a1b\\nx1yz",
		`new Uint8Array([1, 2]).join('-') + new Uint8Array([3, 4])`:                                                                        "1-23,4",
		`'a-b-c'.replace('-', '+') + 'a-b-c'.replaceAll('-', '$&$&') + 'abc'.replace(/b/g, x => x + x)`:                                    "a+b-ca--b--cabbc",
		`'x'.repeat(2 ** 21).replace(/y/g, 'z').length + 'x'.repeat(2 ** 20).replaceAll('x', 'yy').length`:                                 float64(1 << 22),
		`[1, 2, 3].map((x, i, a) => a.length + x).join() + [[1], [2]].flat().join() + [1, 2].every(x => x > 0)`:                            "4,5,61,2true",
		`Array.prototype.map.call({length: 2, 0: 1, 1: 2}, (x, i, o) => o.length * x).join()`:                                              "2,4",
		`Promise.all([1, Promise.resolve(2)]).then(a => a.join())`:                                                                         "1,2",
		`Promise.race([3]).then(x => x) instanceof Promise`:                                                                                true,
		`(BigInt.asIntN(8, 255n) + BigInt.asUintN(64, -1n) + BigInt.asUintN(2 ** 20, 1n)).toString()`:                                      "18446744073709551615",
		`new Array(2 ** 20).indexOf(1)`:                                                                                                    float64(-1),
	} {
		assert.Equal(t, want, evalValue(t, e, src), src)
	}
}

// TestAllocLimits_Process runs the huge allocations in a child process
// whose address space is bounded, so that one the engine does not check
// is a Go "fatal error: out of memory" that fails this test instead of
// ending the test binary.
func TestAllocLimits_Process(t *testing.T) {
	runChild(t, "TestAllocLimits_Process", 4<<30, func(t *testing.T) {
		e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20})
		for _, c := range hugeAllocs {
			_, err := e.Run(context.Background(), evalReq(c.src))
			var werr *workunit.Error
			require.ErrorAs(t, err, &werr, c.name)
			require.Equal(t, "RangeError", werr.Name, c.name)
		}
	})
}

// doublingLimit is the memory limit of TestAllocLimits_Doubling.
const doublingLimit = 512 << 20

// TestAllocLimits_Doubling: s += s, which no built-in's check sees, is
// stopped by the memory guard at the doubling that passes the limit, in a
// child process whose address space is bounded. A regression test: the
// guard collected garbage before it interrupted, and while runtime.GC
// waited for one doubling's copy the script started the next; under a
// 512 MiB limit the guard saw 1.8 GiB (or the child died of the 4 GiB
// bound), and under a 1 GiB limit the heap reached 7 GiB.
func TestAllocLimits_Doubling(t *testing.T) {
	// The guard's goroutine may wait for a CPU while the script starts one
	// more doubling: 8 GiB leaves room for it, not for a runaway.
	runChild(t, "TestAllocLimits_Doubling", 8<<30, func(t *testing.T) {
		e := newEngine(t, Options{Slots: 1, MemoryLimit: doublingLimit})
		werr, _ := evalError(t, e, evalReq(`let s = 'x'; for (;;) s += s`))
		require.Equal(t, workunit.MemoryLimit, werr.Kind)
		fmt.Println(werr.Message)
		// Interrupted within one doubling: under twice the limit.
		assert.Contains(t, werr.Message, "MiB in use)")
		assert.Equal(t, float64(3), evalValue(t, e, "1 + 2"))
	})
}

// runChild runs the test named test again in a child process with
// RIOT_ALLOC_CHILD set, whose address space is bounded to addressSpace bytes (the Go runtime
// reserves much more than its heap); there it
// runs child. It fails when the child does.
func runChild(t *testing.T, test string, addressSpace uint64, child func(t *testing.T)) {
	t.Helper()
	if raceDetector {
		// ThreadSanitizer's shadow memory does not fit a bounded address
		// space: the child would fail for the detector's own allocations.
		t.Skip("runs without -race only: the race detector needs more address space than the child may have")
	}
	if os.Getenv("RIOT_ALLOC_CHILD") == test {
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: addressSpace, Max: addressSpace}))
		child(t)
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "VmPeak") || strings.HasPrefix(l, "VmHWM") {
					fmt.Println(l)
				}
			}
		}
		if !t.Failed() {
			fmt.Println("child: done")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "RIOT_ALLOC_CHILD="+test)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process failed:\n%s", out)
	assert.Contains(t, string(out), "child: done")
	t.Logf("child:\n%s", out)
}

// hugeLoops are workunits that each ask one built-in to loop, in Go, over
// a length far past maxNativeSteps: the time limit's interrupt is not
// seen there, and each ran for minutes or hours (FuzzBuiltins found
// them).
var hugeLoops = []struct{ name, src, what string }{
	{"indexOf", `Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`, "Array.prototype.indexOf on an object of length 9007199254740991"},
	{"includes", `Array.prototype.includes.call({length: 2 ** 40}, 1)`, "Array.prototype.includes on an object of length 1099511627776"},
	{"lastIndexOfSparse", `new Array(2 ** 32 - 1).lastIndexOf(1)`, "Array.prototype.lastIndexOf on an object of length 4294967295"},
	{"reverse", `Array.prototype.reverse.call({length: 2 ** 53 - 1})`, "Array.prototype.reverse on an object"},
	{"copyWithin", `Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 1, 0)`, "Array.prototype.copyWithin on an object"},
	{"shift", `Array.prototype.shift.call({length: 2 ** 53 - 1})`, "Array.prototype.shift on an object"},
	{"splice", `Array.prototype.splice.call({length: 2 ** 53 - 1}, 0, 1)`, "Array.prototype.splice on an object"},
	{"with", `new Array(2 ** 32 - 1).with(0, 1)`, "Array.prototype.with on an object"},
	{"map", `new Array(2 ** 32 - 1).map(x => x)`, "Array.prototype.map on an object of length 4294967295"},
	{"every", `new Array(2 ** 32 - 1).every(x => x)`, "Array.prototype.every on an object of length 4294967295"},
	{"forEachObject", `Array.prototype.forEach.call({length: 2 ** 53 - 1}, x => x)`, "Array.prototype.forEach on an object"},
	{"flat", `new Array(2 ** 32 - 1).flat()`, "Array.prototype.flat on an object"},
	{"raw", `String.raw({raw: {length: 2 ** 53 - 1}}, 'x')`, "String.raw of a template of length 9007199254740991"},
	{"joinEmpty", `Array.prototype.join.call({length: 2 ** 53 - 1}, '')`, "Array.prototype.join on an object of length 9007199254740991"},
	{"concat", `[].concat({length: 2 ** 53 - 1, [Symbol.isConcatSpreadable]: true})`, "Array.prototype.concat of an object of length 9007199254740991"},
	{"concatThis", `Array.prototype.concat.call({length: 2 ** 40, [Symbol.isConcatSpreadable]: true})`, "Array.prototype.concat of an object of length 1099511627776"},
	{"from", `Array.from({length: 2 ** 53 - 1})`, "Array.from of an array-like of length 9007199254740991"},
	{"lengthGetter", `(() => { let c = 0; return Array.prototype.includes.call({get length() { return c++ ? 2 ** 53 - 1 : 2 }}, 1) })()`, ""},
}

// TestAllocLimits_Loops: each built-in loop over a huge length throws a
// RangeError at once, and the worker goes on.
func TestAllocLimits_Loops(t *testing.T) {
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20})
	for _, c := range hugeLoops {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := e.Run(ctx, evalReq(c.src))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-ctx.Done():
				t.Fatalf("%s: still running after a minute: a loop the time limit cannot interrupt", c.src)
			}
			if c.what == "" {
				require.NoError(t, err, c.src)
				return
			}
			var werr *workunit.Error
			require.ErrorAs(t, err, &werr, c.src)
			assert.Equal(t, "RangeError", werr.Name)
			assert.Contains(t, werr.Message, c.what)
			assert.Contains(t, werr.Message, "refuses a loop of more than 33554432 elements")
			assert.Equal(t, float64(3), evalValue(t, e, "1 + 2"))
		})
	}
}

// A method that writes to this (and concat) reads this's length again
// itself: an object whose length is a getter is refused, since it could
// give the check a small length and the method a huge one. A regression
// test: such a reverse passed the check and spun in Go for hours, past
// its time limit (abandoned, its goroutine still spinning).
func TestAllocLimits_LengthGetter(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20, Timeout: time.Minute})
	for _, src := range []string{
		`let c = 0; Array.prototype.reverse.call({get length() { return c++ ? 2 ** 40 : 1 }})`,
		`let c = 0; Array.prototype.splice.call(Object.create({get length() { return c++ ? 2 ** 40 : 1 }}), 0, 1)`,
		`let c = 0; [].concat({[Symbol.isConcatSpreadable]: true, get length() { return c++ ? 2 ** 40 : 1 }})`,
	} {
		werr, _ := evalError(t, e, evalReq("{ "+src+" }"))
		assert.Equal(t, "TypeError", werr.Name, src)
		assert.Contains(t, werr.Message, "whose length is a getter", src)
	}
	assert.Equal(t, []any{2.0, 1.0}, evalValue(t, e, `Array.from(Array.prototype.reverse.call({length: 2, 0: 1, 1: 2}))`))
	assert.Equal(t, []any{1.0, 2.0, 3.0}, evalValue(t, e, `[1].concat({[Symbol.isConcatSpreadable]: true, length: 2, 0: 2, 1: 3})`))
	assert.Equal(t, []any{2.0, 4.0}, evalValue(t, e, `Array.prototype.map.call({length: 2, 0: 1, 1: 2}, (x) => 2 * x)`))
}
