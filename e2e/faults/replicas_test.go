package faults_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// listeningLine matches riotd's whole "riotd listening" line, which counts
// the workunits it restored.
var listeningLine = regexp.MustCompile(`^\{.*"msg":"riotd listening".*\}$`)

// TestFaults_ReplicaLeaderKilled: three riotd replicas on loopback (real
// processes, Raft over TCP), two workers and a master given all three
// addresses. During the job the leader is killed with SIGKILL several
// times; each time another replica is elected and serves, the killed one
// is started again on its --data and rejoins as a follower; and a
// follower is cut off (SIGSTOP) and healed (SIGCONT), then the leader
// is paused (SIGSTOP) until another leads, and continued. The checker: every
// workunit answered, with the right result, once; each new leader
// restores at least what was acknowledged before the kill; finished work
// is not run again (the nonce of each result is the one the master first
// received). It logs the failover times: leader killed to a new leader
// serving, and to the first workunit finished through it.
func TestFaults_ReplicaLeaderKilled(t *testing.T) {
	n, kills := 10000, 5
	if testing.Short() {
		n, kills = 1000, 2
	}
	const sleep = 0.004
	ctx := e2e.Context(t, jobWait)
	rs := bins.StartReplicas(t, 3)
	for _, name := range []string{"w1", "w2"} {
		bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: name, Slots: 2})
	}
	j := submitSquares(ctx, master(t, rs.Addrs()), n, sleep)
	waitReceived := func(target int64) {
		t.Helper()
		j.waitReceived(t, ctx, target)
	}
	accepted, received := &j.accepted, &j.received

	var elections, failovers []time.Duration
	for k := range kills {
		waitReceived(int64((k + 1) * n / (kills + 2)))
		old, err := rs.Leader(ctx)
		require.NoError(t, err)
		marks := make([]int, rs.Len())
		for i := range marks {
			marks[i] = rs.Proc(i).Mark()
		}
		accBefore, recvBefore := accepted.Load(), received.Load()
		killed := time.Now()
		require.NoError(t, rs.Proc(old).Kill())
		r0 := received.Load()
		leader, err := rs.WaitLeader(ctx, old)
		require.NoError(t, err)
		elections = append(elections, time.Since(killed))
		waitReceived(r0 + 1)
		failovers = append(failovers, time.Since(killed))

		line, err := rs.Proc(leader).WaitLogAfter(ctx, marks[leader], listeningLine)
		require.NoError(t, err)
		var restored struct{ Done, Waiting, Error int }
		require.NoError(t, json.Unmarshal([]byte(line[0]), &restored))
		t.Logf("kill %d of leader %s: before it %d accepted, %d delivered; %s leads after %v, restored %d done, %d waiting, %d error; first result through it after %v",
			k+1, rs.ID(old), accBefore, recvBefore, rs.ID(leader), elections[k].Round(time.Millisecond),
			restored.Done, restored.Waiting, restored.Error, failovers[k].Round(time.Millisecond))
		assert.GreaterOrEqual(t, int64(restored.Done), recvBefore, "every delivered result survives")
		assert.GreaterOrEqual(t, int64(restored.Done+restored.Waiting+restored.Error), accBefore, "every accepted workunit survives")
		assert.Zero(t, restored.Error)

		// The killed replica comes back on its --data and follows.
		require.NoError(t, rs.Proc(old).Start())
		_, err = rs.Proc(old).WaitLog(ctx, e2e.LogMsg("replica: following: clients are sent to the leader"))
		require.NoError(t, err)
	}

	// A follower cut off (stopped) while the job goes on, then healed.
	leader, err := rs.Leader(ctx)
	require.NoError(t, err)
	cut := (leader + 1) % rs.Len()
	require.NoError(t, rs.Proc(cut).Signal(syscall.SIGSTOP))
	waitReceived(received.Load() + int64(n/(kills+2)/2))
	require.NoError(t, rs.Proc(cut).Signal(syscall.SIGCONT))
	// The leader paused (SIGSTOP): the others elect another, which
	// serves; the old one, continued, finds a newer term, stops its
	// tracker and follows. Whatever it held in flight was not
	// acknowledged through it.
	paused := leader
	mark := rs.Proc(paused).Mark()
	pausedAt := time.Now()
	require.NoError(t, rs.Proc(paused).Signal(syscall.SIGSTOP))
	next, err := rs.WaitLeader(ctx, paused)
	require.NoError(t, err)
	elected := time.Since(pausedAt)
	r0 := received.Load()
	waitReceived(r0 + 1)
	// Clients connected to the paused leader notice only when its pings
	// stop (riotd --ping-interval: two missed, 10 s by default).
	firstAfterPause := time.Since(pausedAt)
	require.NoError(t, rs.Proc(paused).Signal(syscall.SIGCONT))
	_, err = rs.Proc(paused).WaitLogAfter(ctx, mark, e2e.LogMsg("replica: following: clients are sent to the leader"))
	require.NoError(t, err)
	t.Logf("leader %s paused: %s leads after %v, the first result through it after %v; %s, continued, follows",
		rs.ID(paused), rs.ID(next), elected.Round(time.Millisecond), firstAfterPause.Round(time.Millisecond), rs.ID(paused))
	if received.Load() == int64(n) {
		t.Fatal(errJobDone)
	}

	leader, err = rs.Leader(ctx)
	require.NoError(t, err)
	lost, wrong, dups, rerun := j.check(t, ctx, rs.Client(leader))
	// The follower that was cut off has caught up with the leader's log.
	assert.NoError(t, follows(ctx, rs, cut, leader), "the healed follower follows the leader")
	// The leader's status page shows the three replicas and their states.
	st, err := rs.Tracker(leader).Status(ctx)
	require.NoError(t, err)
	if assert.Len(t, st.Replicas, 3, "the leader's /status replicas") {
		assert.Equal(t, rs.ID(leader), st.Replicas[0].ID)
		assert.Equal(t, "Leader", st.Replicas[0].State)
		for _, r := range st.Replicas[1:] {
			assert.Equal(t, "Follower", r.State, "replica %s", r.ID)
		}
	}

	slices.Sort(failovers)
	t.Logf("replicas: leader kills %d, workunits %d, results lost %d, wrong %d, duplicates delivered %d, finished work run again %d; failover to the first result (sorted) %v",
		kills, n, lost, wrong, dups, rerun, failovers)
}
