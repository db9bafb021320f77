package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Functions shipped from strict code run strict on the worker: from a
// strict script, from a strict function of a sloppy one, and from a strict
// module the script requires.
func TestMaster_StrictFunctionsRunStrict(t *testing.T) {
	t.Parallel()
	probe := func(name string) string {
		return "() => { try { " + name + " = 1; return 'sloppy' } catch (e) { return e.name } }"
	}
	for name, files := range map[string]map[string]string{
		"strict script":   {"main.js": "'use strict';\nconsole.log(riot.waitUntilDone(riot.doWork(" + probe("u1") + ")));"},
		"strict function": {"main.js": "function f() { 'use strict'; return riot.doWork(" + probe("u2") + ") }\nconsole.log(riot.waitUntilDone(f()));"},
		"strict module": {"main.js": "console.log(require('./m.js')());",
			"m.js": "'use strict';\nmodule.exports = () => riot.waitUntilDone(riot.doWork(" + probe("u3") + "));"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sr := runScript(t, files)
			require.NoError(t, sr.err)
			assert.Equal(t, "ReferenceError\n", sr.stdout.String())
		})
	}
	sloppy := runScript(t, map[string]string{"main.js": "console.log(riot.waitUntilDone(riot.doWork(" + probe("u4") + ")));"})
	require.NoError(t, sloppy.err)
	assert.Equal(t, "sloppy\n", sloppy.stdout.String())
}
