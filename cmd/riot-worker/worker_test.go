package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
)

func TestWorkerFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		tracker string
		err     string
	}{
		{args: []string{"alfred"}, tracker: "alfred"},
		{args: []string{"--port", "1234", "--name", "worker-name", "server-host"}, tracker: "server-host:1234"},
		{args: []string{"server-host", "--slots", "3"}, tracker: "server-host"},
		{args: []string{"alfred:99"}, tracker: "alfred:99"},
		{args: []string{"--port", "99", "alfred:99"}, tracker: "alfred:99"},
		{args: []string{"--port", "98", "alfred:99"}, err: "the port is given twice"},
		{args: []string{"--port", "7", "::1"}, tracker: "[::1]:7"},
		{args: []string{"ws://alfred:5/riot"}, tracker: "ws://alfred:5/riot"},
		{args: []string{"--port", "7", "ws://alfred"}, err: "--port does not go with a URL"},
		{args: nil, err: "HOST is required"},
		{args: []string{""}, err: "HOST is empty (is $RIOT_TRACKER set"},
		{args: []string{":2355"}, err: `":2355" names no host`},
		{args: []string{"a", "b"}, err: "one HOST"},
		{args: []string{"--slots", "0", "a"}, err: "--slots 0"},
	} {
		f, err := parseWorkerFlags(tt.args, io.Discard)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, "%q", tt.args)
			continue
		}
		require.NoError(t, err, "%q", tt.args)
		assert.Equal(t, tt.tracker, f.tracker, "%q", tt.args)
	}
	f, err := parseWorkerFlags([]string{"--name", "n", "--slots", "3", "--prefetch", "1", "--grace", "5s",
		"--timeout", "1m", "--memory-limit", "1000", "h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "n", f.name)
	assert.Equal(t, 3, f.slots)
	assert.Equal(t, 1, f.prefetch)
	assert.Equal(t, 5*time.Second, f.grace)
	assert.Equal(t, time.Minute, f.timeout)
	assert.Equal(t, uint64(1000), f.memory)
}

func TestRun_Usage(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCmd(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "riot-worker [flags] HOST[:PORT]")
	assert.Contains(t, stdout, "riot-worker eval [flags] SCRIPT.js [ARGS...]")
	assert.Contains(t, stdout, "riot-worker eval [flags] -e SOURCE")
	code, _, stderr := runCmd(t, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "--grace")
	code, _, stderr = runCmd(t, "--slots", "2")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "HOST is required")
	code, _, stderr = runCmd(t, "eval", "--tracker", "h:1", "--memory-limit", "9", "-e", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "give it to the workers")
}

// startWorker runs an in-process worker for the tracker at addr.
func startWorker(t *testing.T, addr, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{Tracker: addr, Name: name, Slots: 1,
			Logger: slog.New(slog.DiscardHandler), Ready: func(string) { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("worker: %v", err)
	}
}

// binDir holds the riot-worker binary that the tests build once.
var binDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "riot-worker-test") })

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := binDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// buildBinary builds riot-worker once per test binary run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "riot-worker")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &exec.Error{Name: string(out), Err: err}
	}
	return bin, nil
})

func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	return bin
}

// TestEval_Tracker runs `riot-worker eval --tracker ADDR -e SOURCE` as a
// user does, against a tracker with an in-process worker.
func TestEval_Tracker(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), "evaluator")

	out, err := exec.Command(bin, "eval", "--tracker", tr.Addr(), "-e", "3 + 5").Output()
	require.NoError(t, err)
	assert.Equal(t, "8\n", string(out))

	cmd := exec.Command(bin, "eval", "-e", "console.log('hello'); new Map([['a', 1]])")
	cmd.Env = append(os.Environ(), "RIOT_TRACKER="+tr.Addr())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "Map(1) { 'a' => 1 }\n", string(out))
	assert.Equal(t, "[evaluator] hello\n", stderr.String())

	cmd = exec.Command(bin, "eval", "--tracker", tr.Addr(), "-e", "function f() {\n  throw new TypeError('bad input')\n}\nf()")
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, "worker evaluator: TypeError: bad input\n    at f (eval:2:9)\n    at eval:4:2\n", stderr.String())
}

// The in-process path of run, through a tracker.
func TestEval_TrackerInProcess(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), "inproc")
	code, stdout, stderr := runCmd(t, "eval", "--tracker", tr.Addr(), "-e", "[1, 2].map(x => x + 1)")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "[2,3]\n", stdout)
	code, _, stderr = runCmd(t, "eval", "--tracker", tr.Addr(), "--timeout", "50ms", "-e", "while (true) {}")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "worker inproc: TimeoutError: workunit ran past its time limit of 50ms")
}

// TestWorker_Process runs `riot-worker HOST` as a process: it works, and
// stops on SIGTERM with status 0.
func TestWorker_Process(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	bin := binary(t)
	tr := trackertest.Start(t)
	cmd := exec.Command(bin, "--name", "proc", "--slots", "2", "--log-level", "warn", tr.Addr())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer m.Close()
	out, err := m.DoWorkEval("riot.worker.name + ' ' + (6 * 7)").Wait(ctx)
	require.NoError(t, err)
	v, _ := out.Value()
	assert.Equal(t, "proc 42", v)
	assert.Equal(t, "proc", out.Worker)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, stderr.String())
	case <-ctx.Done():
		t.Fatal("riot-worker did not stop on SIGTERM")
	}
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 0 })
}

