package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/riot-go/riot/blob"
)

// BlobWriter takes the bytes of one blob, in order, as a tracker receives
// its pieces (Store.CreateBlob). Nothing of it is visible to readers until
// Commit returns nil. A BlobWriter is used by one goroutine.
type BlobWriter interface {
	// Write appends p. Writing more than the size given to CreateBlob
	// fails.
	Write(p []byte) (int, error)
	// Written returns the bytes written so far.
	Written() int64
	// Commit checks that all the bytes were written and that they hash to
	// the blob's hash (ErrBlobMismatch otherwise), and stores the blob
	// durably. A blob stored meanwhile (by another upload) is kept as it
	// is. After Commit, with or without an error, the writer is done.
	Commit(ctx context.Context) error
	// Abort drops what was written. It may be called after Commit (it
	// then does nothing).
	Abort()
}

// BlobDir is the directory, next to FileName, where a Bolt store keeps
// the blobs uploaded in pieces: one file per blob, named by its hash in
// hex, written once and renamed into place when whole and checked.
const BlobDir = "blobs"

// partSuffix marks a blob file being written; OpenBolt removes the ones
// an earlier process left.
const partSuffix = ".part"

// fileBlobs is the directory of a Bolt store's blobs that came in pieces.
// Reads use pread, not a memory map, so that a large blob read piece by
// piece does not count against the process's resident memory.
type fileBlobs struct {
	dir string
}

func (f fileBlobs) path(h blob.Hash) string { return filepath.Join(f.dir, h.String()) }

// clean creates the directory and removes the parts an earlier process
// left.
func (f fileBlobs) clean() error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), partSuffix) {
			_ = os.Remove(filepath.Join(f.dir, e.Name()))
		}
	}
	return nil
}

// stat returns the size of blob h, and whether it is there.
func (f fileBlobs) stat(h blob.Hash) (int64, bool, error) {
	fi, err := os.Stat(f.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: %w", err)
	}
	return fi.Size(), true, nil
}

// readAt reads blob h at off into p; found is false when it is not there.
func (f fileBlobs) readAt(h blob.Hash, off int64, p []byte) (size int64, n int, found bool, err error) {
	fd, err := os.Open(f.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("store: %w", err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return 0, 0, true, fmt.Errorf("store: %w", err)
	}
	size = fi.Size()
	if off > size {
		return size, 0, true, fmt.Errorf("store: read blob %s: offset %d is past its end (%d bytes)", h.Short(), off, size)
	}
	p = p[:min(int64(len(p)), size-off)]
	n, err = fd.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err != nil {
		return size, n, true, fmt.Errorf("store: read blob %s: %w", h.Short(), err)
	}
	return size, n, true, nil
}

// create starts a file blob of size bytes.
func (f fileBlobs) create(h blob.Hash, size int64) (*fileWriter, error) {
	fd, err := os.CreateTemp(f.dir, h.String()+"-*"+partSuffix)
	if err != nil {
		return nil, fmt.Errorf("store: create blob %s: %w", h.Short(), err)
	}
	return &fileWriter{f: f, h: h, size: size, fd: fd, sum: sha256.New()}, nil
}

// fileWriter writes a file blob: to a part file, hashed as it goes;
// Commit syncs it and renames it to its hash.
type fileWriter struct {
	f    fileBlobs
	h    blob.Hash
	size int64
	n    int64
	fd   *os.File
	sum  hash.Hash
}

func (w *fileWriter) Written() int64 { return w.n }

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.fd == nil {
		return 0, fmt.Errorf("store: blob %s: written after its end", w.h.Short())
	}
	if w.n+int64(len(p)) > w.size {
		return 0, fmt.Errorf("store: blob %s: %d bytes past its size of %d", w.h.Short(), w.n+int64(len(p))-w.size, w.size)
	}
	n, err := w.fd.Write(p)
	w.sum.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("store: write blob %s: %w", w.h.Short(), err)
	}
	return n, nil
}

