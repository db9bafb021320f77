package master

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// scriptRun is a job script run against a fake tracker.
type scriptRun struct {
	ft             *fakeTracker
	stdout, stderr bytes.Buffer
	events         recordingEvents
	err            error
}

// recordingEvents records what ScriptEvents hears.
type recordingEvents struct {
	mu        sync.Mutex
	submitted int
	finished  []*workunit.Outcome
}

func (r *recordingEvents) Submitted(n int) { r.mu.Lock(); r.submitted += n; r.mu.Unlock() }
func (r *recordingEvents) Finished(o *workunit.Outcome) {
	r.mu.Lock()
	r.finished = append(r.finished, o)
	r.mu.Unlock()
}

// runScript writes files (name → content) into a directory and runs
// main.js there as a master.
func runScript(t *testing.T, files map[string]string, args ...string) *scriptRun {
	t.Helper()
	return runScriptOn(t, newFakeTracker(t, false), files, args...)
}

// runScriptOn is runScript against the fake tracker ft.
func runScriptOn(t *testing.T, ft *fakeTracker, files map[string]string, args ...string) *scriptRun {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	sr := &scriptRun{ft: ft}
	conn, err := sr.ft.connect(context.Background(), "localhost", 0, "")
	require.NoError(t, err)
	sr.err = RunScript(context.Background(), ScriptOptions{
		Path:    filepath.Join(dir, "main.js"),
		Args:    args,
		Conn:    conn,
		Connect: sr.ft.connect,
		Stdout:  &sr.stdout,
		Stderr:  &sr.stderr,
		Events:  &sr.events,
		// The fake's, for a test of forWork's windows.
		ForWorkWindow: ft.forWorkWindow,
	})
	return sr
}

func TestMaster_SimpleDemo(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		function run() {
			return riot.forWork(Array.from({length: 10}, (_, i) => i), (i) => {
				sleep(0.01); // or some big task
				return 10 * i;
			});
		}
		console.log(run());
		console.log('Complete');
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "[\n   0, 10, 20, 30, 40,\n  50, 60, 70, 80, 90\n]\nComplete\n", sr.stdout.String())
	sr.events.mu.Lock()
	defer sr.events.mu.Unlock()
	assert.Equal(t, 10, sr.events.submitted)
	assert.Len(t, sr.events.finished, 10, "every result the script took was reported before it went on")
}

func TestMaster_FreeVariables(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const greeting = 'Workunit';
		function run() {
			const masterRandomNumber = 67;
			const ids = [];
			for (let x = 0; x < 3; x++) {
				ids.push(riot.doWork(() => greeting + ' #' + x + ': master chose ' + masterRandomNumber));
			}
			for (const id of ids) console.log(riot.waitUntilDone(id));
		}
		run();
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "Workunit #0: master chose 67\nWorkunit #1: master chose 67\nWorkunit #2: master chose 67\n", sr.stdout.String())
}

func TestMaster_Closures(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) }
		const isEven = (n) => n === 0 ? true : isOdd(n - 1);
		const isOdd = (n) => n === 0 ? false : isEven(n - 1);
		const scale = { by: 3 };
		const [a, { b = 4 } = {}] = [2];
		class Point { constructor(x) { this.x = x } norm() { return Math.abs(this.x) } }
		const out = riot.forWork([1, 2, 3], (n, i) => [fact(n + 2), isEven(n), n * scale.by + a + b, new Point(-n).norm(), i]);
		console.log(JSON.stringify(out));
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "[[6,false,9,1,0],[24,true,12,2,1],[120,false,15,3,2]]\n", sr.stdout.String())
}

func TestMaster_LargeValueTravelsOnce(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const dictionary = new Set(Array.from({length: 20000}, (_, i) => 'word' + i));
		const hits = riot.forWork(['word1', 'nope', 'word19999'], (w) => dictionary.has(w));
		const again = riot.waitUntilDone(riot.doWork(() => dictionary.size));
		console.log(JSON.stringify(hits), again);
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "[true,false,true] 20000\n", sr.stdout.String())
	assert.Equal(t, 1, sr.ft.uploads, "the dictionary is uploaded once")
}

