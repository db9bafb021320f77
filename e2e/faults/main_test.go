package faults_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// bins are riotd and riot-worker, built once by TestMain; read-only
// afterwards.
var bins e2e.Bins

func TestMain(m *testing.M) { os.Exit(e2e.Main(m, &bins)) }

// jobWait bounds each test's job: far more than it needs, so that a hang
// fails instead of running forever.
const jobWait = 3 * time.Minute

// master dials the tracker at addr as a master that reconnects quickly.
func master(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), e2e.DefaultWait)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{
		Name:       "master",
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// durableJob starts what the tests that kill riotd use: a riotd on a
// --data directory (with more flags args), two workers of two slots, and
// a master.
func durableJob(t *testing.T, args ...string) (*e2e.Tracker, *client.Client) {
	t.Helper()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true, Args: args})
	for _, name := range []string{"w1", "w2"} {
		bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: name, Slots: 2})
	}
	return tr, master(t, tr.Addr())
}

// killWhen kills riotd with SIGKILL once received reaches target, starts
// it again on its data, and returns what it restored.
func killWhen(t *testing.T, ctx context.Context, tr *e2e.Tracker, received *atomic.Int64, target int64) e2e.Restored {
	t.Helper()
	err := e2e.CheckFor(ctx, 2*time.Millisecond, func() error {
		if received.Load() < target {
			return errNotYet
		}
		return nil
	})
	require.NoError(t, err, "waiting for %d results", target)
	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Restart(ctx))
	r, err := tr.Restored(ctx)
	require.NoError(t, err)
	return r
}

// squareSpec is workunit i of a job: it sleeps a little (so that the job
// lasts while faults are injected) and returns i, i², and a random nonce
// drawn when it runs (so that a run again would be seen).
func squareSpec(i int, sleep float64) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Name: "square.js",
		Source: fmt.Sprintf("sleep(%g); ({i: %d, sq: %d * %d, nonce: Math.random()})", sleep, i, i, i)}
}

// square is a decoded result of squareSpec.
type square struct {
	i, sq float64
	nonce float64
}

// checkSquare decodes a result document of squareSpec(i) and checks it.
func checkSquare(i int, doc []byte) (square, error) {
	v, err := value.Unmarshal(doc)
	if err != nil {
		return square{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return square{}, fmt.Errorf("workunit %d: result %v is not an object", i, v)
	}
	s := square{}
	s.i, _ = m["i"].(float64)
	s.sq, _ = m["sq"].(float64)
	s.nonce, _ = m["nonce"].(float64)
	if s.i != float64(i) || s.sq != float64(i*i) {
		return s, fmt.Errorf("workunit %d: wrong result %v", i, v)
	}
	return s, nil
}

// collectSquares waits for every call's result, squareSpec(i) for the
// i-th, and counts those lost (the wait failed) and wrong, each also
// reported as a test error.
func collectSquares(t *testing.T, ctx context.Context, calls []*client.Call) (lost, wrong int) {
	t.Helper()
	for i, k := range calls {
		out, err := k.Wait(ctx)
		if err != nil {
			lost++
			t.Errorf("workunit %d: %v", i, err)
			continue
		}
		if _, err := checkSquare(i, out.Result); err != nil {
			wrong++
			t.Error(err)
		}
	}
	return lost, wrong
}

// watcher is a master that speaks the protocol directly, to count what
// the tracker delivers: it watches keys and counts each Finished, so
// that a duplicate the client library would hide is seen.
type watcher struct {
	ws *websocket.Conn

	mu       sync.Mutex
	count    map[workunit.Key]int
	result   map[workunit.Key][]byte
	distinct int
	changed  chan struct{} // closed and replaced on each Finished
	barrier  chan struct{} // closed when the barrier's answer came
	err      error
	done     chan struct{}
}

const barrierReq = 1 << 60

// watch connects to the tracker at addr and watches keys.
func watch(t *testing.T, addr string, keys []workunit.Key) *watcher {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: e2e.DefaultWait}
	ws, resp, err := d.Dial("ws://"+addr+wire.Path, nil)
	require.NoError(t, err)
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	w := &watcher{ws: ws, count: map[workunit.Key]int{}, result: map[workunit.Key][]byte{},
		changed: make(chan struct{}), barrier: make(chan struct{}), done: make(chan struct{})}
	w.send(t, &wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "watcher", Session: "watcher"})
	_, frame, err := ws.ReadMessage()
	require.NoError(t, err)
	msgs, err := wire.Decode(frame)
	require.NoError(t, err)
	require.IsType(t, &wire.Welcome{}, msgs[0])
	go w.read()
	for i := 0; i < len(keys); i += 4096 {
		w.send(t, &wire.Watch{Req: uint64(1 + i), Keys: keys[i:min(i+4096, len(keys))]})
	}
	return w
}

func (w *watcher) send(t *testing.T, msgs ...wire.Msg) {
	t.Helper()
	frame, err := wire.Encode(msgs...)
	require.NoError(t, err)
	require.NoError(t, w.ws.WriteMessage(websocket.BinaryMessage, frame))
}

func (w *watcher) read() {
	defer close(w.done)
	for {
		_, frame, err := w.ws.ReadMessage()
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		msgs, err := wire.Decode(frame)
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		for _, m := range msgs {
			switch m := m.(type) {
			case *wire.Finished:
				if w.count[m.Key] == 0 {
					w.distinct++
				}
				w.count[m.Key]++
				w.result[m.Key] = append([]byte(nil), m.Result...)
				if m.Status != workunit.StatusDone {
					w.err = fmt.Errorf("workunit %s: %s: %v", m.Key.Short(), m.Status, m.Err)
				}
			case *wire.BlobNeed:
				if m.Req == barrierReq {
					close(w.barrier)
				}
			}
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// wait waits until n distinct keys were delivered, then asks the tracker
// for a barrier and waits for its answer, so that a duplicate already on
// its way is counted too. It returns the counts and results by key.
func (w *watcher) wait(t *testing.T, ctx context.Context, n int) (map[workunit.Key]int, map[workunit.Key][]byte) {
	t.Helper()
	for {
		w.mu.Lock()
		distinct, err, changed := w.distinct, w.err, w.changed
		w.mu.Unlock()
		require.NoError(t, err)
		if distinct >= n {
			break
		}
		select {
		case <-changed:
		case <-w.done:
		case <-ctx.Done():
			t.Fatalf("the watcher has %d of %d results: %v", distinct, n, ctx.Err())
		}
	}
	w.send(t, &wire.BlobHave{Req: barrierReq})
	select {
	case <-w.barrier:
	case <-w.done:
		t.Fatalf("the watcher's connection ended: %v", w.err)
	case <-ctx.Done():
		t.Fatalf("no answer to the barrier: %v", ctx.Err())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NoError(t, w.err)
	return w.count, w.result
}

// duplicates counts deliveries beyond the first, by key.
func duplicates(count map[workunit.Key]int) int {
	d := 0
	for _, c := range count {
		d += c - 1
	}
	return d
}

// errJobDone reports a job that finished before its faults were all
// injected.
var errJobDone = errors.New("the job finished before every fault was injected")

// errNotYet is what a CheckFor condition returns until it holds.
var errNotYet = errors.New("not yet")
