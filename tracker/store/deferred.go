package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// Deferred commits (BoltOptions.Deferred), for a store that is rebuilt
// from elsewhere after a crash (a replica's local store, which its Raft
// log rebuilds): Apply and ApplyEncoded put their records in an overlay
// in memory, keyed by record ID, and flush writes the overlay to the bbolt
// file in one transaction before a batch would take it past
// deferRecords records or deferBytes bytes of batches since the last
// flush (a flush that fails fails that batch, and nothing of it is in
// the overlay), and before Load, LoadStored, BeginCopy and Close.
// No file is written for the overlay: what it holds at a crash is lost,
// which such a store allows. Result reads the overlay first, so every
// read sees every Apply that returned.
//
// It saves what a bbolt transaction a batch costs (a commit writes every
// page of the tree it touched, and the side file) and, when a record
// changes several times before a flush (submitted, then done), all but
// its last write. ApplyEncoded also keeps the records' encodings as
// EncodeBatch wrote them, rather than decoding and encoding them again:
// a record is put as the bytes it came in.

// Flush thresholds of the overlay.
const (
	deferRecords = 8192
	deferBytes   = 32 << 20
)

// Overlay entries' kinds: the record's latest state.
const (
	defPut  = iota // put enc as it is
	defTomb        // delete the record
	// defKeep: a done record whose result is the one the bbolt file
	// holds (Stored): enc is its encoding without the result, which the
	// flush reads from the file.
	defKeep
)

// defRec is a record of the overlay.
type defRec struct {
	kind   uint8
	status workunit.Status // defPut's
	enc    []byte          // defPut's and defKeep's encoding; not to be modified
}

// deferState is a deferred store's overlay, guarded by mu: written under
// the write lock, read (with the bbolt file behind it) under the read
// lock, so that a reader never sees a record neither in the overlay nor
// in the file.
type deferState struct {
	on   bool
	mu   sync.RWMutex
	recs map[uint64]defRec
	// bytes counts what the overlay took since its last flush (the
	// batches of ApplyEncoded, whose bytes its records alias, the
	// encodings of Apply), never less for a record replaced: a batch is
	// held while any of its records is the latest, so this bounds the
	// memory held.
	bytes int
	// maxRecs and maxBytes are the flush thresholds (deferRecords,
	// deferBytes, or a test's).
	maxRecs, maxBytes int
}

// Pending returns the number of records the overlay of a deferred store
// holds (written by Apply, not yet flushed to the bbolt file): 0 for
// other stores.
func (s *Bolt) Pending() int {
	if !s.def.on {
		return 0
	}
	s.def.mu.RLock()
	defer s.def.mu.RUnlock()
	return len(s.def.recs)
}

// Flush writes what the overlay of a deferred store holds to the bbolt
// file, in one transaction; a no-op for other stores.
func (s *Bolt) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: flush: %w", err)
	}
	if !s.def.on {
		return nil
	}
	err := s.use("flush", func(db *bolt.DB) error {
		s.def.mu.Lock()
		defer s.def.mu.Unlock()
		return s.flushLocked(db)
	})
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCorrupt) {
		return writeErr("flush", err)
	}
	return err
}

