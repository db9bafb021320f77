package client_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// These tests run the client against the real tracker (trackertest).

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dial(t *testing.T, addr string, opts client.Options) *client.Client {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.MinBackoff = 5 * time.Millisecond
	opts.MaxBackoff = 100 * time.Millisecond
	c, err := client.Dial(ctxFor(t), addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func eval(src string) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval"}
}

// work takes n workunits with WaitForWork and answers each with fn.
func work(t *testing.T, w *client.Client, n int, fn func(*workunit.Spec) (any, error)) {
	t.Helper()
	for range n {
		a, err := w.WaitForWork(ctxFor(t))
		require.NoError(t, err)
		spec, err := a.Decode()
		require.NoError(t, err)
		res, werr := fn(spec)
		require.NoError(t, w.CompleteWorkunit(a, res, werr))
	}
}

func echo(s *workunit.Spec) (any, error) { return s.Source, nil }

func TestClient_SubmitAcceptedFinished(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "master"})
	w := dial(t, tr.Addr(), client.Options{Name: "alfred", Slots: 1})
	assert.Equal(t, "master", m.Name())
	assert.Equal(t, "alfred", w.WhoAmI())

	spec := eval("6 * 7")
	k := m.Submit(spec, workunit.Options{})
	assert.Equal(t, spec.Key(), k.Key)
	acc, err := k.Accepted(ctxFor(t))
	require.NoError(t, err)
	assert.Contains(t, []workunit.Status{workunit.StatusWaiting, workunit.StatusRunning}, acc.Status)

	work(t, w, 1, func(s *workunit.Spec) (any, error) {
		assert.Equal(t, "6 * 7", s.Source)
		return 42, nil
	})
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
	assert.Equal(t, "alfred", out.Worker)
	assert.Equal(t, k.Key, out.Key)
	assert.False(t, out.LastChange.IsZero())
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)

	got, err := m.WaitUntilDone(ctxFor(t), k.Key)
	require.NoError(t, err)
	assert.Equal(t, 42.0, got)
}

func TestClient_Submit_Pipelined10000(t *testing.T) {
	t.Parallel()
	const n = 10000
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	calls := make([]*client.Call, n)
	for i := range calls {
		calls[i] = m.Submit(eval(fmt.Sprint(i)), workunit.Options{})
	}
	ctx := ctxFor(t)
	for i, k := range calls {
		acc, err := k.Accepted(ctx)
		require.NoError(t, err, "submission %d", i)
		require.Equal(t, workunit.StatusWaiting, acc.Status)
	}
	st := tr.Stats(t)
	assert.Equal(t, uint64(n), st.Submitted)
	assert.Equal(t, n, st.Waiting)
}

func TestClient_Memoized(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	k := m.Submit(eval("'x'"), workunit.Options{})
	work(t, w, 1, echo)
	first, err := k.Wait(ctxFor(t))
	require.NoError(t, err)

	again := m.Submit(eval("'x'"), workunit.Options{})
	acc, err := again.Accepted(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, acc.Status, "answered from memory")
	assert.Equal(t, first.Result, acc.Result)
	out, err := again.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
	rec, ok := tr.Lookup(t, k.Key)
	require.True(t, ok)
	assert.Equal(t, 1, rec.Deliveries, "it did not run again")

	// NoCache runs it again.
	nc := m.Submit(eval("'x'"), workunit.Options{NoCache: true})
	work(t, w, 1, func(*workunit.Spec) (any, error) { return "y", nil })
	out, err = nc.Wait(ctxFor(t))
	require.NoError(t, err)
	v, _ := out.Value()
	assert.Equal(t, "y", v)
}

// Equal NoCache submissions made together are workunits of their own: each
// runs and has its own result (they used to share one key, and so one run).
func TestClient_NoCache_EachSubmissionRuns(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	spec := eval("Math.random()")
	calls := make([]*client.Call, 4)
	for i := range calls {
		calls[i] = m.Submit(spec, workunit.Options{NoCache: true})
	}
	assert.Empty(t, spec.Nonce, "the caller's spec is not changed")
	keys := make(map[workunit.Key]bool)
	for _, k := range calls {
		_, err := k.Accepted(ctxFor(t))
		require.NoError(t, err)
		keys[k.Key] = true
	}
	require.Len(t, keys, 4, "four keys")
	n := 0
	work(t, w, 4, func(s *workunit.Spec) (any, error) {
		n++
		assert.Equal(t, "Math.random()", s.Source)
		assert.Len(t, s.Nonce, 16)
		return float64(n), nil
	})
	results := make(map[float64]bool)
	for _, k := range calls {
		out, err := k.Wait(ctxFor(t))
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		results[v.(float64)] = true
	}
	assert.Len(t, results, 4, "four runs, four results")
}

