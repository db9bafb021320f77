package master

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// The await forms give what their seed forms give: a result, results in
// order, a module's export's result, an eval's value, and a result by id.
func TestMaster_Promises(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{
		"lib.js": `exports.twice = (x) => 2 * x;`,
		"main.js": `
		async function main() {
			const f = (x) => x * 10;
			console.log(await riot.run(f, 4));
			console.log(JSON.stringify(await Promise.all([riot.run(f, 1), riot.run(f, 2)])));
			console.log(JSON.stringify(await riot.map([1, 2, 3], (x, i) => x + i)));
			console.log(JSON.stringify(await riot.map([], (x) => x)));
			console.log(await riot.runCall('./lib.js', 'twice', 21));
			console.log(await riot.runEval('6 * 7'));
			console.log(await riot.result(riot.doWork(() => 'by id')));
			const other = riot.connectToTracker('localhost', 2355, 'other');
			console.log(await riot.result(other.addWorkunit(() => 'another master\'s')));
			const w = riot.with({timeout: '10s'});
			console.log(await w.run(() => 'with'), JSON.stringify(await w.map([5], (x) => -x)));
			console.log(riot.run(f, 0) instanceof Promise);
		}
		main().then(() => console.log('end'));
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "40\n[10,20]\n[1,3,5]\n[]\n42\n42\nby id\nanother master's\nwith [-5]\ntrue\nend\n", sr.stdout.String())
}

// Promise.all submits every workunit before it waits for any: in manual
// mode the fake tracker hands out both while neither is finished.
func TestMaster_PromiseAll_SubmitsFirst(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, true)
	conn, err := ft.connect(t.Context(), "localhost", 0, "")
	require.NoError(t, err)
	worker, err := ft.connect(t.Context(), "localhost", 0, "w")
	require.NoError(t, err)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- RunScript(t.Context(), ScriptOptions{Path: "main.js", Conn: conn, Stdout: &out, Source: `
			Promise.all([riot.run((x) => x, 1), riot.run((x) => x, 2)]).then((r) => console.log(JSON.stringify(r)));
			console.log('submitted');
		`})
	}()
	// Both are taken before either is completed: neither call waited.
	w1, err := worker.WaitForWork(t.Context())
	require.NoError(t, err)
	w2, err := worker.WaitForWork(t.Context())
	require.NoError(t, err)
	require.NoError(t, worker.CompleteWork(t.Context(), w2, mustMarshal(t, 2.0), nil))
	require.NoError(t, worker.CompleteWork(t.Context(), w1, mustMarshal(t, 1.0), nil))
	require.NoError(t, <-done)
	assert.Equal(t, "submitted\n[1,2]\n", out.String())
}

// A rejected promise carries the WorkunitError that waitUntilDone throws,
// with the stack of the call that made it; map rejects with the first
// failed item's, as forWork throws; a call's own error rejects too.
func TestMaster_PromiseRejections(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		function show(e) {
			console.log(e.name, e instanceof riot.WorkunitError, e.worker, e.kind, e.cause && e.cause.name, e.message.replace(/[0-9a-f]{12}/, 'KEY'));
		}
		async function main() {
			try { await riot.run(() => { throw new TypeError('bad') }) } catch (e) { show(e); console.log(e.stack.split('\n')[1].trim()) }
			try { await riot.map([1, 2, 3], (x) => { if (x > 1) throw new RangeError('item ' + x); return x }) } catch (e) { show(e) }
			try { await riot.with({timeout: 20}).run(() => { for (;;) {} }) } catch (e) { console.log('timeout', e.kind, e.cause.name) }
			try { await riot.run('not a function') } catch (e) { console.log(e.name, e.message) }
			try { await riot.result('nope') } catch (e) { console.log(e.name, e.message) }
			await riot.runEval('throw new Error("eval")').catch(show);
		}
		main();
	`})
	require.NoError(t, sr.err)
	lines := []string{
		"WorkunitError true fake-worker thrown TypeError workunit KEY failed on worker fake-worker: TypeError: bad",
		"at main (main.js:6:",
	}
	for _, l := range lines {
		assert.Contains(t, sr.stdout.String(), l)
	}
	assert.Contains(t, sr.stdout.String(), "WorkunitError true fake-worker thrown RangeError workunit KEY failed on worker fake-worker: RangeError: item 2\n")
	assert.Contains(t, sr.stdout.String(), "TypeError riot.run: the workunit must be a function; it is a string\n")
	assert.Contains(t, sr.stdout.String(), "TypeError riot.result: 'nope' is not a workunit id\n")
	assert.Contains(t, sr.stdout.String(), "failed on worker fake-worker: Error: eval\n")
	assert.Contains(t, sr.stdout.String(), "timeout time-limit TimeoutError\n")
}