func TestMaster_ValueCarriedByManyWorkunitsIsABlob(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const medium = Array.from({length: 500}, (_, i) => 'w' + i);     // some KiB: under the threshold
		const tiny = [1, 2, 3];
		const a = riot.forWork(Array.from({length: 100}, (_, i) => i), (i) => medium[i] + tiny.length);
		const once = riot.waitUntilDone(riot.doWork((n) => n + tiny.length, 1));
		console.log(a[99], once);
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "w993 4\n", sr.stdout.String())
	assert.Equal(t, 1, sr.ft.uploads, "medium, carried by 100 workunits, is uploaded once; tiny never")
}

func TestMaster_Require(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{
		"main.js": `
			const { square, table } = require('./lib/math');
			const cfg = require('./cfg.json');
			console.log(JSON.stringify(riot.forWork([1, 2, 3], (x) => square(x) + table[x] + cfg.offset)));
			try { require('fs') } catch (e) { console.log(e.message) }
		`,
		"lib/math.js": "const base = require('./base');\nexports.table = [0, 10, 20, 30];\nexports.square = function square(x) { return base.times(x, x) };\n",
		"lib/base.js": "exports.times = (a, b) => a * b;\n",
		"cfg.json":    `{"offset": 100}`,
	})
	require.NoError(t, sr.err)
	assert.Equal(t, "[111,124,139]\nrequire(\"fs\"): no such module (job scripts have no Node built-in modules: riot.readFile, riot.readLines and riot.writeFile reach files)\n", sr.stdout.String())

	// A function from a module fails with its own file and line.
	sr = runScript(t, map[string]string{
		"main.js": "riot.waitUntilDone(riot.doWork(require('./bad').boom))",
		"bad.js":  "exports.boom = () => {\n  throw new Error('from a module')\n};\n",
	})
	var se *ScriptError
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Contains(t, se.Stack, "Caused by: Error: from a module\n    at bad.js:2:9")
	// On the module's first line too (its wrapper function used to add
	// its length to the column the worker was given).
	sr = runScript(t, map[string]string{
		"main.js": "riot.waitUntilDone(riot.doWork(require('./bad').boom))",
		"bad.js":  "exports.boom = () => { throw new Error('from line 1'); };\n",
	})
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Contains(t, se.Stack, "Caused by: Error: from line 1\n    at bad.js:1:38")

	// Syntax errors name the file, line and column as the author wrote
	// them, in the script and in a module.
	sr = runScript(t, map[string]string{"main.js": "const x = 1;\nconst y = (2 +;\n"})
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Equal(t, "SyntaxError", se.Name)
	assert.Equal(t, "main.js:2:15: Unexpected token ;", se.Message)
	sr = runScript(t, map[string]string{
		"main.js": "require('./syn')",
		"syn.js":  "module.exports = function(x) { return x +; };\n",
	})
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Contains(t, se.Stack, "SyntaxError: syn.js:1:42: Unexpected token ;")

	// A throw on a line that makes a function has the column as written,
	// in the script and in a module (the capture pass inserts text into
	// such lines: the column was 84 here, where 55 is right; in a module,
	// its wrapper function added 65 more on line 1).
	sr = runScript(t, map[string]string{
		"main.js": "const a = function (x) { return x; }; const b = null; b.foo();\n",
	})
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Contains(t, se.Stack, "\n    at main.js:1:55")
	sr = runScript(t, map[string]string{
		"main.js": "require('./mod').f()",
		"mod.js":  "const g = () => 1; exports.f = function f() { return null.x; };\n",
	})
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.Contains(t, se.Stack, "at f (mod.js:1:59)")
}

func TestMaster_DoWorkCallAndEval(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{
		"main.js": `
			const ids = [0, 1, 2].map((x) => riot.doWorkCall('do-work-call.js', 'double', x));
			console.log(ids.map(riot.waitUntilDone).join(' '));
			console.log(riot.waitUntilDone(riot.doWorkEval('3 + 5')));
		`,
		"do-work-call.js": "const u = require('./lib/util');\nexports.double = (x) => u.twice(x);\n",
		"lib/util.js":     "exports.twice = (x) => 2 * x + require('./offset.json').offset;\n",
		"lib/offset.json": `{"offset": 0}`,
	})
	require.NoError(t, sr.err)
	assert.Equal(t, "0 2 4\n8\n", sr.stdout.String())
}

