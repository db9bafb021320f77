package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// Checkpoints: the checkpointer applies the log to the bbolt file every
// checkpointEvery, and sooner once checkpointRecords records, or
// checkpointBytes of their entries, wait (the entries stay in memory
// until then, and a crash leaves them to replay). 65,536 records cost a
// seventh less CPU in the store's benchmark, but a restart after SIGKILL
// on a million records took 1.5-2.5 s against 1.2 s (docs/benchmarks.md).
const (
	checkpointEvery   = 100 * time.Millisecond
	checkpointRecords = 8192
	checkpointBytes   = 64 << 20
)

// retired is a log file no longer written: it may be removed once the
// bbolt file holds its entries, up to seq.
type retired struct {
	f   walFile
	seq uint64
}

// walState is a Bolt store's log: Apply's side. Its fields are guarded by
// Bolt.walMu.
type walState struct {
	w       *walWriter
	wSeq    uint64 // the last entry w holds (0: none)
	nextN   uint64 // the next log file's number
	seq     uint64 // the last entry's sequence number
	entries []walEntry
	nrecs   int // records in entries
	nbytes  int // bytes of entries' encodings
	// marks (a writable store) or overlay (a read-only one, which cannot
	// checkpoint) are what the log holds that the bbolt file does not.
	marks   map[uint64]mark
	overlay map[uint64]pending
	retired []retired
}

// openWal replays the log of the store in dir into the bbolt file (or,
// read-only, into the overlay) and, unless read-only or direct (each
// Apply a bbolt transaction: DirectCommits), starts a new log file and
// the checkpointer.
func (s *Bolt) openWal(dir string, every time.Duration, direct bool) error {
	files, err := walFiles(dir)
	if err != nil {
		return err
	}
	var applied uint64
	if err := guard(s.path, func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketMeta).Get(keyWalSeq); v != nil {
				if len(v) != 8 {
					return fmt.Errorf("%w: %s: %s of %d bytes", ErrCorrupt, s.path, keyWalSeq, len(v))
				}
				applied = binary.BigEndian.Uint64(v)
			}
			return nil
		})
	}); err != nil {
		return err
	}
	var todo []walEntry
	last := applied
	for i, f := range files {
		entries, torn, err := readWalFile(f.path)
		if err != nil {
			return err
		}
		for j, e := range entries {
			if e.seq <= applied {
				continue
			}
			if j == 0 && e.seq <= last {
				// The file before this one was left broken by a write
				// or sync that failed (never acknowledged), and the
				// writer wrote those numbers again here: this file's
				// entries replace them.
				todo = slices.DeleteFunc(todo, func(p walEntry) bool { return p.seq >= e.seq })
				last = e.seq - 1
			}
			if e.seq != last+1 {
				return fmt.Errorf("%w: %s: log entry %d follows entry %d: the entries between are missing", ErrCorrupt, f.path, e.seq, last)
			}
			last = e.seq
			todo = append(todo, e)
		}
		if torn && s.log != nil {
			s.log.Warn("store: a log entry cut short by a crash was dropped (it was never acknowledged)",
				"file", f.path, "last_file", i == len(files)-1)
		}
	}
	s.wal.seq = last
	if len(files) > 0 {
		s.wal.nextN = files[len(files)-1].n + 1
	}
	if s.readOnly {
		s.wal.overlay = map[uint64]pending{}
		for _, e := range todo {
			s.overlayLocked(e)
		}
		return nil
	}
	if len(todo) > 0 {
		if err := s.checkpointEntries(todo, last); err != nil {
			return fmt.Errorf("store: replay the log of %s: %w", s.path, err)
		}
	}
	for _, f := range files {
		if err := os.Remove(f.path); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if direct {
		return nil
	}
	w, err := createWal(dir, s.wal.nextN)
	if err != nil {
		return err
	}
	s.wal.nextN++
	s.wal.w = w
	s.wal.marks = map[uint64]mark{}
	s.kick = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.stopped = make(chan struct{})
	go s.checkpointer(every)
	return nil
}

