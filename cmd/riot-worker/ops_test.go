package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/trackertest"
)

// TestWorker_ProcessMetricsAndProbes runs `riot-worker --metrics-listen
// --debug-listen HOST` as a process: it serves its metrics, probes and
// profiler on the addresses its JSON log gives, and stops on SIGTERM.
func TestWorker_ProcessMetricsAndProbes(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	bin := binary(t)
	tr := trackertest.Start(t, trackertest.Quiet())
	cmd := exec.Command(bin, "--slots", "2", "--metrics-listen", "127.0.0.1:0", "--debug-listen", "127.0.0.1:0",
		"--log-format", "json", tr.Addr())
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	// Read the log up to "worker: ready", noting the two addresses.
	var metricsAddr, debugAddr string
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &rec), lines.Text())
		switch {
		case strings.HasPrefix(rec.Msg, "worker: metrics and probes listening"):
			metricsAddr = rec.Addr
		case strings.HasPrefix(rec.Msg, "debug server listening"):
			debugAddr = rec.Addr
		}
		if rec.Msg == "worker: ready" {
			break
		}
	}
	require.NotEmpty(t, metricsAddr, "no metrics address in the log")
	require.NotEmpty(t, debugAddr, "no debug address in the log")
	logDone := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stderr); close(logDone) }()

	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("http://" + metricsAddr + "/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, _ = get("http://" + metricsAddr + "/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body = get("http://" + metricsAddr + "/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "\nriot_worker_slots 2\n")
	assert.Contains(t, body, "\nriot_worker_connected 1\n")
	code, _ = get("http://" + debugAddr + "/debug/pprof/cmdline")
	assert.Equal(t, http.StatusOK, code)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- cmd.Wait() }() // Wait after the last read of the pipe
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("riot-worker did not stop on SIGTERM")
	}
}

func TestWorker_MetricsListenBadAddress(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCmd(t, "--metrics-listen", "9090", "h")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--metrics-listen "9090": want HOST:PORT or :PORT, such as :9090`)
}
