package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

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
		`new Uint8Array(new Set([1, 2])).length`:               float64(2),
		`new Uint8Array('3').length`:                           float64(3),
		`new ArrayBuffer({valueOf() { return 8 }}).byteLength`: float64(8),
		`new Uint16Array(new Uint8Array([1, 2])).length`:       float64(2),
		`typeof ArrayBuffer.isView`:                            "function",
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