func TestClient_WatchFromTwoClients(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	a := dial(t, tr.Addr(), client.Options{Name: "a"})
	b := dial(t, tr.Addr(), client.Options{Name: "b"})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	key, err := a.AddWorkunit(ctxFor(t), eval("'both'"))
	require.NoError(t, err)

	results := make(chan string, 4)
	var wg sync.WaitGroup
	for _, c := range []*client.Client{a, b, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.WaitUntilDone(ctxFor(t), key)
			assert.NoError(t, err)
			results <- fmt.Sprint(v)
		}()
	}
	b.CallWhenDone(key, func(o *workunit.Outcome, err error) {
		assert.NoError(t, err)
		results <- o.Worker
	})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches >= 2 })
	work(t, w, 1, echo)
	wg.Wait()
	got := []string{<-results, <-results, <-results, <-results}
	assert.ElementsMatch(t, []string{"'both'", "'both'", "'both'", "w"}, got)
}

func TestClient_Info(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	ctx := ctxFor(t)

	out, err := m.Info(ctx, workunit.Key{1})
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusUnknown, out.Status)

	key, err := m.AddWorkunit(ctx, eval("1"))
	require.NoError(t, err)
	out, err = m.WorkunitInfo(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusWaiting, out.Status)

	a, err := w.WaitForWork(ctx)
	require.NoError(t, err)
	require.NoError(t, m.CallWithWorkunitInfo(ctx, key, func(o *workunit.Outcome) {
		assert.Equal(t, workunit.StatusRunning, o.Status)
		assert.Equal(t, "w", o.Worker)
	}))
	require.NoError(t, w.CompleteWorkunit(a, 1, nil))
	require.NoError(t, m.CallWithFinishedWorkunit(ctx, key, func(o *workunit.Outcome) {
		assert.Equal(t, workunit.StatusDone, o.Status)
	}))
	out, err = m.Info(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 1.0, v)
}

func TestClient_Blobs(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Role: wire.RoleWorker, Slots: 1})
	ctx := ctxFor(t)
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	small := []byte("dictionary")
	blobs := map[blob.Hash][]byte{blob.Sum(big): big, blob.Sum(small): small}
	require.NoError(t, m.EnsureBlobs(ctx, blobs))
	require.NoError(t, m.EnsureBlobs(ctx, blobs)) // known: nothing to do
	h, err := m.PutBlob(ctx, small)
	require.NoError(t, err)
	assert.Equal(t, blob.Sum(small), h)

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := w.FetchBlob(ctx, blob.Sum(big))
			assert.NoError(t, err)
			assert.Equal(t, big, got)
		}()
	}
	wg.Wait()
	_, err = w.FetchBlob(ctx, blob.Sum([]byte("nothing")))
	assert.ErrorIs(t, err, blob.ErrNotFound)

	// A second master asks once, and uploads nothing.
	m2 := dial(t, tr.Addr(), client.Options{})
	require.NoError(t, m2.EnsureBlobs(ctx, blobs))
}