func TestMaster_FailingWorkunit(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const id = riot.doWork((x) => {
			if (x > 1) throw new RangeError('too big: ' + x);
		}, 5);
		try {
			riot.waitUntilDone(id);
		} catch (e) {
			console.log(e.name, '|', e.message.replace(/[0-9a-f]{12}/, 'ID'), '|', e.cause.name, e.cause.message, '|', e.worker, e.kind);
		}
		riot.waitUntilDone(id);
	`})
	require.Error(t, sr.err)
	assert.Equal(t, "WorkunitError | workunit ID failed on worker fake-worker: RangeError: too big: 5 | RangeError too big: 5 | fake-worker thrown\n", sr.stdout.String())
	var se *ScriptError
	require.True(t, errors.As(sr.err, &se))
	assert.Equal(t, "WorkunitError", se.Name)
	assert.Contains(t, se.Stack, "at main.js:10:")
	assert.Contains(t, se.Stack, "Caused by: RangeError: too big: 5\n    at main.js:3:")
	var werr *workunit.Error
	require.True(t, errors.As(sr.err, &werr))
	assert.Equal(t, "fake-worker", werr.Worker)
}

func TestMaster_CallWhenDone(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const ok = riot.doWork(() => 42);
		const bad = riot.doWork(() => { throw new Error('nope') });
		riot.callWhenDone(ok, (isError, client, result) => console.log('ok', isError, client, result));
		riot.callWhenDone(bad, (isError, client, result) => console.log('bad', isError, client, result));
		console.log('top level done');
	`})
	require.NoError(t, sr.err)
	lines := strings.Split(strings.TrimSpace(sr.stdout.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "top level done", lines[0])
	assert.ElementsMatch(t, []string{"ok false fake-worker 42", "bad true fake-worker nope"}, lines[1:])
}

