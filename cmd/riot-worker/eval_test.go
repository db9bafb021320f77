package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
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
		{"console.log('x'); new Set([1])", "Set(1) { 1 }\n", "[local] x\n"},
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
		{[]string{"eval", "--timeout", "5", "-e", "1"}, "riot-worker eval: invalid value \"5\" for flag -timeout: 5 what? Give a unit, as in 5s or 5m\n"},
		{[]string{"eval", "--workers", "x", "job.js"}, "riot-worker eval: invalid value \"x\" for flag -workers: want a whole number\n"},
		{[]string{"eval", "--nope", "job.js"}, "riot-worker eval: flag provided but not defined: -nope\n"},
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
		{[]string{"--grace", "5", "h"}, "riot-worker: invalid value \"5\" for flag -grace: 5 what? Give a unit, as in 5s or 5m\n"},
		{[]string{"--blob-cache", "lots", "h"}, "riot-worker: invalid value \"lots\" for flag -blob-cache: want a size such as 64MiB, 512KiB or 1048576 (bytes)\n"},
		{[]string{"--slots", "2"}, "riot-worker: the tracker's HOST is required\n"},
	} {
		code, _, stderr := runCmd(t, tt.args...)
		assert.Equal(t, 2, code, "%q", tt.args)
		assert.Equal(t, tt.want+"run 'riot-worker --help' for the flags\n", stderr, "%q", tt.args)
	}
}

// Arguments after the script go to it; those that look like eval's own
// flags get a warning, since they were likely meant for eval.
func TestEval_FlagsAfterScript(t *testing.T) {
	t.Parallel()
	var warn bytes.Buffer
	f, err := parseEvalFlags([]string{"--workers", "1", "job.js", "--workers", "0", "--words", "w.txt", "-timeout=1s", "--", "--quiet"}, &warn)
	require.NoError(t, err)
	assert.Equal(t, 1, f.workers)
	assert.Equal(t, []string{"--workers", "0", "--words", "w.txt", "-timeout=1s", "--", "--quiet"}, f.scriptArgs, "passed on")
	assert.Equal(t, "riot-worker eval: warning: --workers, -timeout=1s come after the script, so they go to the script (riot.args), not to eval: "+
		"eval's flags go before the script, as in riot-worker eval [flags] job.js [ARGS...]\n", warn.String())

	warn.Reset()
	_, err = parseEvalFlags([]string{"job.js", "--words", "w.txt", "--limit", "2"}, &warn)
	require.NoError(t, err)
	assert.Empty(t, warn.String(), "the script's own flags")
}

func TestEvalFlags_Units(t *testing.T) {
	t.Parallel()
	f, err := parseEvalFlags([]string{"--timeout", "1d", "job.js"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, f.timeout)
	w, err := parseWorkerFlags([]string{"--timeout", "5m", "--grace", "0", "--blob-cache", "1GiB", "h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, w.timeout)
	assert.Zero(t, w.grace)
	assert.Equal(t, 1<<30, w.cache)
	w, err = parseWorkerFlags([]string{"h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, worker.DefaultGrace, w.grace)
	assert.Equal(t, worker.DefaultBlobCacheBytes, w.cache)
	var usage bytes.Buffer
	_, err = parseWorkerFlags([]string{"--help"}, &usage)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, usage.String(), "(default 30s)")
	assert.Contains(t, usage.String(), "(default 512MiB)")
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
