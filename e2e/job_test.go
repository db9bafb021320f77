package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// fnSpec is the spec client.DoWork submits for fn(args...): a fn workunit.
func fnSpec(t *testing.T, src string, args ...any) *workunit.Spec {
	t.Helper()
	payload, err := value.Encoder{Root: "args"}.Encode(append([]any{&value.Function{Source: src}}, args...))
	require.NoError(t, err)
	return &workunit.Spec{Kind: workunit.Fn, Name: "fn", Payload: payload}
}

// workers waits until the tracker has n workers connected.
func workers(n int) func(tracker.Status) bool {
	return func(s tracker.Status) bool { return len(s.Workers) == n }
}

// TestE2E_TenThousandWorkunits: 10,000 workunits, submitted pipelined by a
// Go client master, through one riotd and two riot-worker processes:
// every result is right, and both workers took part.
func TestE2E_TenThousandWorkunits(t *testing.T) {
	t.Parallel()
	const n = 10_000
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w1 := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 2})
	w2 := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w2", Slots: 2})
	tr.WaitFor(t, workers(2))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)

	fn := &value.Function{Source: "(i, n) => [i * 3 + 1, riot.worker.name]"}
	calls := make([]*client.Call, n)
	for i := range calls {
		k, err := m.DoWork(fn, i, n)
		require.NoError(t, err)
		calls[i] = k
	}
	by := map[string]int{}
	for i, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err, "workunit %d", i)
		v, err := out.Value()
		require.NoError(t, err, "workunit %d", i)
		pair, ok := v.([]any)
		require.True(t, ok, "workunit %d: result %#v", i, v)
		require.Len(t, pair, 2)
		require.Equal(t, float64(3*i+1), pair[0], "workunit %d", i)
		require.Equal(t, out.Worker, pair[1], "workunit %d: the outcome names the worker that ran it", i)
		by[out.Worker]++
	}
	assert.Equal(t, n, by[w1.Name()]+by[w2.Name()], "results by worker: %v", by)
	assert.Positive(t, by[w1.Name()], "results by worker: %v", by)
	assert.Positive(t, by[w2.Name()], "results by worker: %v", by)
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == n })
	assert.EqualValues(t, n, st.Completed)
	assert.Zero(t, st.Failed)
}

// TestE2E_KillWorker: a worker killed with SIGKILL in the middle of its
// workunits loses them to another worker, which finishes them; the master
// hears of each exactly once, and the dead worker's finished result stays.
func TestE2E_KillWorker(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	victim := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "victim", Slots: 2})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)

	// One workunit the victim finishes before it dies.
	before := m.DoWorkEval("riot.worker.name")
	out, err := before.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, victim.Name(), out.Worker)

	// Four that block on the victim (two in its slots, two prefetched) and
	// return at once anywhere else.
	const n = 4
	fn := &value.Function{Source: "(victim, i) => { if (riot.worker.name === victim) sleep(600); return [riot.worker.name, i]; }"}
	var mu sync.Mutex
	heard := map[workunit.Key]int{}
	finished := make(chan *workunit.Outcome, 2*n)
	calls := make([]*client.Call, n)
	for i := range calls {
		k, err := m.DoWork(fn, victim.Name(), i)
		require.NoError(t, err)
		k.OnDone(func(o *workunit.Outcome, err error) {
			mu.Lock()
			heard[k.Key]++
			mu.Unlock()
			if err == nil {
				finished <- o
			}
		})
		calls[i] = k
	}
	tr.WaitFor(t, func(s tracker.Status) bool {
		return len(s.Workers) == 1 && s.Workers[0].Busy == n && s.Workunits.Running == n
	})
	for _, k := range calls {
		info, err := m.Info(ctx, k.Key)
		require.NoError(t, err)
		require.Equal(t, workunit.StatusRunning, info.Status)
		require.Equal(t, victim.Name(), info.Worker)
	}

	rescuer := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "rescuer", Slots: 2})
	tr.WaitFor(t, workers(2))
	mark := tr.Mark()
	require.NoError(t, victim.Kill())

	for i, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err, "workunit %d", i)
		require.Equal(t, rescuer.Name(), out.Worker, "workunit %d", i)
		v, err := out.Value()
		require.NoError(t, err)
		require.Equal(t, []any{rescuer.Name(), float64(i)}, v)
	}
	// Everything the tracker had to say has arrived once it answers a
	// round trip; the callbacks run in order on one goroutine, so wait
	// for all n of them.
	require.NoError(t, m.Sync(ctx))
	for range n {
		select {
		case <-finished:
		case <-ctx.Done():
			t.Fatalf("waiting for OnDone: %v", ctx.Err())
		}
	}
	require.NoError(t, m.Sync(ctx))
	mu.Lock()
	for _, k := range calls {
		assert.Equal(t, 1, heard[k.Key], "workunit %s: finished heard %d times", k.Key.Short(), heard[k.Key])
	}
	mu.Unlock()
	assert.Empty(t, finished, "an outcome came more than once")

	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == n+1 })
	assert.EqualValues(t, n+1, st.Completed, "each workunit completed once")
	assert.Zero(t, st.Failed)
	lost := regexp.MustCompile(`"msg":"worker lost: its workunits go back to the queue","conn":"` + victim.Name() + `".*"leases":4`)
	assert.Equal(t, 1, tr.CountLogAfter(mark, lost), "riotd's log says the victim was lost with its %d workunits", n)

	// The dead worker's result is remembered, not run again.
	again, err := m.DoWorkEval("riot.worker.name").Accepted(ctx)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, again.Status)
	assert.Equal(t, victim.Name(), again.Worker)
}

