package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// jobScript writes a job script into a temporary directory and returns its
// path.
func jobScript(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// evalOnWorker runs a job script with riot-worker eval against a riotd
// process and one riot-worker process with one slot, so that every
// workunit runs in the same runtime, one after another.
func evalOnWorker(t *testing.T, script string) e2e.EvalResult {
	t.Helper()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 1})
	tr.WaitFor(t, workers(1))
	return bins.RunEval(t, "--tracker", tr.Addr(), script)
}

// TestE2E_NoCache_EveryCallRuns: equal noCache calls are workunits of
// their own. A regression test: four riot.with({noCache: true}).doWork(f)
// of one f were one workunit, one id and one random number.
func TestE2E_NoCache_EveryCallRuns(t *testing.T) {
	t.Parallel()
	script := jobScript(t, "nocache.js", `
const f = () => Math.random();
const nc = riot.with({noCache: true});
const ids = [1, 2, 3, 4].map(() => nc.doWork(f));
console.log(new Set(ids).size, new Set(ids.map(riot.waitUntilDone)).size);
console.log(new Set(nc.forWork([1, 1, 1], () => Math.random())).size);
const again = [1, 2].map(() => nc.forWork([7], () => Math.random())[0]);
console.log(new Set(again).size);
// Without noCache, equal calls are still one workunit.
const cached = [1, 2, 3].map(() => riot.doWork(f));
console.log(new Set(cached).size);
`)
	res := evalOnWorker(t, script)
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, "4 4\n3\n2\n1\n", res.Stdout, res)
}

// TestE2E_UnhandledRejection_ExitsOne: an error thrown in async code that
// nobody awaits is printed, with its worker for a workunit's, and the job
// exits 1, as Node does. A regression test: it was silent, exit 0.
func TestE2E_UnhandledRejection_ExitsOne(t *testing.T) {
	t.Parallel()
	script := jobScript(t, "async.js", `async function main() {
  riot.waitUntilDone(riot.doWork(() => { throw new Error('boom') }));
}
main();
`)
	res := evalOnWorker(t, script)
	assert.Equal(t, 1, res.Code, res)
	assert.Contains(t, res.Stderr, "failed on worker w1: Error: boom\n    at waitUntilDone (native)\n    at main (async.js:2:", res)
	assert.Contains(t, res.Stderr, "Caused by: Error: boom\n    at async.js:2:", res)

	plain := bins.RunEval(t, jobScript(t, "reject.js", "Promise.reject(new Error('x'));\n"))
	assert.Equal(t, 1, plain.Code, plain)
	assert.True(t, strings.HasPrefix(plain.Stderr, "Error: x\n    at reject.js:1:16"), plain)
}

// TestE2E_LargeCapturedValue_OwnCopy: a captured value large enough to
// travel as a blob is each workunit's own copy on the worker: its writes
// work, in sloppy and strict code, and the next workunit on the same
// worker sees the value as sent. A regression test: the worker's copy was
// shared and frozen, a write was lost (sloppy) or threw a TypeError with
// no message (strict).
func TestE2E_LargeCapturedValue_OwnCopy(t *testing.T) {
	t.Parallel()
	script := jobScript(t, "big.js", `const big = new Array(200000).fill(1);
const dict = new Set(Array.from({length: 20000}, (_, i) => 'w' + i));
const sloppy = () => { big[0] = 99; big.push(7); dict.add('new'); return [big[0], big.length, dict.has('new')]; };
const strict = () => { 'use strict'; big[0] = 98; dict.delete('w1'); return [big[0], big.length, dict.has('w1')]; };
const look = () => [big[0], big.length, dict.has('new'), dict.has('w1')];
for (const f of [sloppy, look, strict, look]) console.log(JSON.stringify(riot.waitUntilDone(riot.doWork(f))));
`)
	res := evalOnWorker(t, script)
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, "[99,200001,true]\n[1,200000,false,true]\n[98,200000,false]\n[1,200000,false,true]\n", res.Stdout, res)
}

// TestE2E_StrictScript_ShipsStrictFunctions: a script's 'use strict'
// applies to the functions it ships, on the worker as in the script. A
// regression test: they ran sloppy on the worker.
func TestE2E_StrictScript_ShipsStrictFunctions(t *testing.T) {
	t.Parallel()
	script := jobScript(t, "strict.js", `'use strict';
const k = 2;
const probe = () => { const self = (function () { return this })(); try { undeclared = k; return 'sloppy'; } catch (e) { return e.name + (self === undefined ? ', this undefined' : ''); } };
console.log(riot.waitUntilDone(riot.doWork(probe)));
console.log(riot.forWork([1], (x) => { try { leaked = x; return 'sloppy'; } catch (e) { return e.name; } })[0]);
`)
	res := evalOnWorker(t, script)
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, "ReferenceError, this undefined\nReferenceError\n", res.Stdout, res)
}