func (w *fileWriter) Commit(ctx context.Context) error {
	if w.fd == nil {
		return fmt.Errorf("store: blob %s: committed twice", w.h.Short())
	}
	defer w.Abort()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put blob: %w", err)
	}
	if w.n != w.size {
		return fmt.Errorf("store: blob %s: %d bytes of %d written", w.h.Short(), w.n, w.size)
	}
	if got := blob.Hash(w.sum.Sum(nil)); got != w.h {
		return fmt.Errorf("%w: %s (its bytes hash to %s)", ErrBlobMismatch, w.h.Short(), got.Short())
	}
	if err := w.fd.Sync(); err != nil {
		return fmt.Errorf("store: put blob %s: %w", w.h.Short(), err)
	}
	name := w.fd.Name()
	if err := w.fd.Close(); err != nil {
		return fmt.Errorf("store: put blob %s: %w", w.h.Short(), err)
	}
	w.fd = nil
	if err := os.Rename(name, w.f.path(w.h)); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("store: put blob %s: %w", w.h.Short(), err)
	}
	// The rename is durable once the directory is.
	if d, err := os.Open(w.f.dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("store: put blob %s: %w", w.h.Short(), err)
		}
	}
	return nil
}

func (w *fileWriter) Abort() {
	if w.fd == nil {
		return
	}
	name := w.fd.Name()
	w.fd.Close()
	_ = os.Remove(name)
	w.fd = nil
}

// memWriter is a Memory store's BlobWriter: the pieces are copied into
// chunks of memChunk bytes, each made when the bytes for it come (a
// claim alone, whose pieces may never come, costs nothing), and hashed
// on the way, so that Commit does not read the blob again.
type memWriter struct {
	m      *Memory
	h      blob.Hash
	size   int64
	n      int64
	chunks [][]byte
	sum    hash.Hash
	done   bool
	// held: the store had the blob when the upload began; its bytes are
	// hashed and counted but not kept (an upload of what is held, which
	// the tracker's memory bound does not reserve room for, costs no
	// memory).
	held bool
}

func (w *memWriter) Written() int64 { return w.n }

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("store: blob %s: written after its end", w.h.Short())
	}
	if w.n+int64(len(p)) > w.size {
		return 0, fmt.Errorf("store: blob %s: %d bytes past its size of %d", w.h.Short(), w.n+int64(len(p))-w.size, w.size)
	}
	written := len(p)
	if w.sum == nil {
		w.sum = sha256.New()
	}
	w.sum.Write(p)
	w.n += int64(len(p))
	for len(p) > 0 && !w.held {
		last := len(w.chunks) - 1
		if last < 0 || len(w.chunks[last]) == cap(w.chunks[last]) {
			// The chunk's size is known: memChunk, or what is left of the
			// blob.
			had := int64(len(w.chunks)) * memChunk
			w.chunks = append(w.chunks, make([]byte, 0, min(memChunk, w.size-had)))
			last++
		}
		c := w.chunks[last]
		k := min(len(p), cap(c)-len(c))
		w.chunks[last] = append(c, p[:k]...)
		p = p[k:]
	}
	return written, nil
}

func (w *memWriter) Commit(ctx context.Context) error {
	if w.done {
		return fmt.Errorf("store: blob %s: committed twice", w.h.Short())
	}
	w.done = true
	chunks := w.chunks
	w.chunks = nil
	if w.n != w.size {
		return fmt.Errorf("store: blob %s: %d bytes of %d written", w.h.Short(), w.n, w.size)
	}
	got := blob.Sum(nil)
	if w.sum != nil {
		got = blob.Hash(w.sum.Sum(nil))
	}
	if got != w.h {
		return fmt.Errorf("%w: %s (its bytes hash to %s)", ErrBlobMismatch, w.h.Short(), got.Short())
	}
	if err := w.m.lock("put blob"); err != nil {
		return err
	}
	defer w.m.mu.Unlock()
	if _, ok := w.m.blobs[w.h]; !ok {
		if w.held {
			return fmt.Errorf("store: blob %s: dropped while it was uploaded again: upload it again", w.h.Short())
		}
		if chunks == nil {
			chunks = [][]byte{{}}
		}
		w.m.addBlobLocked(w.h, memBlob{chunks: chunks, size: w.size})
	}
	return nil
}

