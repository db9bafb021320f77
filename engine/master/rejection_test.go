package master

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// An error thrown in an async function nobody awaits ends the script, as
// in Node: a regression test (it was swallowed, and the job ended well).
// A workunit's error keeps its worker and its cause.
func TestMaster_UnhandledRejection_FromWorkunit(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		async function main() {
			riot.waitUntilDone(riot.doWork(() => { throw new Error('boom') }));
		}
		main();
		console.log('after main');
	`})
	var se *ScriptError
	require.True(t, errors.As(sr.err, &se), "%v", sr.err)
	assert.True(t, se.Unhandled)
	assert.Equal(t, "WorkunitError", se.Name)
	assert.Contains(t, se.Message, "failed on worker fake-worker: Error: boom")
	assert.Contains(t, se.Stack, "at main (main.js:3:")
	assert.Contains(t, se.Stack, "Caused by: Error: boom\n    at main.js:3:")
	var werr *workunit.Error
	require.True(t, errors.As(sr.err, &werr))
	assert.Equal(t, "fake-worker", werr.Worker)
	assert.Equal(t, "after main\n", sr.stdout.String(), "the turn ends first")
}

func TestMaster_UnhandledRejection(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		src, stdout, name, stack string
	}{
		"Promise.reject": {src: `Promise.reject(new Error('x'));`, name: "Error", stack: "Error: x\n    at main.js:1:16"},
		"not an Error": {src: `Promise.reject('x');`, name: "UnhandledPromiseRejection",
			stack: "UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, " +
				"or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason 'x'."},
		"after an await": {src: "async function f() { await null; throw new TypeError('late') }\nf();", name: "TypeError", stack: "TypeError: late\n    at f (main.js:1:"},
		"in a timer": {src: "setTimeout(() => { console.log('tick'); Promise.reject(new RangeError('t')) }, 1);",
			stdout: "tick\n", name: "RangeError", stack: "RangeError: t\n"},
		"in a callback": {src: "riot.callWhenDone(riot.doWork(() => 1), async () => { console.log('cb'); throw new Error('in cb') });",
			stdout: "cb\n", name: "Error", stack: "Error: in cb\n"},
		"the first of two": {src: "Promise.reject(new Error('one')); Promise.reject(new Error('two'));", name: "Error", stack: "Error: one\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sr := runScript(t, map[string]string{"main.js": tc.src})
			var se *ScriptError
			require.True(t, errors.As(sr.err, &se), "%v", sr.err)
			assert.True(t, se.Unhandled)
			assert.Equal(t, tc.name, se.Name)
			assert.Contains(t, se.Stack, tc.stack)
			assert.Equal(t, tc.stdout, sr.stdout.String())
		})
	}
}

// A rejection that gets a handler in the same turn is not reported, nor is
// one awaited in a try; a later turn's handler is too late (Node's rule).
func TestMaster_HandledRejection(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const p = Promise.reject(new Error('handled'));
		p.catch((e) => console.log('caught', e.message));
		async function f() { throw new Error('inner') }
		(async () => { try { await f() } catch (e) { console.log('try', e.message) } })();
		const q = Promise.reject(new Error('then'));
		Promise.resolve().then(() => q.then(null, () => console.log('later microtask')));
		(async () => {
			try { riot.waitUntilDone(riot.doWork(() => { throw new Error('w') })) } catch (e) { console.log('async caught', e.cause.message) }
		})();
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "async caught w\ncaught handled\ntry inner\nlater microtask\n", sr.stdout.String())

	late := runScript(t, map[string]string{"main.js": `
		const p = Promise.reject(new Error('too late'));
		setTimeout(() => p.catch(() => console.log('never')), 1);
	`})
	var se *ScriptError
	require.True(t, errors.As(late.err, &se), "%v", late.err)
	assert.Equal(t, "Error: too late", se.Error())
	assert.Empty(t, late.stdout.String())
}
