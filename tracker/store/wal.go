package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// The write-ahead log. A Bolt store's Apply appends its batch to a log
// file and syncs that (one fdatasync), instead of committing a bbolt
// transaction (two fdatasyncs, and the pages of the tree); a checkpointer
// goroutine applies what the log holds to the bbolt file now and then, in
// one transaction for many batches, notes the last batch applied (its
// sequence number, in the meta bucket) in that same transaction, and then
// removes the log files it applied. At open, the batches of the log past
// that number are applied before the store serves. Until a batch is
// checkpointed, Result and Load read its records from memory (the
// overlay), so the log is never read but at open.
//
// Log files are FileName + ".wal." + a number, in the data directory; the
// checkpointer starts a new one (the next number) each time it takes the
// batches of the current one, so a file, once left, is never written
// again and is removed whole once its batches are in the bbolt file.
//
// An entry is [length (4 bytes, big-endian)][CRC-32C of the payload (4
// bytes)][payload]. The payload is [sequence (8 bytes)] then, per record,
// [ID (8 bytes)][kind (1 byte)][length (uvarint)][the record's encoding
// (codec.go)], the kinds being walTombstone (no encoding), walPut and
// walKeepResult (a done record whose result is the stored one: Stored).
// An entry that is cut short, or whose checksum fails, at the end of the
// last file is a write that a crash interrupted: it was never
// acknowledged, and is cut. Anywhere else it fails the open with
// ErrCorrupt.

// walPrefix is the log files' name up to their number.
const walPrefix = FileName + ".wal."

// keyWalSeq is the meta bucket's key of the last log entry applied to the
// bbolt file (8 bytes, big-endian).
var keyWalSeq = []byte("walseq")

// Record kinds in a log entry.
const (
	walTombstone  = 0
	walPut        = 1
	walKeepResult = 2
)

// walHeader is an entry's length and checksum.
const walHeader = 8

// maxWalEntry bounds an entry's length when the log is read: a length
// past it is a damaged header, not an entry (a batch's records, results
// included, are bounded by the tracker's frame limits well below it).
const maxWalEntry = 1 << 30

// walRec is one record of a log entry.
type walRec struct {
	kind byte
	rec  table.Record // ID set; for walTombstone, nothing else
	// enc is the record's encoding in the entry (for walPut: what the
	// checkpoint puts in the bbolt file as it is).
	enc []byte
}

// walEntry is a batch: what one Apply wrote.
type walEntry struct {
	seq  uint64
	recs []walRec
	// bytes is the entry's length in the log; 0 for one read back.
	bytes int
}

// walFile is a log file: its number and path.
type walFile struct {
	n    uint64
	path string
}

// walFiles lists the log files in dir, in order.
func walFiles(dir string) ([]walFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", dir, err)
	}
	var out []walFile
	for _, e := range ents {
		name := e.Name()
		num, ok := strings.CutPrefix(name, walPrefix)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || e.IsDir() {
			return nil, fmt.Errorf("%w: %s: not a log file of the store (remove it if nothing else wrote it)", ErrCorrupt, filepath.Join(dir, name))
		}
		out = append(out, walFile{n: n, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(out, func(a, b walFile) int {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return 0
	})
	return out, nil
}

// appendWalEntry appends e's encoding to buf, and sets the enc of e's
// records to their encodings in it.
func appendWalEntry(buf []byte, e *walEntry) []byte {
	start := len(buf)
	if buf == nil {
		// One allocation for the entry, most times: its records'
		// encodings are their spec, result and names, and about 64 bytes.
		n := walHeader + 8
		for i := range e.recs {
			r := &e.recs[i].rec
			n += 8 + 1 + 2 + 80 + len(r.Spec) + len(r.Result) + len(r.Scope) + len(r.Owner) + len(r.Worker)
		}
		buf = make([]byte, 0, n)
	}
	buf = append(buf, make([]byte, walHeader)...)
	buf = binary.BigEndian.AppendUint64(buf, e.seq)
	var scratch []byte
	offs := make([][2]int, len(e.recs))
	for i := range e.recs {
		r := &e.recs[i]
		buf = binary.BigEndian.AppendUint64(buf, r.rec.ID)
		buf = append(buf, r.kind)
		if r.kind == walTombstone {
			continue
		}
		scratch = encodeRecord(scratch[:0], &r.rec)
		buf = binary.AppendUvarint(buf, uint64(len(scratch)))
		offs[i] = [2]int{len(buf), len(buf) + len(scratch)}
		buf = append(buf, scratch...)
	}
	for i := range e.recs {
		if o := offs[i]; o[1] > 0 {
			e.recs[i].enc = buf[o[0]:o[1]:o[1]]
		}
	}
	payload := buf[start+walHeader:]
	binary.BigEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, crcTable))
	return buf
}

// errWalTorn is an entry cut short or failing its checksum.
var errWalTorn = errors.New("an entry cut short or changed")