func (w *memWriter) Abort() { w.done, w.chunks = true, nil }

// CreateBlob implements Store.
func (m *Memory) CreateBlob(ctx context.Context, h blob.Hash, size int64) (BlobWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: create blob: %w", err)
	}
	if size < 0 {
		return nil, fmt.Errorf("store: create blob %s: size %d", h.Short(), size)
	}
	// No room yet: the pieces may never come (Write makes each chunk as
	// its bytes come); none at all for a blob held already.
	if err := m.lock("create blob"); err != nil {
		return nil, err
	}
	_, held := m.blobs[h]
	m.mu.Unlock()
	return &memWriter{m: m, h: h, size: size, held: held}, nil
}

// ReadBlob implements Store.
func (m *Memory) ReadBlob(ctx context.Context, h blob.Hash, off int64, p []byte) (int64, int, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("store: read blob: %w", err)
	}
	if err := m.lock("read blob"); err != nil {
		return 0, 0, err
	}
	defer m.mu.Unlock()
	b, ok := m.blobs[h]
	if !ok {
		return 0, 0, fmt.Errorf("store: read blob %s: %w", h.Short(), blob.ErrNotFound)
	}
	return b.readAt(h, off, p)
}

// readSlice copies b[off:] into p.
func readSlice(h blob.Hash, b []byte, off int64, p []byte) (int64, int, error) {
	size := int64(len(b))
	if off < 0 || off > size {
		return size, 0, fmt.Errorf("store: read blob %s: offset %d is past its end (%d bytes)", h.Short(), off, size)
	}
	return size, copy(p, b[off:]), nil
}

// CreateBlob implements Store: the blob goes to a file of BlobDir.
func (s *Bolt) CreateBlob(ctx context.Context, h blob.Hash, size int64) (BlobWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: create blob: %w", err)
	}
	if size < 0 {
		return nil, fmt.Errorf("store: create blob %s: size %d", h.Short(), size)
	}
	if s.readOnly {
		return nil, fmt.Errorf("store: create blob %s: %w", h.Short(), ErrReadOnly)
	}
	return s.files.create(h, size)
}

// AdoptBlob makes the file at path its blob h, by renaming it into
// BlobDir: the bytes are neither copied nor hashed, so the caller must
// have checked that they hash to h (a replica's staged blob, hashed as
// its pieces came). path must be on the store's file system. It is gone
// afterwards, whatever the outcome: renamed, or removed when the store
// has h already. Only for a store opened with NoSync, whose blobs need not
// survive a crash: the file and the rename are not synced.
func (s *Bolt) AdoptBlob(ctx context.Context, h blob.Hash, path string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: adopt blob: %w", err)
	}
	if !s.noSync {
		return fmt.Errorf("store: adopt blob %s: only for a store opened with NoSync", h.Short())
	}
	if ok, err := s.HasBlob(ctx, h); err != nil || ok {
		_ = os.Remove(path)
		return err
	}
	if err := os.Rename(path, s.files.path(h)); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("store: adopt blob %s: %w", h.Short(), err)
	}
	return nil
}

// ReadBlob implements Store: from the bbolt file for blobs that came
// whole, from BlobDir for those that came in pieces.
func (s *Bolt) ReadBlob(ctx context.Context, h blob.Hash, off int64, p []byte) (int64, int, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("store: read blob: %w", err)
	}
	var size int64
	var n int
	var found bool
	err := s.use("read blob", func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketBlobs).Get(h[:]); v != nil {
				found = true
				if err := s.checkBlob(h, v); err != nil {
					return err
				}
				var err error
				size, n, err = readSlice(h, v, off, p)
				return err
			}
			return nil
		})
	})
	if err != nil || found {
		return size, n, err
	}
	size, n, found, err = s.files.readAt(h, off, p)
	if err == nil && !found {
		err = fmt.Errorf("store: read blob %s: %w", h.Short(), blob.ErrNotFound)
	}
	return size, n, err
}
