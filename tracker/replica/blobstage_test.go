package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// blobCommitBody is a cmdBlobCommit's payload after the stage ID.
func blobCommitBody(h blob.Hash, size int) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), h[:]...), uint64(size))
}

// stageFiles lists f's stage directory.
func stageFiles(t *testing.T, f *fsm) []string {
	t.Helper()
	ents, err := os.ReadDir(f.stageDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func fsmBlob(t *testing.T, f *fsm, h blob.Hash) ([]byte, error) {
	t.Helper()
	var data []byte
	err := f.use(func(local *store.Bolt) error {
		var err error
		data, err = local.GetBlob(context.Background(), h)
		return err
	})
	return data, err
}

// TestFSM_BlobStage_InAFile_SnapshotKeepsIt: a blob's pieces go to a file
// of the stage directory, not to memory; a snapshot taken half way holds
// them, so that a replica restored from it commits the blob whole; the
// commit leaves no file behind.
func TestFSM_BlobStage_InAFile_SnapshotKeepsIt(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	data := bytes.Repeat([]byte("riot blob piece "), 3*maxEntryBytes/16+5)
	h := blob.Sum(data)
	id := uint64(3)<<32 | 1
	first, rest := data[:maxEntryBytes], data[maxEntryBytes:]
	if r := f.Apply(stageEntry(10, 3, id, cmdBlobPiece, first)); r != nil {
		t.Fatal(r)
	}
	if len(f.stages) != 0 {
		t.Errorf("a blob's piece held in memory: %d stages", len(f.stages))
	}
	if got := stageFiles(t, f); len(got) != 1 {
		t.Errorf("stage files %v, want one", got)
	}
	snapshot := snapshotOf(t, f)

	g := testFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshot))); err != nil {
		t.Fatal(err)
	}
	for i, p := range [][]byte{rest[:maxEntryBytes], rest[maxEntryBytes:]} {
		if r := g.Apply(stageEntry(uint64(11+i), 3, id, cmdBlobPiece, p)); r != nil {
			t.Fatal(r)
		}
	}
	if r := g.Apply(stageEntry(13, 3, id, cmdBlobCommit, blobCommitBody(h, len(data)))); r != nil {
		t.Fatal(r)
	}
	got, err := fsmBlob(t, g, h)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the blob after restore and commit: %d bytes, %v", len(got), err)
	}
	if files := stageFiles(t, g); len(files) != 0 {
		t.Errorf("stage files left after the commit: %v", files)
	}
	if g.Applied() != 13 {
		t.Errorf("applied %d, want 13", g.Applied())
	}
	// The original goes on too, with the same pieces.
	for i, p := range [][]byte{rest[:maxEntryBytes], rest[maxEntryBytes:]} {
		if r := f.Apply(stageEntry(uint64(11+i), 3, id, cmdBlobPiece, p)); r != nil {
			t.Fatal(r)
		}
	}
	if r := f.Apply(stageEntry(13, 3, id, cmdBlobCommit, blobCommitBody(h, len(data)))); r != nil {
		t.Fatal(r)
	}
	if got, err := fsmBlob(t, f, h); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the blob: %d bytes, %v", len(got), err)
	}
}

// TestFSM_BlobStage_MissingPiece_WrongBytes_OldTerm: a commit whose stage
// lacks a piece, or whose bytes do not hash to its hash, stores nothing
// and answers an error (the same on every replica: not a failure of the
// replica); a stage of an earlier term is dropped at the first command of
// a newer one, and a cmdDrop drops one; no file is left.
func TestFSM_BlobStage_MissingPiece_WrongBytes_OldTerm(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	data := bytes.Repeat([]byte{7}, 2*maxEntryBytes+10)
	h := blob.Sum(data)
	idx := uint64(10)
	apply := func(term, id uint64, kind byte, p []byte) any {
		idx++
		return f.Apply(stageEntry(idx, term, id, kind, p))
	}
	// A piece missing.
	a := uint64(3)<<32 | 1
	apply(3, a, cmdBlobPiece, data[:maxEntryBytes])
	apply(3, a, cmdBlobPiece, data[2*maxEntryBytes:])
	if r, ok := apply(3, a, cmdBlobCommit, blobCommitBody(h, len(data))).(error); !ok || !strings.Contains(r.Error(), "missing") {
		t.Errorf("the commit of a stage with a piece missing: %v", r)
	}
	// Bytes that are not the hash's.
	b := uint64(3)<<32 | 2
	wrong := bytes.Repeat([]byte{8}, len(data))
	for off := 0; off < len(wrong); off += maxEntryBytes {
		apply(3, b, cmdBlobPiece, wrong[off:min(off+maxEntryBytes, len(wrong))])
	}
	if r, ok := apply(3, b, cmdBlobCommit, blobCommitBody(h, len(data))).(error); !ok || !errors.Is(r, store.ErrBlobMismatch) {
		t.Errorf("the commit of bytes that do not hash to the blob's hash: %v", r)
	}
	if _, err := fsmBlob(t, f, h); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a blob stored from a commit that failed: %v", err)
	}
	// Dropped: by cmdDrop, and by a newer term.
	c, d := uint64(3)<<32|3, uint64(3)<<32|4
	apply(3, c, cmdBlobPiece, data[:maxEntryBytes])
	apply(3, d, cmdBlobPiece, data[:maxEntryBytes])
	apply(3, c, cmdDrop, nil)
	if got := stageFiles(t, f); len(got) != 1 {
		t.Errorf("stage files %v after a drop, want one", got)
	}
	idx++
	if r := f.Apply(&raft.Log{Index: idx, Term: 4, Type: raft.LogCommand, Data: termedRecords(4, batchOf(1, 1, workunit.StatusWaiting))}); r != nil {
		t.Fatal(r)
	}
	if got := stageFiles(t, f); len(got) != 0 || len(f.blobStages) != 0 {
		t.Errorf("stages of term 3 kept in term 4: files %v, %d open", got, len(f.blobStages))
	}
}

