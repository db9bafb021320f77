package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
	assert.Equal(t, 1, tr.CountLogAfter(0, e2e.LogMsg("workunit reassigned")), "riotd's log:\n%s", tr.Log())
}
