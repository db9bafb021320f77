package faults_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/workunit"
)

// squareJob is a job of n squareSpec workunits submitted by one master,
// with what the master saw of each: whether it was accepted, and the
// nonce of the first result it received (to tell a run again).
type squareJob struct {
	keys     []workunit.Key
	calls    []*client.Call
	mu       sync.Mutex
	first    []float64
	accepted atomic.Int64
	received atomic.Int64
}

// submitSquares submits n squareSpec workunits of sleep seconds through m.
func submitSquares(ctx context.Context, m *client.Client, n int, sleep float64) *squareJob {
	j := &squareJob{keys: make([]workunit.Key, n), calls: make([]*client.Call, n), first: make([]float64, n)}
	for i := range n {
		spec := squareSpec(i, sleep)
		j.keys[i] = spec.Key()
		j.calls[i] = m.Submit(spec, workunit.Options{})
		go func() {
			if _, err := j.calls[i].Accepted(ctx); err == nil {
				j.accepted.Add(1)
			}
		}()
		j.calls[i].OnDone(func(out *workunit.Outcome, err error) {
			if err == nil {
				if s, err := checkSquare(i, out.Result); err == nil {
					j.mu.Lock()
					j.first[i] = s.nonce
					j.mu.Unlock()
				}
			}
			j.received.Add(1)
		})
	}
	return j
}

// waitReceived waits until the master has received target results.
func (j *squareJob) waitReceived(t *testing.T, ctx context.Context, target int64) {
	t.Helper()
	err := e2e.CheckFor(ctx, time.Millisecond, func() error {
		if j.received.Load() < target {
			return errNotYet
		}
		return nil
	})
	require.NoError(t, err, "waiting for %d results (have %d)", target, j.received.Load())
}

// check waits for every result and checks the job as a whole, asking
// the tracker at addr (a watcher of its own, which sees duplicates): every
// workunit answered, with the right result, once, and none that the
// master had received run again. It returns a line of the counts.
func (j *squareJob) check(t *testing.T, ctx context.Context, addr string) (lost, wrong, dups, rerun int) {
	t.Helper()
	lost, wrong = collectSquares(t, ctx, j.calls)
	count, results := watch(t, addr, j.keys).wait(t, ctx, len(j.keys))
	dups = duplicates(count)
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, key := range j.keys {
		s, err := checkSquare(i, results[key])
		switch {
		case err != nil:
			wrong++
			t.Error(err)
		case s.nonce != j.first[i]:
			rerun++
			t.Errorf("workunit %d ran again after its result was delivered", i)
		}
	}
	assert.Zero(t, lost, "results lost")
	assert.Zero(t, wrong, "wrong results")
	assert.Zero(t, dups, "duplicates delivered")
	assert.Zero(t, rerun, "finished work run again")
	return lost, wrong, dups, rerun
}

// follows waits until replica i's own status names leader's client
// address as the leader's.
func follows(ctx context.Context, rs *e2e.Replicas, i, leader int) error {
	return e2e.CheckFor(ctx, 10*time.Millisecond, func() error {
		st, err := rs.Status(ctx, i)
		if err != nil {
			return err
		}
		if st.LeaderClient != rs.Client(leader) {
			return errNotYet
		}
		return nil
	})
}
