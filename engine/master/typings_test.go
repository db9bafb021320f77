package master

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/types"
)

// What a job script sees beyond ECMAScript is what riot.d.ts declares:
// every global, every member of riot, of riot.with(...), of a client and
// of console.
func TestTypings_DeclareWhatAJobScriptSees(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const names = (o) => Object.getOwnPropertyNames(o);
		console.log(JSON.stringify([names(globalThis), names(riot).concat(names(riot.with({}))),
			names(riot.currentClient()).concat(names(console))]));
	`})
	require.NoError(t, sr.err, sr.stderr.String())
	var lists [3][]string
	require.NoError(t, json.Unmarshal([]byte(sr.stdout.String()), &lists))
	dts := types.RiotDTS()
	builtin := map[string]bool{}
	for _, k := range goja.New().GlobalObject().GetOwnPropertyNames() {
		builtin[k] = true
	}
	for _, g := range lists[0] {
		if builtin[g] || strings.HasPrefix(g, "__riot") {
			continue
		}
		assert.Regexp(t, `(?m)^declare (function|const|var|class|namespace) `+regexp.QuoteMeta(g)+`\b`, dts, "riot.d.ts declares the global %s", g)
	}
	for _, m := range append(lists[1], lists[2]...) {
		assert.Regexp(t, `(?m)^\s+(readonly\s+)?`+regexp.QuoteMeta(m)+`\??[(<:]`, dts, "riot.d.ts declares the member %s", m)
	}
}
