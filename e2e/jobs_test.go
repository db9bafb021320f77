package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// A job script's run is a job on the tracker, named for the script's file
// (or --job), with its workunits counted; -e is a job named "-e". They are
// listed once their master has gone, as ended.
func TestE2E_JobsNamed(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 2})
	tr.WaitFor(t, workers(1))
	script := writeScript(t, "squares.js", `
		const xs = riot.forWork([1, 2, 3, 4, 5], (x) => x * x);
		console.log(xs.reduce((a, b) => a + b, 0));
	`)
	res := bins.RunEval(t, "--tracker", tr.Addr(), script)
	require.Equal(t, 0, res.Code, res.String())
	assert.Equal(t, "55\n", res.Stdout)
	res = bins.RunEval(t, "--tracker", tr.Addr(), "--job", "nightly report", script)
	require.Equal(t, 0, res.Code, res.String())
	res = bins.RunEval(t, "--tracker", tr.Addr(), "-e", "6 * 7")
	require.Equal(t, 0, res.Code, res.String())

	st := tr.WaitFor(t, func(s tracker.Status) bool {
		ended := 0
		for _, j := range s.Jobs {
			if j.State == "ended" {
				ended++
			}
		}
		return ended == 3
	})
	byName := map[string]tracker.JobInfo{}
	for _, j := range st.Jobs {
		byName[j.Name] = j
	}
	require.Contains(t, byName, "squares.js")
	sq := byName["squares.js"]
	assert.Equal(t, uint64(5), sq.Submitted)
	assert.Equal(t, 5, sq.Done)
	assert.Zero(t, sq.FromMemory)
	require.Contains(t, byName, "nightly report")
	again := byName["nightly report"]
	assert.Equal(t, uint64(5), again.Submitted)
	assert.Equal(t, uint64(5), again.FromMemory, "the same work again: answered from memory")
	require.Contains(t, byName, "-e")
	assert.Equal(t, 1, byName["-e"].Done)
}
