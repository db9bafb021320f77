package e2e_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// TestHarness_Lifecycle: the process handles do what they say: SIGTERM
// stops riotd and riot-worker with status 0, SIGKILL ends them at once,
// Restart brings them back on the same address and name, and a worker
// reconnects to a tracker that came back.
func TestHarness_Lifecycle(t *testing.T) {
	t.Parallel()
	ctx := e2e.Context(t, e2e.DefaultWait)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	addr := tr.Addr()
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, addr)
	w := bins.StartWorker(t, addr, e2e.WorkerOptions{Name: "life", Slots: 1})
	assert.Equal(t, "life", w.Name())
	tr.WaitFor(t, workers(1))

	code, err := tr.Stop(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, code, "riotd exits 0 after SIGTERM")
	require.NoError(t, tr.Restart(ctx))
	assert.Equal(t, addr, tr.Addr(), "same address after a restart")
	tr.WaitFor(t, workers(1)) // the worker reconnected by itself

	require.NoError(t, w.Kill())
	code, ok := w.ExitCode()
	require.True(t, ok)
	assert.Equal(t, -1, code, "killed by a signal")
	tr.WaitFor(t, workers(0))
	require.NoError(t, w.Restart(ctx))
	assert.Equal(t, "life", w.Name())
	tr.WaitFor(t, workers(1))

	code, err = w.Stop(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, code, "riot-worker exits 0 after SIGTERM")
	assert.Positive(t, w.CountLogAfter(0, regexp.MustCompile(`msg="worker: stopping"`)))

	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Restart(ctx))
	r, err := tr.Restored(ctx)
	require.NoError(t, err)
	assert.Equal(t, e2e.Restored{}, r)
	m, err := tr.Metrics(ctx)
	require.NoError(t, err)
	assert.Contains(t, m, `riot_bytes_total{direction="in"}`)
}

// TestHarness_BadFlags: a riotd that exits at once fails LaunchTracker
// with what it said, and the exit status is kept.
func TestHarness_BadFlags(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), e2e.DefaultWait)
	defer cancel()
	tr, err := e2e.LaunchTracker(ctx, bins, e2e.TrackerOptions{Args: []string{"--no-such-flag"}})
	require.Error(t, err)
	assert.Nil(t, tr)
	assert.Contains(t, err.Error(), "exited before")

	p := e2e.NewProcess("riotd", bins.Riotd, []string{"--no-such-flag"}, nil, "")
	require.NoError(t, p.Start())
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, code, "riotd exits 2 for bad flags")
	assert.Contains(t, p.Log(), "no-such-flag")
	_, err = p.WaitLog(ctx, regexp.MustCompile(`never printed`))
	assert.ErrorContains(t, err, "exited before")
}

// TestHarness_WaitStatusDeadline: WaitStatus gives up when its context
// ends and says what the status was.
func TestHarness_WaitStatusDeadline(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := tr.WaitStatus(ctx, func(tracker.Status) bool { return false })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting 0")
}
