package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaster_RefusalsAreDataCloneErrors: a value that structured clone
// refuses, met on the master (an argument, a forWork item, a captured
// variable) or on the worker (a result), is a DataCloneError naming the
// value's path.
func TestMaster_RefusalsAreDataCloneErrors(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const show = (f) => {
			try { f(); console.log('no error') }
			catch (e) { console.log(e.name, e instanceof Error, '|', e.message.replace(/[0-9a-f]{12}/, 'ID')) }
		};
		show(() => riot.doWork((x) => x, {g: (function* () {})()}));
		show(() => riot.forWork([1, [].values()], (x) => x));
		const it = new Map().entries();
		show(() => riot.doWork(() => it));
		show(() => riot.doWork((x) => x, Object(Symbol('s'))));
		show(() => riot.doWork((...a) => a, 1, (function () { return arguments })()));
		show(() => riot.waitUntilDone(riot.doWork(() => new Set().values())));
	`})
	require.NoError(t, sr.err, sr.stderr.String())
	assert.Equal(t, `DataCloneError true | riot.doWork: args[0].g: a generator cannot be sent to a worker
DataCloneError true | riot.forWork: items[1]: an Array Iterator cannot be sent to a worker
DataCloneError true | riot.doWork: the function (main.js:9:26) → free variable it: a Map Iterator cannot be sent to a worker
DataCloneError true | riot.doWork: args[0]: a Symbol object cannot be sent to a worker
DataCloneError true | riot.doWork: args[1]: an arguments object cannot be sent to a worker
WorkunitError true | workunit ID failed on worker fake-worker: DataCloneError: result: a Set Iterator cannot be sent back to the master
`, sr.stdout.String())
}
