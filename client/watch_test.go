package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/workunit"
)

// Calls of one key share its watch (the first Call holds it): a second
// Submit, Watch, WaitFor and CallWhenDone of a key still outstanding all
// end with its one run, and the tracker runs it once.
func TestClient_OneKey_ManyWaiters(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	first := m.Submit(eval("'shared'"), workunit.Options{})
	second := m.Submit(eval("'shared'"), workunit.Options{})
	require.Equal(t, first.Key, second.Key)
	watched := m.Watch(first.Key)
	for _, k := range []*client.Call{first, second} {
		acc, err := k.Accepted(ctx)
		require.NoError(t, err)
		assert.Equal(t, workunit.StatusWaiting, acc.Status)
		assert.Equal(t, k.Key, acc.Key)
		assert.False(t, acc.LastChange.IsZero(), "the accepted outcome keeps its time")
		assert.False(t, k.Finished())
	}
	acc, err := watched.Accepted(ctx)
	require.NoError(t, err)
	assert.Nil(t, acc, "a Watch's Call has no acknowledgement")

	waited := make(chan error, 1)
	go func() {
		_, err := m.WaitFor(ctx, first.Key)
		waited <- err
	}()
	called := make(chan *workunit.Outcome, 2)
	m.CallWhenDone(first.Key, func(out *workunit.Outcome, _ error) { called <- out })
	first.OnDone(func(out *workunit.Outcome, _ error) { called <- out })

	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	for _, k := range []*client.Call{first, second, watched} {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		assert.Equal(t, "'shared'", v)
		assert.True(t, k.Finished())
		assert.False(t, k.FromMemory())
	}
	require.NoError(t, <-waited)
	for range 2 {
		assert.Equal(t, "w", (<-called).Worker)
	}
	rec, ok := tr.Lookup(t, first.Key)
	require.True(t, ok)
	assert.Equal(t, 1, rec.Deliveries, "it ran once")
}

// A submission that joins a running workunit is accepted with the
// worker that runs it.
func TestClient_Accepted_Running(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	ctx := ctxFor(t)
	first := m.Submit(eval("'run'"), workunit.Options{})
	a, err := w.WaitForWork(ctx)
	require.NoError(t, err)

	other := dial(t, tr.Addr(), client.Options{Name: "other"})
	joined := other.Submit(eval("'run'"), workunit.Options{})
	acc, err := joined.Accepted(ctx)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusRunning, acc.Status)
	assert.Equal(t, "w", acc.Worker)
	assert.False(t, acc.LastChange.IsZero())

	require.NoError(t, w.CompleteWorkunit(a, "done", nil))
	for _, k := range []*client.Call{first, joined} {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		v, _ := out.Value()
		assert.Equal(t, "done", v)
	}
}

// Two Calls of one key, both acknowledged, outlive a tracker that comes
// back without them (in memory): the client submits the key again, once,
// and both Calls end with that run.
func TestClient_Reconnect_TrackerForgot_SharedKey(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	calls := []*client.Call{
		m.Submit(eval("'twice'"), workunit.Options{Retries: 2}),
		m.Submit(eval("'twice'"), workunit.Options{Retries: 2}),
	}
	for _, k := range calls {
		_, err := k.Accepted(ctx)
		require.NoError(t, err)
	}
	tr.Restart(t)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 1 })
	rec, ok := tr.Lookup(t, calls[0].Key)
	require.True(t, ok)
	assert.Equal(t, 2, rec.Options.Retries, "submitted again with its options")
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	for _, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		v, _ := out.Value()
		assert.Equal(t, "'twice'", v)
	}
	st := tr.Stats(t)
	assert.Equal(t, uint64(1), st.Submitted, "submitted again once")
}

// Many goroutines wait for many Calls at once, while results arrive:
// each gets its own result (run with -race).
func TestClient_ConcurrentWaits(t *testing.T) {
	t.Parallel()
	const n = 200
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	calls := make([]*client.Call, n)
	for i := range calls {
		calls[i] = m.DoWorkEval(fmt.Sprint(i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i, k := range calls {
		wg.Add(3)
		go func() {
			defer wg.Done()
			out, err := k.Wait(ctx)
			if err == nil {
				var v any
				if v, err = out.Value(); err == nil && v != fmt.Sprint(i) {
					err = assert.AnError
				}
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := k.Accepted(ctx)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := m.WaitFor(ctx, k.Key)
			errs <- err
		}()
	}
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, n, echo)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// A wait whose context ends returns at once, and the Call still ends
// with its result.
func TestClient_Wait_ContextEnds(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	k := m.Submit(eval("'later'"), workunit.Options{})
	ctx, cancel := context.WithCancel(ctxFor(t))
	cancel()
	_, err := k.Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
}

// The callbacks of one key's outcome run in the order they were given,
// whether on a Call (OnDone) or on the key (CallWhenDone).
func TestClient_OneKey_CallbackOrder(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	order := make(chan string, 4)
	first := m.Submit(eval("'order'"), workunit.Options{})
	first.OnDone(func(*workunit.Outcome, error) { order <- "first" })
	m.CallWhenDone(first.Key, func(*workunit.Outcome, error) { order <- "key" })
	second := m.Submit(eval("'order'"), workunit.Options{})
	second.OnDone(func(*workunit.Outcome, error) { order <- "second" })
	m.CallWhenDone(first.Key, func(*workunit.Outcome, error) { order <- "key again" })
	for _, k := range []*client.Call{first, second} {
		_, err := k.Accepted(ctx)
		require.NoError(t, err)
	}
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, echo)
	var got []string
	for range 4 {
		got = append(got, <-order)
	}
	assert.Equal(t, []string{"first", "key", "second", "key again"}, got)
}
