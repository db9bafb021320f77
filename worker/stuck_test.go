package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// TestWorker_StuckWorkunit: a workunit stuck in a built-in call past its
// time limit fails with the time limit, and the worker's only slot goes
// on with the next workunit while the call is still stuck.
func TestWorker_StuckWorkunit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1, MaxStuck: 2, Engine: engine.Options{AbandonAfter: 50 * time.Millisecond}})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	// Backtracks for seconds (longer under the race detector).
	_, err := m.Submit(eval(`/^(a+)+\1b$/.test('a'.repeat(24))`), workunit.Options{Timeout: 100 * time.Millisecond}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)
	assert.Contains(t, werr.Message, "so its runtime was abandoned")

	out, err := m.Submit(eval("'next'"), workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "next", v)
}

// TestWorker_MaxStuck: once MaxStuck workunits are stuck, the worker
// stops, and Run returns ErrStuck.
func TestWorker_MaxStuck(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	w := start(t, tr.Addr(), worker.Options{Name: "w", Slots: 2, MaxStuck: 1, Grace: time.Second,
		Engine: engine.Options{AbandonAfter: 50 * time.Millisecond}})
	m := master(t, tr.Addr())
	_, err := m.Submit(eval(`/^(a+)+\1b$/.test('a'.repeat(24))`), workunit.Options{Timeout: 100 * time.Millisecond}).Wait(ctxFor(t))
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}
	assert.ErrorIs(t, w.err, worker.ErrStuck)
}

// TestWorker_LeaseExpiryStopsStuckWorkunit: a workunit without a time
// limit, stuck in a built-in call past its lease, is revoked by the
// tracker: the worker stops it and abandons it, so that its slot runs
// other work. It fails once it has lost MaxLost deliveries. A regression
// test: the tracker took the lease back without telling the worker, which
// kept the slot stuck, and gave the workunit back to the same worker.
func TestWorker_LeaseExpiryStopsStuckWorkunit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.LeaseTimeout, o.MaxLost = 300*time.Millisecond, 2
	}))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 2, Prefetch: -1, MaxStuck: 10,
		Engine: engine.Options{AbandonAfter: 50 * time.Millisecond}})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	// Backtracks for many minutes.
	_, err := m.Submit(eval(`/^(a+)+\1b$/.test('a'.repeat(33))`), workunit.Options{}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.WorkersLost, werr.Kind, werr.Message)

	// Both slots are free again, long before the stuck calls return.
	// (These two have a time limit, so the short lease does not apply to
	// them: on a loaded machine a fresh runtime's first workunit can take
	// longer than 300 ms.)
	free, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	a := m.Submit(eval("'a'"), workunit.Options{Timeout: 20 * time.Second})
	b := m.Submit(eval("'b'"), workunit.Options{Timeout: 20 * time.Second})
	for _, c := range []*client.Call{a, b} {
		_, err := c.Wait(free)
		require.NoError(t, err)
	}
}
