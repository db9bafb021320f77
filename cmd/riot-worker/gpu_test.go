package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
)

// buildFakeCUDA builds the FAKE CUDA driver and libraries
// (gpu/testdata/fakecuda.c: a test double, not CUDA) into t.TempDir() and
// returns the environment that makes riot-worker load it in place of
// libcuda.so.1 and the libraries, with one device. It skips the test when
// gcc is missing.
func buildFakeCUDA(t *testing.T) []string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the fake CUDA library")
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "gpu", "testdata", "fakecuda.c"))
	require.NoError(t, err)
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O0", "-Wall", "-Wl,-Bsymbolic",
		"-o", lib, src, "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake CUDA library: %s", out)
	return []string{
		"RIOT_CUDA_LIBRARY=" + lib,
		"RIOT_CUBLAS_LIBRARY=" + lib,
		"RIOT_CUSOLVER_LIBRARY=" + lib,
		"RIOT_CUSPARSE_LIBRARY=" + lib,
		"RIOT_NVRTC_LIBRARY=" + lib,
		"FAKECUDA_DEVICE_COUNT=1",
	}
}

// gpuWorkerProcess starts `riot-worker ARGS...` with env added, returns
// once it has logged that it is ready, and stops it with SIGTERM when the
// test ends; stop returns its stderr once it has exited with status 0.
func gpuWorkerProcess(t *testing.T, bin string, env []string, args ...string) (stop func() string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr lockedWriter
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() string {
		t.Helper()
		if !stopped {
			stopped = true
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-exited:
				require.NoError(t, err, stderr.String())
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("riot-worker did not stop on SIGTERM")
			}
		}
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	stderr.waitFor(t, `msg="worker: ready"`)
	return stop
}

// TestWorker_ProcessGPU runs two riot-worker processes with the fake
// driver found through RIOT_CUDA_LIBRARY: one offers its device, the other
// runs with --no-gpu. Their hellos say so (the tracker's status), their
// logs say what they found, and a job script run with riot-worker eval
// --tracker sends its {gpus: 1} work only to the one with the device.
func TestWorker_ProcessGPU(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the fake driver is built for Linux")
	}
	bin := binary(t)
	env := buildFakeCUDA(t)
	tr := trackertest.Start(t, trackertest.LogLevel(slog.LevelWarn))
	stopGPU := gpuWorkerProcess(t, bin, env, "--name", "gpu", "--slots", "2", tr.Addr())
	stopCPU := gpuWorkerProcess(t, bin, env, "--name", "cpu", "--slots", "2", "--no-gpu", tr.Addr())
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 2 })

	st, err := tr.Server().Status(t.Context())
	require.NoError(t, err)
	gpus := map[string]int{}
	for _, w := range st.Workers {
		gpus[w.Name] = w.GPUs
	}
	assert.Equal(t, map[string]int{"gpu": 1, "cpu": 0}, gpus)

	dir := t.TempDir()
	job := filepath.Join(dir, "job.js")
	require.NoError(t, os.WriteFile(job, []byte(`
		const where = () => [riot.worker.name, riot.worker.gpus, deviceInfo().name];
		console.log(JSON.stringify(riot.forWork([1, 2, 3, 4, 5, 6], (i) => where(), {gpus: 1})));`), 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "eval", "--quiet", "--tracker", tr.Addr(), job)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var got [][]any
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Len(t, got, 6)
	for _, g := range got {
		assert.Equal(t, []any{"gpu", []any{0.0}, "Fake Device 0"}, g)
	}

	logs := stopGPU()
	assert.Contains(t, logs, `msg="worker: GPU" device=0 name="Fake Device 0" memory="1.0 GiB"`)
	assert.Contains(t, logs, `gpus=1`)
	logs = stopCPU()
	assert.Contains(t, logs, `msg="riot-worker: GPUs disabled (--no-gpu)"`)
	assert.NotContains(t, logs, "Fake Device")
}

// A riot-worker whose driver cannot be loaded logs why, offers no device,
// and works on.
func TestWorker_ProcessNoDriver(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	tr := trackertest.Start(t, trackertest.LogLevel(slog.LevelWarn))
	missing := filepath.Join(t.TempDir(), "libmissing.so")
	stop := gpuWorkerProcess(t, bin, []string{"RIOT_CUDA_LIBRARY=" + missing}, "--name", "nodrv", "--slots", "1", tr.Addr())
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 1 })
	logs := stop()
	assert.Contains(t, logs, `msg="worker: no GPUs" why="gpu: cuda unavailable: cannot load the CUDA driver`)
	assert.Contains(t, logs, missing)
	assert.Contains(t, logs, `gpus=0`)
}

// lockedWriter is a bytes.Buffer safe for a process's writes and the
// test's reads, which can wait for a text to appear.
type lockedWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on each write
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
	return n, err
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor blocks until the text written so far contains s, failing the
// test after a minute.
func (w *lockedWriter) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		w.mu.Lock()
		if strings.Contains(w.b.String(), s) {
			w.mu.Unlock()
			return
		}
		if w.changed == nil {
			w.changed = make(chan struct{})
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%q did not appear in:\n%s", s, w.String())
		}
	}
}