// overlayLocked notes e's records in the overlay. s.walMu is held (or
// the store is not yet shared).
func (s *Bolt) overlayLocked(e walEntry) {
	for _, r := range e.recs {
		id := r.rec.ID
		switch r.kind {
		case walTombstone:
			s.wal.overlay[id] = pending{seq: e.seq, tomb: true}
		case walPut:
			s.wal.overlay[id] = pending{seq: e.seq, rec: r.rec}
		case walKeepResult:
			p := pending{seq: e.seq, rec: r.rec, inBolt: true}
			if res, known, _, _ := overlayResult(s.wal.overlay, id); known {
				p.rec.Result, p.rec.Stored, p.inBolt = res, false, false
			}
			s.wal.overlay[id] = p
		}
	}
}

// applyWal is Apply with the log: the batch is one entry, appended and
// synced; the checkpointer applies it to the bbolt file later.
func (s *Bolt) applyWal(db *bolt.DB, batch []table.Record) error {
	s.walMu.Lock()
	defer s.walMu.Unlock()
	e := walEntry{seq: s.wal.seq + 1, recs: make([]walRec, len(batch))}
	for i := range batch {
		r := &batch[i]
		if r.ID == 0 {
			return fmt.Errorf("record %s has no ID", r.Key.Short())
		}
		kind := byte(walPut)
		switch {
		case r.Status == workunit.StatusUnknown:
			kind = walTombstone
		case r.Status == workunit.StatusDone && r.Stored:
			kind = walKeepResult
			if err := s.haveResultLocked(db, batch[:i], r.ID); err != nil {
				return fmt.Errorf("record %s keeps its stored result: %w", r.Key.Short(), err)
			}
		}
		e.recs[i] = walRec{kind: kind, rec: *r}
		if kind == walTombstone {
			e.recs[i].rec = table.Record{ID: r.ID}
		}
	}
	if s.wal.w.broken {
		if err := s.rotateLocked(); err != nil {
			return err
		}
	}
	// The entry's buffer is kept with it: the checkpoint puts the
	// records' encodings from it.
	buf := appendWalEntry(nil, &e)
	if err := s.wal.w.append(buf); err != nil {
		return err
	}
	e.bytes = len(buf)
	s.wal.seq = e.seq
	s.wal.wSeq = e.seq
	for _, r := range e.recs {
		m := mark{seq: e.seq, kind: markOther}
		switch {
		case r.kind == walTombstone:
			m.kind = markTomb
		case r.rec.Status == workunit.StatusDone:
			m.kind = markDone
		}
		s.wal.marks[r.rec.ID] = m
	}
	s.wal.entries = append(s.wal.entries, e)
	s.wal.nrecs += len(e.recs)
	s.wal.nbytes += e.bytes
	if s.wal.nrecs >= checkpointRecords || s.wal.nbytes >= checkpointBytes {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// haveResultLocked checks that done record id has a stored result: in
// the overlay, in the batch before it, or in the bbolt file.
func (s *Bolt) haveResultLocked(db *bolt.DB, before []table.Record, id uint64) error {
	for i := len(before) - 1; i >= 0; i-- {
		if r := &before[i]; r.ID == id {
			if r.Status == workunit.StatusDone {
				return nil
			}
			return fmt.Errorf("%w: record %d is %s", ErrNotFound, id, r.Status)
		}
	}
	if m, ok := s.wal.marks[id]; ok {
		switch m.kind {
		case markDone:
			return nil
		case markTomb:
			return ErrNotFound
		}
		return fmt.Errorf("%w: record %d is not done", ErrNotFound, id)
	}
	return db.View(func(tx *bolt.Tx) error {
		k := binary.BigEndian.AppendUint64(nil, id)
		_, err := storedResult(tx.Bucket(bucketRecords), k, id)
		return err
	})
}

// rotateLocked starts the next log file; the current one is retired.
func (s *Bolt) rotateLocked() error {
	w, err := createWal(filepath.Dir(s.path), s.wal.nextN)
	if err != nil {
		return err
	}
	s.wal.nextN++
	old := s.wal.w
	_ = old.close()
	s.wal.retired = append(s.wal.retired, retired{f: old.f, seq: s.wal.wSeq})
	s.wal.w, s.wal.wSeq = w, 0
	return nil
}

// checkpointer runs checkpoints until stop is closed.
func (s *Bolt) checkpointer(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
		err := s.use("checkpoint", func(*bolt.DB) error { return s.checkpoint() })
		if err != nil && s.log != nil {
			s.log.Error("store: checkpoint of the log failed; its entries stay in the log and are tried again", "err", err)
		}
	}
}

// checkpoint applies the entries appended so far to the bbolt file, and
// removes the log files that held them. s.mu is held (read or write).
func (s *Bolt) checkpoint() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	s.walMu.Lock()
	if len(s.wal.entries) == 0 {
		s.walMu.Unlock()
		return nil
	}
	// The entries taken are in the current file (and retired ones): Apply
	// goes on in a new file, so that the old can be removed whole.
	if err := s.rotateLocked(); err != nil {
		s.walMu.Unlock()
		return err
	}
	entries, last := s.wal.entries, s.wal.seq
	s.wal.entries, s.wal.nrecs, s.wal.nbytes = nil, 0, 0
	s.walMu.Unlock()

	if err := s.checkpointEntries(entries, last); err != nil {
		s.walMu.Lock()
		s.wal.entries = append(entries, s.wal.entries...)
		for _, e := range entries {
			s.wal.nrecs += len(e.recs)
			s.wal.nbytes += e.bytes
		}
		s.walMu.Unlock()
		return err
	}
	s.walMu.Lock()
	for _, e := range entries {
		for _, r := range e.recs {
			if m, ok := s.wal.marks[r.rec.ID]; ok && m.seq <= last {
				delete(s.wal.marks, r.rec.ID)
			}
		}
	}
	var remove []walFile
	kept := s.wal.retired[:0]
	for _, r := range s.wal.retired {
		if r.seq <= last {
			remove = append(remove, r.f)
		} else {
			kept = append(kept, r)
		}
	}
	s.wal.retired = kept
	s.walMu.Unlock()
	for _, f := range remove {
		// A file left behind (a failed remove, a crash) holds entries the
		// bbolt file has: the next open skips them.
		_ = os.Remove(f.path)
	}
	return nil
}