// TestE2E_KillTracker: riotd killed with SIGKILL in the middle of a job
// and started again on the same --data: the job finishes, the Go client
// and the workers reconnect by themselves, and no finished workunit runs
// again. The proof: every workunit returns a random number, and the
// restarted riotd completes exactly the workunits that were not done when
// it restored its store.
func TestE2E_KillTracker(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	for _, name := range []string{"w1", "w2"} {
		bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: name, Slots: 2})
	}
	tr.WaitFor(t, workers(2))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, 2*e2e.DefaultWait)

	// Phase 1: quick workunits, all finished before the kill.
	const quick, slow = 100, 8
	quickSrc := "(i) => [riot.worker.name, i, Math.random()]"
	firstRun := make([]any, quick)
	calls := make([]*client.Call, quick)
	for i := range calls {
		calls[i] = m.Submit(fnSpec(t, quickSrc, i), workunit.Options{})
	}
	for i, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		firstRun[i], err = out.Value()
		require.NoError(t, err)
	}

	// Phase 2: slow workunits (1 s each, four at a time), killed in the
	// middle: riotd dies once the first are running.
	slowSrc := "(i) => { sleep(1); return [riot.worker.name, i, Math.random()]; }"
	slowCalls := make([]*client.Call, slow)
	for i := range slowCalls {
		slowCalls[i] = m.Submit(fnSpec(t, slowSrc, i), workunit.Options{})
	}
	for i, k := range slowCalls {
		// Accepted: durable, and (riotd persists before it sends) assigned
		// if a worker had room. /status counts a workunit running as soon
		// as the table leases it, before the write that lets riotd send it.
		_, err := k.Accepted(ctx)
		require.NoError(t, err, "slow workunit %d", i)
	}
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running > 0 })
	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Restart(ctx))
	restored, err := tr.Restored(ctx)
	require.NoError(t, err)
	t.Logf("restored: %+v", restored)
	require.GreaterOrEqual(t, restored.Done, quick, "results the master had before the kill are durable")
	require.Positive(t, restored.Waiting, "the kill came in the middle of the job")

	for i, k := range slowCalls {
		out, err := k.Wait(ctx)
		require.NoError(t, err, "slow workunit %d", i)
		v, err := out.Value()
		require.NoError(t, err)
		require.Len(t, v, 3)
		require.Equal(t, float64(i), v.([]any)[1])
	}
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Done == quick+slow && len(s.Workers) == 2 })
	assert.EqualValues(t, quick+slow-restored.Done, st.Completed,
		"the restarted riotd ran exactly the workunits not done at the restart")
	assert.Zero(t, st.Failed)

	// Resubmitted, the finished workunits are answered from the table with
	// their first result (a second run would draw another random number).
	for i := range quick {
		out, err := m.Submit(fnSpec(t, quickSrc, i), workunit.Options{}).Accepted(ctx)
		require.NoError(t, err)
		require.Equal(t, workunit.StatusDone, out.Status)
		v, err := out.Value()
		require.NoError(t, err)
		require.Equal(t, firstRun[i], v, "workunit %d", i)
	}
	st, err = tr.Status(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, quick+slow-restored.Done, st.Completed, "resubmissions ran nothing")
}

