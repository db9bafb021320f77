package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/version"
)

// commandsLine is what a usage error for a word that looks like a command
// says of the commands.
const commandsLine = "the commands are cancel, completion, eval, help, jobs, logs, status, types, version and workunits\nrun 'riot-worker help' for the commands\n"

// A word in HOST's place that looks like a command and does not resolve
// is an unknown command (exit 2), not a tracker to retry for ever. Before,
// only words within two edits of eval and help were.
func TestHostRule_CommandWords(t *testing.T) {
	t.Parallel()
	// A word taken for a host would start a worker: with ctx ended, one
	// that stops at once with status 0.
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, word := range []string{"list", "tyeps", "evl", "hlep", "verison", "completoin", "Status", "LIST", "Jobs",
		"statsu", "jbos", "helm"} {
		code, stdout, stderr := runResolving(canceled, nil, "--log-level", "error", word)
		assert.Equal(t, 2, code, word)
		assert.Empty(t, stdout, word)
		assert.Equal(t, fmt.Sprintf("riot-worker: unknown command %q (nor a tracker host that resolves); ", word)+commandsLine, stderr, word)
	}
	// With flags before it, too.
	code, _, stderr := runResolving(canceled, nil, "--slots", "2", "list")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "list"`)
}

// Words that look like host names are hosts, resolved or not: a worker
// started before the network's names are up waits for its tracker. A
// plain word that resolves is a host too, whatever it is (a worker host
// named status on a LAN).
func TestHostRule_Hosts(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(t.Context())
	cancel() // a worker that starts, and stops at once: the word was a host
	for _, tt := range []struct {
		word     string
		resolves []string
	}{
		{word: "alfred"}, // a plain word near no command: waited for
		{word: "tracker"},
		{word: "server-host"},
		{word: "localhost"},
		{word: "status.lan"},
		{word: "status:2355"},
		{word: "eval.example.org"},
		{word: "[::1]"},
		{word: "ws://status/riot"},
		{word: "127.0.0.1"},
		{word: "tyeps", resolves: []string{"tyeps"}},
		{word: "helm", resolves: []string{"helm"}},
		{word: "list", resolves: []string{"list"}},
	} {
		code, _, stderr := runResolving(canceled, tt.resolves, "--log-level", "error", tt.word)
		assert.Equal(t, 0, code, "%s: %s", tt.word, stderr)
	}
}

func TestLooksLikeCommand_LooksUpOnlyCommandWords(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var looked []string
	lookup := func(_ context.Context, host string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		looked = append(looked, host)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	commands := []string{"completion", "eval", "help", "version"}
	for word, want := range map[string]bool{
		"alfred": false, "node": false, "evaluator": false, "localhost": false, "a.b": false, "": false, "-x": false,
		"list": true, "evl": true, "hlep": true, "ev": true, "Eval": true,
	} {
		assert.Equal(t, want, looksLikeCommand(t.Context(), word, commands, lookup), word)
	}
	assert.ElementsMatch(t, []string{"list", "evl", "hlep", "ev", "Eval"}, looked, "only words that may be commands are looked up")
	assert.Equal(t, 1, editDistance("evl", "eval"))
	assert.Equal(t, 4, editDistance("nope", "help"))
}

func TestVersion(t *testing.T) {
	t.Parallel()
	want := "riot-worker " + version.Read().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}, {"-version"}} {
		code, stdout, stderr := runCmd(t, args...)
		assert.Equal(t, 0, code, "%q: %s", args, stderr)
		assert.Equal(t, want, stdout, "%q", args)
	}
	code, _, stderr := runCmd(t, "version", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `riot-worker version: unknown command "x"`)
	code, stdout, _ := runCmd(t, "help", "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Usage: riot-worker version")
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runCmd(t, "completion", shell)
		require.Equal(t, 0, code, "%s: %s", shell, stderr)
		assert.Contains(t, stdout, "riot-worker", shell)
		assert.Contains(t, stdout, "__complete", shell)
		assert.Greater(t, len(stdout), 1000, shell)
	}
	// What the scripts ask riot-worker when a user presses Tab.
	code, stdout, _ := runCmd(t, "__complete", "")
	require.Equal(t, 0, code)
	for _, c := range []string{"eval", "version", "completion", "help", "types"} {
		assert.Contains(t, "\n"+stdout, "\n"+c+"\t", c)
	}
	code, stdout, _ = runCmd(t, "__complete", "--")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "--slots\t")
	assert.Contains(t, stdout, "--grace\t")
	code, stdout, _ = runCmd(t, "__complete", "eval", "--")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "--tracker\t")
	assert.Contains(t, stdout, "--workers\t")
	code, stdout, _ = runCmd(t, "__complete", "eval", "")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "js\nmjs\ncjs\nts\nmts\ncts\n"), "job scripts: *.js, *.mjs, *.ts files...: %q", stdout)
	code, _, stderr := runCmd(t, "completion", "nosh")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"nosh"`)
	code, stdout, _ = runCmd(t, "completion")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "bash")
}

