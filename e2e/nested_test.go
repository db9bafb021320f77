package e2e_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Workunits that make workunits, against real riotd and riot-worker
// processes: a recursive fib(20) split down to a cut-off finishes on one
// worker with one slot (each waiting parent gives its slot up), and its
// equal calls are one workunit each (memoized across the cluster).
func TestE2E_NestedFibOneSlot(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "fib-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	res := bins.RunEval(t, "--tracker", tr.Addr(), "scripts/nested-fib.js")
	require.Equal(t, 0, res.Code, res.String())
	assert.Equal(t, "fib(20) = 6765\n", res.Stdout)
	// fib(20) down to fib(10), which fib(12) asks for below the cut-off:
	// eleven keys, each run once however many parents asked for it.
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == 11 })
	assert.Zero(t, st.Workunits.Error, "nothing failed")

	// Run again: answered from memory.
	res = bins.RunEval(t, "--tracker", tr.Addr(), "scripts/nested-fib.js")
	require.Equal(t, 0, res.Code, res.String())
	assert.Equal(t, "fib(20) = 6765\n", res.Stdout)
}

// A tree of workunits three levels deep over two workers, and a child that
// throws: its parent gets the WorkunitError a master gets.
func TestE2E_NestedTreeTwoWorkers(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "tree-a", Slots: 1})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "tree-b", Slots: 1})
	tr.WaitFor(t, workers(2))
	res := bins.RunEval(t, "--tracker", tr.Addr(), "scripts/nested-tree.js")
	require.Equal(t, 0, res.Code, res.String())
	assert.Equal(t, "sum: 499500, workunits: 7\ncaught WorkunitError: RangeError: -2 is negative\n", res.Stdout)
}

// A child that throws and is not caught: the parent fails with the
// child's WorkunitError, which names the child's worker and error, and
// the master's error says so.
func TestE2E_NestedChildThrows(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "throw-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "throw-master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	call, err := m.DoWork(&value.Function{Source: `() => riot.waitUntilDone(riot.doWork(() => { throw new TypeError('child failed'); }))`})
	require.NoError(t, err)
	_, err = call.Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "WorkunitError", werr.Name)
	assert.Regexp(t, `^workunit [0-9a-f]{12} failed on worker throw-w: TypeError: child failed$`, werr.Message)
	assert.Equal(t, "throw-w", werr.Worker)

	// With retries, the child runs three times; the parent sees each
	// attempt in the error.
	retried, err := m.DoWork(&value.Function{Source: `() => {
		try {
			riot.waitUntilDone(riot.with({retries: 2}).doWork(() => { throw new RangeError('again') }));
		} catch (e) {
			return [e.message, e.attempts.map((a) => a.worker + ' ' + a.name + ': ' + a.message)];
		}
	}`})
	require.NoError(t, err)
	out, err := retried.Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	res := v.([]any)
	assert.Regexp(t, `^workunit [0-9a-f]{12} failed 3 attempts, the last on worker throw-w: RangeError: again$`, res[0])
	assert.Equal(t, []any{"throw-w RangeError: again", "throw-w RangeError: again", "throw-w RangeError: again"}, res[1])
}

// Canceling a parent cancels its children: the endless child on the one
// slot is stopped, and the worker is free again.
func TestE2E_NestedCancelParent(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "cancel-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "cancel-master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	parent, err := m.DoWork(&value.Function{Source: `() => riot.waitUntilDone(riot.doWork(() => { for (;;) {} }))`})
	require.NoError(t, err)
	// The parent waits, its slot given up; the child runs in it.
	tr.WaitFor(t, func(s tracker.Status) bool {
		return s.Workunits.Running == 2 && len(s.Workers) == 1 && s.Workers[0].Waiting == 1 && s.Workers[0].Running == 1
	})
	canceled, err := m.Cancel(ctx, parent.Key)
	require.NoError(t, err)
	assert.Equal(t, []workunit.Key{parent.Key}, canceled)
	_, err = parent.Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Canceled, werr.Kind)
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Error == 2 && s.Workunits.Running == 0 })

	res := bins.RunWorker(t, []string{"RIOT_TRACKER=" + tr.Addr()}, "workunits", "--status", "error")
	require.Equal(t, 0, res.Code, res.String())
	assert.Contains(t, res.Stdout, "its parent workunit "+parent.Key.Short()+" was canceled")

	// The endless child was stopped: the slot runs the next workunit.
	again, err := m.DoWork(&value.Function{Source: "() => 42"})
	require.NoError(t, err)
	out, err := again.Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)
}

