package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// Memory is a Store in memory, for a tracker without a data directory and
// for tests: nothing survives the process. Apply keeps the records it is
// given (the table never modifies a record's bytes); blobs are copied.
//
// A Memory is safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	recs  map[uint64]table.Record // by ID
	blobs map[blob.Hash]memBlob
	// blobBytes is the sum of the sizes of blobs: what BlobBytes reports.
	blobBytes int64
	jobs      map[string]Job
	closed    bool
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{recs: map[uint64]table.Record{}, blobs: map[blob.Hash]memBlob{}}
}

func (m *Memory) lock(op string) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return nil
}

// Load implements Store. Records come in ID order.
func (m *Memory) Load(ctx context.Context) ([]table.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	if err := m.lock("load"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]table.Record, 0, len(m.recs))
	for _, r := range m.recs {
		r.LostFrom = slices.Clone(r.LostFrom)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b table.Record) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Apply implements Store.
func (m *Memory) Apply(ctx context.Context, batch []table.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: apply: %w", err)
	}
	if err := m.lock("apply"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, r := range batch {
		if r.ID == 0 {
			return fmt.Errorf("store: apply: record %s has no ID", r.Key.Short())
		}
	}
	for _, r := range batch {
		if r.Status == workunit.StatusDone && r.Stored {
			if old, ok := m.recs[r.ID]; !ok || old.Status != workunit.StatusDone {
				return fmt.Errorf("store: apply: record %d (%s) keeps its stored result, and none is stored: %w", r.ID, r.Key.Short(), ErrNotFound)
			}
		}
	}
	for _, r := range batch {
		if r.Status == workunit.StatusUnknown { // a tombstone
			delete(m.recs, r.ID)
			continue
		}
		if r.Status == workunit.StatusDone && r.Stored {
			r.Result, r.Stored = m.recs[r.ID].Result, false
		}
		r.LostFrom = slices.Clone(r.LostFrom)
		m.recs[r.ID] = r
	}
	return nil
}

// LoadStored implements Store.
func (m *Memory) LoadStored(ctx context.Context) ([]table.Record, error) {
	recs, err := m.Load(ctx)
	for i := range recs {
		if recs[i].Status == workunit.StatusDone {
			recs[i].Result, recs[i].Stored = nil, true
		}
	}
	return recs, err
}

// Result implements Store.
func (m *Memory) Result(ctx context.Context, id uint64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: result: %w", err)
	}
	if err := m.lock("result"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || r.Status != workunit.StatusDone {
		return nil, fmt.Errorf("store: result of record %d: %w", id, ErrNotFound)
	}
	return r.Result, nil
}

// PutBlob implements Store.
func (m *Memory) PutBlob(ctx context.Context, h blob.Hash, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put blob: %w", err)
	}
	if blob.Sum(data) != h {
		return fmt.Errorf("%w: %s", ErrBlobMismatch, h.Short())
	}
	if err := m.lock("put blob"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.blobs[h]; !ok {
		m.addBlobLocked(h, wholeBlob(bytes.Clone(data)))
	}
	return nil
}

// addBlobLocked keeps b as blob h, which the store does not hold, and
// counts its bytes; m.mu is held.
func (m *Memory) addBlobLocked(h blob.Hash, b memBlob) {
	m.blobs[h] = b
	m.blobBytes += b.size
}

// DeleteBlob drops blob h, if the store holds it, and reports whether it
// did: its bytes leave BlobBytes (and the heap, once nothing read from it
// is in use). Only a tracker that knows nothing names h any more may call
// it (see tracker's blobBound).
func (m *Memory) DeleteBlob(h blob.Hash) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[h]
	if !ok {
		return false
	}
	delete(m.blobs, h)
	m.blobBytes -= b.size
	return true
}

// BlobBytes returns the bytes of the blobs the store holds, all in memory,
// and their number. A tracker counts them toward its memory bound (riotd
// --memory --max-memory); a blob being uploaded in pieces counts once it
// is committed.
func (m *Memory) BlobBytes() (bytes int64, blobs int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.blobBytes, len(m.blobs)
}

// GetBlob implements Store.
func (m *Memory) GetBlob(ctx context.Context, h blob.Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: get blob: %w", err)
	}
	if err := m.lock("get blob"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	b, ok := m.blobs[h]
	if !ok {
		return nil, fmt.Errorf("store: get blob %s: %w", h.Short(), blob.ErrNotFound)
	}
	if len(b.chunks) > 1 {
		return b.bytes(), nil // a new slice already
	}
	return bytes.Clone(b.bytes()), nil
}

// HasBlob implements Store.
func (m *Memory) HasBlob(ctx context.Context, h blob.Hash) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("store: has blob: %w", err)
	}
	if err := m.lock("has blob"); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	_, ok := m.blobs[h]
	return ok, nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
