package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// FileName is the name of the bbolt file in the data directory.
const FileName = "tracker.db"

// formatVersion is the store's format version, kept in the meta bucket.
// Records carry their own version too (see codec.go).
const formatVersion = 1

// formatName marks a bbolt file as a riot tracker store.
const formatName = "riot-tracker-store"

var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records")
	bucketBlobs   = []byte("blobs")
	keyFormat     = []byte("format")
	keyVersion    = []byte("version")
)

// defaultLockWait is how long OpenBolt waits for the file lock when ctx has
// no deadline.
const defaultLockWait = 10 * time.Second

// BoltOptions tune OpenBolt. The zero value is the usual choice.
type BoltOptions struct {
	// ReadOnly opens the file for reading only (it must exist): Apply and
	// PutBlob fail with ErrReadOnly. For inspection tools, and for tests
	// of a store that cannot write.
	ReadOnly bool
	// DirectCommits commits each Apply as a bbolt transaction of its own,
	// without the write-ahead log (wal.go): the store's behaviour before
	// the log, kept for comparison (benchmarks) and for tests. Not for
	// riotd: it costs a round trip a commit of the tree (two fsyncs and
	// its pages) where the log costs one fdatasync of the batch. A log
	// left in the directory is still applied at open.
	DirectCommits bool
	// NoSync skips the fsyncs of bbolt's commits, and implies
	// DirectCommits: for a copy of a store that is rebuilt from elsewhere
	// after a crash, never trusted on its own (a replica's, which its Raft
	// log and snapshots rebuild at every start: package tracker/replica).
	// Not for riotd's own store: a crash may lose or damage what it wrote.
	NoSync bool
	// Deferred implies NoSync, and holds the records of Apply (and
	// ApplyEncoded) in memory, to be written to the bbolt file many
	// batches in one transaction (deferred.go): when the overlay holds
	// 8192 records or took 32 MiB of batches, and before Load,
	// LoadStored, BeginCopy and Close (Flush too). Reads see every Apply that returned. For the same
	// stores as NoSync only: a crash loses what the overlay held.
	Deferred bool
	// Logger receives the store's warnings (an entry a crash cut short,
	// a checkpoint that failed); nil: none.
	Logger *slog.Logger

	// checkpointEvery replaces checkpointEvery (tests).
	checkpointEvery time.Duration
	// deferRecords replaces deferRecords (tests).
	deferRecords int
}

// Bolt is a Store in one bbolt file, FileName in a data directory.
//
// Layout: bucket "meta" holds the format name and version; "records" maps
// a record's ID (8 bytes, big-endian) to its encoding (see codec.go), spec
// included while it is waiting or running; "blobs" maps a blob hash to its
// bytes. Every write is one bbolt transaction, committed with fsync, but
// Apply's (see the write-ahead log, and BoltOptions.Deferred).
//
// Records are keyed by ID, not by workunit key, for speed: keys are
// random, so a batch of new keys would touch a page of the B+tree each,
// while IDs grow with time, so new records append and the updates that
// follow them (running, done) land on the same few recent pages.
//
// A Bolt is safe for concurrent use. bbolt runs one write transaction at a
// time: concurrent Applies wait for each other (the tracker makes one at
// a time).
type Bolt struct {
	path     string
	files    fileBlobs // the blobs that came in pieces
	readOnly bool
	noSync   bool         // BoltOptions.NoSync
	txid     *txidFile    // nil when read-only
	mu       sync.RWMutex // guards db against Close
	db       *bolt.DB
	log      *slog.Logger // may be nil

	// The write-ahead log (wal.go, walbolt.go); wal.overlay is nil with
	// DirectCommits.
	walMu    sync.Mutex // guards wal and walBuf
	wal      walState
	walBuf   []byte
	ckptMu   sync.Mutex // one checkpoint at a time
	kick     chan struct{}
	stop     chan struct{} // closed by Close: the checkpointer ends
	stopped  chan struct{} // closed by the checkpointer as it ends
	stopOnce sync.Once

	// def is the overlay of a deferred store (BoltOptions.Deferred).
	def deferState
}

