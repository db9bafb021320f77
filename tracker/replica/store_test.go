package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// These tests run three replicas' Raft in one process over raft's
// in-memory transport (a fake network: raft.NewInmemTransport), each with
// its real log (raft-boltdb), snapshots and local store in a temporary
// directory. The e2e package runs real riotd processes over TCP.

// fastTiming makes elections take about a second, half raft's default (and leaves
// room for a blob of a megabyte under -race on a loaded machine).
var fastTiming = Timing{
	HeartbeatTimeout:   500 * time.Millisecond,
	ElectionTimeout:    500 * time.Millisecond,
	LeaderLeaseTimeout: 500 * time.Millisecond,
	CommitTimeout:      5 * time.Millisecond,
}

// inmemCluster is three (or more) nodes on the in-memory transport.
type inmemCluster struct {
	t      testing.TB
	dirs   []string
	addrs  []raft.ServerAddress
	nodes  []*node // nil: stopped
	trans  []*raft.InmemTransport
	timing Timing
	fatal  chan error
	// restore is the backup each node starts from (nodeConfig.restore).
	restore string
	// wrapLogs wraps each node's raft log store (nodeConfig.wrapLogs).
	wrapLogs func(i int, logs raft.LogStore) raft.LogStore
}

func newInmemCluster(t testing.TB, n int, timing Timing) *inmemCluster {
	t.Helper()
	return newRestoredCluster(t, n, timing, "")
}

// newRestoredCluster is newInmemCluster with every node started from the
// backup at restore ("": none).
func newRestoredCluster(t testing.TB, n int, timing Timing, restore string) *inmemCluster {
	t.Helper()
	return newWrappedCluster(t, n, timing, restore, nil)
}

// newWrappedCluster is newRestoredCluster with each node's raft log
// store wrapped by wrap (nil: none).
func newWrappedCluster(t testing.TB, n int, timing Timing, restore string, wrap func(int, raft.LogStore) raft.LogStore) *inmemCluster {
	t.Helper()
	c := &inmemCluster{t: t, timing: timing, fatal: make(chan error, 16), restore: restore, wrapLogs: wrap}
	var servers []raft.Server
	for i := range n {
		c.dirs = append(c.dirs, t.TempDir())
		c.addrs = append(c.addrs, raft.ServerAddress(fmt.Sprintf("r%d", i)))
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("r%d", i)), Address: c.addrs[i], Suffrage: raft.Voter})
	}
	c.nodes = make([]*node, n)
	c.trans = make([]*raft.InmemTransport, n)
	for i := range n {
		c.start(i, servers)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

// start opens node i on its directory, with a fresh transport connected
// to the other live nodes.
func (c *inmemCluster) start(i int, bootstrap []raft.Server) {
	c.t.Helper()
	_, tr := raft.NewInmemTransportWithTimeout(c.addrs[i], 5*time.Second)
	c.trans[i] = tr
	for j, other := range c.trans {
		if j != i && other != nil {
			tr.Connect(c.addrs[j], other)
			other.Connect(c.addrs[i], tr)
		}
	}
	n, err := c.open(i, tr, bootstrap)
	if err != nil {
		c.t.Fatalf("open node %d: %v", i, err)
	}
	c.nodes[i] = n
}

// open opens node i's raft on its directory and transport tr.
func (c *inmemCluster) open(i int, tr raft.Transport, bootstrap []raft.Server) (*node, error) {
	var wrap func(raft.LogStore) raft.LogStore
	if c.wrapLogs != nil {
		wrap = func(l raft.LogStore) raft.LogStore { return c.wrapLogs(i, l) }
	}
	return openNode(context.Background(), nodeConfig{
		wrapLogs: wrap,
		id:       raft.ServerID(fmt.Sprintf("r%d", i)), dir: c.dirs[i], trans: tr, log: slog.New(slog.DiscardHandler),
		timing: c.timing, bootstrap: bootstrap, restore: c.restore,
		fatal: func(err error) { c.fatal <- err },
	})
}

// stop shuts node i down (as a crash would, but for the process).
func (c *inmemCluster) stop(i int) {
	c.t.Helper()
	if c.nodes[i] == nil {
		return
	}
	for j, other := range c.trans {
		if j != i && other != nil {
			other.Disconnect(c.addrs[i])
		}
	}
	if err := c.nodes[i].close(); err != nil {
		c.t.Errorf("close node %d: %v", i, err)
	}
	c.nodes[i], c.trans[i] = nil, nil
}

// leader waits for one live node to lead, and returns its index.
func (c *inmemCluster) leader(ctx context.Context) int {
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
			if n != nil && n.raft.State() == raft.Leader {
				return i
			}
		}
		select {
		case <-obs:
		case <-ctx.Done():
			c.t.Fatalf("no leader elected: %v", ctx.Err())
		case err := <-c.fatal:
			c.t.Fatalf("a replica failed: %v", err)
		}
	}
}

