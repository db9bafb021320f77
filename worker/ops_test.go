package worker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// logWatch is a slog.Handler that passes records on and counts them by
// message, so that a test waits for a log line (an event) rather than for
// time to pass.
type logWatch struct {
	next  slog.Handler
	state *logWatchState
}

type logWatchState struct {
	mu      sync.Mutex
	counts  map[string]int
	attrs   map[string]map[string]string // the last record's attributes, by message
	changed chan struct{}                // closed and replaced at each record
}

func newLogWatch(t *testing.T) *logWatch {
	return &logWatch{
		next:  slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}),
		state: &logWatchState{counts: map[string]int{}, attrs: map[string]map[string]string{}, changed: make(chan struct{})},
	}
}

func (h *logWatch) Enabled(context.Context, slog.Level) bool { return true }

func (h *logWatch) Handle(ctx context.Context, r slog.Record) error {
	s := h.state
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	s.mu.Lock()
	s.counts[r.Message]++
	s.attrs[r.Message] = attrs
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return h.next.Handle(ctx, r)
}

func (h *logWatch) WithAttrs(as []slog.Attr) slog.Handler {
	return &logWatch{next: h.next.WithAttrs(as), state: h.state}
}

func (h *logWatch) WithGroup(name string) slog.Handler {
	return &logWatch{next: h.next.WithGroup(name), state: h.state}
}

// wait returns the attributes of the last record with message msg once
// there have been n of them.
func (h *logWatch) wait(t *testing.T, msg string, n int) map[string]string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		s := h.state
		s.mu.Lock()
		got, attrs, ch := s.counts[msg], s.attrs[msg], s.changed
		s.mu.Unlock()
		if got >= n {
			return attrs
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no %d log lines %q (%d)", n, msg, got)
		}
	}
}

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// metricValue returns the value of series (name{labels}, as exposed) in a
// Prometheus text exposition.
func metricValue(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	t.Fatalf("no series %s in\n%s", series, exposition)
	return 0
}

func TestWorker_MetricsAndProbes(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	addr := tr.Addr()
	tr.Stop(t) // down at first: the worker dials and waits

	logs := newLogWatch(t)
	listening := make(chan net.Addr, 1)
	ready := make(chan string, 1)
	opts := worker.WithMetricsListening(worker.Options{Tracker: addr, Slots: 2, MetricsListen: "127.0.0.1:0",
		Logger: slog.New(logs), Ready: func(name string) { ready <- name }}, func(a net.Addr) { listening <- a })
	opts.Engine.MemoryLimit = 1 << 30
	opts.Client.MinBackoff = 5 * time.Millisecond
	opts.Client.MaxBackoff = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	var base string
	select {
	case a := <-listening:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("worker.Run: %v", err)
	}

	// Before the tracker is up: alive, not ready, not connected.
	code, body := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "not ready: not connected yet: dialing the tracker "+addr)
	_, m := get(t, base+"/metrics")
	assert.Zero(t, metricValue(t, m, "riot_worker_connected"))
	assert.Equal(t, 2.0, metricValue(t, m, "riot_worker_slots"))

	tr.Restart(t)
	name := <-ready
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "ready: connected to the tracker as "+name)

	mc := master(t, tr.Addr())
	v, err := mc.WaitUntilDone(ctxFor(t), mc.DoWorkEval("6 * 7").Key)
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)
	_, err = mc.Submit(eval("throw new TypeError('no')"), workunit.Options{}).Wait(ctxFor(t))
	require.Error(t, err)
	// Each workunit's debug line comes after it is counted.
	line := logs.wait(t, "worker: workunit finished", 2)
	assert.Equal(t, "thrown", line["outcome"])
	assert.Equal(t, "TypeError: no", line["error"])

	_, m = get(t, base+"/metrics")
	for series, want := range map[string]float64{
		`riot_worker_workunits_total{outcome="done"}`:   1,
		`riot_worker_workunits_total{outcome="thrown"}`: 1,
		`riot_worker_eval_seconds_count`:                2,
		`riot_worker_slots`:                             2,
		`riot_worker_slots_busy`:                        0,
		`riot_worker_connected`:                         1,
		`riot_worker_memory_limit_bytes`:                1 << 30,
		`riot_worker_gpus`:                              0,
		`riot_worker_stuck_workunits`:                   0,
		`riot_worker_abandoned_workunits_total`:         0,
	} {
		assert.Equal(t, want, metricValue(t, m, series), series)
	}
	assert.Positive(t, metricValue(t, m, "riot_worker_heap_bytes"))
	// The window it sizes itself: at least its slots and 2 a slot.
	assert.GreaterOrEqual(t, metricValue(t, m, "riot_worker_window"), float64(2+2*worker.DefaultPrefetchPerSlot))
	// The credit-to-work latency it measured (or assumes), within its clamp.
	lat := metricValue(t, m, "riot_worker_credit_latency_seconds")
	assert.GreaterOrEqual(t, lat, worker.MinPrefetchLatency.Seconds())
	assert.LessOrEqual(t, lat, worker.MaxPrefetchLatency.Seconds())
	assert.Positive(t, metricValue(t, m, "go_goroutines"), "Go's metrics too")

	// The tracker goes away: still alive, no longer ready.
	tr.Stop(t)
	logs.wait(t, "client: connection lost; reconnecting", 1)
	code, body = get(t, base+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Contains(t, body, "the connection to the tracker was lost; reconnecting")
	code, _ = get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	_, m = get(t, base+"/metrics")
	assert.Zero(t, metricValue(t, m, "riot_worker_connected"))

	// Run closes the server as it returns.
	cancel()
	require.NoError(t, <-done)
	done <- nil // for the cleanup
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "the metrics server is closed")
}

func TestWorker_DebugListen(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	logs := newLogWatch(t)
	start(t, tr.Addr(), worker.Options{DebugListen: "127.0.0.1:0", Logger: slog.New(logs)})
	addr := logs.wait(t, "debug server listening (Go's profiler: go tool pprof http://ADDR/debug/pprof/profile)", 1)["addr"]
	code, body := get(t, "http://"+addr+"/debug/pprof/cmdline")
	assert.Equal(t, http.StatusOK, code, body)
}

func TestWorker_MetricsListen_Taken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = worker.Run(ctxFor(t), worker.Options{Tracker: "127.0.0.1:1", MetricsListen: ln.Addr().String(), Logger: logger(t)})
	assert.ErrorContains(t, err, "worker: --metrics-listen: ")
}
