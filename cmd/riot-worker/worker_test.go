package main

import (
	"bytes"
	"context"
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
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
)

func TestRun_Usage(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCmd(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "riot-worker [flags] HOST[:PORT]")
	assert.Contains(t, stdout, "riot-worker eval [flags] SCRIPT.js [ARGS...]")
	assert.Contains(t, stdout, "riot-worker eval [flags] -e SOURCE")
	code, stdout, _ = runCmd(t, "--help") // help on request goes to stdout
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "--grace")
	code, _, stderr := runCmd(t, "--slots", "2")
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
	// console.log goes to stdout, as Node's does, before the value.
	assert.Regexp(t, `^\[evaluator [0-9a-f]{12}\] hello\nMap\(1\) \{ 'a' => 1 \}\n$`, string(out))
	assert.Empty(t, stderr.String())

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

// The help lists the flags with their defaults, GNU-style: --slots
// works out its default at run time and prints none of its own.
func TestHelp_Defaults(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCmd(t, "--help")
	assert.Equal(t, 0, code)
	assert.NotContains(t, stdout, "(default -1)")
	assert.Contains(t, stdout, "(default 80%)")
	assert.Contains(t, stdout, "(default 30s)")
	assert.Contains(t, stdout, "(default 512MiB)")
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
	// (That the token is still read from $RIOT_TOKEN: worker's and job's
	// TestFlags_TokenAndTLS.)
}
