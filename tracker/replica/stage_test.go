package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// bigBatch is n done records with results of size bytes each.
func bigBatch(n, size int) []table.Record {
	var batch []table.Record
	for i := range n {
		r := testRecord(uint64(i+1), workunit.StatusDone)
		r.Result = bytes.Repeat([]byte{byte('a' + i)}, size)
		batch = append(batch, r)
	}
	return batch
}

// TestStore_LargeBatch_GoesInPieces: a batch far past maxEntryBytes is
// written as log entries of at most about maxEntryBytes each, and every
// replica's local store has it whole.
func TestStore_LargeBatch_GoesInPieces(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// raft's default timing: a few megabytes under -race on a loaded
	// machine can take longer than fastTiming's lease.
	c := newInmemCluster(t, 3, Timing{})
	batch := bigBatch(3, 1<<20) // about 3 MiB encoded
	l := c.leader(ctx)
	// A leader lost during the write (the machine is slow): the batch
	// is written again through the next one, as the tracker does.
	for err := c.store(l).Apply(ctx, batch); err != nil; err = c.store(l).Apply(ctx, batch) {
		if !errors.Is(err, ErrNotLeader) {
			t.Fatal(err)
		}
		l = c.leader(ctx)
	}
	pieces := entriesOf(t, c, l, cmdStage)
	if pieces < 3 {
		t.Errorf("%d pieces for a batch of 3 MiB", pieces)
	}
	index := c.nodes[l].fsm.Applied()
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		wantSame(t, fmt.Sprintf("node %d", i), c.localLoad(i), batch)
	}
}

func stageEntry(index, term, id uint64, kind byte, piece []byte) *raft.Log {
	data := binary.BigEndian.AppendUint64([]byte{cmdTermed}, term)
	data = append(data, kind)
	data = binary.BigEndian.AppendUint64(data, id)
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: append(data, piece...)}
}

// TestFSM_Stage_SnapshotKeepsIt_NewTermDropsIt: a command staged in part
// when a snapshot is taken is whole after a restore from it (the commit
// applies it); a stage of an earlier term is dropped at the first command
// of a newer one, and its commit answers an error, not a failure.
func TestFSM_Stage_SnapshotKeepsIt_NewTermDropsIt(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	batch := bigBatch(2, 10)
	cmd := termedRecords(3, batch)
	half := len(cmd) / 2
	id := uint64(3)<<32 | 1
	if r := f.Apply(stageEntry(10, 3, id, cmdStage, cmd[:half])); r != nil {
		t.Fatal(r)
	}
	snapshot := snapshotOf(t, f)

	g := testFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshot))); err != nil {
		t.Fatal(err)
	}
	if r := g.Apply(stageEntry(11, 3, id, cmdStage, cmd[half:])); r != nil {
		t.Fatal(r)
	}
	if r := g.Apply(stageEntry(12, 3, id, cmdCommit, binary.BigEndian.AppendUint64(nil, uint64(len(cmd))))); r != nil {
		t.Fatal(r)
	}
	wantSame(t, "restored, then committed", loadFSM(t, g), batch)

	// A stage of term 3 when term 4's tracker writes: dropped.
	old := uint64(3)<<32 | 2
	if r := g.Apply(stageEntry(13, 3, old, cmdStage, cmd[:half])); r != nil {
		t.Fatal(r)
	}
	next := termedRecords(4, nil)
	if r := g.Apply(&raft.Log{Index: 14, Term: 4, Type: raft.LogCommand, Data: next}); r != nil {
		t.Fatal(r)
	}
	if len(g.stages) != 0 {
		t.Fatalf("stages of an earlier term kept: %d", len(g.stages))
	}
	r := g.Apply(stageEntry(15, 4, old, cmdCommit, binary.BigEndian.AppendUint64(nil, uint64(half))))
	if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "has no pieces") {
		t.Fatalf("commit of a dropped stage: %v", r)
	}
}

// TestFSM_Stage_PieceMissing_CommitRefused: raft.Apply can fail for one
// piece (ErrEnqueueTimeout, ErrLeadershipTransferInProgress) and take the
// next ones and the commit: the commit, which says the command's size,
// applies nothing and answers an error, on every replica alike, rather
// than apply what is left of the command (or stop every replica on it).
func TestFSM_Stage_PieceMissing_CommitRefused(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	batch := bigBatch(3, 100)
	cmd := termedRecords(3, batch)
	third := len(cmd) / 3
	id := uint64(3)<<32 | 1
	if r := f.Apply(stageEntry(10, 3, id, cmdStage, cmd[:third])); r != nil {
		t.Fatal(r)
	}
	// cmd[third:2*third] never reached the log.
	if r := f.Apply(stageEntry(11, 3, id, cmdStage, cmd[2*third:])); r != nil {
		t.Fatal(r)
	}
	r := f.Apply(stageEntry(12, 3, id, cmdCommit, binary.BigEndian.AppendUint64(nil, uint64(len(cmd)))))
	if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "missing") {
		t.Errorf("commit of a stage with a piece missing: %v", r)
	}
	if recs := loadFSM(t, f); len(recs) != 0 {
		t.Errorf("%d records applied from a stage with a piece missing", len(recs))
	}
	if len(f.stages) != 0 {
		t.Errorf("the stage is kept after its commit: %d", len(f.stages))
	}
	if got := f.Applied(); got != 12 {
		t.Errorf("applied index %d, want 12", got)
	}
}