// An unawaited rejected riot promise ends the script as an unhandled
// rejection, with the workunit's error; the script waits for pending
// promises before it ends.
func TestMaster_PromiseUnhandled(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		riot.run(() => { throw new Error('lost') });
		console.log('top done');
	`})
	var se *ScriptError
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.True(t, se.Unhandled)
	assert.Equal(t, "WorkunitError", se.Name)
	assert.Contains(t, se.Stack, "at main.js:2:")
	assert.Contains(t, se.Stack, "Caused by: Error: lost")
	var werr *workunit.Error
	require.True(t, errors.As(sr.err, &werr))
	assert.Equal(t, "fake-worker", werr.Worker)
	assert.Equal(t, "top done\n", sr.stdout.String())

	pending := runScript(t, map[string]string{"main.js": `riot.run(() => 7).then((v) => console.log('late', v));`})
	require.NoError(t, pending.err)
	assert.Equal(t, "late 7\n", pending.stdout.String())
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := value.Marshal(v)
	require.NoError(t, err)
	return b
}

// riot.with({retries, retryOn}) sends the options; a workunit that fails
// every attempt rejects (and throws) with its attempts, and the message
// says how many; one whose error is not in retryOn has one attempt. Bad
// options are clear errors.
func TestMaster_Retries(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		class FlakyError extends Error { constructor(m) { super(m); this.name = 'FlakyError' } }
		const show = (e) => console.log(e.message.replace(/[0-9a-f]{12}/, 'KEY'), '|', JSON.stringify(e.attempts));
		async function main() {
			await riot.with({retries: 2}).run(() => { throw new TypeError('always') }).catch(show);
			await riot.with({retries: 2, retryOn: ['RangeError', FlakyError]}).run(() => { throw new TypeError('not listed') }).catch(show);
			try { riot.waitUntilDone(riot.with({retries: 1}).doWork(() => { throw new Error('sync') })) } catch (e) { show(e) }
			await riot.run(() => { throw new Error('no retries') }).catch((e) => console.log(e.attempts === undefined));
			for (const bad of [{retries: -1}, {retries: 1.5}, {retryOn: ['TypeError']}, {retries: 1, retryOn: 'TypeError'}, {retries: 1, retryOn: [42]}]) {
				try { riot.with(bad) } catch (e) { console.log(e.name + ': ' + e.message) }
			}
		}
		main();
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, `workunit KEY failed 3 attempts, the last on worker fake-worker: TypeError: always | [{"worker":"fake-worker","name":"TypeError","message":"always"},{"worker":"fake-worker","name":"TypeError","message":"always"},{"worker":"fake-worker","name":"TypeError","message":"always"}]
workunit KEY failed on worker fake-worker: TypeError: not listed | [{"worker":"fake-worker","name":"TypeError","message":"not listed"}]
workunit KEY failed 2 attempts, the last on worker fake-worker: Error: sync | [{"worker":"fake-worker","name":"Error","message":"sync"},{"worker":"fake-worker","name":"Error","message":"sync"}]
true
RangeError: riot.with: retries must be a whole number from 0 to 100 (how many times to run a failed workunit again), not -1
RangeError: riot.with: retries must be a whole number from 0 to 100 (how many times to run a failed workunit again), not 1.5
TypeError: riot.with: retryOn without retries: give retries too, such as {retries: 3, retryOn: ["TypeError"]}
TypeError: riot.with: retryOn must be an array of error names or classes, such as ['TypeError', 'TimeoutError']; it is a string
TypeError: riot.with: retryOn[0] must be an error's name (a non-empty string of at most 256 bytes) or an error class; it is 42
`, sr.stdout.String())
	require.Len(t, sr.events.finished, 4)
}