// store returns the replicated Store of node i.
func (c *inmemCluster) store(i int) *Store {
	return newStore(c.nodes[i].raft, c.nodes[i].fsm, func() string { return "" }, 5*time.Second, c.nodes[i].raft.CurrentTerm())
}

// waitApplied waits until node i has applied index.
func (c *inmemCluster) waitApplied(ctx context.Context, i int, index uint64) {
	c.t.Helper()
	for c.nodes[i].fsm.Applied() < index {
		select {
		case <-ctx.Done():
			c.t.Fatalf("node %d applied %d, want %d: %v", i, c.nodes[i].fsm.Applied(), index, ctx.Err())
		case err := <-c.fatal:
			c.t.Fatalf("a replica failed: %v", err)
		case <-time.After(2 * time.Millisecond): // raft has no event for an apply on a follower
		}
	}
}

// barrier waits until the leader l has applied everything committed
// before it led, and returns the index it applied.
func (c *inmemCluster) barrier(l int) uint64 {
	c.t.Helper()
	if err := c.nodes[l].raft.Barrier(5 * time.Second).Error(); err != nil {
		c.t.Fatalf("barrier on node %d: %v", l, err)
	}
	return c.nodes[l].fsm.Applied()
}

// wantEverywhere waits until every node has applied what the leader l
// has, and checks that each local store holds want.
func (c *inmemCluster) wantEverywhere(t *testing.T, ctx context.Context, l int, what string, want []table.Record) {
	t.Helper()
	index := c.barrier(l)
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		wantSame(t, fmt.Sprintf("node %d %s", i, what), c.localLoad(i), want)
	}
}

// localLoad loads node i's local store.
func (c *inmemCluster) localLoad(i int) []table.Record {
	c.t.Helper()
	return loadFSM(c.t, c.nodes[i].fsm)
}

// loadFSM loads f's local store, in the order of the records' IDs.
func loadFSM(t testing.TB, f *fsm) []table.Record {
	t.Helper()
	var recs []table.Record
	err := f.use(func(b *store.Bolt) (err error) {
		recs, err = b.Load(context.Background())
		return err
	})
	if err != nil {
		t.Fatalf("load the local store: %v", err)
	}
	slices.SortFunc(recs, func(a, b table.Record) int { return int(a.ID) - int(b.ID) })
	return recs
}

func testRecord(id uint64, status workunit.Status) table.Record {
	r := table.Record{ID: id, Status: status, Seq: int64(id), Owner: "o"}
	r.Key[0], r.Key[1] = byte(id>>8), byte(id)
	switch status {
	case workunit.StatusWaiting:
		r.Spec = []byte(fmt.Sprintf("spec %d", id))
	case workunit.StatusDone:
		r.Result = []byte(fmt.Sprintf("result %d", id))
		r.Worker = "w"
	}
	return r
}

func batchOf(from, to uint64, status workunit.Status) []table.Record {
	var b []table.Record
	for id := from; id <= to; id++ {
		b = append(b, testRecord(id, status))
	}
	return b
}

func ids(recs []table.Record) (out []string) {
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s:%s:%s", r.ID, r.Status, r.Spec, r.Result))
	}
	return out
}

func wantSame(t *testing.T, what string, got, want []table.Record) {
	t.Helper()
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Fatalf("%s: got %d records %v, want %d %v", what, len(g), g, len(w), w)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStore_Apply_ReadOnFollowers(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	st := c.store(l)
	if err := st.Apply(ctx, batchOf(1, 10, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	done := batchOf(1, 5, workunit.StatusDone)
	if err := st.Apply(ctx, done); err != nil {
		t.Fatal(err)
	}
	// A done record whose result the store keeps (the table let go of it).
	kept := testRecord(3, workunit.StatusDone)
	kept.Result, kept.Stored = nil, true
	tomb := table.Record{ID: 10, Key: testRecord(10, 0).Key} // a tombstone
	if err := st.Apply(ctx, []table.Record{kept, tomb}); err != nil {
		t.Fatal(err)
	}
	want := append(batchOf(1, 5, workunit.StatusDone), batchOf(6, 9, workunit.StatusWaiting)...)
	got, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b table.Record) int { return int(a.ID) - int(b.ID) })
	wantSame(t, "leader's Load", got, want)
	res, err := st.Result(ctx, 3)
	if err != nil || string(res) != "result 3" {
		t.Fatalf("Result(3) = %q, %v; want the kept result", res, err)
	}
	index := c.nodes[l].fsm.Applied()
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		wantSame(t, fmt.Sprintf("node %d's local store", i), c.localLoad(i), want)
	}
}