func TestMaster_Unsendable(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const sock = Symbol('socket');
		function work() { return typeof sock }
		riot.doWork(work);
	`})
	require.Error(t, sr.err)
	assert.Contains(t, sr.err.Error(), "riot.doWork: work (main.js:3:3) → free variable sock: a symbol cannot be sent to a worker")

	sr = runScript(t, map[string]string{"main.js": `riot.doWork((x) => x, {onDone() {}, list: [Math.max]})`})
	require.Error(t, sr.err)
	assert.Contains(t, sr.err.Error(), "riot.doWork: args[0].list[0]: function max cannot be sent to a worker: only the job script's own functions can be")

	// A function that cannot be sent, as the workunit itself, is named
	// once (the message said "g (main.js:1:30): g (main.js:1:30) cannot be
	// sent").
	sr = runScript(t, map[string]string{"main.js": `function outer() { const g = () => this.v; return g; }
		riot.doWork(outer.call({v: 1}));`})
	require.Error(t, sr.err)
	assert.Contains(t, sr.err.Error(), "riot.doWork: g (main.js:1:30) cannot be sent to a worker: uses `this` of an enclosing function")
	assert.Equal(t, 1, strings.Count(sr.err.Error(), "main.js:1:30"), sr.err.Error())

	// A getter is the script's own function, but it is not registered.
	sr = runScript(t, map[string]string{"main.js": `const o = {get x() { return 1; }};
		riot.doWork(Object.getOwnPropertyDescriptor(o, 'x').get);`})
	require.Error(t, sr.err)
	assert.Contains(t, sr.err.Error(), "riot.doWork: the function: function get x cannot be sent to a worker: only the job script's own functions can be, and not all of them (not built-in, bound or eval-made functions, nor getters")
}

func TestMaster_Files(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "words.txt")
	require.NoError(t, os.WriteFile(in, []byte("alpha\r\nbeta\ngamma\n"), 0o644))
	out := filepath.Join(dir, "out.txt")
	sr := runScript(t, map[string]string{"main.js": `
		const [input, output] = riot.args;
		const lines = riot.readLines(input);
		riot.writeFile(output, lines.join(',') + '|' + riot.readFile(input).length);
	`}, in, out)
	require.NoError(t, sr.err)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "alpha,beta,gamma|18", string(got))
}

// runManual runs src as main.js, as the master "me", against a fake
// tracker whose workunits run only when the script takes them itself, and
// returns what it printed.
func runManual(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte(src), 0o644))
	ft := newFakeTracker(t, true)
	conn, err := ft.connect(context.Background(), "localhost", 0, "me")
	require.NoError(t, err)
	var stdout bytes.Buffer
	err = RunScript(context.Background(), ScriptOptions{Path: filepath.Join(dir, "main.js"), Conn: conn, Connect: ft.connect, Stdout: &stdout})
	require.NoError(t, err)
	return stdout.String()
}

func TestMaster_LowLevelClient(t *testing.T) {
	t.Parallel()
	out := runManual(t, `
		const c = riot.currentClient();
		const id = c.addWorkunit((x) => x * 2, 21);
		const [key, work] = c.waitForWork();
		console.log(key === id, work.kind);
		c.completeWorkunit(key, false, work.fn(...work.args));
		const [k2, status, client, result] = c.waitForFinishedWorkunit(id);
		console.log(k2 === id, status, client, result);
		const info = c.workunitInfo(id);
		console.log(info[0], info[1], info[2], info[3] instanceof Date);
		c.callWithWorkunitInfo(id, (s, cl, r) => console.log('info', s, cl, r));
		console.log(c.whoAmI(), riot.connectToTracker('localhost', 2355, 'other').whoAmI());
		console.log(c.workunitInfo(riot.doWorkEval('1')).length);
		const id2 = c.callWithNewWorkunit((x) => x + 1, 1, (id) => id);
		const [k3, w3] = c.waitForWork();
		const [k4, w4] = c.waitForWork(); // the doWorkEval above, still waiting
		for (const [k, w] of [[k3, w3], [k4, w4]]) {
			c.completeWorkunit(k, w.kind === 'eval', w.kind === 'eval' ? new RangeError('no') : w.fn(...w.args));
		}
		c.callWithFinishedWorkunit(id2, (k, status, client, result) => console.log(k === id2, status, client, result));
		console.log(c.workunitInfo(k3 === id2 ? k4 : k3).slice(0, 3).join(' '));
	`)
	assert.Equal(t, "true fn\ntrue done me 42\ndone me 42 true\ninfo done me 42\nme other\n4\ntrue done me 2\nerror me no\n", out)
}

func TestMaster_Cancel(t *testing.T) {
	t.Parallel()
	out := runManual(t, `
		const a = riot.doWork((x) => x, 1);
		const b = riot.doWork((x) => x, 2);
		const got = riot.cancel([a], b, a); // a twice: once canceled, it is not open
		console.log(got.length, got[0] === a, got[1] === b);
		try {
			riot.waitUntilDone(a);
		} catch (e) {
			console.log(e instanceof riot.WorkunitError, e.kind, e.message.replace(/[0-9a-f]{12}/, 'ID'));
		}
		console.log(riot.cancel(a).length, riot.cancel().length);
		try {
			riot.cancel('nope');
		} catch (e) {
			console.log(e.name, e.message);
		}
	`)
	assert.Equal(t, "2 true true\ntrue canceled workunit ID failed: AbortError: canceled by me\n0 0\nTypeError riot.cancel: 'nope' is not a workunit id\n", out)
}

// panicConn is a Conn whose Submit panics.
type panicConn struct{ Conn }

func (panicConn) Submit(*workunit.Spec, workunit.Options) Submission { panic("submit: a bug") }

// A Go panic on the script's goroutine fails the script; it does not reach
// RunScript's caller.
func TestMaster_PanicIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte("try { riot.doWork(() => 1) } catch (e) { console.log('caught') }"), 0o644))
	ft := newFakeTracker(t, false)
	conn, err := ft.connect(context.Background(), "localhost", 0, "")
	require.NoError(t, err)
	var stdout bytes.Buffer
	err = RunScript(context.Background(), ScriptOptions{Path: filepath.Join(dir, "main.js"), Conn: panicConn{conn},
		Stdout: &stdout, Logger: slog.New(slog.DiscardHandler)})
	require.Error(t, err)
	assert.Equal(t, "engine: job script: panic: submit: a bug", err.Error())
	assert.Empty(t, stdout.String(), "a Go panic is not a JavaScript exception")
}

// TestMaster_TimeoutOutOfRange: a time limit the protocol cannot carry is
// a RangeError at the riot.with call that names it, not a refusal from a
// tracker that never saw it.
func TestMaster_TimeoutOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ arg, want string }{
		{`-1`, "riot.with: timeout -1 ms is out of range"},
		{`NaN`, "riot.with: timeout NaN ms is out of range"},
		{`2 ** 33`, "riot.with: timeout 8589934592 ms is out of range"},
		{`'-2s'`, `riot.with: timeout "-2s" is out of range`},
		{`'2000h'`, `riot.with: timeout "2000h" is out of range`},
	} {
		sr := runScript(t, map[string]string{"main.js": `riot.with({timeout: ` + tc.arg + `}).doWork(() => 1)`})
		require.Error(t, sr.err, tc.arg)
		assert.Contains(t, sr.err.Error(), "RangeError: "+tc.want, tc.arg)
	}
	sr := runScript(t, map[string]string{"main.js": `riot.waitUntilDone(riot.with({timeout: '30s'}).doWork(() => 1))`})
	require.NoError(t, sr.err)
}

// A large value goes to another tracker as it was sent to the first (a
// buffer's blob is its own bytes, by reference, checked again; another
// value's is encoded again), and a value changed since is a new blob.
func TestMaster_LargeBlobEncodedAgainForAnotherTracker(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const big = new Float64Array(1 << 18); // 2 MiB, over KeepBlobBytes
		big[7] = 7;
		console.log(riot.waitUntilDone(riot.doWork(() => big[7])));
		riot.connect('second');
		console.log(riot.waitUntilDone(riot.doWork(() => big[7] + 1)));
		big[7] = 70;
		riot.connect('third');
		console.log(riot.waitUntilDone(riot.doWork(() => big[7] + 2)));
	`})
	require.NoError(t, sr.err)
	lines := strings.Split(strings.TrimSpace(sr.stdout.String()), "\n")
	require.Len(t, lines, 3, sr.stdout.String())
	assert.Equal(t, "7", lines[0])
	assert.Equal(t, "8", lines[1], "the second tracker got the value, encoded again")
	assert.Equal(t, "72", lines[2], "the changed value is a new blob")
	assert.Equal(t, 2, sr.ft.uploads, "two blobs: the second tracker (the same fake store) already held the first")
}

