package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
)

// TestE2E_WorkerPrefetchZero: `--prefetch 0` makes a worker hold only what
// it runs (docs/workers.md). A regression test: riot-worker once passed 0
// on, where the worker loop read it as "the default".
func TestE2E_WorkerPrefetchZero(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "nopf", Slots: 1, Args: []string{"--prefetch", "0"}})
	st := tr.WaitFor(t, workers(1))
	assert.Equal(t, 0, st.Workers[0].Prefetch, "riot-worker --prefetch 0")
}

// TestE2E_ReassignmentLogged: riotd logs "workunit reassigned" when a
// workunit goes back to the queue after a loss (docs/riotd.md), also when
// another worker takes it in the same step. A regression test: the line
// was once written only for workunits persisted as waiting.
func TestE2E_ReassignmentLogged(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	victim := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "victim", Slots: 1})
	tr.WaitFor(t, workers(1))
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	k, err := m.DoWork(&value.Function{Source: "(v) => { if (riot.worker.name === v) sleep(600); return 1; }"}, victim.Name())
	if err != nil {
		t.Fatal(err)
	}
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 1 })
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "rescuer", Slots: 1})
	tr.WaitFor(t, workers(2))
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The result can reach the master before riotd's log line reaches the
	// harness through its pipe: wait for the line, then count.
	if _, err := tr.WaitLog(ctx, e2e.LogMsg("workunit reassigned")); err != nil {
		t.Fatalf("%v; riotd's log:\n%s", err, tr.Log())
	}
	assert.Equal(t, 1, tr.CountLogAfter(0, e2e.LogMsg("workunit reassigned")), "riotd's log:\n%s", tr.Log())
}

// TestE2E_JobSaysTrackerLost: a job (or an -e) whose tracker goes away
// says so, on stderr without a terminal, and says when it is back, then
// finishes. A regression test: it once said nothing, and its bar showed
// the workers as the tracker last saw them.
func TestE2E_JobSaysTrackerLost(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "slow.js")
	require.NoError(t, os.WriteFile(script, []byte(
		"console.log(riot.forWork([1, 2], (n) => { sleep(2); return n * 2; }).join(','));\n"), 0o644))
	for _, tt := range []struct {
		name, out string
		n         int // workunits
		args      []string
	}{
		{"script", "2,4", 2, []string{script}},
		{"e", "42", 1, []string{"-e", "sleep(2); 6 * 7"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
			bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 2})
			tr.WaitFor(t, workers(1))
			job := e2e.NewProcess("riot-worker eval", bins.RiotWorker, append([]string{"eval", "--tracker", tr.Addr()}, tt.args...), nil, bins.Root)
			require.NoError(t, job.Start())
			t.Cleanup(func() { job.Close() })
			tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running+s.Workunits.Done == tt.n })

			ctx := e2e.Context(t, 2*e2e.DefaultWait)
			require.NoError(t, tr.Kill())
			_, err := job.WaitLog(ctx, regexp.MustCompile(regexp.QuoteMeta(
				"riot: lost the connection to the tracker at "+tr.Addr()+"; reconnecting (the work goes on there, and the job collects its results once the tracker is back)")))
			require.NoError(t, err, job.Log())
			require.NoError(t, tr.Restart(ctx))
			_, err = job.WaitLog(ctx, regexp.MustCompile(`riot: reconnected to the tracker at `+regexp.QuoteMeta(tr.Addr())+` after \d+s`))
			require.NoError(t, err, job.Log())
			code, err := job.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, 0, code, job.Log())
			assert.Contains(t, job.Log(), tt.out)
			assert.Equal(t, 1, strings.Count(job.Log(), "lost the connection"), job.Log())
		})
	}
}