func TestClient_WaitForWork_Failed(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "bob", Slots: 1})
	var key workunit.Key
	require.NoError(t, m.CallWithNewWorkunit(ctxFor(t), eval("boom()"), func(k workunit.Key) { key = k }))
	work(t, w, 1, func(*workunit.Spec) (any, error) {
		return nil, &workunit.Error{Kind: workunit.Thrown, Name: "ReferenceError", Message: "boom is not defined",
			Stack: "ReferenceError: boom is not defined\n    at eval:1:1"}
	})
	_, err := m.WaitUntilDone(ctxFor(t), key)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, "bob", werr.Worker)
	assert.Equal(t, key, werr.Key)
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Contains(t, err.Error(), "worker bob: ReferenceError: boom is not defined")

	// A plain Go error is sent as a thrown Error.
	k2 := m.Submit(eval("2"), workunit.Options{})
	work(t, w, 1, func(*workunit.Spec) (any, error) { return nil, errors.New("plain") })
	_, err = k2.Wait(ctxFor(t))
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, "plain", werr.Message)

	// An errored key runs again when submitted again.
	k3 := m.Submit(eval("boom()"), workunit.Options{})
	acc, err := k3.Accepted(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusWaiting, acc.Status)
	work(t, w, 1, func(*workunit.Spec) (any, error) { return "fixed", nil })
	out, err := k3.Wait(ctxFor(t))
	require.NoError(t, err)
	v, _ := out.Value()
	assert.Equal(t, "fixed", v)
}

func TestClient_Return(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w1 := dial(t, tr.Addr(), client.Options{Name: "w1", Slots: 1})
	k := m.Submit(eval("'r'"), workunit.Options{})
	a, err := w1.WaitForWork(ctxFor(t))
	require.NoError(t, err)
	require.NoError(t, w1.Return(a.Lease()))
	w2 := dial(t, tr.Addr(), client.Options{Name: "w2", Slots: 1})
	work(t, w2, 1, echo)
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "w2", out.Worker)
	rec, ok := tr.Lookup(t, k.Key)
	require.True(t, ok)
	assert.Empty(t, rec.LostFrom, "a returned lease is not a lost one")
}

// The tracker restarts on the same data: accepted work is kept, finished
// results too; the clients reconnect, send again what was not answered,
// and watch again what they wait for.
func TestClient_Reconnect_TrackerRestart(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	ctx := ctxFor(t)

	done := m.Submit(eval("'before'"), workunit.Options{})
	work(t, w, 1, echo)
	_, err := done.Wait(ctx)
	require.NoError(t, err)

	pending := m.Submit(eval("'across'"), workunit.Options{})
	_, err = pending.Accepted(ctx)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := m.WaitFor(ctx, pending.Key)
		waited <- err
	}()

	tr.Stop(t)
	// Made while the tracker is down: sent once it is back.
	later := m.Submit(eval("'later'"), workunit.Options{})
	tr.Restart(t)

	work(t, w, 2, echo)
	for _, k := range []*client.Call{pending, later} {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, "w", out.Worker)
	}
	require.NoError(t, <-waited)
	// The result from before the restart is still known.
	out, err := m.Info(ctx, done.Key)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
	assert.True(t, m.Connected())
}

// TestClient_Reconnect_TrackerForgot: a tracker that comes back without
// the workunits it accepted (in memory here; riotd --keep-results forgets
// finished ones) answers the client's watch with "unknown"; the client
// submits the workunit again, and its Call ends with that run.
func TestClient_Reconnect_TrackerForgot(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	k := m.Submit(eval("'again'"), workunit.Options{})
	_, err := k.Accepted(ctx)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := m.WaitFor(ctx, k.Key)
		waited <- err
	}()

	tr.Restart(t) // in memory: it comes back empty
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 1 })
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	out, err := k.Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "'again'", v)
	require.NoError(t, <-waited)
}

// TestClient_DropAcceptedSpecs_Restart: with DropAcceptedSpecs, calls in
// flight when a durable tracker stops (some accepted, their specs dropped,
// some not yet, sent again) all end with their own results once it is
// back: none lost, none answered with another's.
func TestClient_DropAcceptedSpecs_Restart(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	m := dial(t, tr.Addr(), client.Options{Name: "m", DropAcceptedSpecs: true})
	ctx := ctxFor(t)
	const n = 300
	calls := make([]*client.Call, 0, 2*n)
	for i := range n {
		calls = append(calls, m.Submit(eval(fmt.Sprintf("'a%d'", i)), workunit.Options{}))
	}
	_, err := calls[n/2].Accepted(ctx) // some accepted, maybe not all
	require.NoError(t, err)
	tr.Stop(t)
	for i := range n { // made while the tracker is down
		calls = append(calls, m.Submit(eval(fmt.Sprintf("'b%d'", i)), workunit.Options{}))
	}
	tr.Restart(t)
	for _, k := range calls {
		_, err := k.Accepted(ctx)
		require.NoError(t, err)
	}
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, len(calls), echo)
	for i, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		want := fmt.Sprintf("'a%d'", i)
		if i >= n {
			want = fmt.Sprintf("'b%d'", i-n)
		}
		assert.Equal(t, want, v)
	}
}

