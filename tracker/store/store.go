package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
)

// Store is the tracker's durable state: workunit records and blobs.
//
// Implementations are safe for concurrent use. Methods that block take a
// context; it is checked before the work starts (a write that has started
// is finished, so that a batch is all or nothing).
type Store interface {
	// Load returns every stored record, for table.Restore. Waiting and
	// Running records carry their Spec; finished ones do not. The records
	// and their bytes are the caller's.
	Load(ctx context.Context) ([]table.Record, error)
	// LoadStored is Load without the results of done records: they come
	// with Stored set and a nil Result, for a table with
	// Config.ResultsInStore, which reads them with Result when it needs
	// them. It is the cheap way to restart on many finished records.
	LoadStored(ctx context.Context) ([]table.Record, error)
	// Result returns the result (the caller's bytes) of done record id, or
	// an error wrapping ErrNotFound when the store has no done record of
	// that ID.
	Result(ctx context.Context, id uint64) ([]byte, error)
	// Apply writes batch atomically and durably: when it returns nil, every
	// record is on stable storage (an fsync'd commit); when it returns an
	// error, none is. A record replaces the stored record of its key (a
	// key keeps its ID while the table has it, and stores may key by ID);
	// records must have an ID. A record with Status workunit.StatusUnknown is a
	// tombstone: the stored record of its ID is deleted (if there is one);
	// it comes before any new record of the same key, which has another ID.
	// Spec is stored as given: set while the workunit is waiting or
	// running, nil once it is finished. A done record with Stored set (and
	// no Result) keeps the result stored for its ID; there must be one. Apply does not keep
	// batch after it returns, but may keep the byte slices its records hold
	// (Spec, Result, Err.Value): callers must not modify them afterwards
	// (the table never does).
	Apply(ctx context.Context, batch []table.Record) error
	// PutBlob stores data under h, durably. h must be blob.Sum(data)
	// (ErrBlobMismatch otherwise). Storing a blob that is there already is
	// a no-op.
	PutBlob(ctx context.Context, h blob.Hash, data []byte) error
	// GetBlob returns the bytes stored under h (the caller's), or an error
	// wrapping blob.ErrNotFound.
	GetBlob(ctx context.Context, h blob.Hash) ([]byte, error)
	// CreateBlob starts storing a blob of size bytes whose hash must be h,
	// written in order through the BlobWriter (a blob that arrives in
	// pieces); it is stored, durably, when the writer's Commit returns
	// nil.
	CreateBlob(ctx context.Context, h blob.Hash, size int64) (BlobWriter, error)
	// ReadBlob copies the bytes of blob h from off into p, and returns the
	// blob's size and the bytes copied (fewer than len(p) at its end), or
	// an error wrapping blob.ErrNotFound. It reads blobs stored either way
	// (PutBlob, CreateBlob).
	ReadBlob(ctx context.Context, h blob.Hash, off int64, p []byte) (size int64, n int, err error)
	// HasBlob reports whether h is stored.
	HasBlob(ctx context.Context, h blob.Hash) (bool, error)
	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// Fencer is a Store that can tell, without a write, that its tracker can
// no longer write it because another one does (a replicated store whose
// replica lost the lead). The tracker asks before it sends what needs no
// write (assignments, answers from its table), so that it stops at once
// rather than at its next write.
type Fencer interface {
	// Fenced returns nil while the tracker may write the store, and an
	// error wrapping ErrFenced once it may not.
	Fenced() error
}

// Errors, wrapped with details; test with errors.Is.
var (
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt: the file is not a riot store, or its contents do not
	// decode. The message names the file and, for a record, its key.
	ErrCorrupt = errors.New("store: corrupt")
	// ErrRolledBack: the file is older than the last transaction the
	// store committed (see TxidFileName): bbolt fell back to an older
	// meta page, or the file was replaced by an older copy, or lost. It
	// wraps ErrCorrupt.
	ErrRolledBack = fmt.Errorf("%w: rolled back", ErrCorrupt)
	// ErrVersion: the file was written by a newer riot, in a format this
	// one does not know.
	ErrVersion = errors.New("store: unknown format version")
	// ErrReadOnly: the store cannot be written (opened read-only).
	ErrReadOnly = errors.New("store: read-only")
	// ErrNotFound: Result was asked for a record the store does not have
	// as done (forgotten, or never finished).
	ErrNotFound = errors.New("store: no such done record")
	// ErrBlobMismatch: PutBlob's bytes do not have the given hash.
	ErrBlobMismatch = errors.New("store: blob does not match its hash")
	// ErrFenced: this tracker can no longer write the store, because
	// another one writes it now (a replicated store whose replica lost
	// the lead). The failed write may or may not be in the store, for the
	// tracker that writes it now to find: the caller acknowledges nothing
	// of it, and stops, so that its clients go to the other tracker and
	// send again what was not acknowledged.
	ErrFenced = errors.New("store: fenced: another tracker writes this store now")
)

var (
	_ Store = (*Bolt)(nil)
	_ Store = (*Memory)(nil)
)
