package replica

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// The local store holds the records of the commands it applied in memory
// until it has many (store.BoltOptions.Deferred): these tests check that
// such records are read, snapshotted and rebuilt as the others.

// pending returns how many records f's local store holds in memory, not
// yet in its file.
func pending(t testing.TB, f *fsm) (n int) {
	t.Helper()
	if err := f.use(func(b *store.Bolt) error { n = b.Pending(); return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// A snapshot holds the commands applied before it that the local store
// had not yet written to its file, and a replica restored from it has
// them.
func TestFSM_Snapshot_HoldsUnflushedCommands(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	for i, cmd := range [][]byte{recordsCmd(1, 5, workunit.StatusWaiting), recordsCmd(1, 3, workunit.StatusDone)} {
		if r := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: cmd}); r != nil {
			t.Fatal(r)
		}
	}
	if n := pending(t, f); n != 5 {
		t.Fatalf("the local store holds %d records in memory, want 5 (the test needs them unflushed)", n)
	}
	snap := snapshotOf(t, f)

	g := testFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	want := append(batchOf(1, 3, workunit.StatusDone), batchOf(4, 5, workunit.StatusWaiting)...)
	wantSame(t, "the restored store", loadFSM(t, g), want)
}

// The leader's tracker reads, through the Store, the results of commands
// its local store holds in memory; and every replica restarted (its
// local store emptied, as after a kill) rebuilds them from its log.
func TestStore_UnflushedCommands_ReadAndRebuiltAtRestart(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	timing := fastTiming
	timing.SnapshotThreshold = 1 << 40
	timing.SnapshotInterval = time.Hour
	c := newInmemCluster(t, 3, timing)
	l := c.leader(ctx)
	st := c.store(l)
	if err := st.Apply(ctx, batchOf(1, 20, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, batchOf(1, 10, workunit.StatusDone)); err != nil {
		t.Fatal(err)
	}
	index := c.barrier(l)
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		if n := pending(t, c.nodes[i].fsm); n != 20 {
			t.Fatalf("node %d holds %d records in memory, want 20 (the test needs them unflushed)", i, n)
		}
	}
	res, err := st.Result(ctx, 7)
	if err != nil || string(res) != "result 7" {
		t.Fatalf("Result(7) = %q, %v; want %q", res, err, "result 7")
	}
	if _, err := st.Result(ctx, 15); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Result(15) of a waiting record: %v, want ErrNotFound", err)
	}
	want := append(batchOf(1, 10, workunit.StatusDone), batchOf(11, 20, workunit.StatusWaiting)...)
	recs, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSame(t, "the leader's Load", recs, want)

	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i, nil)
	}
	l = c.leader(ctx)
	c.wantEverywhere(t, ctx, l, "after the restart", want)
	for i := range c.nodes {
		st := newStore(c.nodes[i].raft, c.nodes[i].fsm, nil, time.Second, 0)
		res, err := st.Result(ctx, 3)
		if err != nil || string(res) != "result 3" {
			t.Fatalf("node %d: Result(3) = %q, %v", i, res, err)
		}
	}
}