func TestStore_Apply_OnFollower_NotLeader(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	f := (l + 1) % 3
	st := newStore(c.nodes[f].raft, c.nodes[f].fsm, func() string { return "leader.example:2355" }, time.Second, c.nodes[f].raft.CurrentTerm())
	err := st.Apply(ctx, batchOf(1, 1, workunit.StatusWaiting))
	var nl *NotLeaderError
	if !errors.Is(err, ErrNotLeader) || !errors.As(err, &nl) || nl.Leader != "leader.example:2355" {
		t.Fatalf("Apply on a follower: %v; want a NotLeaderError naming the leader", err)
	}
	if got := c.localLoad(f); len(got) != 0 {
		t.Fatalf("the follower stored %v", ids(got))
	}
}

func TestStore_LeaderLost_NewLeaderHasEverything(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	if err := c.store(l).Apply(ctx, batchOf(1, 100, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	c.stop(l)
	l2 := c.leader(ctx)
	if l2 == l {
		t.Fatalf("the stopped node %d leads", l)
	}
	st := c.store(l2)
	// What the old leader acknowledged is there, once the new one has
	// applied its log (what the replica waits for before it serves).
	if err := c.nodes[l2].raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b table.Record) int { return int(a.ID) - int(b.ID) })
	wantSame(t, "new leader's Load", got, batchOf(1, 100, workunit.StatusWaiting))
	if err := st.Apply(ctx, batchOf(1, 50, workunit.StatusDone)); err != nil {
		t.Fatalf("Apply on the new leader with one of three down: %v", err)
	}
	// The old leader comes back, and catches up from the log.
	c.start(l, nil)
	c.waitApplied(ctx, l, c.nodes[l2].fsm.Applied())
	want := append(batchOf(1, 50, workunit.StatusDone), batchOf(51, 100, workunit.StatusWaiting)...)
	wantSame(t, "the old leader, back", c.localLoad(l), want)
}

func TestStore_Blobs_Replicated(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// raft's default timing, and each write tried again through the next
	// leader if the leader is lost meanwhile (a loaded machine, -race), as
	// the tracker does.
	c := newInmemCluster(t, 3, Timing{})
	l := c.leader(ctx)
	write := func(what string, f func(st *Store) error) {
		t.Helper()
		for err := f(c.store(l)); err != nil; err = f(c.store(l)) {
			if !errors.Is(err, ErrNotLeader) {
				t.Fatalf("%s: %v", what, err)
			}
			l = c.leader(ctx)
		}
	}
	small := []byte("a small blob")
	write("put a small blob", func(st *Store) error { return st.PutBlob(ctx, blob.Sum(small), small) })
	if err := c.store(l).PutBlob(ctx, blob.Sum(small), []byte("other bytes")); !errors.Is(err, store.ErrBlobMismatch) {
		t.Fatalf("PutBlob of bytes that do not match: %v, want ErrBlobMismatch", err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (pieceThreshold+100)/16)
	write("a blob in pieces", func(st *Store) error {
		w, err := st.CreateBlob(ctx, blob.Sum(big), int64(len(big)))
		if err != nil {
			return err
		}
		defer w.Abort()
		for p := big; len(p) > 0; {
			n := min(len(p), 64<<10)
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		return w.Commit(ctx)
	})
	write("put jobs", func(st *Store) error {
		return st.PutJobs(ctx, []store.Job{{Realm: "r1", ID: "j1", Name: "job.js"}}, nil)
	})
	index := c.nodes[l].fsm.Applied()
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		f := c.store(i) // reads are local
		for _, b := range [][]byte{small, big} {
			got, err := f.GetBlob(ctx, blob.Sum(b))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("node %d: GetBlob of %d bytes: %d bytes, %v", i, len(b), len(got), err)
			}
		}
		jobs, err := f.LoadJobs(ctx)
		if err != nil || len(jobs) != 1 || jobs[0].ID != "j1" {
			t.Fatalf("node %d: LoadJobs = %v, %v", i, jobs, err)
		}
	}
}