// Canceling the job from outside (riot-worker cancel) cancels its
// children too: they are the job's workunits.
func TestE2E_NestedCancelJob(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "job-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	ctx := e2e.Context(t, e2e.DefaultWait)
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "job-master", Job: "nested-job",
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	parent, err := m.DoWork(&value.Function{Source: `() => riot.forWork([1, 2], () => { for (;;) {} })`})
	require.NoError(t, err)
	// The parent waits, one child runs, the other waits for the slot.
	tr.WaitFor(t, func(s tracker.Status) bool {
		return s.Workunits.Running >= 2 && s.Workunits.Running+s.Workunits.Waiting == 3
	})
	res := bins.RunWorker(t, []string{"RIOT_TRACKER=" + tr.Addr()}, "cancel", "nested-job")
	require.Equal(t, 0, res.Code, res.String())
	assert.Contains(t, res.Stdout, "3 workunits canceled")
	_, err = parent.Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Canceled, werr.Kind)
	tr.WaitFor(t, func(s tracker.Status) bool {
		return s.Workunits.Error == 3 && s.Workunits.Running == 0 && s.Workunits.Waiting == 0
	})
}

// A lost parent's children are not lost work: the child runs on (here on
// a worker the test plays, the only one with a GPU, which the child asks
// for), its parent's worker is killed, the child finishes and is
// memoized, and the parent's next run, on a new worker, finds its result
// without running it again.
func TestE2E_NestedLostParent(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	a := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "lost-a", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "lost-master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	parent, err := m.DoWork(&value.Function{Source: `() => riot.waitUntilDone(riot.with({gpus: 1}).doWork((x) => x * 2, 21)) + 1`})
	require.NoError(t, err)
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Waiting == 1 && s.Workunits.Running == 1 })

	gw, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "lost-gpu", Role: wire.RoleWorker, Slots: 1,
		GPUs:   []wire.GPU{{Name: "test", Memory: 1 << 30}},
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	gw.Credit(1)
	child, err := gw.NextAssignment(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, child.GPUs)

	// The parent's worker dies while the child runs.
	require.NoError(t, a.Kill())
	tr.WaitFor(t, func(s tracker.Status) bool { return len(s.Workers) == 1 && s.Workunits.Waiting == 1 })
	res, err := value.Marshal(42.0)
	require.NoError(t, err)
	require.NoError(t, gw.Done(child.Lease(), res, nil, 0))
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == 1 })

	// The parent runs again on another worker (the GPU worker asks for
	// no more), and its child is answered from memory.
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "lost-b", Slots: 1})
	out, err := parent.Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 43.0, v)
	assert.Equal(t, "lost-b", out.Worker)
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == 2 })
	assert.Equal(t, uint64(2), st.Completed, "the child ran once, the parent's second run once")
}

// The tracker takes a child only within a lease the submitting worker
// holds: a worker that holds none, or another's, is refused, and nothing
// is stored.
func TestE2E_NestedChildNeedsTheLease(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	ctx := e2e.Context(t, e2e.DefaultWait)
	w, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "no-lease", Role: wire.RoleWorker, Slots: 1,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	spec := &workunit.Spec{Kind: workunit.Eval, Source: "1", Name: "eval"}
	var parent workunit.Key
	parent[0] = 7
	call := w.SubmitChild(wire.Lease{Key: parent, Token: 12345}, spec, workunit.Options{})
	_, err = call.Accepted(ctx)
	require.Error(t, err)
	assert.True(t, wire.IsCode(err, wire.CodeForbidden), "%v", err)
	assert.Contains(t, err.Error(), "the worker holds no such lease")
	st, err := tr.Status(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Workunits.Waiting+st.Workunits.Running+st.Workunits.Done, "nothing stored")
}
