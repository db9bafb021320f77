package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freshRuntimes is how many fresh runtimes the determinism tests compare.
const freshRuntimes = 50

// assertOneOrder checks that every run listed the same names in the same
// order, and shows two that differ when they do not.
func assertOneOrder(t *testing.T, what string, runs []string) {
	t.Helper()
	for i, r := range runs {
		if r != runs[0] {
			assert.Failf(t, what+" differs between fresh runtimes",
				"%d of %d runtimes agree with the first\nruntime 0:  %s\nruntime %d: %s",
				count(runs, runs[0]), len(runs), runs[0], i, r)
			return
		}
	}
}

func count(runs []string, s string) int {
	n := 0
	for _, r := range runs {
		if r == s {
			n++
		}
	}
	return n
}

// A workunit sees the globals, console and riot of its runtime in one
// order, whichever fresh runtime runs it: its result must not depend on
// which runtime ran it.
func TestEngine_BindingOrder_Deterministic(t *testing.T) {
	t.Parallel()
	probes := []string{
		"Object.keys(riot)",
		"Object.keys(console)",
		"Object.getOwnPropertyNames(globalThis)",
		"Object.keys(globalThis)",
		"Object.getOwnPropertyNames(riot.worker)",
		"Object.getOwnPropertyNames(performance)",
		"Object.getOwnPropertyNames(URL.prototype)",
		"Object.getOwnPropertyNames(URLSearchParams.prototype)",
		"Object.getOwnPropertyNames(TextDecoder.prototype)",
		"Object.getOwnPropertyNames(Object.getPrototypeOf(crypto))",
	}
	src := "[" + strings.Join(probes, ".join(), ") + ".join()]"
	got := make([][]string, len(probes))
	for range freshRuntimes {
		e, err := New(Options{Slots: 1})
		require.NoError(t, err)
		list := evalValue(t, e, src).([]any)
		for i := range probes {
			got[i] = append(got[i], list[i].(string))
		}
		require.NoError(t, e.Close())
	}
	for i, p := range probes {
		assertOneOrder(t, p, got[i])
	}
}
