package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
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