// gatedLogs holds raft's first StoreLogs once armed, until released.
type gatedLogs struct {
	raft.LogStore
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedLogs) StoreLogs(logs []*raft.Log) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.LogStore.StoreLogs(logs)
}

func (g *gatedLogs) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

// stagesOf returns the stages in a snapshot of node i taken now.
func stagesOf(t *testing.T, c *inmemCluster, i int) map[uint64][]byte {
	t.Helper()
	f := c.nodes[i].raft.Snapshot()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	_, rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := readSnapshot(bufio.NewReader(rc), filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return got.stages
}

// TestStore_PiecesNotAllTaken_StageDropped: when raft takes some pieces
// of a command and not the rest or the commit (ErrEnqueueTimeout while
// its leader loop is busy), the write fails and the pieces taken are
// dropped, rather than held in every replica's memory and snapshots until
// the next term.
func TestStore_PiecesNotAllTaken_StageDropped(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	gate := &gatedLogs{entered: make(chan struct{}), release: make(chan struct{})}
	c := newWrappedCluster(t, 1, fastTiming, "", func(_ int, l raft.LogStore) raft.LogStore {
		gate.LogStore = l
		return gate
	})
	l := c.leader(ctx)
	// The leader's first entry stored before the gate is armed.
	if err := c.nodes[l].raft.Barrier(0).Error(); err != nil {
		t.Fatal(err)
	}
	st := c.store(l)
	st.timeout = 50 * time.Millisecond
	enqueued := make(chan struct{})
	st.enqueued = func() { close(enqueued) }
	gate.armed.Store(true)
	errc := make(chan error, 1)
	// 13 pieces and a commit: raft's leader loop takes at most
	// 1+MaxAppendEntries entries before it stores them (held here).
	go func() { errc <- st.Apply(ctx, bigBatch(12, 1<<20)) }()
	<-gate.entered
	<-enqueued
	close(gate.release)
	if err := <-errc; !errors.Is(err, raft.ErrEnqueueTimeout) {
		t.Fatalf("the write: %v, want raft's ErrEnqueueTimeout", err)
	}
	if err := c.nodes[l].raft.Barrier(0).Error(); err != nil {
		t.Fatal(err)
	}
	if piecesIn(t, c, l) == 0 {
		t.Fatal("raft took no piece: the test did not hold what it should")
	}
	if s := stagesOf(t, c, l); len(s) != 0 {
		t.Errorf("%d stages held after a write that failed", len(s))
	}
	if recs := c.localLoad(l); len(recs) != 0 {
		t.Errorf("%d records applied from a write that failed", len(recs))
	}
}

// TestStore_PiecesNotAllTaken_AfterItsContextEnded_StageDropped: as
// above, but the writer's context ends before raft refuses a piece: the
// pieces raft took are dropped all the same.
func TestStore_PiecesNotAllTaken_AfterItsContextEnded_StageDropped(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	gate := &gatedLogs{entered: make(chan struct{}), release: make(chan struct{})}
	c := newWrappedCluster(t, 1, fastTiming, "", func(_ int, l raft.LogStore) raft.LogStore {
		gate.LogStore = l
		return gate
	})
	l := c.leader(ctx)
	c.barrier(l)
	st := c.store(l)
	st.timeout = 50 * time.Millisecond
	enqueued := make(chan struct{})
	st.enqueued = func() { close(enqueued) }
	gate.armed.Store(true)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- st.Apply(wctx, bigBatch(12, 1<<20)) }()
	<-gate.entered
	<-enqueued
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the write: %v, want its context's end", err)
	}
	close(gate.release)
	c.barrier(l)
	if piecesIn(t, c, l) == 0 {
		t.Fatal("raft took no piece: the test did not hold what it should")
	}
	// The drop is written after raft refused a piece, by itself: wait
	// for the stage to go (or the test's deadline).
	for len(stagesOf(t, c, l)) != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d stages held after a write that failed: %v", len(stagesOf(t, c, l)), ctx.Err())
		case <-time.After(5 * time.Millisecond):
			c.barrier(l)
		}
	}
	if recs := c.localLoad(l); len(recs) != 0 {
		t.Errorf("%d records applied from a write that failed", len(recs))
	}
}

// piecesIn counts the pieces (cmdStage) in node l's Raft log.
func piecesIn(t *testing.T, c *inmemCluster, l int) int {
	t.Helper()
	return entriesOf(t, c, l, cmdStage)
}

// entriesOf counts the commands of kind (termed or not) in node l's Raft log, and
// fails the test for any entry past about maxEntryBytes.
func entriesOf(t *testing.T, c *inmemCluster, l int, kind byte) int {
	t.Helper()
	n := c.nodes[l]
	first, _ := n.logs.FirstIndex()
	last, _ := n.logs.LastIndex()
	count := 0
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := n.logs.GetLog(i, &e); err != nil {
			t.Fatal(err)
		}
		if len(e.Data) > maxEntryBytes+termedHeader+1+8 {
			t.Errorf("log entry %d has %d bytes, past maxEntryBytes", i, len(e.Data))
		}
		d := e.Data
		if len(d) > termedHeader && d[0] == cmdTermed {
			d = d[termedHeader:]
		}
		if len(d) > 0 && d[0] == kind {
			count++
		}
	}
	return count
}
