package faults_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/workunit"
)

// TestFaults_TrackerKilled: riotd is killed with SIGKILL five times
// during a job and started again on its --data. The job completes with
// every result right; nothing acknowledged is lost (each restart restores
// at least the workunits accepted and the results delivered before the
// kill); and finished work is not run again (each workunit's result
// carries a nonce drawn when it ran, and the tracker's result at the end
// is the one the master first received).
func TestFaults_TrackerKilled(t *testing.T) {
	n, kills := 3000, 5
	if testing.Short() {
		n = 1000
	}
	const sleep = 0.004
	ctx := e2e.Context(t, jobWait)
	tr, m := durableJob(t)

	keys := make([]workunit.Key, n)
	calls := make([]*client.Call, n)
	first := make([]float64, n) // the nonce of the result first received
	var mu sync.Mutex
	var accepted, received atomic.Int64
	for i := range n {
		spec := squareSpec(i, sleep)
		keys[i] = spec.Key()
		calls[i] = m.Submit(spec, workunit.Options{})
		go func() {
			if _, err := calls[i].Accepted(ctx); err == nil {
				accepted.Add(1)
			}
		}()
		calls[i].OnDone(func(out *workunit.Outcome, err error) {
			if err == nil {
				if s, err := checkSquare(i, out.Result); err == nil {
					mu.Lock()
					first[i] = s.nonce
					mu.Unlock()
				}
			}
			received.Add(1)
		})
	}

	for k := range kills {
		// The first kill comes while submissions are on their way; the
		// job makes progress between the others.
		target := int64(k * n / (kills + 1))
		accBefore, recvBefore := accepted.Load(), received.Load()
		r := killWhen(t, ctx, tr, &received, target)
		t.Logf("kill %d: before it %d accepted, %d results delivered; restored %d done, %d waiting, %d error",
			k+1, accBefore, recvBefore, r.Done, r.Waiting, r.Error)
		assert.GreaterOrEqual(t, int64(r.Done), recvBefore, "every delivered result survives")
		assert.GreaterOrEqual(t, int64(r.Done+r.Waiting+r.Error), accBefore, "every accepted workunit survives")
		assert.Zero(t, r.Error)
	}
	if received.Load() == int64(n) {
		t.Fatal(errJobDone)
	}

	lost, wrong := collectSquares(t, ctx, calls)
	// What the tracker holds now, delivered once per key to a watcher:
	// the results first received, not those of a second run.
	count, results := watch(t, tr.Addr(), keys).wait(t, ctx, n)
	dups := duplicates(count)
	rerun := 0
	mu.Lock()
	for i, key := range keys {
		s, err := checkSquare(i, results[key])
		switch {
		case err != nil:
			wrong++
			t.Error(err)
		case s.nonce != first[i]:
			rerun++
			t.Errorf("workunit %d ran again after its result was delivered", i)
		}
	}
	mu.Unlock()
	t.Logf("tracker killed: kills %d, workunits %d, results lost %d, wrong %d, duplicates delivered %d, finished work run again %d",
		kills, n, lost, wrong, dups, rerun)
	assert.Zero(t, lost, "results lost")
	assert.Zero(t, wrong, "wrong results")
	assert.Zero(t, dups, "duplicates delivered")
	assert.Zero(t, rerun, "finished work run again")
}
