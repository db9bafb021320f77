package e2e_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

var cloneSummary = regexp.MustCompile(`^(\d+) values, (\d+) checks\nall pass\n$`)

// TestE2E_StructuredClone runs e2e/testdata/clone.js, which sends every
// kind of value that structured clone keeps to a worker (as an argument and
// as a captured free variable), checks it there and back on the master,
// and checks that what structured clone refuses is a DataCloneError on
// both sides: with riot-worker eval's embedded default, and through riotd
// and a riot-worker process.
func TestE2E_StructuredClone(t *testing.T) {
	t.Parallel()
	const script = "e2e/testdata/clone.js"
	check := func(t *testing.T, res e2e.EvalResult) {
		require.Equal(t, 0, res.Code, "%s", res)
		m := cloneSummary.FindStringSubmatch(res.Stdout)
		require.NotNil(t, m, "%s", res)
		assert.Equal(t, "93", m[1], "values")
		assert.Equal(t, "214", m[2], "checks")
	}
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		check(t, bins.RunEval(t, script))
	})
	t.Run("riotd", func(t *testing.T) {
		t.Parallel()
		tr := bins.StartTracker(t, e2e.TrackerOptions{})
		bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "clone", Slots: 2})
		tr.WaitFor(t, workers(1))
		check(t, bins.RunEval(t, "--tracker", tr.Addr(), script))
	})
}
