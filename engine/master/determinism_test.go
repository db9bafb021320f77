package master

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freshRuntimes is how many fresh master runtimes the test compares.
const freshRuntimes = 50

// assertOneOrder checks that every run listed the same names in the same
// order, and shows two that differ when they do not.
func assertOneOrder(t *testing.T, what string, runs []string) {
	t.Helper()
	for i, r := range runs {
		if r != runs[0] {
			n := 0
			for _, o := range runs {
				if o == runs[0] {
					n++
				}
			}
			assert.Failf(t, what+" differs between fresh runtimes",
				"%d of %d runtimes agree with the first\nruntime 0:  %s\nruntime %d: %s", n, len(runs), runs[0], i, r)
			return
		}
	}
}

// A job script sees riot, console, the globals, its client objects and
// riot.with's objects in one order in every master runtime.
func TestMaster_BindingOrder_Deterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "main.js")
	probes := []string{
		"Object.keys(riot)",
		"Object.keys(console)",
		"Object.getOwnPropertyNames(globalThis)",
		"Object.keys(globalThis)",
		"Object.keys(riot.currentClient())",
		"Object.keys(riot.with({}))",
		"Object.keys(riot.with({gpus: 1}))",
	}
	var src strings.Builder
	for _, p := range probes {
		src.WriteString("console.log(" + p + ".join());\n")
	}
	require.NoError(t, os.WriteFile(script, []byte(src.String()), 0o644))
	ft := newFakeTracker(t, true)
	got := make([][]string, len(probes))
	for range freshRuntimes {
		conn, err := ft.connect(context.Background(), "localhost", 0, "")
		require.NoError(t, err)
		var stdout bytes.Buffer
		require.NoError(t, RunScript(context.Background(), ScriptOptions{Path: script, Conn: conn, Stdout: &stdout}))
		lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
		require.Len(t, lines, len(probes))
		for i, l := range lines {
			got[i] = append(got[i], l)
		}
	}
	for i, p := range probes {
		assertOneOrder(t, p, got[i])
	}
}
