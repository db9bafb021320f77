package replica

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// leaderOtherThan waits for a live node other than not to lead.
func (c *inmemCluster) leaderOtherThan(ctx context.Context, not int) int {
	c.t.Helper()
	obs := make(chan raft.Observation, 64)
	for _, n := range c.nodes {
		if n != nil {
			o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
				_, ok := o.Data.(raft.LeaderObservation)
				return ok
			})
			n.raft.RegisterObserver(o)
			defer n.raft.DeregisterObserver(o)
		}
	}
	for {
		for i, n := range c.nodes {
			if i != not && n != nil && n.raft.State() == raft.Leader {
				return i
			}
		}
		select {
		case <-obs:
		case <-ctx.Done():
			c.t.Fatalf("no leader but node %d: %v", not, ctx.Err())
		case err := <-c.fatal:
			c.t.Fatalf("a replica failed: %v", err)
		}
	}
}

// waitLeads waits for node i to lead.
func (c *inmemCluster) waitLeads(ctx context.Context, i int) {
	c.t.Helper()
	ch := make(chan raft.Observation, 64)
	o := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RaftState)
		return ok
	})
	c.nodes[i].raft.RegisterObserver(o)
	defer c.nodes[i].raft.DeregisterObserver(o)
	for c.nodes[i].raft.State() != raft.Leader {
		select {
		case <-ch:
		case <-ctx.Done():
			c.t.Fatalf("node %d does not lead: %v", i, ctx.Err())
		case err := <-c.fatal:
			c.t.Fatalf("a replica failed: %v", err)
		}
	}
}

// A replica that loses the lead and wins it back may still run, for a
// moment, the tracker it opened when it first led. Another leader wrote
// the store in between; that tracker's table does not know it, so its
// writes must not land on top (here: a record made waiting again over the
// other leader's done one), even though raft takes them again.
func TestStore_TrackerOfEarlierTerm_WritesRefusedAfterTheLeadIsWonBack(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	stale := c.store(l) // the first tracker's store, of this term
	if err := stale.Apply(ctx, batchOf(1, 2, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	if err := stale.Fenced(); err != nil {
		t.Fatalf("Fenced on the leader of the Store's term: %v", err)
	}
	if err := c.nodes[l].raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("hand the lead on: %v", err)
	}
	m := c.leaderOtherThan(ctx, l)
	if err := stale.Fenced(); !errors.Is(err, store.ErrFenced) || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Fenced after the lead went to node %d: %v; want store.ErrFenced", m, err)
	}
	if err := c.nodes[m].raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.store(m).Apply(ctx, batchOf(1, 1, workunit.StatusDone)); err != nil {
		t.Fatalf("the other leader's write: %v", err)
	}
	id := raft.ServerID(fmt.Sprintf("r%d", l))
	if err := c.nodes[m].raft.LeadershipTransferToServer(id, c.addrs[l]).Error(); err != nil {
		t.Fatalf("hand the lead back: %v", err)
	}
	c.waitLeads(ctx, l)
	if err := stale.Fenced(); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Fenced with the lead won back in a newer term: %v; want store.ErrFenced", err)
	}

	again := testRecord(1, workunit.StatusWaiting)
	again.Spec = []byte("the stale tracker's")
	err := stale.Apply(ctx, []table.Record{again})
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a write of the earlier term's tracker: %v; want ErrNotLeader", err)
	}
	if !errors.Is(err, store.ErrFenced) {
		t.Errorf("the error %q is not store.ErrFenced: the tracker would go on serving", err)
	}
	if !errors.Is(err, errStaleTerm) {
		t.Errorf("the error %q does not say the tracker is of an earlier term", err)
	}
	// Nothing of it on any replica; a tracker of this term writes.
	fresh := c.store(l)
	if err := fresh.Apply(ctx, batchOf(2, 2, workunit.StatusDone)); err != nil {
		t.Fatalf("a write of this term's tracker: %v", err)
	}
	want := batchOf(1, 2, workunit.StatusDone)
	index := c.nodes[l].fsm.Applied()
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		wantSame(t, fmt.Sprintf("node %d's local store", i), c.localLoad(i), want)
	}
	select {
	case err := <-c.fatal:
		t.Fatalf("a replica stopped: %v", err)
	default:
	}
}
