package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
)

// startMetricsWorker runs riot-worker with --metrics-listen and args for
// the tracker at addr, with the environment less GOGC and GOMEMLIMIT plus
// env, and returns where it serves its metrics once it is ready.
func startMetricsWorker(t *testing.T, addr string, env []string, args ...string) string {
	t.Helper()
	args = append(append([]string{"--slots", "1", "--metrics-listen", "127.0.0.1:0", "--log-format", "json"}, args...), addr)
	cmd := exec.Command(binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var metricsAddr string
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &rec), lines.Text())
		if strings.HasPrefix(rec.Msg, "worker: metrics and probes listening") {
			metricsAddr = rec.Addr
		}
		if rec.Msg == "worker: ready" {
			break
		}
	}
	require.NotEmpty(t, metricsAddr, "no metrics address in the log")
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return metricsAddr
}

// goGCSettings scrapes the worker's GC percent and soft memory limit from
// its metrics (go_gc_gogc_percent, go_gc_gomemlimit_bytes).
func goGCSettings(t *testing.T, metricsAddr string) (percent, limit float64) {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	read := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(b)
		require.NotNil(t, m, "no %s in the metrics", name)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	return read("go_gc_gogc_percent"), read("go_gc_gomemlimit_bytes")
}

// TestWorker_GCPacing: riot-worker sets its soft memory limit to
// --memory-limit and, once workunits of many masters left their idle
// runtimes and the collector ran, a GC percent over Go's 100; with GOGC
// and GOMEMLIMIT set it leaves both as they say.
func TestWorker_GCPacing(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())

	paced := startMetricsWorker(t, tr.Addr(), nil, "--memory-limit", "1GiB")
	percent, limit := goGCSettings(t, paced)
	assert.Equal(t, float64(1<<30), limit, "the soft limit is --memory-limit")
	assert.GreaterOrEqual(t, percent, 100.0)

	// Forty masters, each a realm with an idle runtime on the worker after
	// its workunit; then one that allocates enough for collections.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run := func(name, source string, args ...any) {
		m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: name})
		require.NoError(t, err)
		defer m.Close()
		k, err := m.DoWork(&value.Function{Source: source}, args...)
		require.NoError(t, err)
		_, err = k.Wait(ctx)
		require.NoError(t, err, name)
	}
	for i := range 40 {
		run(fmt.Sprintf("gcpace-%d", i), "(i) => i + 1", i)
	}
	for {
		run("gcpace-alloc", "(n) => { let a = []; for (let i = 0; i < n; i++) a.push({i}); return a.length }", 200000)
		if percent, _ = goGCSettings(t, paced); percent > 100 {
			break
		}
		require.NoError(t, ctx.Err(), "the GC percent stayed at 100")
	}
	assert.LessOrEqual(t, percent, 400.0)

	user := startMetricsWorker(t, tr.Addr(), []string{"GOGC=50", "GOMEMLIMIT=300MiB"}, "--memory-limit", "1GiB", "--name", "gcpace-user")
	percent, limit = goGCSettings(t, user)
	assert.Equal(t, 50.0, percent, "GOGC, as the user set it")
	assert.Equal(t, float64(300<<20), limit, "GOMEMLIMIT, as the user set it")
}