// TestE2E_Memoized: a resubmitted finished workunit is answered from the
// table without running; an errored one runs again.
func TestE2E_Memoized(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "memo", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)

	t.Run("done", func(t *testing.T) {
		spec := fnSpec(t, "() => Math.random()")
		first, err := m.Submit(spec, workunit.Options{}).Wait(ctx)
		require.NoError(t, err)
		before, err := tr.Status(ctx)
		require.NoError(t, err)

		again, err := m.Submit(spec, workunit.Options{}).Accepted(ctx)
		require.NoError(t, err)
		assert.Equal(t, workunit.StatusDone, again.Status, "answered at once, from the table")
		assert.Equal(t, first.Result, again.Result)
		assert.Equal(t, w.Name(), again.Worker)
		waited, err := m.Submit(spec, workunit.Options{}).Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, first.Result, waited.Result)

		after, err := tr.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, before.Completed, after.Completed, "nothing ran")
		assert.Equal(t, before.Workunits.Done, after.Workunits.Done)
	})

	t.Run("error", func(t *testing.T) {
		spec := fnSpec(t, "() => { throw new RangeError('draw ' + Math.random()); }")
		_, err1 := m.Submit(spec, workunit.Options{}).Wait(ctx)
		var e1 *workunit.Error
		require.ErrorAs(t, err1, &e1)
		before, err := tr.Status(ctx)
		require.NoError(t, err)

		_, err2 := m.Submit(spec, workunit.Options{}).Wait(ctx)
		var e2 *workunit.Error
		require.ErrorAs(t, err2, &e2)
		assert.Equal(t, "RangeError", e2.Name)
		assert.NotEqual(t, e1.Message, e2.Message, "the errored workunit ran again")
		after, err := tr.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, before.Failed+1, after.Failed, "one more run, one more failure")
	})

	t.Run("riot-worker eval", func(t *testing.T) {
		src := `console.log("ran"); Math.random()`
		first := bins.RunEval(t, "--tracker", tr.Addr(), "-e", src)
		require.Equal(t, 0, first.Code, first)
		// console.log goes to stdout, before the value, with the worker
		// and the workunit's short key.
		lines := strings.Split(strings.TrimSuffix(first.Stdout, "\n"), "\n")
		require.Len(t, lines, 2, first)
		assert.Regexp(t, `^\[`+regexp.QuoteMeta(w.Name())+` [0-9a-f]{12}\] ran$`, lines[0], first)
		second := bins.RunEval(t, "--tracker", tr.Addr(), "-e", src)
		require.Equal(t, 0, second.Code, second)
		assert.Equal(t, lines[1]+"\n", second.Stdout, "the same value, from the table, and no console line")
		assert.Contains(t, second.Stderr, "(from memory: the tracker had this result", "answered from memory, without running, and says so")
	})
}

// TestE2E_ErrorNamesWorker: a workunit's error reaches the master with the
// name of the worker that raised it, through the Go client and through
// riot-worker eval --tracker.
func TestE2E_ErrorNamesWorker(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "thrower", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)

	out, err := m.DoWorkEval("null.x").Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, w.Name(), werr.Worker)
	assert.Equal(t, "TypeError", werr.Name)
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Contains(t, err.Error(), "worker "+w.Name())
	require.NotNil(t, out)
	assert.Equal(t, workunit.StatusError, out.Status)
	assert.True(t, errors.Is(err, &workunit.Error{Kind: workunit.Thrown}))

	res := bins.RunEval(t, "--tracker", tr.Addr(), "-e", "null.x")
	assert.Equal(t, 1, res.Code, res)
	assert.Empty(t, res.Stdout, res)
	assert.Contains(t, res.Stderr, "worker "+w.Name()+": TypeError", res)
}