// OpenBolt opens (creating it and dir if need be) the store in dir. It
// waits for the file lock (another riotd may hold it) until ctx is done, or
// defaultLockWait if ctx has no deadline. A file that is not a riot store,
// or is damaged where bbolt checks (its meta pages), fails with ErrCorrupt;
// one from a newer format with ErrVersion.
func OpenBolt(ctx context.Context, dir string, opts BoltOptions) (*Bolt, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: open: %w", err)
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	wait := defaultLockWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(time.Until(dl), time.Millisecond)
	}
	lockCtx, cancel := context.WithTimeout(ctx, wait)
	txid, err := precheck(lockCtx, path, opts.ReadOnly)
	cancel()
	if err != nil {
		return nil, err
	}
	db, err := openBolt(path, &bolt.Options{
		Timeout:        wait,
		ReadOnly:       opts.ReadOnly,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         opts.NoSync || opts.Deferred,
	})
	if err != nil {
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) ||
			errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrInvalidMapping) {
			return nil, fmt.Errorf("%w: %s is not a readable bbolt file: %w", ErrCorrupt, path, err)
		}
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("store: open %s: another process holds the file lock (is another riotd using this directory?): %w", path, err)
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("store: %w", err) // "open PATH: why" already
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Bolt{path: path, files: fileBlobs{dir: filepath.Join(dir, BlobDir)}, readOnly: opts.ReadOnly, noSync: opts.NoSync || opts.Deferred, db: db, log: opts.Logger}
	if opts.Deferred && !opts.ReadOnly {
		s.def = deferState{on: true, recs: map[uint64]defRec{}, maxRecs: cmp.Or(opts.deferRecords, deferRecords), maxBytes: deferBytes}
	}
	err = s.start(txid)
	if err == nil {
		err = s.openWal(dir, cmp.Or(opts.checkpointEvery, checkpointEvery), opts.DirectCommits || opts.NoSync || opts.Deferred)
	}
	if err != nil {
		db.Close()
		if s.txid != nil {
			s.txid.close()
		}
		return nil, err
	}
	return s, nil
}

// start checks the opened file's format (and on a new file writes it),
// checks that bbolt reads the transaction precheck saw, and, unless
// read-only, opens the side file and removes blob files left half
// written.
func (s *Bolt) start(txid uint64) error {
	if !s.readOnly {
		t, err := openTxid(filepath.Join(filepath.Dir(s.path), TxidFileName))
		if err != nil {
			return err
		}
		s.txid = t
	}
	if err := s.init(s.readOnly); err != nil {
		return err
	}
	var now uint64
	if err := guard(s.path, func() error {
		return s.db.View(func(tx *bolt.Tx) error { now = uint64(tx.ID()); return nil })
	}); err != nil {
		return err
	}
	if txid != 0 && now < txid {
		// Another process wrote between precheck and bolt.Open: never
		// seen in practice, and not to be trusted.
		return fmt.Errorf("%w: %s: at transaction %d, it was at %d a moment ago", ErrRolledBack, s.path, now, txid)
	}
	if s.readOnly {
		return nil
	}
	if err := s.txid.committed(now); err != nil {
		return err
	}
	return s.files.clean()
}

// precheck checks the file at path before bbolt opens it, under the file
// lock (see lockFile), and returns its transaction (0 for a new file): it
// must be a regular file, not empty, pass checkFile, and not be older
// than the transaction the side file notes. A store that is missing while
// its side file says it had commits was lost: ErrRolledBack too.
func precheck(ctx context.Context, path string, readOnly bool) (uint64, error) {
	side := filepath.Join(filepath.Dir(path), TxidFileName)
	want, haveSide, err := readTxid(side)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) && !readOnly {
		if haveSide && want > 0 {
			return 0, fmt.Errorf("%w: %s is missing, and %s says it had %d transactions", ErrRolledBack, path, side, want)
		}
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	if fi.IsDir() {
		return 0, fmt.Errorf("%w: %s is a directory, not a store file", ErrCorrupt, path)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is not a regular file (%s)", ErrCorrupt, path, fi.Mode().Type())
	}
	if fi.Size() == 0 {
		return 0, fmt.Errorf("%w: %s is empty (0 bytes): bbolt would start a new store in it", ErrCorrupt, path)
	}
	lock, err := lockFile(ctx, path, readOnly)
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	meta, metas, err := checkFile(path)
	if err != nil {
		return 0, err
	}
	if haveSide && meta.txid < want {
		why := ""
		for i, m := range metas {
			if m.err != nil {
				why = fmt.Sprintf(" (its meta page %d is damaged: %v)", i, m.err)
			}
		}
		return 0, fmt.Errorf("%w: %s is at transaction %d%s, and %s says %d was committed", ErrRolledBack, path, meta.txid, why, side, want)
	}
	return meta.txid, nil
}

