package gputest

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
)

// fakeDriver builds a copy of the FAKE CUDA driver (gpu/testdata/fakecuda.c,
// a test double, not CUDA) into t.TempDir() and opens a gpu.Driver on it
// with the given number of devices, closed when the test ends (after the
// workers it started later, since cleanups run last first). It skips the
// test when gcc is missing.
func fakeDriver(t *testing.T, devices int) *gpu.Driver {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the fake CUDA library")
	}
	src, err := filepath.Abs(filepath.Join("..", "gpu", "testdata", "fakecuda.c"))
	require.NoError(t, err)
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O0", "-Wall", "-Wl,-Bsymbolic",
		"-o", lib, src, "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake CUDA library: %s", out)
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	var set func(key string, value int64) int32
	purego.RegisterLibFunc(&set, h, "fakecuda_set")
	require.Zero(t, set("device_count", int64(devices)))
	drv, err := gpu.Open(
		gpu.WithDriverLibrary(lib),
		gpu.WithLibrary(gpu.CUBLAS, lib),
		gpu.WithLibrary(gpu.CUSOLVER, lib),
		gpu.WithLibrary(gpu.CUSPARSE, lib),
		gpu.WithLibrary(gpu.NVRTC, lib),
		gpu.WithLogger(slog.New(slog.DiscardHandler)),
	)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, drv.Close()) })
	return drv
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// workerSpec says how startWorker starts a worker.
type workerSpec struct {
	name    string
	slots   int
	gpu     *gpu.Driver // nil: no GPUs, as riot-worker --no-gpu
	started func(*client.Assignment)
}

// startWorker runs worker.Run for the tracker at addr in a goroutine and
// returns the name the tracker gave it, once it has asked for work. The
// worker stops when the test ends.
func startWorker(t *testing.T, addr string, ws workerSpec) string {
	t.Helper()
	if ws.slots == 0 {
		ws.slots = 2
	}
	ready := make(chan string, 1)
	opts := worker.Options{
		Tracker: addr,
		Name:    ws.name,
		Slots:   ws.slots,
		Grace:   -1,
		Logger:  testLogger(t),
		Ready:   func(name string) { ready <- name },
		Started: ws.started,
	}
	opts.GPU = ws.gpu
	opts.Client.MinBackoff = 5 * time.Millisecond
	opts.Client.MaxBackoff = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case name := <-ready:
		return name
	case err := <-done:
		t.Fatalf("worker.Run: %v", err)
	case <-time.After(trackertest.DefaultWait):
		t.Fatal("the worker did not start")
	}
	return ""
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runScript runs the job script at path as riot-worker eval does, on the
// tracker at addr (the embedded default when addr is ""), and returns its
// stdout and stderr.
func runScript(t *testing.T, opts job.Options) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb lockedBuffer
	opts.Progress = job.ProgressOff
	opts.Stdout, opts.Stderr = &out, &errb
	opts.Logger = testLogger(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err = job.Run(ctx, opts)
	return out.String(), errb.String(), err
}

// script is the path of scripts/NAME.
func script(name string) string {
	return filepath.Join("..", "scripts", name)
}
