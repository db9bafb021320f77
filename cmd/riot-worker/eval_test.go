package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/tracker/trackertest"
)

// runCmd runs riot-worker's command line args in process, with a resolver
// that resolves no name (the tests use no network), and returns the exit
// status and what it printed.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runResolving(t.Context(), nil, args...)
}

// runResolving runs args as runCmd does, with a resolver that resolves
// the names in hosts alone.
func runResolving(ctx context.Context, hosts []string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	lookup := func(_ context.Context, host string) ([]string, error) {
		if slices.Contains(hosts, host) {
			return []string{"192.0.2.1"}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	code = cli.Execute(ctx, newCommand(lookup), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEval_Prints(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src, stdout, stderr string
	}{
		{"3 + 5", "8\n", ""},
		{"'riot'", "\"riot\"\n", ""},
		{"({a: [1, null]})", "{\"a\":[1,null]}\n", ""},
		{"console.log('x'); new Set([1])", "[local] x\nSet(1) { 1 }\n", ""},
		{"console.error('x'); 1", "1\n", "[local] x\n"},
		{"undefined", "undefined\n", ""},
	} {
		code, stdout, stderr := runCmd(t, "eval", "-e", tt.src)
		assert.Equal(t, 0, code, tt.src)
		assert.Equal(t, tt.stdout, stdout, tt.src)
		assert.Equal(t, tt.stderr, stderr, tt.src)
	}
}

func TestEval_Failures(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCmd(t, "eval", "-e", "function f() {\n  throw new TypeError('bad input')\n}\nf()")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "TypeError: bad input\n    at f (eval:2:9)\n    at eval:4:2\n", stderr)

	code, _, stderr = runCmd(t, "eval", "--timeout", "100ms", "-e", "while (true) {}")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "TimeoutError: workunit ran past its time limit of 100ms")

	code, _, stderr = runCmd(t, "eval")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-e SOURCE is required")

	code, _, stderr = runCmd(t, "evl")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "evl"`)
	assert.Equal(t, 1, editDistance("evl", "eval"))
	assert.Equal(t, 4, editDistance("nope", "help"))

	code, stdout, _ = runCmd(t, "eval", "--help")
	assert.Equal(t, 0, code)
	_ = stdout
}

// TestEval_Process runs the real binary, as a user does.
func TestEval_Process(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "riot-worker")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	out, err := exec.Command(bin, "eval", "-e", "[1, 2, 3].map(x => x * 10)").Output()
	require.NoError(t, err)
	assert.Equal(t, "[10,20,30]\n", string(out))

	cmd := exec.Command(bin, "eval", "-e", "null.x")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "TypeError: Cannot read property 'x' of")
}

// Usage errors come first, with one line that points to --help, not below
// the whole help.
func TestEval_UsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"eval"}, "riot-worker eval: a SCRIPT.js or -e SOURCE is required\n"},
		{[]string{"eval", "-e", "1", "job.js"}, "riot-worker eval: give -e SOURCE or a SCRIPT.js, not both (unexpected arguments: [\"job.js\"])\n"},
		{[]string{"eval", "--timeout", "5", "-e", "1"}, "riot-worker eval: invalid argument \"5\" for \"--timeout\" flag: 5 what? Give a unit, as in 5s or 5m\n"},
		{[]string{"eval", "--workers", "x", "job.js"}, "riot-worker eval: invalid argument \"x\" for \"--workers\" flag: want a whole number\n"},
		{[]string{"eval", "--nope", "job.js"}, "riot-worker eval: unknown flag: --nope\n"},
		{[]string{"eval", "-nope", "job.js"}, "riot-worker eval: unknown flag: --nope\n"},
		{[]string{"eval", "--timeout"}, "riot-worker eval: flag needs an argument: --timeout\n"},
		{[]string{"eval", "--tracker", "h", "--workers", "4", "job.js"}, "riot-worker eval: --workers configures the embedded default, and --tracker h sends the work to a tracker's workers instead: " +
			"leave out --workers, or leave out the tracker to run on the embedded default\n"},
	} {
		code, stdout, stderr := runCmd(t, tt.args...)
		assert.Equal(t, 2, code, "%q", tt.args)
		assert.Empty(t, stdout, "%q", tt.args)
		assert.Equal(t, tt.want+"run 'riot-worker eval --help' for the flags\n", stderr, "%q", tt.args)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--grace", "5", "h"}, "riot-worker: invalid argument \"5\" for \"--grace\" flag: 5 what? Give a unit, as in 5s or 5m\n"},
		{[]string{"--blob-cache", "lots", "h"}, "riot-worker: invalid argument \"lots\" for \"--blob-cache\" flag: want a size such as 64MiB, 512KiB or 1048576 (bytes)\n"},
		{[]string{"-grace", "5", "h"}, "riot-worker: invalid argument \"5\" for \"--grace\" flag: 5 what? Give a unit, as in 5s or 5m\n"},
		{[]string{"--slots", "2"}, "riot-worker: the tracker's HOST is required\n"},
		{[]string{"--slots", "0", "h"}, "riot-worker: --slots 0: want at least 1\n"},
		{[]string{"--max-stuck", "0", "h"}, "riot-worker: --max-stuck 0: want at least 1\n"},
		{[]string{"-slots=0", "h"}, "riot-worker: --slots 0: want at least 1\n"},
		{[]string{"h", "-slots", "0"}, "riot-worker: --slots 0: want at least 1\n"},
		{[]string{"a", "b"}, "riot-worker: one HOST, not 2: [\"a\" \"b\"]\n"},
		{[]string{"http://h"}, "riot-worker: tracker address \"http://h\": scheme \"http\", want ws or wss: give HOST, HOST:PORT, ws://HOST[:PORT] or wss://HOST[:PORT]\n"},
	} {
		code, _, stderr := runCmd(t, tt.args...)
		assert.Equal(t, 2, code, "%q", tt.args)
		assert.Equal(t, tt.want+"run 'riot-worker --help' for the flags\n", stderr, "%q", tt.args)
	}
}

// Arguments after the script go to it, flags too: cobra must not take
// them; those that look like eval's own flags get a warning, since they
// were likely meant for eval. (More in job's TestFlags_FlagsAfterScript.)
func TestEval_FlagsAfterScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "args.js")
	require.NoError(t, os.WriteFile(script, []byte("console.log(JSON.stringify(riot.args))\n"), 0o644))
	code, stdout, stderr := runCmd(t, "eval", "-workers", "0", "--quiet", script, "--workers", "0", "--words", "w.txt",
		"-timeout=1s", "--help", "-h", "--version", "-e", "x", "--", "--quiet")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `["--workers","0","--words","w.txt","-timeout=1s","--help","-h","--version","-e","x","--","--quiet"]`+"\n", stdout)
	assert.Equal(t, "riot-worker eval: warning: --workers, -timeout=1s, -e come after the script, so they go to the script (riot.args), not to eval: "+
		"eval's flags go before the script, as in riot-worker eval [flags] "+script+" [ARGS...]\n", stderr)

	code, stdout, stderr = runCmd(t, "eval", "--workers", "0", script, "--words", "w.txt", "--limit", "2")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, `["--words","w.txt","--limit","2"]`+"\n", stdout)
	assert.Empty(t, stderr, "the script's own flags")
}

// A tracker that is not there: the message says where, and what to do.
func TestEval_NoTracker(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	script := filepath.Join(t.TempDir(), "job.js")
	require.NoError(t, os.WriteFile(script, []byte("console.log(1)\n"), 0o644))
	for _, args := range [][]string{
		{"eval", "--tracker", addr, "-e", "1"},
		{"eval", "--tracker", addr, script},
	} {
		code, _, stderr := runCmd(t, args...)
		assert.Equal(t, 1, code, "%q", args)
		assert.Regexp(t, `^riot-worker eval: connecting to the tracker at `+regexp.QuoteMeta(addr)+`: .*connection refused; `+
			`is riotd running there\? \(start it with riotd, or leave out --tracker and \$RIOT_TRACKER to use the embedded default\)\n$`, stderr, "%q", args)
	}
}

// --timeout is the time limit of every workunit a job script submits that
// sets none, through a tracker and on the embedded default.
func TestEval_ScriptTimeout(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), "spinner")
	script := filepath.Join(t.TempDir(), "spin.js")
	require.NoError(t, os.WriteFile(script, []byte("riot.waitUntilDone(riot.doWork(() => { for (;;) {} }));\n"), 0o644))
	for _, args := range [][]string{
		{"eval", "--quiet", "--tracker", tr.Addr(), "--timeout", "50ms", script},
		{"eval", "--quiet", "--workers", "1", "--timeout", "50ms", script},
	} {
		code, _, stderr := runCmd(t, args...)
		assert.Equal(t, 1, code, "%q", args)
		assert.Contains(t, stderr, "TimeoutError: workunit ran past its time limit of 50ms", "%q", args)
	}
}

// A job script that does not parse is reported without the instrumenting
// pass's own prefix.
func TestEval_ScriptSyntaxError(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "syntax.js")
	require.NoError(t, os.WriteFile(script, []byte("riot.doWork(() => {\n  return (1;\n})\n"), 0o644))
	code, _, stderr := runCmd(t, "eval", "--workers", "0", script)
	assert.Equal(t, 1, code)
	assert.Equal(t, "SyntaxError: syntax.js:2:12: Unexpected token ;\n", stderr)
}
