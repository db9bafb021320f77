package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
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

// testFSM opens an FSM on a local store in a temporary directory, closed
// when the test ends; a command that fails to apply fails the test.
func testFSM(t *testing.T) *fsm {
	t.Helper()
	f, err := openFSM(context.Background(), filepath.Join(t.TempDir(), "state"), slog.New(slog.DiscardHandler),
		func(err error) { t.Errorf("fatal: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.close() })
	return f
}

// termedRecords is the command of a tracker of term that writes batch.
func termedRecords(term uint64, batch []table.Record) []byte {
	cmd := append(binary.BigEndian.AppendUint64([]byte{cmdTermed}, term), cmdRecords)
	return append(cmd, store.EncodeBatch(batch)...)
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
	f := testFSM(t)
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

	g := testFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := g.Applied(); got != 7 {
		t.Errorf("applied index after the restore: %d, want 7 (the snapshot's last command)", got)
	}
	recs := loadFSM(t, g)
	for _, r := range recs {
		if r.Status != workunit.StatusWaiting {
			t.Errorf("record %d is %s in the snapshot: a command after it leaked in", r.ID, r.Status)
		}
	}
	if n := len(recs); n != 5 {
		t.Fatalf("the restored store: %d records; want the 5 of the snapshot", n)
	}
}
