package e2e_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// TestE2E_DictWasm runs the dictionary search of scripts/dict.js and its
// WebAssembly version, scripts/dict-wasm.js, with riot-worker eval
// against riotd and a riot-worker of two slots, and checks that both give
// the same combinations, in the same order.
func TestE2E_DictWasm(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 2})
	tr.WaitFor(t, workers(1))

	runs := [][]string{{"--words", "scripts/testdata/words.txt"}}
	if _, err := os.Stat("/usr/share/dict/words"); err == nil {
		runs = append(runs, []string{"--limit", "600"})
	}
	for _, args := range runs {
		args = append(args, "--all", "1")
		js := bins.RunEval(t, append([]string{"--tracker", tr.Addr(), "scripts/dict.js"}, args...)...)
		require.Equal(t, 0, js.Code, "dict.js %v: %s", args, js)
		// Small chunks: several workunits, each instantiating the module.
		wasm := bins.RunEval(t, append([]string{"--tracker", tr.Addr(), "scripts/dict-wasm.js", "--chunk", "50"}, args...)...)
		require.Equal(t, 0, wasm.Code, "dict-wasm.js %v: %s", args, wasm)
		assert.Equal(t, dictTime.ReplaceAllString(js.Stdout, ""), dictTime.ReplaceAllString(wasm.Stdout, ""), "%v", args)
		assert.Contains(t, wasm.Stdout, "There are ")
		assert.NotContains(t, wasm.Stdout, "There are 0 words.")
		assert.Empty(t, strings.TrimSpace(wasm.Stderr))
	}
}