// openBolt calls bolt.Open, turning a panic on a damaged file into an
// error.
func openBolt(path string, o *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: bbolt: %v", berrors.ErrInvalid, p)
		}
	}()
	return bolt.Open(path, 0o600, o)
}

// init checks the file's format, and on a new file writes it.
func (s *Bolt) init(readOnly bool) error {
	check := func(tx *bolt.Tx) (fresh bool, err error) {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return false, fmt.Errorf("%w: %s is a bbolt file of another program (no riot meta bucket)", ErrCorrupt, s.path)
			}
			return true, nil
		}
		if name := meta.Get(keyFormat); !bytes.Equal(name, []byte(formatName)) {
			return false, fmt.Errorf("%w: %s is not a riot tracker store (format %q)", ErrCorrupt, s.path, name)
		}
		v := meta.Get(keyVersion)
		if len(v) != 4 {
			return false, fmt.Errorf("%w: %s: version of %d bytes", ErrCorrupt, s.path, len(v))
		}
		if n := binary.BigEndian.Uint32(v); n != formatVersion {
			return false, fmt.Errorf("%w: %s has format version %d, this riot reads %d", ErrVersion, s.path, n, formatVersion)
		}
		for _, b := range [][]byte{bucketRecords, bucketBlobs} {
			if tx.Bucket(b) == nil {
				return false, fmt.Errorf("%w: %s has no bucket %q", ErrCorrupt, s.path, b)
			}
		}
		return false, nil
	}
	if readOnly {
		return guard(s.path, func() error {
			return s.db.View(func(tx *bolt.Tx) error {
				fresh, err := check(tx)
				if err == nil && fresh {
					err = fmt.Errorf("%w: %s is empty", ErrCorrupt, s.path)
				}
				return err
			})
		})
	}
	return guard(s.path, func() error {
		return s.update(s.db, func(tx *bolt.Tx) error {
			fresh, err := check(tx)
			if err != nil || !fresh {
				return err
			}
			meta, err := tx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			if err := meta.Put(keyFormat, []byte(formatName)); err != nil {
				return err
			}
			if err := meta.Put(keyVersion, binary.BigEndian.AppendUint32(nil, formatVersion)); err != nil {
				return err
			}
			for _, b := range [][]byte{bucketRecords, bucketBlobs} {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// guard runs f, turning a bbolt panic (it panics on some damaged pages)
// into an ErrCorrupt error. bbolt's View and Update roll their transaction
// back on a panic, so the DB stays usable.
func guard(path string, f func() error) (err error) {
	// A fault in bbolt's memory map (a page past the end of a file cut
	// short after it was opened) panics instead of killing the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: bbolt: %v", ErrCorrupt, path, p)
		}
	}()
	return f()
}

// update runs f in a write transaction of db and, once it is committed,
// notes its number in the side file. A failed note is not the commit's
// failure (the records are on disk): the side file falls behind, and the
// next open checks against an older transaction.
func (s *Bolt) update(db *bolt.DB, f func(tx *bolt.Tx) error) error {
	var id uint64
	err := db.Update(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		return f(tx)
	})
	if err == nil && s.txid != nil {
		_ = s.txid.committed(id)
	}
	return err
}

// Path returns the file's path.
func (s *Bolt) Path() string { return s.path }

// use runs f with the open DB under the read lock, or fails with ErrClosed.
func (s *Bolt) use(op string, f func(db *bolt.DB) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return guard(s.path, func() error { return f(s.db) })
}

func writeErr(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseReadOnly) {
		return fmt.Errorf("store: %s: %w: %w", op, ErrReadOnly, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// Load implements Store.
func (s *Bolt) Load(ctx context.Context) ([]table.Record, error) {
	return s.load(ctx, true)
}

// LoadStored implements Store. It decodes each record where bbolt maps
// it and copies out only what the table keeps (a spec, an error's value):
// a million done records cost their metadata, not their results.
func (s *Bolt) LoadStored(ctx context.Context) ([]table.Record, error) {
	return s.load(ctx, false)
}

// LoadStoredChunks is LoadStored a chunk of at most n records at a time,
// in ID order: fn gets each chunk, on the caller's goroutine, in a slice
// it must not keep (it is decoded into again once fn returns), so that a
// restart does not hold every record as a table.Record (352 bytes each)
// before the table takes them (table.Restorer). The next chunk is decoded
// on another goroutine while fn takes one: a restart's decoding and the
// table's restore run on two cores. The load ends when ctx does, between
// chunks. A read-only store gives its records in one chunk, merged with
// what its log holds, as LoadStored gives them.
func (s *Bolt) LoadStoredChunks(ctx context.Context, n int, fn func([]table.Record) error) error {
	if s.readOnly {
		recs, err := s.LoadStored(ctx)
		if err != nil {
			return err
		}
		return fn(recs)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: load: %w", err)
	}
	n = max(n, 1)
	// Two chunks go round: one with fn, one being decoded.
	full := make(chan []table.Record, 1)
	free := make(chan []table.Record, 2)
	free <- make([]table.Record, 0, n)
	free <- make([]table.Record, 0, n)
	stop := make(chan struct{}) // closed: fn failed, the decoding ends
	done := make(chan error, 1)
	go func() {
		defer close(full)
		done <- s.use("load", func(db *bolt.DB) error {
			if err := s.flushForLoad(db); err != nil {
				return err
			}
			return db.View(func(tx *bolt.Tx) error {
				var names nameCache
				chunk := <-free
				send := func() error {
					if err := ctx.Err(); err != nil {
						return fmt.Errorf("store: load: %w", err)
					}
					select {
					case full <- chunk:
					case <-stop:
						return errStopped
					}
					select {
					case chunk = <-free:
						return nil
					case <-stop:
						return errStopped
					}
				}
				err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
					if len(k) != 8 {
						return fmt.Errorf("%w: %s: record key %x", ErrCorrupt, s.path, k)
					}
					chunk = append(chunk, table.Record{})
					if err := s.decodeLoaded(&chunk[len(chunk)-1], binary.BigEndian.Uint64(k), v, false, &names); err != nil {
						return err
					}
					if len(chunk) == cap(chunk) {
						return send()
					}
					return nil
				})
				if err == nil && len(chunk) > 0 {
					err = send()
				}
				return err
			})
		})
	}()
	var ferr error // fn's: stop is closed once it is set
	finished := false
	defer func() {
		if !finished {
			// fn panicked: the decoding must not wait for ever, holding
			// the store's lock and its read transaction.
			if ferr == nil {
				close(stop)
			}
			for range full {
			}
		}
	}()
	for chunk := range full {
		if ferr == nil {
			if ferr = fn(chunk); ferr != nil {
				close(stop)
			}
		}
		clear(chunk)
		free <- chunk[:0] // room for both: never blocks
	}
	finished = true
	err := <-done
	switch {
	case ferr != nil:
		return ferr // the caller's, as it gave it
	case err == nil:
		return nil
	case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrClosed):
		return err
	}
	return fmt.Errorf("store: load %s: %w", s.path, err)
}

// errStopped ends LoadStoredChunks's decoding once its fn failed.
var errStopped = errors.New("store: load: stopped")

// flushForLoad writes what the deferred overlay or the log holds to the
// bbolt file, for a load that reads only the file.
func (s *Bolt) flushForLoad(db *bolt.DB) error {
	if s.def.on {
		s.def.mu.Lock()
		err := s.flushLocked(db)
		s.def.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if s.wal.marks != nil {
		return s.checkpoint()
	}
	return nil
}

func (s *Bolt) load(ctx context.Context, results bool) ([]table.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	var recs []table.Record
	err := s.use("load", func(db *bolt.DB) error {
		// What the deferred overlay or the log holds goes to the bbolt
		// file first.
		if err := s.flushForLoad(db); err != nil {
			return err
		}
		return db.View(func(tx *bolt.Tx) error {
			var err error
			recs, err = s.decodeRecords(tx.Bucket(bucketRecords), results)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, fmt.Errorf("store: load %s: %w", s.path, err)
	}
	return s.mergeOverlay(recs, results)
}

// decodeRecords decodes every record of bucket b, in ID order. (Decoding
// on both cores in chunks was tried: no faster on a million records, the
// decoding being mostly allocation; docs/benchmarks.md.)
func (s *Bolt) decodeRecords(b *bolt.Bucket, results bool) ([]table.Record, error) {
	var recs []table.Record
	if n := b.Stats().KeyN; n > 0 {
		recs = make([]table.Record, 0, n)
	}
	var names nameCache
	err := b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return fmt.Errorf("%w: %s: record key %x", ErrCorrupt, s.path, k)
		}
		recs = append(recs, table.Record{})
		return s.decodeLoaded(&recs[len(recs)-1], binary.BigEndian.Uint64(k), v, results, &names)
	})
	return recs, err
}

// decodeLoaded decodes record id into *rec (the zero Record) for Load
// (results: its result copied out) or LoadStored (a done record's result
// left in the store); the bytes kept are copied out of v, which is
// bbolt's.
func (s *Bolt) decodeLoaded(rec *table.Record, id uint64, v []byte, results bool, names *nameCache) error {
	var err error
	if results {
		err = decodeRecordInto(rec, id, bytes.Clone(v), names)
	} else {
		err = decodeRecordInto(rec, id, v, names)
		rec.Spec = bytes.Clone(rec.Spec)
		if rec.Err != nil {
			rec.Err.Value = bytes.Clone(rec.Err.Value)
		}
		if rec.Status == workunit.StatusDone {
			rec.Result, rec.Stored = nil, true
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: record %d: %w", ErrCorrupt, s.path, id, err)
	}
	if (rec.Status == workunit.StatusWaiting || rec.Status == workunit.StatusRunning) && rec.Spec == nil {
		return fmt.Errorf("%w: %s: record %d (%s) is %s without a spec", ErrCorrupt, s.path, id, rec.Key, rec.Status)
	}
	return nil
}

// Apply implements Store: the batch is appended to the write-ahead log
// and synced (one fdatasync), and applied to the bbolt file by the next
// checkpoint; with DirectCommits, one bbolt transaction, committed with
// fsync.
func (s *Bolt) Apply(ctx context.Context, batch []table.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: apply: %w", err)
	}
	if len(batch) == 0 {
		return nil
	}
	err := s.use("apply", func(db *bolt.DB) error {
		if s.readOnly {
			return berrors.ErrDatabaseReadOnly
		}
		if s.wal.marks != nil {
			return s.applyWal(db, batch)
		}
		if s.def.on {
			return s.applyDeferred(db, batch)
		}
		return s.update(db, func(tx *bolt.Tx) error {
			rb := tx.Bucket(bucketRecords)
			// Mostly appends and updates of recent records: pack pages.
			rb.FillPercent = 0.9
			// bbolt keeps keys and values until the commit: encode each
			// record after the last in one arena, never over it.
			arena := make([]byte, 0, 160*len(batch))
			for i := range batch {
				r := &batch[i]
				if r.ID == 0 {
					return fmt.Errorf("record %s has no ID", r.Key.Short())
				}
				k := binary.BigEndian.AppendUint64(arena, r.ID)
				arena = k[len(k):]
				if r.Status == workunit.StatusUnknown { // a tombstone
					if err := rb.Delete(k[:8:8]); err != nil {
						return fmt.Errorf("record %s: %w", r.Key.Short(), err)
					}
					continue
				}
				if r.Status == workunit.StatusDone && r.Stored {
					// Keep the stored result: the table let go of it.
					res, err := storedResult(rb, k[:8], r.ID)
					if err != nil {
						return fmt.Errorf("record %s keeps its stored result: %w", r.Key.Short(), err)
					}
					kept := *r
					kept.Result, kept.Stored = res, false
					r = &kept
				}
				enc := encodeRecord(arena, r)
				arena = enc[len(enc):]
				if err := rb.Put(k[:8:8], enc[:len(enc):len(enc)]); err != nil {
					return fmt.Errorf("record %s: %w", r.Key.Short(), err)
				}
			}
			return nil
		})
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) {
			return err
		}
		return writeErr("apply", err)
	}
	return nil
}

// Result implements Store.
func (s *Bolt) Result(ctx context.Context, id uint64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: result: %w", err)
	}
	var res []byte
	err := s.use("result", func(db *bolt.DB) error {
		if s.def.on {
			s.def.mu.RLock()
			defer s.def.mu.RUnlock()
			return db.View(func(tx *bolt.Tx) error {
				var err error
				res, err = s.resultDeferred(tx, id)
				return err
			})
		}
		r, known, err := s.resultFromOverlay(id)
		if known || err != nil {
			res = r
			return err
		}
		return db.View(func(tx *bolt.Tx) error {
			k := binary.BigEndian.AppendUint64(nil, id)
			r, err := storedResult(tx.Bucket(bucketRecords), k, id)
			res = bytes.Clone(r) // out of bbolt's memory map
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: result of record %d in %s: %w", id, s.path, err)
	}
	if res == nil {
		res = []byte{}
	}
	return res, nil
}

// storedResult decodes the result of done record id (key k) in b. The
// bytes are bbolt's: valid only in the transaction.
func storedResult(b *bolt.Bucket, k []byte, id uint64) ([]byte, error) {
	v := b.Get(k)
	if v == nil {
		return nil, ErrNotFound
	}
	rec, err := decodeRecord(id, v)
	if err != nil {
		return nil, fmt.Errorf("%w: record %d: %w", ErrCorrupt, id, err)
	}
	if rec.Status != workunit.StatusDone {
		return nil, fmt.Errorf("%w: record %d is %s", ErrNotFound, id, rec.Status)
	}
	return rec.Result, nil
}

// PutBlob implements Store.
func (s *Bolt) PutBlob(ctx context.Context, h blob.Hash, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: put blob: %w", err)
	}
	if blob.Sum(data) != h {
		return fmt.Errorf("%w: %s", ErrBlobMismatch, h.Short())
	}
	err := s.use("put blob", func(db *bolt.DB) error {
		// Skip the write (and its fsync) for a blob that is there.
		var have bool
		if err := db.View(func(tx *bolt.Tx) error {
			have = tx.Bucket(bucketBlobs).Get(h[:]) != nil
			return nil
		}); err != nil || have {
			return err
		}
		return s.update(db, func(tx *bolt.Tx) error {
			return tx.Bucket(bucketBlobs).Put(h[:], data)
		})
	})
	if err != nil {
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) {
			return err
		}
		return writeErr("put blob "+h.Short(), err)
	}
	return nil
}

// GetBlob implements Store.
func (s *Bolt) GetBlob(ctx context.Context, h blob.Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: get blob: %w", err)
	}
	var out []byte
	err := s.use("get blob", func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketBlobs).Get(h[:]); v != nil {
				if err := s.checkBlob(h, v); err != nil {
					return err
				}
				out = bytes.Clone(v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		data, err := os.ReadFile(s.files.path(h))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("store: get blob %s: %w", h.Short(), blob.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("store: get blob %s: %w", h.Short(), err)
		}
		return data, nil
	}
	return out, nil
}

// checkBlob checks that v, a blob read from the bbolt file, has hash h:
// bbolt has no checksums of its own, and a byte changed on disk would
// otherwise reach a worker as a module or a value.
func (s *Bolt) checkBlob(h blob.Hash, v []byte) error {
	if blob.Sum(v) != h {
		return fmt.Errorf("%w: %s: blob %s: its %d bytes do not match its hash (changed on disk)", ErrCorrupt, s.path, h.Short(), len(v))
	}
	return nil
}

// HasBlob implements Store.
func (s *Bolt) HasBlob(ctx context.Context, h blob.Hash) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("store: has blob: %w", err)
	}
	var have bool
	err := s.use("has blob", func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error {
			have = tx.Bucket(bucketBlobs).Get(h[:]) != nil
			return nil
		})
	})
	if err != nil || have {
		return have, err
	}
	_, have, err = s.files.stat(h)
	return have, err
}

// Close implements Store. It waits for running calls to finish, and
// checkpoints the log.
func (s *Bolt) Close() error {
	s.stopCheckpointer()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.closeWal()
	if s.def.on {
		s.def.mu.Lock()
		err = errors.Join(err, guard(s.path, func() error { return s.flushLocked(s.db) }))
		s.def.mu.Unlock()
	}
	err = errors.Join(err, s.db.Close())
	s.db = nil
	if s.txid != nil {
		err = errors.Join(err, s.txid.close())
	}
	if err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}