// TestMaster_ValueChangedInPlaceIsSentAgain: a large value the script
// changes in place (at the same size) between two submissions travels as
// it is at the second one, as in one process. A regression test: the
// master took the same object at the same size for the same value and
// sent its old blob, and the workunit saw the old contents.
func TestMaster_ValueChangedInPlaceIsSentAgain(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const typed = new Float64Array(100000);
		const buf = new ArrayBuffer(200000);
		const view = new DataView(new ArrayBuffer(200000));
		const arr = Array.from({length: 20000}, (_, i) => i);           // about 100 KiB encoded
		const obj = Object.fromEntries(Array.from({length: 10000}, (_, i) => ['k' + i, i]));
		const set = new Set(Array.from({length: 10000}, (_, i) => 'w' + i));
		const read = () => [typed[5], new Uint8Array(buf)[5], view.getUint8(5), arr[5], obj.k5, set.has('new')];
		const out = [riot.waitUntilDone(riot.doWork(read))];
		out.push(riot.waitUntilDone(riot.doWork(read))); // unchanged: the same blobs
		typed[5] = 1; new Uint8Array(buf)[5] = 2; view.setUint8(5, 3); arr[5] = 4; obj.k5 = 5;
		set.delete('w0'); set.add('new');
		out.push(riot.waitUntilDone(riot.doWork(read)));
		console.log(JSON.stringify(out));
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, `[[0,0,0,5,5,false],[0,0,0,5,5,false],[1,2,3,4,5,true]]`+"\n", sr.stdout.String())
}

// Job scripts have WebAssembly, as workunits and Node's scripts do.
func TestMaster_WebAssembly(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
		const add = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]);
		console.log(WebAssembly.validate(add), new WebAssembly.Instance(new WebAssembly.Module(add)).exports.add(2, 3));
		try { new WebAssembly.Module(new Uint8Array([1, 2, 3])); } catch (e) { console.log(e instanceof WebAssembly.CompileError); }
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "true 5\ntrue\n", sr.stdout.String())
}
