package faults_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/workunit"
)

// TestFaults_WorkersKilled: 10,000 workunits while workers are killed
// with SIGKILL at random, a hundred times, and started again. Every
// result is right, and each is delivered once: to the client master
// (each Call ends once, with the right value) and on the wire (a second
// master that watches every key counts one Finished per key), and the
// tracker counts one accepted result per workunit.
//
// riotd runs with --max-lost 1000: with a hundred kills, a workunit may
// lose its worker more than the default three times, which would fail it
// (by design) with workers-lost.
func TestFaults_WorkersKilled(t *testing.T) {
	n, kills, nWorkers := 10000, 100, 4
	if testing.Short() {
		n, kills = 2000, 20
	}
	const sleep = 0.012 // s per workunit: the job outlasts the kills
	ctx := e2e.Context(t, jobWait)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-lost", "1000"}})
	workers := make([]*e2e.Worker, nWorkers)
	for i := range workers {
		workers[i] = bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: fmt.Sprintf("w%d", i), Slots: 2})
	}

	m := master(t, tr.Addr())
	keys := make([]workunit.Key, n)
	calls := make([]*client.Call, n)
	for i := range n {
		spec := squareSpec(i, sleep)
		keys[i] = spec.Key()
		calls[i] = m.Submit(spec, workunit.Options{})
	}
	// The watcher watches once the tracker knows every key (a key it
	// does not know is answered at once, as unknown).
	for _, k := range calls {
		_, err := k.Accepted(ctx)
		require.NoError(t, err)
	}
	w := watch(t, tr.Addr(), keys)
	var finished atomic.Int64
	for _, k := range calls {
		k.OnDone(func(*workunit.Outcome, error) { finished.Add(1) })
	}

	// Kill a worker at random every 40-120 ms, and start it again at once;
	// at least two stay up. The seed is logged, to replay a failure.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	var mu sync.Mutex
	restarting := map[int]bool{}
	restarted := make(chan struct{}, nWorkers)
	var wg sync.WaitGroup
	killed := 0
	for killed < kills {
		if finished.Load() == int64(n) {
			t.Fatalf("%v: %d kills of %d", errJobDone, killed, kills)
		}
		mu.Lock()
		var up []int
		for i := range workers {
			if !restarting[i] {
				up = append(up, i)
			}
		}
		mu.Unlock()
		if len(up) <= nWorkers/2 {
			select {
			case <-restarted:
			case <-ctx.Done():
				t.Fatalf("workers do not come back: %v", ctx.Err())
			}
			continue
		}
		i := up[rng.IntN(len(up))]
		require.NoError(t, workers[i].Kill())
		killed++
		mu.Lock()
		restarting[i] = true
		mu.Unlock()
		wg.Go(func() {
			err := workers[i].Restart(ctx)
			mu.Lock()
			restarting[i] = false
			mu.Unlock()
			select {
			case restarted <- struct{}{}:
			default: // the loop is not waiting
			}
			assert.NoError(t, err)
		})
		pause := time.NewTimer(time.Duration(40+rng.IntN(80)) * time.Millisecond)
		select {
		case <-pause.C:
		case <-ctx.Done():
			t.Fatalf("killing: %v", ctx.Err())
		}
	}
	doneAtLastKill := finished.Load()
	wg.Wait()

	// Every result, right, once.
	lost, wrong := collectSquares(t, ctx, calls)
	count, results := w.wait(t, ctx, n)
	dups := duplicates(count)
	for i, key := range keys {
		if _, err := checkSquare(i, results[key]); err != nil {
			wrong++
			t.Errorf("watcher: %v", err)
		}
	}
	st, err := tr.Status(ctx)
	require.NoError(t, err)
	t.Logf("workers killed: kills %d (done at the last kill: %d of %d), workunits %d, results lost %d, wrong %d, "+
		"duplicates delivered %d; tracker: completed %d, failed %d, stale results discarded %d",
		killed, doneAtLastKill, n, n, lost, wrong, dups, st.Completed, st.Failed, st.Discarded)
	assert.Equal(t, kills, killed)
	assert.Zero(t, lost, "results lost")
	assert.Zero(t, wrong, "wrong results")
	assert.Zero(t, dups, "duplicates delivered")
	assert.Equal(t, uint64(n), st.Completed, "one accepted result per workunit")
	assert.Zero(t, st.Failed)
	assert.Equal(t, n, st.Workunits.Done)
	tr.WaitFor(t, func(s tracker.Status) bool { return len(s.Workers) == nWorkers })
}