// readWalFile reads the entries of the log file at path. torn reports
// that its last bytes are not a whole entry (cut off where the entries
// end); other damage is an error wrapping ErrCorrupt.
func readWalFile(path string) (entries []walEntry, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("store: read %s: %w", path, err)
	}
	off := 0
	for off < len(data) {
		if len(data)-off < walHeader || allZero(data[off:]) {
			// Cut short, or a size the file took before its bytes
			// reached the disk.
			return entries, true, nil
		}
		n := int(binary.BigEndian.Uint32(data[off:]))
		sum := binary.BigEndian.Uint32(data[off+4:])
		if n > maxWalEntry || len(data)-off-walHeader < n {
			return entries, true, nil
		}
		payload := data[off+walHeader : off+walHeader+n]
		if crc32.Checksum(payload, crcTable) != sum {
			if off+walHeader+n == len(data) {
				return entries, true, nil // the last entry, half written
			}
			return nil, false, fmt.Errorf("%w: %s: the entry at byte %d fails its checksum, and entries follow it", ErrCorrupt, path, off)
		}
		e, err := decodeWalEntry(payload)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s: the entry at byte %d: %w", ErrCorrupt, path, off, err)
		}
		entries = append(entries, e)
		off += walHeader + n
	}
	return entries, false, nil
}

// allZero says whether b is all zero bytes.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeWalEntry decodes a checked payload. The records alias it.
func decodeWalEntry(p []byte) (walEntry, error) {
	if len(p) < 8 {
		return walEntry{}, fmt.Errorf("%d bytes, too short for an entry", len(p))
	}
	e := walEntry{seq: binary.BigEndian.Uint64(p)}
	p = p[8:]
	for len(p) > 0 {
		if len(p) < 9 {
			return e, fmt.Errorf("a record of %d bytes", len(p))
		}
		id, kind := binary.BigEndian.Uint64(p), p[8]
		p = p[9:]
		if kind == walTombstone {
			e.recs = append(e.recs, walRec{kind: kind, rec: table.Record{ID: id}})
			continue
		}
		if kind != walPut && kind != walKeepResult {
			return e, fmt.Errorf("record %d: kind %d", id, kind)
		}
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return e, fmt.Errorf("record %d: a length past the entry", id)
		}
		rec, err := decodeRecord(id, p[k:k+int(n)])
		if err != nil {
			return e, fmt.Errorf("record %d: %w", id, err)
		}
		if kind == walKeepResult {
			rec.Result, rec.Stored = nil, true
		}
		e.recs = append(e.recs, walRec{kind: kind, rec: rec, enc: p[k : k+int(n) : k+int(n)]})
		p = p[k+int(n):]
	}
	return e, nil
}

// walWriter is the log file Apply appends to.
type walWriter struct {
	f    walFile
	fd   *os.File
	size int64
	// broken is set when a write or sync failed: the file's tail may be
	// part of an entry, so nothing more is written to it (the next Apply
	// starts another file).
	broken bool
}

// createWal creates log file n in dir, and syncs the directory so that
// the file outlives a crash.
func createWal(dir string, n uint64) (*walWriter, error) {
	f := walFile{n: n, path: filepath.Join(dir, walPrefix+strconv.FormatUint(n, 10))}
	fd, err := os.OpenFile(f.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create %s: %w", f.path, err)
	}
	if err := syncDir(dir); err != nil {
		fd.Close()
		_ = os.Remove(f.path)
		return nil, err
	}
	return &walWriter{f: f, fd: fd}, nil
}

// append writes b at the end of the file and syncs it.
func (w *walWriter) append(b []byte) error {
	if _, err := w.fd.WriteAt(b, w.size); err != nil {
		w.broken = true
		return fmt.Errorf("store: write %s: %w", w.f.path, err)
	}
	if err := fdatasync(w.fd); err != nil {
		w.broken = true
		return fmt.Errorf("store: sync %s: %w", w.f.path, err)
	}
	w.size += int64(len(b))
	return nil
}

func (w *walWriter) close() error {
	if err := w.fd.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", w.f.path, err)
	}
	return nil
}

// syncDir syncs directory dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// Marks: what the log holds of a record not yet checkpointed, for
// Apply's check of a kept result and for Result.
const (
	markOther = iota // waiting, running or failed
	markTomb
	markDone
)

// mark is a record's latest state in the log not yet checkpointed.
type mark struct {
	seq  uint64
	kind uint8
}

// pending is a record of the overlay: the latest a log entry not yet
// checkpointed holds for its ID.
type pending struct {
	seq  uint64 // the entry's
	tomb bool
	rec  table.Record
	// inBolt: a done record whose result is the one the bbolt file holds
	// (a walKeepResult whose result the overlay did not have).
	inBolt bool
}

// overlayResult returns what the overlay knows of the result of done
// record id: its bytes (known), or that the bbolt file must be asked
// (ask), or an error wrapping ErrNotFound.
func overlayResult(o map[uint64]pending, id uint64) (res []byte, known, ask bool, err error) {
	p, ok := o[id]
	switch {
	case !ok:
		return nil, false, true, nil
	case p.tomb:
		return nil, false, false, ErrNotFound
	case p.rec.Status != workunit.StatusDone:
		return nil, false, false, fmt.Errorf("%w: record %d is %s", ErrNotFound, id, p.rec.Status)
	case p.inBolt:
		return nil, false, true, nil
	}
	return p.rec.Result, true, false, nil
}