func TestMemoryLimitFlag(t *testing.T) {
	t.Parallel()
	total, totalErr := sysmem.Total()
	parseWorker := func(args ...string) (uint64, error) {
		f, err := parseWorkerFlags(append(args, "h"), io.Discard)
		if err != nil {
			return 0, err
		}
		return f.memory, nil
	}
	parseEval := func(args ...string) (uint64, error) {
		f, err := parseEvalFlags(append(args, "-e", "1"), io.Discard)
		if err != nil {
			return 0, err
		}
		return f.memory, nil
	}
	for name, parse := range map[string]func(...string) (uint64, error){"worker": parseWorker, "eval": parseEval} {
		n, err := parse()
		require.NoError(t, err, name)
		if totalErr == nil {
			assert.Equal(t, total*defaultMemoryLimit/100, n, "%s: the default is %d%% of the machine", name, defaultMemoryLimit)
		} else {
			assert.Zero(t, n, "%s: no limit where the machine's memory cannot be read", name)
		}
		for arg, want := range map[string]uint64{"none": 0, "0": 0, "2GiB": 2 << 30, "1000": 1000, "512M": 512 << 20} {
			n, err := parse("--memory-limit", arg)
			require.NoError(t, err, "%s --memory-limit %s", name, arg)
			assert.Equal(t, want, n, "%s --memory-limit %s", name, arg)
		}
		_, err = parse("--memory-limit", "lots")
		assert.ErrorContains(t, err, `memory limit "lots": want a size`, name)
		if totalErr == nil {
			n, err = parse("--memory-limit", "50%")
			require.NoError(t, err, name)
			assert.Equal(t, total/2, n, name)
		}
	}
}

func TestEval_MemoryLimitWithTracker(t *testing.T) {
	t.Parallel()
	// The default limit is for this process and does not stand in the
	// way of a tracker; one given on the command line is a mistake there.
	_, err := parseEvalFlags([]string{"--tracker", "h:1", "-e", "1"}, io.Discard)
	require.NoError(t, err)
	_, err = parseEvalFlags([]string{"--tracker", "h:1", "job.js"}, io.Discard)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"--tracker", "h:1", "--memory-limit", "1GiB", "-e", "1"},
		{"--tracker", "h:1", "--memory-limit", "none", "job.js"},
	} {
		_, err = parseEvalFlags(args, io.Discard)
		assert.ErrorContains(t, err, "--memory-limit applies in process only", "%q", args)
	}
}

func TestEval_CancelOnInterruptFlag(t *testing.T) {
	t.Parallel()
	f, err := parseEvalFlags([]string{"--tracker", "h:1", "--cancel-on-interrupt", "job.js"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, f.cancelInt)
	_, err = parseEvalFlags([]string{"--cancel-on-interrupt", "job.js"}, io.Discard)
	assert.ErrorContains(t, err, "--cancel-on-interrupt needs --tracker")
	_, err = parseEvalFlags([]string{"--tracker", "h:1", "--cancel-on-interrupt", "-e", "1"}, io.Discard)
	assert.ErrorContains(t, err, "--cancel-on-interrupt is for job scripts")
}

func TestAutoIntFlags(t *testing.T) {
	t.Parallel()
	f, err := parseWorkerFlags([]string{"h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, -1, f.prefetch, "unset: the worker sizes its prefetch")
	f, err = parseWorkerFlags([]string{"--prefetch", "0", "h"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 0, f.prefetch)
	_, err = parseWorkerFlags([]string{"--prefetch", "-1", "h"}, io.Discard)
	assert.ErrorContains(t, err, "--prefetch -1: want 0 or more")
	_, err = parseWorkerFlags([]string{"--prefetch", "x", "h"}, io.Discard)
	assert.ErrorContains(t, err, `invalid value "x" for flag -prefetch: want a whole number`)

	e, err := parseEvalFlags([]string{"job.js"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, -1, e.workers, "unset: one slot per CPU")
	e, err = parseEvalFlags([]string{"--workers", "0", "job.js"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 0, e.workers)
	_, err = parseEvalFlags([]string{"--workers", "-2", "job.js"}, io.Discard)
	assert.ErrorContains(t, err, "--workers -2: want 0 or more")

	var usage bytes.Buffer
	_, err = parseWorkerFlags([]string{"--help"}, &usage)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.NotContains(t, usage.String(), "(default -1)")
	assert.Contains(t, usage.String(), "(default 80%)")
}

// TestHelp_NoTokenShown: --help never prints $RIOT_TOKEN's value, which
// is still the token's default.
func TestHelp_NoTokenShown(t *testing.T) {
	t.Setenv("RIOT_TOKEN", "secret-0123456789abcdef")
	for _, args := range [][]string{{"--help"}, {"eval", "--help"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run(t.Context(), args, &stdout, &stderr), "%q", args)
		assert.NotContains(t, stdout.String()+stderr.String(), "secret-0123456789abcdef", "%q", args)
		assert.Contains(t, stdout.String()+stderr.String(), "(default: $RIOT_TOKEN)", "%q", args)
	}
	f, err := parseWorkerFlags([]string{"alfred"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "secret-0123456789abcdef", f.token)
	e, err := parseEvalFlags([]string{"-e", "1"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "secret-0123456789abcdef", e.token)
}
