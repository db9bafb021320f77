package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// TestFaults_ReplicaPartitioned: three riotd replicas, each in a network
// namespace of its own (e2e.Netns), with a replication network and a
// clients' network. During a job, the leader's replication link is cut
// while its masters and workers still reach it: the other two elect a
// leader that serves, and the old one, without its majority, stops its
// tracker (its clients go to the new leader) and acknowledges nothing
// more; healed, it follows. Then a follower is cut off and healed while
// the job goes on. The checker is the kill test's: every workunit
// answered with the right result, once, none lost, none that finished run
// again. Skipped where network namespaces cannot be made (not root).
func TestFaults_ReplicaPartitioned(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1000
	}
	const sleep = 0.004
	nn := e2e.StartNetns(t, 3)
	ctx := e2e.Context(t, jobWait)
	rs := bins.StartReplicasWith(t, e2e.ReplicasOptions{N: 3, Netns: nn})
	for _, name := range []string{"w1", "w2"} {
		bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: name, Slots: 2})
	}
	j := submitSquares(ctx, master(t, rs.Addrs()), n, sleep)

	// The leader partitioned from the other replicas.
	j.waitReceived(t, ctx, int64(n/4))
	old, err := rs.Leader(ctx)
	require.NoError(t, err)
	marks := make([]int, rs.Len())
	for i := range marks {
		marks[i] = rs.Proc(i).Mark()
	}
	cutAt := time.Now()
	require.NoError(t, nn.CutRaft(ctx, old))
	_, err = rs.Proc(old).WaitLogAfter(ctx, marks[old], e2e.LogMsg("replica: lost the lead: the tracker stops; clients go to the new leader"))
	require.NoError(t, err)
	steppedDown := time.Since(cutAt)
	leader, err := rs.WaitLeader(ctx, old)
	require.NoError(t, err)
	elected := time.Since(cutAt)
	r0 := j.received.Load()
	j.waitReceived(t, ctx, r0+1)
	firstResult := time.Since(cutAt)
	require.NoError(t, nn.HealRaft(ctx, old))
	_, err = rs.Proc(old).WaitLogAfter(ctx, marks[old], e2e.LogMsg("replica: following: clients are sent to the leader"))
	require.NoError(t, err)
	t.Logf("leader %s cut off: it stepped down after %v; %s leads after %v, the first result through it after %v",
		rs.ID(old), steppedDown.Round(time.Millisecond), rs.ID(leader), elected.Round(time.Millisecond), firstResult.Round(time.Millisecond))

	// A follower cut off while the job goes on, then healed: it catches up.
	cut := (leader + 1) % rs.Len()
	require.NoError(t, nn.CutRaft(ctx, cut))
	j.waitReceived(t, ctx, j.received.Load()+int64(n/8))
	require.NoError(t, nn.HealRaft(ctx, cut))
	if j.received.Load() == int64(n) {
		t.Fatal(errJobDone)
	}

	leader, err = rs.Leader(ctx)
	require.NoError(t, err)
	lost, wrong, dups, rerun := j.check(t, ctx, rs.Client(leader))
	assert.NoError(t, follows(ctx, rs, cut, leader), "the healed follower follows the leader")
	t.Logf("replicas partitioned: workunits %d, results lost %d, wrong %d, duplicates delivered %d, finished work run again %d",
		n, lost, wrong, dups, rerun)
}
