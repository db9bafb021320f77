package replica

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
)

// A blob too large for one log entry goes through Raft in pieces that
// every replica appends to a file (cmdBlobPiece), then a commit
// (cmdBlobCommit) that makes the file the local store's blob. So a blob
// of any size the tracker takes (--max-blob-bytes) costs each replica a
// piece of memory at a time, not the blob, and the leader's writer sends
// the pieces as the upload brings them (blobWriter).

// blobStage is a blob being written in pieces on this replica: its file
// in the stage directory, open for appending, the bytes in it, and their
// hash so far (taken as the pieces come, so that the commit checks the
// blob without reading it again).
type blobStage struct {
	fd  *os.File
	n   int64
	sum hash.Hash
}

func (f *fsm) stageDir() string { return filepath.Join(f.dir, stageDirName) }

func stagePath(dir string, id uint64) string {
	return filepath.Join(dir, stageDirName, strconv.FormatUint(id, 16))
}

// applyBlobStage applies a cmdBlobPiece or cmdBlobCommit of entry l.
func (f *fsm) applyBlobStage(l *raft.Log, data []byte) any {
	if len(data) < 1+8 {
		return f.failed(l, errors.New("a blob's staged piece cut short"))
	}
	id := binary.BigEndian.Uint64(data[1:9])
	st := f.blobStages[id]
	if data[0] == cmdBlobPiece {
		if st == nil {
			if err := os.MkdirAll(f.stageDir(), 0o700); err != nil {
				return f.failed(l, err)
			}
			fd, err := os.OpenFile(stagePath(f.dir, id), os.O_CREATE|os.O_TRUNC|os.O_RDWR|os.O_APPEND, 0o600)
			if err != nil {
				return f.failed(l, err)
			}
			st = &blobStage{fd: fd, sum: sha256.New()}
			if f.blobStages == nil {
				f.blobStages = map[uint64]*blobStage{}
			}
			f.blobStages[id] = st
		}
		n, err := st.fd.Write(data[9:])
		st.n += int64(n)
		st.sum.Write(data[9 : 9+n])
		if err != nil {
			return f.failed(l, fmt.Errorf("stage a blob's piece: %w", err))
		}
		f.applied.Store(l.Index)
		return nil
	}
	// cmdBlobCommit: whatever it finds, the stage is done.
	defer f.dropBlobStage(id)
	if len(data) < 1+8+32+8 {
		return f.failed(l, errors.New("a commit of a staged blob cut short"))
	}
	var h blob.Hash
	copy(h[:], data[9:41])
	size := int64(binary.BigEndian.Uint64(data[41:49]))
	if st == nil || st.n != size {
		// The same on every replica: an answer to its writer only.
		f.applied.Store(l.Index)
		var n int64
		if st != nil {
			n = st.n
		}
		return fmt.Errorf("replica: log entry %d commits blob %s of %d bytes, and %d were staged: a piece is missing (raft did not take it)",
			l.Index, h.Short(), size, n)
	}
	if got := blob.Hash(st.sum.Sum(nil)); got != h {
		f.applied.Store(l.Index) // the same on every replica
		return fmt.Errorf("replica: log entry %d: %w: %s (its staged bytes hash to %s)", l.Index, store.ErrBlobMismatch, h.Short(), got.Short())
	}
	st.fd.Close()
	delete(f.blobStages, id) // its file is the blob's now
	err := f.use(func(local *store.Bolt) error { return local.AdoptBlob(context.Background(), h, stagePath(f.dir, id)) })
	if err != nil {
		return f.failed(l, err)
	}
	f.applied.Store(l.Index)
	return nil
}

// dropBlobStage removes stage id's file, if it has one.
func (f *fsm) dropBlobStage(id uint64) {
	st := f.blobStages[id]
	if st == nil {
		return
	}
	delete(f.blobStages, id)
	st.fd.Close()
	if err := os.Remove(stagePath(f.dir, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.log.Warn("replica: remove a staged blob", "err", err)
	}
}

// closeBlobStages closes the stages' files (their files stay: a Restore
// or the next start removes them with the local store's directory).
func (f *fsm) closeBlobStages() {
	for _, st := range f.blobStages {
		st.fd.Close()
	}
	f.blobStages = nil
}

// maxBlobStageBytes bounds a staged blob read from a snapshot: a sanity
// check (the bytes go to a file, not memory).
const maxBlobStageBytes = 1 << 40

// snapBlobStage is a blob stage as a snapshot holds it: the bytes staged
// when the snapshot was taken, read from a descriptor of its own (the
// stage may be committed and its file removed while the snapshot is
// written).
type snapBlobStage struct {
	id uint64
	fd *os.File
	n  int64
}

// snapshotBlobStages opens the blob stages for a snapshot, on raft's FSM
// goroutine.
func (f *fsm) snapshotBlobStages() ([]snapBlobStage, error) {
	out := make([]snapBlobStage, 0, len(f.blobStages))
	for id, st := range f.blobStages {
		fd, err := os.Open(stagePath(f.dir, id))
		if err != nil {
			closeSnapBlobStages(out)
			return nil, err
		}
		out = append(out, snapBlobStage{id: id, fd: fd, n: st.n})
	}
	return out, nil
}

func closeSnapBlobStages(ss []snapBlobStage) {
	for _, s := range ss {
		s.fd.Close()
	}
}

// writeSnapBlobStages writes the snapshot's section 3: for each blob
// stage a 3, its stage ID (8 bytes), its size (8 bytes) and bytes.
func writeSnapBlobStages(w *bufio.Writer, ss []snapBlobStage) error {
	var n [8]byte
	for _, s := range ss {
		w.WriteByte(3)
		binary.BigEndian.PutUint64(n[:], s.id)
		w.Write(n[:])
		binary.BigEndian.PutUint64(n[:], uint64(s.n))
		w.Write(n[:])
		if _, err := io.Copy(w, io.NewSectionReader(s.fd, 0, s.n)); err != nil {
			return fmt.Errorf("a staged blob: %w", err)
		}
	}
	return nil
}

// readSnapBlobStage reads one blob stage of a snapshot (after its tag)
// into dir's stage directory, and returns its ID and size.
func readSnapBlobStage(r *bufio.Reader, dir string) (uint64, int64, error) {
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("snapshot cut short: %w", err)
	}
	id, size := binary.BigEndian.Uint64(hdr[:8]), binary.BigEndian.Uint64(hdr[8:])
	if size > maxBlobStageBytes {
		return 0, 0, fmt.Errorf("snapshot: a staged blob of %d bytes", size)
	}
	if err := os.MkdirAll(filepath.Join(dir, stageDirName), 0o700); err != nil {
		return 0, 0, err
	}
	if err := copyToFile(stagePath(dir, id), r, int64(size)); err != nil {
		return 0, 0, err
	}
	return id, int64(size), nil
}

// openBlobStages opens, after a Restore, the blob stages the snapshot
// held, to append to them, and hashes what they hold so far.
func (f *fsm) openBlobStages(sizes map[uint64]int64) error {
	for id, n := range sizes {
		fd, err := os.OpenFile(stagePath(f.dir, id), os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		if f.blobStages == nil {
			f.blobStages = map[uint64]*blobStage{}
		}
		st := &blobStage{fd: fd, n: n, sum: sha256.New()}
		if _, err := io.Copy(st.sum, io.NewSectionReader(fd, 0, n)); err != nil {
			fd.Close()
			return err
		}
		f.blobStages[id] = st
	}
	return nil
}