// TestStore_LargeBlob_InPieces_NoneInMemory: a blob of several pieces
// written through CreateBlob goes as cmdBlobPiece entries of at most about
// maxEntryBytes; every replica stores it, and none keeps a stage after.
// A large upload whose bytes do not hash to its hash is refused at its
// commit, and no replica stores it.
func TestStore_LargeBlob_InPieces_NoneInMemory(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, Timing{})
	data := bytes.Repeat([]byte("0123456789abcdef"), (5*maxEntryBytes+12345)/16)
	h := blob.Sum(data)
	write := func(l int, h blob.Hash, data []byte) error {
		w, err := c.store(l).CreateBlob(ctx, h, int64(len(data)))
		if err != nil {
			return err
		}
		defer w.Abort()
		for p := data; len(p) > 0; {
			n := min(len(p), 300<<10) // not a divisor of a piece
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		return w.Commit(ctx)
	}
	l := c.leader(ctx)
	for err := write(l, h, data); err != nil; err = write(l, h, data) {
		if !errors.Is(err, ErrNotLeader) {
			t.Fatal(err)
		}
		l = c.leader(ctx)
	}
	pieces := entriesOf(t, c, l, cmdBlobPiece)
	if pieces != 6 {
		t.Errorf("%d pieces for a blob of 5 MiB and a bit, want 6", pieces)
	}
	wrong := bytes.Repeat([]byte{1}, 2*maxEntryBytes+1)
	if err := write(l, blob.Sum(data[:len(wrong)]), wrong); !errors.Is(err, store.ErrBlobMismatch) {
		t.Errorf("an upload whose bytes do not match its hash: %v, want ErrBlobMismatch", err)
	}
	// The leader's barrier: everything before it (the drop of the
	// refused upload's pieces too) is applied. A leader lost meanwhile
	// (a slow machine): the next one's.
	var index uint64
	for {
		l = c.leader(ctx)
		if err := c.nodes[l].raft.Barrier(5 * time.Second).Error(); err == nil {
			index = c.nodes[l].fsm.Applied()
			break
		} else if ctx.Err() != nil {
			t.Fatalf("no barrier: %v", err)
		}
	}
	for i := range c.nodes {
		c.waitApplied(ctx, i, index)
		got, err := c.store(i).GetBlob(ctx, h)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("node %d: the blob: %d bytes, %v", i, len(got), err)
		}
		if _, err := c.store(i).GetBlob(ctx, blob.Sum(data[:len(wrong)])); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("node %d: a blob stored from an upload that did not match: %v", i, err)
		}
		if files := stageFiles(t, c.nodes[i].fsm); len(files) != 0 {
			t.Errorf("node %d: stage files left: %v", i, files)
		}
	}
}

// BenchmarkStore_LargeBlob: a blob of 64 MiB written through CreateBlob
// in pieces of 1 MiB, to three replicas in one process (their logs and
// local stores on disk), until every replica has it.
func BenchmarkStore_LargeBlob(b *testing.B) {
	ctx := context.Background()
	c := newInmemCluster(b, 3, Timing{})
	l := c.leader(ctx)
	st := c.store(l)
	data := make([]byte, 64<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := range b.N {
		binary.BigEndian.PutUint64(data, uint64(i)) // a blob of its own each time
		h := blob.Sum(data)
		w, err := st.CreateBlob(ctx, h, int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		for p := data; len(p) > 0; p = p[maxEntryBytes:] {
			if _, err := w.Write(p[:maxEntryBytes]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		index := c.barrier(l)
		for j := range c.nodes {
			c.waitApplied(ctx, j, index)
		}
	}
}

// TestStore_LargeBlob_AfterClose: a closed Store writes nothing, a blob
// in pieces no more than a small one (its HasBlob fails with ErrClosed,
// which PutBlob took for "not held" and went on to write it), and a writer
// opened before the Close does not commit after it.
func TestStore_LargeBlob_AfterClose(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 1, Timing{})
	l := c.leader(ctx)
	data := bytes.Repeat([]byte("after close, 16"), (2*maxEntryBytes+100)/15)
	h := blob.Sum(data)

	st := c.store(l)
	w, err := st.CreateBlob(ctx, h, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.PutBlob(ctx, h, data); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("PutBlob after Close: %v, want ErrClosed", err)
	}
	if _, err = w.Write(data); err == nil {
		err = w.Commit(ctx)
	}
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("a writer's Write and Commit after Close: %v, want ErrClosed", err)
	}
	if ok, err := c.store(l).HasBlob(ctx, h); err != nil || ok {
		t.Fatalf("a closed Store wrote the blob (has it: %v, %v)", ok, err)
	}
}