// checkpointEntries applies entries to the bbolt file in one transaction,
// noting last as the last entry applied.
func (s *Bolt) checkpointEntries(entries []walEntry, last uint64) error {
	return guard(s.path, func() error {
		return s.update(s.db, func(tx *bolt.Tx) error {
			rb := tx.Bucket(bucketRecords)
			rb.FillPercent = 0.9
			var arena []byte
			skip := superseded(entries)
			i := -1
			for _, e := range entries {
				for _, r := range e.recs {
					if i++; skip[i] {
						continue
					}
					k := binary.BigEndian.AppendUint64(arena, r.rec.ID)
					arena = k[len(k):]
					if r.kind == walTombstone {
						if err := rb.Delete(k[:8:8]); err != nil {
							return fmt.Errorf("record %d: %w", r.rec.ID, err)
						}
						continue
					}
					if r.kind == walPut && r.enc != nil {
						if err := rb.Put(k[:8:8], r.enc); err != nil {
							return fmt.Errorf("record %s: %w", r.rec.Key.Short(), err)
						}
						continue
					}
					rec := r.rec
					if r.kind == walKeepResult {
						res, err := storedResult(rb, k[:8], rec.ID)
						if err != nil {
							return fmt.Errorf("record %s keeps its stored result: %w", rec.Key.Short(), err)
						}
						rec.Result, rec.Stored = res, false
					}
					enc := encodeRecord(arena, &rec)
					arena = enc[len(enc):]
					if err := rb.Put(k[:8:8], enc[:len(enc):len(enc)]); err != nil {
						return fmt.Errorf("record %s: %w", rec.Key.Short(), err)
					}
				}
			}
			return tx.Bucket(bucketMeta).Put(keyWalSeq, binary.BigEndian.AppendUint64(nil, last))
		})
	})
}