// TestE2E_InterruptedJob: Ctrl-C on a job script takes nothing back from
// the tracker. riot-worker eval exits with 130 and says so; the work runs
// once a worker comes, and the rerun collects it without running it again.
// With --cancel-on-interrupt, the Ctrl-C cancels the job's work instead.
func TestE2E_InterruptedJob(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	script := filepath.Join(t.TempDir(), "squares.js")
	require.NoError(t, os.WriteFile(script, []byte(
		"console.log(JSON.stringify(riot.forWork([1, 2, 3, 4, 5], (n) => n * n)));\n"), 0o644))

	job := e2e.NewProcess("riot-worker eval", bins.RiotWorker,
		[]string{"eval", "--quiet", "--tracker", tr.Addr(), script}, nil, bins.Root)
	require.NoError(t, job.Start())
	t.Cleanup(func() { job.Close() })
	tr.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Waiting == 5 })
	require.NoError(t, job.Signal(syscall.SIGINT))
	ctx := e2e.Context(t, e2e.DefaultWait)
	code, err := job.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 130, code, job.Log())
	assert.Contains(t, job.Log(), "riot-worker eval: interrupted with 5 of 5 workunits unfinished; they stay with the tracker at "+tr.Addr()+" and run on")

	// With --cancel-on-interrupt, the same Ctrl-C cancels the work.
	cubes := filepath.Join(t.TempDir(), "cubes.js")
	require.NoError(t, os.WriteFile(cubes, []byte(
		"console.log(JSON.stringify(riot.forWork([1, 2, 3], (n) => n * n * n)));\n"), 0o644))
	job2 := e2e.NewProcess("riot-worker eval --cancel-on-interrupt", bins.RiotWorker,
		[]string{"eval", "--quiet", "--cancel-on-interrupt", "--tracker", tr.Addr(), cubes}, nil, bins.Root)
	require.NoError(t, job2.Start())
	t.Cleanup(func() { job2.Close() })
	tr.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Waiting == 8 })
	require.NoError(t, job2.Signal(syscall.SIGINT))
	code, err = job2.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 130, code, job2.Log())
	assert.Contains(t, job2.Log(), "riot-worker eval: interrupted with 3 of 3 workunits unfinished; canceled them at the tracker at "+tr.Addr())
	st := tr.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Waiting == 5 })
	assert.Equal(t, 3, st.Workunits.Error)
	assert.Equal(t, uint64(3), st.Canceled)

	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "late", Slots: 2})
	done := tr.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Done == 5 })
	again := bins.RunEval(t, "--quiet", "--tracker", tr.Addr(), script)
	require.Equal(t, 0, again.Code, again)
	assert.Equal(t, "[1,4,9,16,25]\n", again.Stdout)
	after, err := tr.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, done.Completed, after.Completed, "the rerun collected the results without running anything")
}

// TestE2E_InterruptedEval: Ctrl-C on riot-worker eval -e through a tracker
// exits with 130 and says that the workunit runs on there.
func TestE2E_InterruptedEval(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	eval := e2e.NewProcess("riot-worker eval -e", bins.RiotWorker,
		[]string{"eval", "--tracker", tr.Addr(), "-e", "6 * 7"}, nil, bins.Root)
	require.NoError(t, eval.Start())
	t.Cleanup(func() { eval.Close() })
	tr.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Waiting == 1 }) // no worker: it waits
	require.NoError(t, eval.Signal(syscall.SIGINT))
	code, err := eval.Wait(e2e.Context(t, e2e.DefaultWait))
	require.NoError(t, err)
	assert.Equal(t, 130, code, eval.Log())
	assert.Contains(t, eval.Log(), "riot-worker eval: interrupted; the workunit stays with the tracker at "+tr.Addr()+" and runs on")
}
