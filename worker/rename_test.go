package worker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// A worker whose name was taken while it was away (the tracker restarted,
// and another connection came back first) is renamed by the tracker on
// its reconnect: from then on its workunits see the new name as
// riot.worker.name, the name masters see, and its logs say it.
func TestWorker_RenamedOnReconnect(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	gate := newGateProxy(t, tr.Addr())
	logs := newRecorder()
	w := start(t, gate.Addr(), worker.Options{Name: "foo", Slots: 1, Logger: slog.New(logs)})
	require.Equal(t, "foo", w.name)

	before := master(t, tr.Addr())
	v, err := before.WaitUntilDone(ctxFor(t), before.DoWorkEval("riot.worker.name").Key)
	require.NoError(t, err)
	assert.Equal(t, "foo", v)

	// The worker cannot come back until the gate opens: a master named
	// foo is the first to connect to the restarted tracker, and takes the
	// name.
	gate.Close()
	tr.Restart(t)
	m, err := client.Dial(ctxFor(t), tr.Addr(), client.Options{Name: "foo", Logger: logger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	require.Equal(t, "foo", m.Name())
	gate.Open()

	out, err := m.Submit(eval("riot.worker.name"), workunit.Options{}).Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "foo-2", out.Worker, "the tracker renamed the worker")
	v, err = out.Value()
	require.NoError(t, err)
	assert.Equal(t, "foo-2", v, "riot.worker.name is the name masters see")

	require.NoError(t, w.stop(t))
	renames := logs.find("worker: renamed by the tracker")
	require.Len(t, renames, 1, "the rename is logged once")
	assert.Equal(t, map[string]string{"worker": "foo-2", "old": "foo", "new": "foo-2"}, renames[0])
	stopping := logs.find("worker: stopping")
	require.Len(t, stopping, 1)
	assert.Equal(t, "foo-2", stopping[0]["worker"], "the worker's logs say its new name")
}

// gateProxy forwards TCP connections to a tracker. While it is closed it
// holds the connections it accepts, forwarding them once it opens again:
// a test keeps a worker away from the tracker with it, with no timing.
type gateProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	open  chan struct{} // closed while the gate is open
	conns map[net.Conn]struct{}
}

// newGateProxy starts an open gate to target on 127.0.0.1; it stops when
// the test ends.
func newGateProxy(t *testing.T, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &gateProxy{ln: ln, target: target, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.open)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, stop)
			}()
		}
	}()
	t.Cleanup(func() {
		close(stop)
		_ = ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// Addr is the address to dial instead of the tracker's.
func (p *gateProxy) Addr() string { return p.ln.Addr().String() }

// Close holds the connections accepted from now on.
func (p *gateProxy) Close() {
	p.mu.Lock()
	p.open = make(chan struct{})
	p.mu.Unlock()
}

// Open forwards the held connections, and those to come.
func (p *gateProxy) Open() {
	p.mu.Lock()
	close(p.open)
	p.mu.Unlock()
}

// track remembers c, to close it when the test ends; it returns false when
// the test has ended.
func (p *gateProxy) track(c net.Conn, stop <-chan struct{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-stop:
		_ = c.Close()
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *gateProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// serve waits for the gate to be open, then forwards c to the target
// until either side closes.
func (p *gateProxy) serve(c net.Conn, stop <-chan struct{}) {
	if !p.track(c, stop) {
		return
	}
	defer p.untrack(c)
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
	case <-stop:
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up, stop) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	// One side closed: close both, which ends the other copy.
	_ = c.Close()
	_ = up.Close()
	<-done
}

// recorder is a slog.Handler that keeps every record's message and
// attributes (those of Logger.With included), as text.
type recorder struct {
	attrs []slog.Attr
	log   *recordLog // shared by the handlers made from one newRecorder
}

func newRecorder() *recorder { return &recorder{log: &recordLog{}} }

type recordLog struct {
	mu      sync.Mutex
	records []record
}

type record struct {
	msg   string
	attrs map[string]string
}

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	rec := record{msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.log.mu.Lock()
	h.log.records = append(h.log.records, rec)
	h.log.mu.Unlock()
	return nil
}

func (h *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recorder{attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...), log: h.log}
}

func (h *recorder) WithGroup(string) slog.Handler { return h }

// find returns the attributes of the records with message msg.
func (h *recorder) find(msg string) []map[string]string {
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	var out []map[string]string
	for _, r := range h.log.records {
		if r.msg == msg {
			out = append(out, r.attrs)
		}
	}
	return out
}