func TestStore_Snapshot_FollowerThatWasDown_CatchesUp(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	timing := fastTiming
	timing.TrailingLogs = 4 // so that the follower, back, needs the snapshot
	timing.SnapshotThreshold = 1 << 40
	timing.SnapshotInterval = time.Hour // snapshots only when the test asks
	c := newInmemCluster(t, 3, timing)
	l := c.leader(ctx)
	f := (l + 1) % 3
	c.stop(f)
	st := c.store(l)
	big := bytes.Repeat([]byte("blob in pieces "), (pieceThreshold+100)/15)
	if err := st.PutBlob(ctx, blob.Sum(big), big); err != nil {
		t.Fatal(err)
	}
	// A replica's client address, which snapshots carry too.
	if err := st.apply(ctx, "peer", append([]byte{cmdPeer}, `{"id":"r9","client":"10.0.0.9:2355"}`...)); err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 20; i++ {
		if err := st.Apply(ctx, batchOf(i*10+1, i*10+10, workunit.StatusWaiting)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.nodes[l].raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	// Past the snapshot: the follower gets these from the log.
	if err := st.Apply(ctx, batchOf(1, 20, workunit.StatusDone)); err != nil {
		t.Fatal(err)
	}
	first, err := c.nodes[l].logs.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first <= 2 {
		t.Fatalf("the log was not compacted (first index %d): the test would not need the snapshot", first)
	}
	c.start(f, nil)
	c.waitApplied(ctx, f, c.nodes[l].fsm.Applied())
	want := append(batchOf(1, 20, workunit.StatusDone), batchOf(21, 200, workunit.StatusWaiting)...)
	wantSame(t, "the follower that was down", c.localLoad(f), want)
	got, err := c.store(f).GetBlob(ctx, blob.Sum(big))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the follower's blob from the snapshot: %d bytes, %v", len(got), err)
	}
	if got := c.nodes[f].fsm.peerClient("r9"); got != "10.0.0.9:2355" {
		t.Fatalf("the follower's client address of r9 from the snapshot: %q", got)
	}
}

func TestStore_Restart_FromSnapshotAndLog(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	timing := fastTiming
	timing.SnapshotThreshold = 1 << 40
	timing.SnapshotInterval = time.Hour
	c := newInmemCluster(t, 3, timing)
	l := c.leader(ctx)
	st := c.store(l)
	if err := st.Apply(ctx, batchOf(1, 30, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[l].raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if err := st.Apply(ctx, batchOf(1, 10, workunit.StatusDone)); err != nil {
		t.Fatal(err)
	}
	want := append(batchOf(1, 10, workunit.StatusDone), batchOf(11, 30, workunit.StatusWaiting)...)
	// Every node restarted: each rebuilds its local store from its own
	// snapshot (the leader's) or log, and the entries after it.
	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i, nil)
	}
	c.wantEverywhere(t, ctx, c.leader(ctx), "after the restart", want)
}

func TestFSM_Restore_RejectsForeignBytes(t *testing.T) {
	t.Parallel()
	f, err := openFSM(context.Background(), t.TempDir()+"/state", slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if err := f.local.Apply(context.Background(), batchOf(1, 3, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	err = f.Restore(io.NopCloser(bytes.NewReader([]byte("not a snapshot at all"))))
	if err == nil {
		t.Fatal("Restore of foreign bytes succeeded")
	}
	// The old store is kept.
	var n int
	_ = f.use(func(b *store.Bolt) error {
		recs, err := b.Load(context.Background())
		n = len(recs)
		return err
	})
	if n != 3 {
		t.Fatalf("after a failed restore the store has %d records, want the 3 it had", n)
	}
}

func TestBatch_RoundTrip(t *testing.T) {
	t.Parallel()
	b := batchOf(1, 3, workunit.StatusDone)
	b[1].Result, b[1].Stored = nil, true
	b = append(b, table.Record{ID: 9}) // a tombstone
	got, err := store.DecodeBatch(store.EncodeBatch(b))
	if err != nil {
		t.Fatal(err)
	}
	wantSame(t, "round trip", got, b)
	if !got[1].Stored || got[0].Stored {
		t.Fatalf("Stored flags: %v %v, want false true", got[0].Stored, got[1].Stored)
	}
	enc := store.EncodeBatch(b)
	for _, cut := range []int{0, 1, 5, len(enc) - 1} {
		if _, err := store.DecodeBatch(enc[:cut]); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("a batch cut to %d bytes: %v, want ErrCorrupt", cut, err)
		}
	}
}

// BenchmarkStore_Apply: one record a write, one write at a time (the
// tracker's round trip makes two), through three replicas on raft's
// in-memory transport with real logs on disk.
func BenchmarkStore_Apply(b *testing.B) {
	ctx := context.Background()
	c := newInmemCluster(b, 3, Timing{})
	l := c.leader(ctx)
	st := c.store(l)
	b.ResetTimer()
	for i := range b.N {
		if err := st.Apply(ctx, batchOf(uint64(i+1), uint64(i+1), workunit.StatusWaiting)); err != nil {
			b.Fatal(err)
		}
	}
}
