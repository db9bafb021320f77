package replica

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// bufferSink is a raft.SnapshotSink into memory.
type bufferSink struct {
	bytes.Buffer
	closed, canceled bool
}

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Close() error  { s.closed = true; return nil }
func (s *bufferSink) Cancel() error { s.canceled = true; return nil }

var _ raft.SnapshotSink = (*bufferSink)(nil)

// snapshotOf takes f's snapshot and returns its bytes.
func snapshotOf(t *testing.T, f *fsm) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

func recordsCmd(from, to uint64, status workunit.Status) []byte {
	return append([]byte{cmdRecords}, store.EncodeBatch(batchOf(from, to, status))...)
}

// A snapshot taken while commands go on being applied holds the store as
// of the last command before it, no later one; a replica restored from it
// says it has applied that command (its status and metrics, and the wait
// of a new leader), not 0, before any command after it arrives.
func TestFSM_Snapshot_ConsistentWhileApplying_RestoreKeepsAppliedIndex(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	f, err := openFSM(context.Background(), t.TempDir()+"/state", log, func(err error) { t.Errorf("fatal: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if r := f.Apply(&raft.Log{Index: 7, Term: 2, Type: raft.LogCommand, Data: recordsCmd(1, 5, workunit.StatusWaiting)}); r != nil {
		t.Fatal(r)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Applied after the snapshot began, before it is written out.
	if r := f.Apply(&raft.Log{Index: 8, Term: 2, Type: raft.LogCommand, Data: recordsCmd(1, 9, workunit.StatusDone)}); r != nil {
		t.Fatal(r)
	}
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil || !sink.closed {
		t.Fatalf("Persist: %v (closed %v)", err, sink.closed)
	}
	snap.Release()

	g, err := openFSM(context.Background(), t.TempDir()+"/state", log, func(err error) { t.Errorf("fatal: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	v3 := sink.Bytes()
	// A snapshot of the format before (no index) is still read.
	v2 := append([]byte(snapMagic2), v3[len(snapMagic)+8:]...)
	if err := g.Restore(io.NopCloser(bytes.NewReader(v2))); err != nil {
		t.Fatalf("restore of a %q snapshot: %v", snapMagic2, err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(v3))); err != nil {
		t.Fatal(err)
	}
	if got := g.Applied(); got != 7 {
		t.Errorf("applied index after the restore: %d, want 7 (the snapshot's last command)", got)
	}
	var n int
	err = g.use(func(b *store.Bolt) error {
		recs, err := b.Load(context.Background())
		for _, r := range recs {
			if r.Status != workunit.StatusWaiting {
				t.Errorf("record %d is %s in the snapshot: a command after it leaked in", r.ID, r.Status)
			}
		}
		n = len(recs)
		return err
	})
	if err != nil || n != 5 {
		t.Fatalf("the restored store: %d records, %v; want the 5 of the snapshot", n, err)
	}
}
