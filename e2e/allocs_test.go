package e2e_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// hugeAllocsScript runs workunits that each ask a built-in for more
// memory than the worker has, by forWork and one by one, and then an
// ordinary one on the same worker.
const hugeAllocsScript = `
const srcs = [
	'new ArrayBuffer(2 ** 40)',
	'new Float64Array(2 ** 37)',
	'Float64Array.from({length: 2 ** 37})',
	"'ab'.repeat(2 ** 29 - 100)",
	"'a'.padEnd(2 ** 29 - 100)",
	'new Array(2 ** 32 - 1).fill(0)',
	"new Array(2 ** 32 - 1).join('x')",
]
try {
	riot.forWork(srcs, (src) => (0, eval)(src))
	console.log('forWork returned')
} catch (e) {
	console.log('forWork threw', e.name)
}
const hs = srcs.map((src) => riot.doWork((src) => (0, eval)(src), src))
for (const h of hs) {
	try {
		riot.waitUntilDone(h)
		console.log('returned')
	} catch (e) {
		console.log('threw', e.message.includes('RangeError') && e.message.includes('256.0 MiB'))
	}
}
console.log('after', riot.waitUntilDone(riot.doWork(() => 1 + 2)))
`

// TestE2E_HugeAllocations: a forWork of workunits that each allocate far
// past the worker's memory fails them all, and the worker stays up. A
// regression test: new ArrayBuffer(2 ** 40) was a Go "fatal error: out of
// memory", which ended the worker; riotd gave the workunit to the next
// worker, and a forWork of them ended every worker.
func TestE2E_HugeAllocations(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "alloc", Slots: 1, Args: []string{"--memory-limit", "256MiB"}})
	tr.WaitFor(t, workers(1))
	pid := w.Pid()
	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "huge.js", hugeAllocsScript))
	require.Equal(t, 0, res.Code, res)
	want := "forWork threw WorkunitError\n" + strings.Repeat("threw true\n", 7) + "after 3\n"
	assert.Equal(t, want, res.Stdout, res)
	assert.True(t, w.Running(), "the worker is up")
	assert.Equal(t, pid, w.Pid(), "the same worker process")
}

// hugeBigIntsScript runs workunits whose BigInt operators would make
// numbers of terabytes, written in the workunit, made by eval and by the
// Function constructor, and then checks that small ones still compute.
const hugeBigIntsScript = `
const fns = [
	(e) => 2n ** e,
	(e) => 1n << e,
	(e) => { let x = 7n; x **= e; return x },
	(e) => (0, eval)('2n ** ' + e + 'n'),
	(e) => globalThis.eval('1n << ' + e + 'n'),
	(e) => new Function('e', 'return 3n ** e')(e),
]
const hs = fns.map((fn) => riot.doWork(fn, 2n ** 40n))
for (const h of hs) {
	try {
		riot.waitUntilDone(h)
		console.log('returned')
	} catch (e) {
		console.log('threw', e.message.includes('RangeError') && e.message.includes('Maximum BigInt size exceeded'))
	}
}
console.log('after', riot.waitUntilDone(riot.doWork((a, b) => (a ** b) >> 3n, 3n, 5n)))
`

// TestE2E_HugeBigInts: BigInt operators whose result would be huge fail
// their workunits with a RangeError, and the worker stays up. A regression
// test: 2n ** (2n ** 40n) was a Go "fatal error: out of memory" in math/big,
// which no interrupt or recover reaches, and it ended the worker.
func TestE2E_HugeBigInts(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "bigint", Slots: 1, Args: []string{"--memory-limit", "256MiB"}})
	tr.WaitFor(t, workers(1))
	pid := w.Pid()
	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "bigints.js", hugeBigIntsScript))
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, strings.Repeat("threw true\n", 6)+"after 30n\n", res.Stdout, res)
	assert.True(t, w.Running(), "the worker is up")
	assert.Equal(t, pid, w.Pid(), "the same worker process")
}