// TestE2E_OneInterruptStopsABusyScript: one SIGINT stops a job script busy
// in a loop that calls nothing, on the embedded default and on a tracker:
// riot-worker eval says what became of the work and exits with 130. A
// regression test: the loop ran on until a second SIGINT killed the
// process, which then said nothing of the work.
func TestE2E_OneInterruptStopsABusyScript(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	script := filepath.Join(t.TempDir(), "busy.js")
	require.NoError(t, os.WriteFile(script, []byte(
		"riot.doWork(() => 1); console.log('looping'); while (true) {}\n"), 0o644))
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"embedded", []string{"eval", "--quiet", "--workers", "0", script},
			"riot-worker eval: interrupted with 1 of 1 workunit unfinished; the embedded tracker kept nothing"},
		{"tracker", []string{"eval", "--quiet", "--tracker", tr.Addr(), script},
			"riot-worker eval: interrupted with 1 of 1 workunit unfinished; they stay with the tracker at " + tr.Addr() + " and run on"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := e2e.NewProcess("riot-worker eval", bins.RiotWorker, tt.args, nil, bins.Root)
			require.NoError(t, job.Start())
			t.Cleanup(func() { job.Close() })
			ctx := e2e.Context(t, e2e.DefaultWait)
			_, err := job.WaitLog(ctx, regexp.MustCompile(`^looping$`))
			require.NoError(t, err, job.Log())
			require.NoError(t, job.Signal(syscall.SIGINT))
			code, err := job.Wait(ctx)
			require.NoError(t, err, job.Log())
			assert.Equal(t, 130, code, job.Log())
			assert.Contains(t, job.Log(), tt.want)
			assert.NotContains(t, job.Log(), "interrupted again", "one SIGINT was enough")
		})
	}
}

// TestE2E_JoinedWorkunitKeepsTheMastersLimit: a rerun with --timeout that
// joins an endless workunit an interrupted run left behind gets a
// TimeoutError at its limit, and the workunit, which nobody else waits
// for, is stopped; a rerun with --cancel-on-interrupt that joins one
// cancels it on Ctrl-C. A regression test: the rerun waited for ever, and
// could cancel nothing, since the workunit was the earlier run's.
func TestE2E_JoinedWorkunitKeepsTheMastersLimit(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 1})
	tr.WaitFor(t, workers(1))
	script := filepath.Join(t.TempDir(), "endless.js")
	require.NoError(t, os.WriteFile(script, []byte(
		"console.log(riot.forWork([1], () => { while (true) {} }));\n"), 0o644))
	ctx := e2e.Context(t, 2*e2e.DefaultWait)
	// interrupted runs the job with args until the tracker has watches
	// watches (the job waits for its workunit), then interrupts it.
	interrupted := func(watches int, args ...string) *e2e.Process {
		job := e2e.NewProcess("riot-worker eval", bins.RiotWorker, append(append([]string{"eval", "--quiet", "--tracker", tr.Addr()}, args...), script), nil, bins.Root)
		require.NoError(t, job.Start())
		t.Cleanup(func() { job.Close() })
		tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 1 && s.Watches == watches })
		require.NoError(t, job.Signal(syscall.SIGINT))
		code, err := job.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, 130, code, job.Log())
		tr.WaitFor(t, func(s tracker.Status) bool { return s.Watches == 0 }) // the tracker saw it go
		return job
	}

	interrupted(1) // leaves the endless workunit running, with nobody waiting
	res := bins.RunEval(t, "--quiet", "--timeout", "2s", "--tracker", tr.Addr(), script)
	assert.Equal(t, 1, res.Code, res)
	assert.Contains(t, res.Stderr, "TimeoutError: the workunit ran past this master's time limit of 2s: it joined the workunit, which another master submitted with no time limit", res)
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 0 })
	assert.Equal(t, 1, st.Workunits.Error, "stopped: nobody else waited")

	interrupted(1) // runs it again, endless, and leaves it
	job := interrupted(1, "--cancel-on-interrupt")
	assert.Contains(t, job.Log(), "riot-worker eval: interrupted with 1 of 1 workunit unfinished; canceled them at the tracker at "+tr.Addr())
	st = tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 0 })
	assert.Equal(t, uint64(1), st.Canceled)
}