// TestClient_DropAcceptedSpecs_TrackerForgot: with DropAcceptedSpecs the
// client keeps no spec once the tracker accepted it, so when the tracker
// comes back without the workunit the Call ends with the unknown-key error
// (and is not submitted again); a Call accepted after the restart runs.
func TestClient_DropAcceptedSpecs_TrackerForgot(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m", DropAcceptedSpecs: true})
	ctx := ctxFor(t)
	k := m.Submit(eval("'lost'"), workunit.Options{})
	_, err := k.Accepted(ctx)
	require.NoError(t, err)

	tr.Restart(t) // in memory: it comes back empty
	_, err = k.Wait(ctx)
	require.Error(t, err)
	assert.True(t, wire.IsCode(err, wire.CodeUnknownKey), "%v", err)
	_, known := tr.Lookup(t, k.Key)
	assert.False(t, known, "the forgotten workunit was submitted again")

	// The client goes on working: a new submission runs.
	again := m.Submit(eval("'new'"), workunit.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	out, err := again.Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "'new'", v)
}

// TestClient_Reconnect_TrackerForgot_Refused: a resubmission the tracker
// refuses ends the Call with the refusal.
func TestClient_Reconnect_TrackerForgot_Refused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	limit := 0
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		mu.Lock()
		defer mu.Unlock()
		o.MaxWaitingPerMaster = limit
	}))
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	calls := []*client.Call{m.Submit(eval("1"), workunit.Options{}), m.Submit(eval("2"), workunit.Options{})}
	for _, k := range calls {
		_, err := k.Accepted(ctx)
		require.NoError(t, err)
	}
	mu.Lock()
	limit = 1 // the tracker comes back taking one workunit of this master
	mu.Unlock()
	tr.Restart(t)

	// No worker yet: the first Call to end is the refused one.
	type end struct {
		k   *client.Call
		err error
	}
	ends := make(chan end, 2)
	for _, k := range calls {
		k.OnDone(func(_ *workunit.Outcome, err error) { ends <- end{k, err} })
	}
	first := <-ends
	require.Error(t, first.err)
	assert.ErrorContains(t, first.err, "the tracker no longer knew it, and refused it again")
	assert.True(t, wire.IsCode(first.err, wire.CodeLimit), "%v", first.err)
	refused := first.k

	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	for _, k := range calls {
		if k != refused {
			_, err := k.Wait(ctx)
			require.NoError(t, err)
		}
	}
}

func TestClient_DoWorkEval(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	k := m.DoWorkEval("3 + 5")
	fn, err := m.DoWork(&value.Function{Source: "(x) => x"}, 7)
	require.NoError(t, err)
	work(t, w, 2, func(s *workunit.Spec) (any, error) {
		if s.Kind == workunit.Eval {
			return 8, nil
		}
		return 7, nil
	})
	for k, want := range map[workunit.Key]float64{k.Key: 8, fn.Key: 7} {
		v, err := m.WaitUntilDone(ctxFor(t), k)
		require.NoError(t, err)
		assert.Equal(t, want, v)
	}
}

func TestClient_Close_FailsWaits(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	k := m.Submit(eval("1"), workunit.Options{})
	_, err := k.Accepted(ctxFor(t))
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := k.Wait(ctxFor(t))
		errc <- err
	}()
	require.NoError(t, m.Close())
	assert.ErrorIs(t, <-errc, client.ErrClosed)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Connections == 0 })
}

func TestClient_ForWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	type result struct {
		got []any
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := client.ForWork(ctxFor(t), m, 5, func(i int) *workunit.Spec { return eval(fmt.Sprint(i)) })
		done <- result{got, err}
	}()
	work(t, w, 5, func(s *workunit.Spec) (any, error) { return s.Source + "!", nil })
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, []any{"0!", "1!", "2!", "3!", "4!"}, r.got)
}
