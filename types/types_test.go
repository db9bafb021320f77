package types_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jsgpu"
	"github.com/riot-go/riot/types"
)

// What a workunit sees beyond ECMAScript is what riot.d.ts declares: every
// global of a worker's sandbox (with the GPU bindings), every member of
// riot, riot.worker and console.
func TestRiotDTS_DeclaresWhatAWorkunitSees(t *testing.T) {
	e, err := engine.New(engine.Options{Slots: 1, Bindings: []engine.Binding{jsgpu.Binding(nil)}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := e.Eval(context.Background(), `[Object.getOwnPropertyNames(globalThis), Object.getOwnPropertyNames(riot),
		Object.getOwnPropertyNames(riot.worker), Object.getOwnPropertyNames(console)]`)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	lists := v.([]any)
	checkDeclared(t, names(lists[0]), names(lists[1]), append(names(lists[2]), names(lists[3])...))
}

func names(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// checkDeclared fails for each global (beyond ECMAScript's) or member
// that riot.d.ts does not declare.
func checkDeclared(t *testing.T, globals, riotMembers, members []string) {
	t.Helper()
	dts := types.RiotDTS()
	builtin := map[string]bool{}
	for _, k := range goja.New().GlobalObject().Keys() {
		builtin[k] = true
	}
	for _, k := range goja.New().GlobalObject().GetOwnPropertyNames() {
		builtin[k] = true
	}
	for _, g := range globals {
		if builtin[g] || strings.HasPrefix(g, "__riot") {
			continue
		}
		re := regexp.MustCompile(`(?m)^declare (function|const|var|class|namespace) ` + regexp.QuoteMeta(g) + `\b`)
		assert.Regexp(t, re, dts, "riot.d.ts declares the global %s", g)
	}
	for _, m := range append(riotMembers, members...) {
		re := regexp.MustCompile(`(?m)^\s+(readonly\s+)?` + regexp.QuoteMeta(m) + `\??[(<:]`)
		assert.Regexp(t, re, dts, "riot.d.ts declares the member %s", m)
	}
}

func TestRiotDTS_IsEmbedded(t *testing.T) {
	assert.True(t, strings.HasPrefix(types.RiotDTS(), "// riot.d.ts:"))
}
