package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/riot-go/riot/tracker/table"
)

// This file holds what a store that ships its writes elsewhere needs
// (package tracker/replica, which replicates a Bolt through Raft): a
// batch of records as bytes, and a consistent copy of a Bolt's file.

// batchVersion is the first byte of an encoded batch.
const batchVersion = 1

// recStored is the flag of a record with Stored set (its result is the
// store's, not in the record).
const recStored = 1

// EncodeBatch encodes batch as one byte string that DecodeBatch reads
// back: each record as the store keeps it (its ID, its stored encoding
// with its checksum) and its Stored flag. Fields the store does not keep
// (Submitted, Assigned) are not encoded, as Apply does not write them.
func EncodeBatch(batch []table.Record) []byte {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(batch)*(180))
	buf = append(buf, batchVersion)
	buf = binary.AppendUvarint(buf, uint64(len(batch)))
	var scratch []byte
	for i := range batch {
		r := &batch[i]
		buf = binary.BigEndian.AppendUint64(buf, r.ID)
		var flags byte
		if r.Stored {
			flags |= recStored
		}
		buf = append(buf, flags)
		scratch = encodeRecord(scratch[:0], r)
		buf = binary.AppendUvarint(buf, uint64(len(scratch)))
		buf = append(buf, scratch...)
	}
	return buf
}

// DecodeBatch decodes what EncodeBatch encoded. The records' byte slices
// alias data. A batch that does not decode fails with ErrCorrupt; one of
// a newer encoding with ErrVersion.
func DecodeBatch(data []byte) ([]table.Record, error) {
	var batch []table.Record
	err := walkBatch(data, func(id uint64, flags byte, enc []byte) error {
		r, err := decodeRecord(id, enc)
		if err != nil {
			if errors.Is(err, ErrVersion) {
				return fmt.Errorf("batch record %d (ID %d): %w", len(batch), id, err)
			}
			return fmt.Errorf("%w: batch record %d (ID %d): %w", ErrCorrupt, len(batch), id, err)
		}
		r.Stored = flags&recStored != 0
		batch = append(batch, r)
		return nil
	}, func(n uint64) { batch = make([]table.Record, 0, n) })
	if err != nil {
		return nil, err
	}
	return batch, nil
}

// walkBatch calls f with each record of a batch that EncodeBatch
// encoded: its ID, its flags and its encoding (which aliases data), in
// order, after sized with the batch's count. It stops at f's first
// error. A batch whose framing does not decode fails with ErrCorrupt; one
// of a newer encoding with ErrVersion.
func walkBatch(data []byte, f func(id uint64, flags byte, enc []byte) error, sized func(n uint64)) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: an empty batch", ErrCorrupt)
	}
	if data[0] != batchVersion {
		return fmt.Errorf("%w: batch encoding %d, this riot reads %d", ErrVersion, data[0], batchVersion)
	}
	data = data[1:]
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) {
		return fmt.Errorf("%w: a batch's count does not decode", ErrCorrupt)
	}
	data = data[k:]
	sized(n)
	for i := range n {
		if len(data) < 9 {
			return fmt.Errorf("%w: batch record %d of %d cut short", ErrCorrupt, i, n)
		}
		id, flags := binary.BigEndian.Uint64(data), data[8]
		data = data[9:]
		size, k := binary.Uvarint(data)
		if k <= 0 || size > uint64(len(data)-k) {
			return fmt.Errorf("%w: batch record %d (ID %d): its length does not decode", ErrCorrupt, i, id)
		}
		enc := data[k : k+int(size) : k+int(size)]
		data = data[k+int(size):]
		if err := f(id, flags, enc); err != nil {
			return err
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after a batch of %d records", ErrCorrupt, len(data), n)
	}
	return nil
}

// Copy is a consistent view of a Bolt's file, as of BeginCopy, that
// WriteTo writes out while the store goes on writing. Close it when done.
// A Copy is for one goroutine.
type Copy struct {
	tx *bolt.Tx
}

// ErrCopyNeedsDirect: BeginCopy was called on a store with a write-ahead
// log, whose latest records may be in the log rather than the file.
var ErrCopyNeedsDirect = errors.New("store: a copy needs a store without a log (BoltOptions.DirectCommits, NoSync or Deferred)")

// BeginCopy starts a copy of the store's file as it is now (a bbolt read
// transaction: writes go on meanwhile, and the copy does not see them).
// The store must commit directly (BoltOptions.DirectCommits or NoSync)
// or be deferred (BoltOptions.Deferred: its overlay is flushed first, so
// the copy holds every Apply that returned): ErrCopyNeedsDirect
// otherwise. Blobs stored in pieces (files of BlobDir)
// are not in the copy.
func (s *Bolt) BeginCopy() (*Copy, error) {
	if s.wal.marks != nil {
		return nil, ErrCopyNeedsDirect
	}
	var c *Copy
	err := s.use("copy", func(db *bolt.DB) error {
		if s.def.on {
			s.def.mu.Lock()
			defer s.def.mu.Unlock()
			if err := s.flushLocked(db); err != nil {
				return err
			}
		}
		tx, err := db.Begin(false)
		if err != nil {
			return err
		}
		c = &Copy{tx: tx}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: copy: %w", err)
	}
	return c, nil
}

// Size returns the size in bytes of what WriteTo writes.
func (c *Copy) Size() int64 { return c.tx.Size() }

// WriteTo writes the file as of BeginCopy to w: a bbolt file that OpenBolt
// opens.
func (c *Copy) WriteTo(w io.Writer) (int64, error) {
	n, err := c.tx.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("store: copy: %w", err)
	}
	return n, nil
}

// Close ends the copy's read transaction.
func (c *Copy) Close() error {
	if c.tx == nil {
		return nil
	}
	err := c.tx.Rollback()
	c.tx = nil
	return err
}