// superseded tells, for each record of entries in order, whether a later
// one of the same ID replaces it whole (a walPut or a walTombstone; not a
// walKeepResult, which reads the stored result its predecessor wrote), so
// that the checkpoint need not write it: a workunit's waiting record and
// its result mostly fall in one checkpoint, and a bbolt Put (a search
// of the tree) was most of a checkpoint's cost.
func superseded(entries []walEntry) []bool {
	n := 0
	for _, e := range entries {
		n += len(e.recs)
	}
	skip := make([]bool, n)
	replaced := make(map[uint64]struct{}, n)
	i := n
	for e := len(entries) - 1; e >= 0; e-- {
		recs := entries[e].recs
		for j := len(recs) - 1; j >= 0; j-- {
			i--
			r := &recs[j]
			if _, ok := replaced[r.rec.ID]; ok {
				skip[i] = true
			} else if r.kind != walKeepResult {
				replaced[r.rec.ID] = struct{}{}
			}
		}
	}
	return skip
}

// stopCheckpointer ends the checkpointer, once; s.mu is not held (the
// checkpointer takes it).
func (s *Bolt) stopCheckpointer() {
	if s.stop == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.stopped
}

// closeWal checkpoints what is left, the checkpointer stopped and s.mu
// held; the log files are removed once the bbolt file holds their
// entries.
func (s *Bolt) closeWal() error {
	if s.stop == nil {
		return nil
	}
	err := s.checkpoint()
	s.walMu.Lock()
	defer s.walMu.Unlock()
	if s.wal.w != nil {
		_ = s.wal.w.close()
		if err == nil && len(s.wal.entries) == 0 {
			_ = os.Remove(s.wal.w.f.path)
		}
		s.wal.w = nil
	}
	return err
}

// resultFromOverlay is Result's look at the log: the result's bytes (a
// copy) when a read-only store's overlay knows them. A writable store
// checkpoints first when the log holds the record, so that the bbolt
// file has it. s.mu is held for reading.
func (s *Bolt) resultFromOverlay(id uint64) (res []byte, known bool, err error) {
	s.walMu.Lock()
	_, marked := s.wal.marks[id]
	s.walMu.Unlock()
	if marked {
		return nil, false, s.checkpoint()
	}
	s.walMu.Lock()
	defer s.walMu.Unlock()
	if s.wal.overlay == nil {
		return nil, false, nil
	}
	r, known, _, err := overlayResult(s.wal.overlay, id)
	if known {
		return append([]byte{}, r...), true, nil
	}
	return nil, false, err
}

// mergeOverlay brings recs (the bbolt file's, in ID order) up to date
// with the overlay.
func (s *Bolt) mergeOverlay(recs []table.Record, results bool) ([]table.Record, error) {
	s.walMu.Lock()
	defer s.walMu.Unlock()
	if len(s.wal.overlay) == 0 {
		return recs, nil
	}
	for id, p := range s.wal.overlay {
		if r := p.rec; !p.tomb && (r.Status == workunit.StatusWaiting || r.Status == workunit.StatusRunning) && r.Spec == nil {
			return nil, fmt.Errorf("%w: %s: record %d (%s) is %s without a spec", ErrCorrupt, s.path, id, r.Key, r.Status)
		}
	}
	seen := make(map[uint64]bool, len(s.wal.overlay))
	out := recs[:0]
	for _, r := range recs {
		p, ok := s.wal.overlay[r.ID]
		if !ok {
			out = append(out, r)
			continue
		}
		seen[r.ID] = true
		if p.tomb {
			continue
		}
		rec := cloneRecord(p.rec, results)
		if p.inBolt && results && r.Status == workunit.StatusDone {
			rec.Result, rec.Stored = r.Result, false
		}
		out = append(out, rec)
	}
	added := false
	for id, p := range s.wal.overlay {
		if seen[id] || p.tomb {
			continue
		}
		out = append(out, cloneRecord(p.rec, results))
		added = true
	}
	if added {
		sortByID(out)
	}
	return out, nil
}

// cloneRecord copies r's bytes (the table's) for a caller of Load.
func cloneRecord(r table.Record, results bool) table.Record {
	r.Spec = cloneOrNil(r.Spec)
	if r.Err != nil {
		e := *r.Err
		e.Value = cloneOrNil(e.Value)
		r.Err = &e
	}
	switch {
	case r.Status == workunit.StatusDone && !results:
		r.Result, r.Stored = nil, true
	default:
		r.Result = cloneOrNil(r.Result)
	}
	return r
}

func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sortByID sorts recs by ID.
func sortByID(recs []table.Record) {
	slices.SortFunc(recs, func(a, b table.Record) int { return cmp.Compare(a.ID, b.ID) })
}