// The help is GNU-style (--port, not -port), on stdout when asked for, the
// same however it is asked for.
func TestHelp(t *testing.T) {
	t.Parallel()
	code, help, _ := runCmd(t, "help")
	require.Equal(t, 0, code)
	for _, want := range []string{"riot-worker [flags] HOST[:PORT]", "riot-worker version", "riot-worker completion bash|zsh|fish",
		"\n      --port port ", "\n      --slots N ", "\n      --no-gpu ", "\n  -h, --help ", "\n  -v, --version ",
		"(list)", "riot-worker types", "riot-worker status [HOST[:PORT]]", "riot-worker cancel JOB|KEY..."} {
		assert.Contains(t, help, want)
	}
	assert.NotContains(t, help, "\n  -port")
	assert.NotContains(t, help, "[=true|false]")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"alfred", "--help"}} {
		code, stdout, stderr := runCmd(t, args...)
		assert.Equal(t, 0, code, "%q", args)
		assert.Equal(t, help, stdout, "%q", args)
		assert.Empty(t, stderr, "%q", args)
	}
	code, _, stderr := runCmd(t)
	assert.Equal(t, 2, code, "no arguments: bad usage")
	assert.Equal(t, help, stderr, "the help, on stderr")

	code, evalHelp, _ := runCmd(t, "eval", "--help")
	require.Equal(t, 0, code)
	for _, want := range []string{"Usage: riot-worker eval [flags] SCRIPT.js [ARGS...]", "\n      --data DIR ", "\n  -e, --e source ",
		"\n      --tracker HOST[:PORT] ", "\n      --quiet "} {
		assert.Contains(t, evalHelp, want)
	}
	assert.NotContains(t, evalHelp, "--slots")
	for _, args := range [][]string{{"help", "eval"}, {"eval", "-h"}, {"eval", "-help"}} {
		code, stdout, _ := runCmd(t, args...)
		assert.Equal(t, 0, code, "%q", args)
		assert.Equal(t, evalHelp, stdout, "%q", args)
	}
}

// One-dash long flags, which Go's flag package took, still work, before
// and after HOST; after a job script they are the script's.
func TestOneDashFlags(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCmd(t, "eval", "-timeout", "100ms", "-e", "while (true) {}")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "TimeoutError: workunit ran past its time limit of 100ms")
	code, stdout, stderr := runCmd(t, "eval", "-e=6 * 7")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "42\n", stdout)
	script := filepath.Join(t.TempDir(), "args.js")
	require.NoError(t, os.WriteFile(script, []byte("console.log(riot.args.join(' '))\n"), 0o644))
	code, stdout, stderr = runCmd(t, "eval", "-workers=0", "-quiet", script, "-quiet")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "-quiet\n", stdout)
}

// Ctrl-C on eval exits 130.
func TestEval_Interrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	code, _, stderr := runResolving(ctx, nil, "eval", "-e", "while (true) {}")
	assert.Equal(t, 130, code)
	assert.Equal(t, "riot-worker eval: interrupted\n", stderr)
}

func TestJoinWords(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a, b and c", joinWords([]string{"a", "b", "c"}))
	assert.Equal(t, "a", joinWords([]string{"a"}))
}

// riot-worker types prints riot.d.ts as the repository holds it (one
// embedded copy), and takes no arguments.
func TestTypes(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("../../types/riot.d.ts")
	require.NoError(t, err)
	code, stdout, stderr := runCmd(t, "types")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, string(want), stdout)
	assert.Contains(t, stdout, "declare const riot: riot.Riot;")
	code, _, stderr = runCmd(t, "types", "extra")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "extra")
}
