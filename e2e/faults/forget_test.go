package faults_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/workunit"
)

// TestFaults_TrackerKilledWhileForgetting: riotd forgets every result a
// moment after it finished (--keep-results 1ms) and is killed with SIGKILL
// three times during a job. The master still gets every result, right:
// a result riotd forgot before the master had it (the notification lost
// with the kill, the record forgotten on the restarted riotd's first
// Tick) is submitted again by the client, and runs again.
func TestFaults_TrackerKilledWhileForgetting(t *testing.T) {
	n, kills := 1500, 3
	if testing.Short() {
		n = 600
	}
	const sleep = 0.004
	ctx := e2e.Context(t, jobWait)
	tr, m := durableJob(t, "--keep-results", "1ms")

	calls := make([]*client.Call, n)
	var received atomic.Int64
	for i := range n {
		calls[i] = m.Submit(squareSpec(i, sleep), workunit.Options{})
		calls[i].OnDone(func(*workunit.Outcome, error) { received.Add(1) })
	}
	for k := range kills {
		r := killWhen(t, ctx, tr, &received, int64((k+1)*n/(kills+2)))
		t.Logf("kill %d: %d results delivered before it; restored %d done, %d waiting", k+1, received.Load(), r.Done, r.Waiting)
	}
	if received.Load() == int64(n) {
		t.Fatal(errJobDone)
	}

	lost, wrong := collectSquares(t, ctx, calls)
	st, err := tr.WaitStatus(ctx, func(s tracker.Status) bool { return s.Forgotten > 0 && s.Workunits.Done == 0 })
	require.NoError(t, err, "riotd forgets what finished")
	t.Logf("tracker killed while forgetting: kills %d, workunits %d, results lost %d, wrong %d; forgotten since the last start %d",
		kills, n, lost, wrong, st.Forgotten)
	assert.Zero(t, lost, "results lost")
	assert.Zero(t, wrong, "wrong results")
}
