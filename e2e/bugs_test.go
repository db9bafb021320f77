package e2e_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
)

// knownBug skips a test that shows a bug not fixed yet, unless
// RIOT_E2E_KNOWN_BUGS is set: run them with RIOT_E2E_KNOWN_BUGS=1 to see
// whether a fix works, then delete the knownBug call.
func knownBug(t *testing.T, bug string) {
	t.Helper()
	if os.Getenv("RIOT_E2E_KNOWN_BUGS") == "" {
		t.Skip("known bug: " + bug)
	}
}

// TestE2E_WorkerPrefetchZero: docs/workers.md says `--prefetch 0` makes a
// worker hold only what it runs; riot-worker treats 0 as "the default, 2
// per slot", and refuses negative values, so no flag gives no prefetch.
func TestE2E_WorkerPrefetchZero(t *testing.T) {
	knownBug(t, "riot-worker --prefetch 0 gives 2 per slot (cmd/riot-worker/worker.go passes 0 to worker.Options.Prefetch, where 0 means the default and only a negative value means none)")
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "nopf", Slots: 1, Args: []string{"--prefetch", "0"}})
	st := tr.WaitFor(t, workers(1))
	assert.Equal(t, 0, st.Workers[0].Prefetch, "riot-worker --prefetch 0")
}

// TestE2E_ReassignmentLogged: docs/riotd.md says riotd logs "workunit
// reassigned" when a workunit goes back to the queue after a loss. It does
// only when no other worker takes it in the same step: with a worker that
// has room, a dead worker's workunits move on without that line.
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