// flushLocked writes the overlay to the bbolt file in one transaction,
// in the order of the records' IDs, and empties it. s.def.mu is held for
// writing. On a failure the overlay is kept (the transaction rolled
// back), and tried again at the next flush.
func (s *Bolt) flushLocked(db *bolt.DB) error {
	if len(s.def.recs) == 0 {
		return nil
	}
	type idRec struct {
		id uint64
		r  defRec
	}
	recs := make([]idRec, 0, len(s.def.recs))
	for id, r := range s.def.recs {
		recs = append(recs, idRec{id, r})
	}
	slices.SortFunc(recs, func(a, b idRec) int { return cmp.Compare(a.id, b.id) })
	err := s.update(db, func(tx *bolt.Tx) error {
		rb := tx.Bucket(bucketRecords)
		rb.FillPercent = 0.9
		// bbolt keeps keys and values until the commit: keys in one
		// arena, the values are the overlay's.
		keys := make([]byte, 0, 8*len(recs))
		var arena []byte
		for _, ir := range recs {
			id, r := ir.id, ir.r
			keys = binary.BigEndian.AppendUint64(keys, id)
			k := keys[len(keys)-8 : len(keys) : len(keys)]
			switch r.kind {
			case defTomb:
				if err := rb.Delete(k); err != nil {
					return fmt.Errorf("record %d: %w", id, err)
				}
			case defPut:
				if err := rb.Put(k, r.enc); err != nil {
					return fmt.Errorf("record %d: %w", id, err)
				}
			case defKeep:
				res, err := storedResult(rb, k, id)
				if err != nil {
					return fmt.Errorf("record %d keeps its stored result: %w", id, err)
				}
				rec, err := decodeRecord(id, r.enc)
				if err != nil {
					return fmt.Errorf("%w: record %d: %w", ErrCorrupt, id, err)
				}
				rec.Result = res
				enc := encodeRecord(arena, &rec)
				arena = enc[len(enc):]
				if err := rb.Put(k, enc[:len(enc):len(enc)]); err != nil {
					return fmt.Errorf("record %d: %w", id, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	clear(s.def.recs)
	s.def.bytes = 0
	return nil
}

// defBatch is a batch on its way into the overlay: its records' new
// states, in order, checked before any goes in (a batch is all or
// nothing).
type defBatch struct {
	ids  []uint64
	recs []defRec
}

// latest returns the latest state of record id that the batch so far
// gives it.
func (b *defBatch) latest(id uint64) (defRec, bool) {
	for i := len(b.ids) - 1; i >= 0; i-- {
		if b.ids[i] == id {
			return b.recs[i], true
		}
	}
	return defRec{}, false
}

// add notes record id of the batch: its status, its Stored flag, and its
// encoding. A done record that keeps its stored result (Stored) takes
// the result the overlay or the batch holds for it, else the bbolt
// file's, which must have it. s.def.mu is held for writing.
func (s *Bolt) addDeferred(db *bolt.DB, b *defBatch, id uint64, status workunit.Status, stored bool, enc []byte) error {
	r := defRec{kind: defPut, status: status, enc: enc}
	switch {
	case status == workunit.StatusUnknown: // a tombstone
		r = defRec{kind: defTomb}
	case status == workunit.StatusDone && stored:
		prev, ok := b.latest(id)
		if !ok {
			prev, ok = s.def.recs[id]
		}
		switch {
		case ok && prev.kind == defTomb:
			return fmt.Errorf("record %d keeps its stored result: %w", id, ErrNotFound)
		case ok && prev.kind == defPut && prev.status != workunit.StatusDone:
			return fmt.Errorf("record %d keeps its stored result: %w: record %d is %s", id, ErrNotFound, id, prev.status)
		case ok && prev.kind == defPut:
			// The result is the overlay's: write the record with it.
			old, err := decodeRecord(id, prev.enc)
			if err != nil {
				return fmt.Errorf("%w: record %d: %w", ErrCorrupt, id, err)
			}
			rec, err := decodeRecord(id, enc)
			if err != nil {
				return fmt.Errorf("%w: record %d: %w", ErrCorrupt, id, err)
			}
			rec.Result, rec.Stored = old.Result, false
			r.enc = encodeRecord(nil, &rec)
		default:
			// defKeep, or nothing in memory: the file's result.
			if !ok {
				err := db.View(func(tx *bolt.Tx) error {
					_, err := storedResult(tx.Bucket(bucketRecords), binary.BigEndian.AppendUint64(nil, id), id)
					return err
				})
				if err != nil {
					return fmt.Errorf("record %d keeps its stored result: %w", id, err)
				}
			}
			r.kind = defKeep
		}
	}
	b.ids = append(b.ids, id)
	b.recs = append(b.recs, r)
	return nil
}

// commitDeferred puts b's records in the overlay and counts size bytes
// taken, after a flush when they would take it past a bound: a flush
// that fails fails the batch, of which nothing is then in the overlay
// (a batch is all or nothing). s.def.mu is held for writing.
func (s *Bolt) commitDeferred(db *bolt.DB, b *defBatch, size int) error {
	if len(s.def.recs) > 0 && (len(s.def.recs)+len(b.ids) > s.def.maxRecs || s.def.bytes+size > s.def.maxBytes) {
		if err := s.flushLocked(db); err != nil {
			return err
		}
	}
	for i, id := range b.ids {
		s.def.recs[id] = b.recs[i]
	}
	s.def.bytes += size
	return nil
}

// applyDeferred is Apply of a deferred store.
func (s *Bolt) applyDeferred(db *bolt.DB, batch []table.Record) error {
	s.def.mu.Lock()
	defer s.def.mu.Unlock()
	b := defBatch{ids: make([]uint64, 0, len(batch)), recs: make([]defRec, 0, len(batch))}
	size := 0
	for i := range batch {
		r := &batch[i]
		if r.ID == 0 {
			return fmt.Errorf("record %s has no ID", r.Key.Short())
		}
		// The overlay keeps the encoding: the record's bytes are the
		// caller's, which Apply may keep (see Store.Apply).
		rec := *r
		rec.Stored = false
		enc := encodeRecord(nil, &rec)
		size += len(enc)
		if err := s.addDeferred(db, &b, r.ID, r.Status, r.Stored, enc); err != nil {
			return err
		}
	}
	return s.commitDeferred(db, &b, size)
}

// ApplyEncoded is Apply of a batch encoded by EncodeBatch. A deferred
// store keeps the records' encodings as they are (reading of each only
// its status, and checking its checksum), and may keep data until its
// next flush: the caller must not modify it afterwards. Other stores
// decode the batch and Apply it. A batch that does not decode fails with
// ErrCorrupt (ErrVersion for a newer encoding), and nothing of it is
// written.
func (s *Bolt) ApplyEncoded(ctx context.Context, data []byte) error {
	if !s.def.on {
		batch, err := DecodeBatch(data)
		if err != nil {
			return fmt.Errorf("store: apply: %w", err)
		}
		return s.Apply(ctx, batch)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: apply: %w", err)
	}
	err := s.use("apply", func(db *bolt.DB) error {
		if s.readOnly {
			return berrors.ErrDatabaseReadOnly
		}
		s.def.mu.Lock()
		defer s.def.mu.Unlock()
		var b defBatch
		err := walkBatch(data, func(id uint64, flags byte, enc []byte) error {
			if id == 0 {
				return fmt.Errorf("%w: a batch record without an ID", ErrCorrupt)
			}
			status, err := peekStatus(id, enc)
			if err != nil {
				return err
			}
			return s.addDeferred(db, &b, id, status, flags&recStored != 0, enc)
		}, func(n uint64) {
			b.ids = make([]uint64, 0, n)
			b.recs = make([]defRec, 0, n)
		})
		if err != nil {
			return err
		}
		return s.commitDeferred(db, &b, len(data))
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion) {
			return fmt.Errorf("store: apply: %w", err)
		}
		return writeErr("apply", err)
	}
	return nil
}

// peekStatus returns the status of the record that enc encodes (ID id),
// after checking its checksum, without decoding the rest of it: for the
// layout encodeRecord writes (versions 2 to 4: an array head, the
// version, the key as a byte string of 32, the status as a small
// integer), read at its place; any other, by decodeRecord.
func peekStatus(id uint64, enc []byte) (workunit.Status, error) {
	const statusAt = 2 + 2 + 32
	if len(enc) > statusAt+4 &&
		(enc[0] == 0x80|recordItems && enc[1] == recordVersion ||
			enc[0] == 0x80|(recordItems+1) && enc[1] == recordVersion3 ||
			enc[0] == 0x80|(recordItems+2) && enc[1] == recordVersion4) &&
		enc[2] == 0x58 && enc[3] == 32 && enc[statusAt] <= byte(workunit.StatusError) {
		array, sum := enc[:len(enc)-4], binary.BigEndian.Uint32(enc[len(enc)-4:])
		if got := recordSum(id, array); got != sum {
			return 0, fmt.Errorf("%w: batch record %d: checksum %08x, its bytes sum to %08x", ErrCorrupt, id, sum, got)
		}
		return workunit.Status(enc[statusAt]), nil
	}
	rec, err := decodeRecord(id, enc)
	if err != nil {
		if errors.Is(err, ErrVersion) {
			return 0, fmt.Errorf("batch record %d: %w", id, err)
		}
		return 0, fmt.Errorf("%w: batch record %d: %w", ErrCorrupt, id, err)
	}
	return rec.Status, nil
}

// resultDeferred is Result of a deferred store: from the overlay when it
// has the record, else from the file. s.def.mu is held for reading.
func (s *Bolt) resultDeferred(tx *bolt.Tx, id uint64) ([]byte, error) {
	if r, ok := s.def.recs[id]; ok {
		switch {
		case r.kind == defTomb:
			return nil, ErrNotFound
		case r.kind == defPut && r.status != workunit.StatusDone:
			return nil, fmt.Errorf("%w: record %d is %s", ErrNotFound, id, r.status)
		case r.kind == defPut:
			rec, err := decodeRecord(id, r.enc)
			if err != nil {
				return nil, fmt.Errorf("%w: record %d: %w", ErrCorrupt, id, err)
			}
			return bytes.Clone(rec.Result), nil
		}
		// defKeep: the file's result.
	}
	r, err := storedResult(tx.Bucket(bucketRecords), binary.BigEndian.AppendUint64(nil, id), id)
	return bytes.Clone(r), err
}
