package replica

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
)

// ErrNotLeader: this replica does not lead (any more), so it cannot
// write. Errors of it are *NotLeaderError, which names the leader when it
// is known; test with errors.Is.
var ErrNotLeader = errors.New("replica: not the leader")

// NotLeaderError says that a write went to a replica that does not lead,
// and where the leader is.
type NotLeaderError struct {
	// Leader is the leader's client address (host:port), or "" while no
	// leader is known.
	Leader string
	// Err is raft's error (raft.ErrNotLeader, raft.ErrLeadershipLost, ...).
	Err error
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return fmt.Sprintf("replica: not the leader, and no leader is known yet (%v)", e.Err)
	}
	return fmt.Sprintf("replica: not the leader: the leader is at %s (%v)", e.Leader, e.Err)
}

// Is makes errors.Is(err, ErrNotLeader) hold, and errors.Is(err,
// store.ErrFenced): the tracker that got it stops, and its clients go to
// the leader.
func (e *NotLeaderError) Is(target error) bool {
	return target == ErrNotLeader || target == store.ErrFenced
}

// Unwrap returns raft's error.
func (e *NotLeaderError) Unwrap() error { return e.Err }

// DefaultApplyTimeout bounds one write through Raft when the caller's
// context has no deadline.
const DefaultApplyTimeout = 30 * time.Second

// Store is the store.Store (and store.JobStore) of the tracker that the
// leading replica runs. Each write (Apply, PutBlob, a blob's Commit,
// PutJobs) is one command of the Raft log: it returns nil once a majority
// of the replicas has the command in its log (durably) and this replica
// has applied it to its local store, so an acknowledged submission or
// result survives the loss of any minority. Reads (Load, Result, blobs,
// jobs) are of this replica's local store, which holds every command
// applied: the replica opens the tracker only after raft.Barrier.
//
// A write on a replica that lost the lead fails with a *NotLeaderError.
// A write whose context ends, or that fails otherwise, may still have
// been committed (Raft cannot take back an entry it sent): the tracker
// treats it as failed (nothing acknowledged), and the records are written
// again or found by the next leader, as after a crash of the single
// riotd between its write and its answer.
//
// Close does not stop Raft or the local store (the Replica owns them): it
// makes later calls fail with store.ErrClosed. A Store is safe for
// concurrent use.
type Store struct {
	r       *raft.Raft
	fsm     *fsm
	leader  func() string // the leader's client address, for NotLeaderError
	timeout time.Duration
	// term, when not 0, is the Raft term this replica led in when its
	// tracker was opened (before raft.Barrier): every write carries it
	// (cmdTermed), and no replica applies one that raft appended in
	// another term (errStaleTerm).
	term   uint64
	closed atomic.Bool
	// enqueued, when not nil, is called once a command in pieces has all
	// its entries handed to raft (for tests).
	enqueued func()
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.JobStore = (*Store)(nil)
	_ store.Fencer   = (*Store)(nil)
)

// newStore returns the Store of a tracker opened while this replica led
// in term (0: writes that any term may apply, for the replicas' client
// addresses).
func newStore(r *raft.Raft, f *fsm, leader func() string, timeout time.Duration, term uint64) *Store {
	if timeout <= 0 {
		timeout = DefaultApplyTimeout
	}
	if leader == nil {
		leader = func() string { return "" }
	}
	return &Store{r: r, fsm: f, leader: leader, timeout: timeout, term: term}
}

// maxEntryBytes is the largest command a Store writes as one Raft log
// entry; a larger one goes in pieces. raft's codec (go-msgpack) decodes a
// byte slice in steps of 256 KiB, copying what it has at each, so an
// entry of N bytes costs about N²/512 KiB of copying at every decode
// (each follower's, and the leader's read back of what it sends): a batch
// of 35 MB cost seconds, past the transport's timeout, and replication
// stalled.
const maxEntryBytes = 1 << 20

// command returns a command of kind with room for n bytes of payload,
// to be appended: with the Store's term in front when it has one.
func (s *Store) command(kind byte, n int) []byte {
	if s.term == 0 {
		return append(make([]byte, 0, 1+n), kind)
	}
	cmd := make([]byte, 0, termedHeader+1+n)
	cmd = append(cmd, cmdTermed)
	cmd = binary.BigEndian.AppendUint64(cmd, s.term)
	return append(cmd, kind)
}

// apply writes one command through Raft and waits for it to be applied
// here.
func (s *Store) apply(ctx context.Context, op string, cmd []byte) error {
	if s.closed.Load() {
		return fmt.Errorf("replica: %s: %w", op, store.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replica: %s: %w", op, err)
	}
	timeout := s.timeoutFor(ctx)
	// A command past maxEntryBytes goes as pieces of a stage and a commit
	// (cmdStage, cmdCommit), entries raft writes in this order; only the
	// commit's answer says whether the command applied. The commit says
	// the command's size: raft.Apply may fail for one piece
	// (ErrEnqueueTimeout, ErrLeadershipTransferInProgress) and take the
	// next ones, and then the commit applies nothing.
	var pieces []raft.ApplyFuture
	var stageID uint64
	if len(cmd) > maxEntryBytes {
		stageID = s.nextStageID()
		for rest := cmd; len(rest) > 0; {
			n := min(len(rest), maxEntryBytes)
			piece := binary.BigEndian.AppendUint64(s.command(cmdStage, 8+n), stageID)
			pieces = append(pieces, s.r.Apply(append(piece, rest[:n]...), timeout))
			rest = rest[n:]
		}
		commit := binary.BigEndian.AppendUint64(s.command(cmdCommit, 16), stageID)
		cmd = binary.BigEndian.AppendUint64(commit, uint64(len(cmd)))
	}
	f := s.r.Apply(cmd, timeout)
	if s.enqueued != nil && pieces != nil {
		s.enqueued()
	}
	return s.wait(ctx, op, pieces, f, stageID, timeout)
}

// wait waits for the pieces (of stage stageID) and then for f, the
// command that applies them (or the whole command, without pieces), and
// says whether it applied.
func (s *Store) wait(ctx context.Context, op string, pieces []raft.ApplyFuture, f raft.ApplyFuture, stageID uint64, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		for _, p := range pieces {
			if err := p.Error(); err != nil {
				done <- err
				return
			}
		}
		done <- f.Error()
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if pieces != nil {
			// The write goes on in raft: if it fails there, its pieces
			// are dropped as below.
			go func() {
				if err := <-done; err != nil {
					s.dropStage(stageID, s.timeout)
				}
			}()
		}
		return fmt.Errorf("replica: %s: %w (the write may still be committed)", op, ctx.Err())
	}
	if err != nil {
		// raft.ErrLeadershipTransferInProgress, raft.ErrEnqueueTimeout:
		// this replica may still lead when it is over, and its tracker
		// goes on: a store error. A piece or the commit that raft did not
		// take: the pieces it took would be held on every replica until
		// the next term, so a cmdDrop drops them (best effort; after a
		// commit that went through, it drops nothing).
		werr := s.writeError(op, err)
		if pieces != nil && !errors.Is(werr, ErrNotLeader) {
			s.dropStage(stageID, timeout)
		}
		return werr
	}
	if rerr, ok := f.Response().(error); ok && rerr != nil {
		if errors.Is(rerr, errStaleTerm) {
			return fmt.Errorf("replica: %s: %w", op, &NotLeaderError{Leader: s.leader(), Err: rerr})
		}
		return fmt.Errorf("replica: %s: %w", op, rerr)
	}
	return nil
}

// timeoutFor returns how long raft may take to enqueue a write of ctx:
// the Store's timeout, or less when ctx ends sooner.
func (s *Store) timeoutFor(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(min(s.timeout, time.Until(dl)), time.Millisecond)
	}
	return s.timeout
}

// nextStageID returns a new stage ID: the Store's term and a number.
func (s *Store) nextStageID() uint64 {
	return s.term<<32 | s.fsm.stageSeq.Add(1)&(1<<32-1)
}

// writeError wraps err, of raft, for a write that failed: a
// *NotLeaderError when this replica does not lead.
func (s *Store) writeError(op string, err error) error {
	// raft.ErrLeadershipLost: the entry may still be committed by the
	// next leader, which then has it before it serves (its barrier).
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
		return fmt.Errorf("replica: %s: %w", op, &NotLeaderError{Leader: s.leader(), Err: err})
	}
	return fmt.Errorf("replica: %s: %w (this replica still leads; the write may be tried again)", op, err)
}

// dropEnqueueTimeout is the least a stage's drop waits for room in
// raft's queue.
const dropEnqueueTimeout = 5 * time.Second

// dropStage asks raft to drop stage id's pieces (cmdDrop), without
// waiting: best effort, since a replica that lost the lead drops them at
// the next term's first command anyway.
func (s *Store) dropStage(id uint64, timeout time.Duration) {
	// At least dropEnqueueTimeout to be taken: the write it follows may
	// have failed for want of room in raft's queue (ErrEnqueueTimeout),
	// and a drop that fails the same way leaves the stage on every
	// replica until the next term.
	s.r.Apply(binary.BigEndian.AppendUint64(s.command(cmdDrop, 8), id), max(timeout, dropEnqueueTimeout))
}

// errDeposed: raft no longer leads in the term of the Store's tracker.
var errDeposed = errors.New("this replica no longer leads in the term its tracker was opened in")

// Fenced implements store.Fencer: a *NotLeaderError once raft no longer
// leads in the Store's term (it stepped down: a newer term, or its lease
// ran out without a majority), so that the tracker sends nothing more,
// not even what needs no write. nil for a Store without a term.
func (s *Store) Fenced() error {
	if s.term == 0 {
		return nil
	}
	if s.r.State() != raft.Leader || s.r.CurrentTerm() != s.term {
		return &NotLeaderError{Leader: s.leader(), Err: errDeposed}
	}
	return nil
}

// Apply implements store.Store: the batch is one Raft command.
func (s *Store) Apply(ctx context.Context, batch []table.Record) error {
	if len(batch) == 0 {
		return nil
	}
	for i := range batch {
		if batch[i].ID == 0 {
			return fmt.Errorf("replica: apply: record %s has no ID", batch[i].Key.Short())
		}
	}
	enc := store.EncodeBatch(batch)
	cmd := append(s.command(cmdRecords, len(enc)), enc...)
	return s.apply(ctx, "apply", cmd)
}

// PutBlob implements store.Store: a blob of up to maxEntryBytes is one
// Raft command; a larger one goes in pieces, as CreateBlob's writer sends
// them.
func (s *Store) PutBlob(ctx context.Context, h blob.Hash, data []byte) error {
	if s.closed.Load() {
		// Before HasBlob, whose ErrClosed reads as "not held".
		return fmt.Errorf("replica: put blob: %w", store.ErrClosed)
	}
	if blob.Sum(data) != h {
		return fmt.Errorf("replica: put blob %s: %w", h.Short(), store.ErrBlobMismatch)
	}
	if ok, err := s.HasBlob(ctx, h); err == nil && ok {
		return nil
	}
	if len(data) > maxEntryBytes {
		w := &blobWriter{s: s, h: h, size: int64(len(data))} // no sum: checked above
		defer w.Abort()
		if _, err := w.Write(data); err != nil {
			return err
		}
		return w.Commit(ctx)
	}
	return s.apply(ctx, "put blob", s.blobCmd(h, data))
}

// blobCmd is the command of a blob of up to maxEntryBytes: cmdBlob.
func (s *Store) blobCmd(h blob.Hash, data []byte) []byte {
	return append(append(s.command(cmdBlob, len(h)+len(data)), h[:]...), data...)
}

// CreateBlob implements store.Store. A blob of up to maxEntryBytes is
// gathered in memory and its Commit is PutBlob. A larger one goes through
// Raft in pieces as they are written (cmdBlobPiece), each replica
// appending them to a file, and its Commit (cmdBlobCommit) makes the file
// the blob: no replica holds more than a few pieces of it in memory.
func (s *Store) CreateBlob(ctx context.Context, h blob.Hash, size int64) (store.BlobWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replica: create blob: %w", err)
	}
	if size < 0 {
		return nil, fmt.Errorf("replica: create blob %s: negative size %d", h.Short(), size)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("replica: create blob: %w", store.ErrClosed)
	}
	w := &blobWriter{s: s, h: h, size: size, sum: sha256.New()}
	if ok, err := s.HasBlob(ctx, h); err == nil && ok {
		w.held = true
	}
	return w, nil
}

// maxPiecesInFlight bounds the pieces of one blob that a writer has
// handed to raft and not yet seen committed: a writer whose upload comes
// faster than the replicas take it waits for them (and so does the
// upload), rather than queue the blob in raft's memory.
const maxPiecesInFlight = 8

// blobWriter is a replicated Store's BlobWriter.
type blobWriter struct {
	s    *Store
	h    blob.Hash
	size int64
	n    int64     // bytes written
	sum  hash.Hash // of the bytes written; nil when the caller checked them
	// held: the store had the blob already; its bytes are counted and
	// hashed, and nothing is written.
	held bool
	// buf is the whole blob when it is small (size <= maxEntryBytes), else
	// the piece being filled.
	buf []byte
	// stage is the stage ID of a large blob's pieces, 0 until the first
	// goes; pending are the pieces raft took and has not yet committed, in
	// order.
	stage   uint64
	pending []raft.ApplyFuture
	err     error // a piece failed: the writer is done
	done    bool
}

func (w *blobWriter) Write(p []byte) (int, error) {
	switch {
	case w.done:
		return 0, errors.New("replica: write to a blob writer that is done")
	case w.err != nil:
		return 0, w.err
	case w.s.closed.Load():
		return 0, fmt.Errorf("replica: blob-write: %w", store.ErrClosed)
	case w.n+int64(len(p)) > w.size:
		return 0, fmt.Errorf("replica: blob %s: more than its %d bytes written", w.h.Short(), w.size)
	}
	if w.sum != nil {
		w.sum.Write(p)
	}
	w.n += int64(len(p))
	if w.held {
		return len(p), nil
	}
	if w.size <= maxEntryBytes {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	for rest := p; len(rest) > 0; {
		if w.buf == nil {
			w.buf = make([]byte, 0, maxEntryBytes)
		}
		k := min(len(rest), maxEntryBytes-len(w.buf))
		w.buf = append(w.buf, rest[:k]...)
		rest = rest[k:]
		if len(w.buf) == maxEntryBytes {
			if err := w.sendPiece(); err != nil {
				return len(p) - len(rest), err
			}
		}
	}
	return len(p), nil
}

// sendPiece hands the piece in buf to raft, after waiting for the oldest
// piece in flight when there are maxPiecesInFlight.
func (w *blobWriter) sendPiece() error {
	if w.stage == 0 {
		w.stage = w.s.nextStageID()
	}
	cmd := binary.BigEndian.AppendUint64(w.s.command(cmdBlobPiece, 8+len(w.buf)), w.stage)
	w.pending = append(w.pending, w.s.r.Apply(append(cmd, w.buf...), w.s.timeout))
	w.buf = w.buf[:0]
	if len(w.pending) < maxPiecesInFlight {
		return nil
	}
	oldest := w.pending[0]
	w.pending = slices.Delete(w.pending, 0, 1)
	if err := oldest.Error(); err != nil {
		w.err = w.s.writeError("blob-write", err)
		return w.err
	}
	return nil
}

func (w *blobWriter) Written() int64 { return w.n }

func (w *blobWriter) Commit(ctx context.Context) error {
	if w.done {
		return errors.New("replica: commit of a blob writer that is done")
	}
	if w.err != nil {
		w.Abort()
		return w.err
	}
	if w.s.closed.Load() {
		w.Abort()
		return fmt.Errorf("replica: blob-write: %w", store.ErrClosed)
	}
	if w.n != w.size {
		w.Abort()
		return fmt.Errorf("replica: blob %s: %d of its %d bytes written", w.h.Short(), w.n, w.size)
	}
	if w.sum != nil {
		if got := blob.Hash(w.sum.Sum(nil)); got != w.h {
			w.Abort()
			return fmt.Errorf("replica: %w: %s (its bytes hash to %s)", store.ErrBlobMismatch, w.h.Short(), got.Short())
		}
	}
	w.done = true
	switch {
	case w.held:
		return nil
	case w.size <= maxEntryBytes:
		data := w.buf
		w.buf = nil
		return w.s.apply(ctx, "blob-write", w.s.blobCmd(w.h, data))
	}
	if len(w.buf) > 0 || w.stage == 0 {
		if err := w.sendPiece(); err != nil {
			w.Abort() // drops what went (w.err is set), once
			return err
		}
	}
	w.buf = nil
	cmd := binary.BigEndian.AppendUint64(w.s.command(cmdBlobCommit, 8+len(w.h)+8), w.stage)
	cmd = append(cmd, w.h[:]...)
	cmd = binary.BigEndian.AppendUint64(cmd, uint64(w.size))
	timeout := w.s.timeoutFor(ctx)
	pending := w.pending
	w.pending = nil
	return w.s.wait(ctx, "blob-write", pending, w.s.r.Apply(cmd, timeout), w.stage, timeout)
}

// Abort drops what the writer sent of a large blob (cmdDrop), unless it
// committed it.
func (w *blobWriter) Abort() {
	if w.done && w.err == nil {
		return
	}
	w.done = true
	w.buf = nil
	w.pending = nil
	if w.stage != 0 {
		w.s.dropStage(w.stage, w.s.timeout)
		w.stage = 0
	}
}

// PutJobs implements store.JobStore: one Raft command.
func (s *Store) PutJobs(ctx context.Context, jobs []store.Job, forget []string) error {
	if len(jobs) == 0 && len(forget) == 0 {
		return nil
	}
	body, err := json.Marshal(jobsCmd{Jobs: jobs, Forget: forget})
	if err != nil {
		return fmt.Errorf("replica: put jobs: %w", err)
	}
	return s.apply(ctx, "put jobs", append(s.command(cmdJobs, len(body)), body...))
}

// read runs f on the local store, unless the Store is closed.
func (s *Store) read(op string, f func(*store.Bolt) error) error {
	if s.closed.Load() {
		return fmt.Errorf("replica: %s: %w", op, store.ErrClosed)
	}
	return s.fsm.use(f)
}

// Load implements store.Store, from the local store.
func (s *Store) Load(ctx context.Context) (recs []table.Record, err error) {
	err = s.read("load", func(b *store.Bolt) error { recs, err = b.Load(ctx); return err })
	return recs, err
}

// LoadStored implements store.Store, from the local store.
func (s *Store) LoadStored(ctx context.Context) (recs []table.Record, err error) {
	err = s.read("load", func(b *store.Bolt) error { recs, err = b.LoadStored(ctx); return err })
	return recs, err
}

// Result implements store.Store, from the local store.
func (s *Store) Result(ctx context.Context, id uint64) (res []byte, err error) {
	err = s.read("result", func(b *store.Bolt) error { res, err = b.Result(ctx, id); return err })
	return res, err
}

// GetBlob implements store.Store, from the local store.
func (s *Store) GetBlob(ctx context.Context, h blob.Hash) (data []byte, err error) {
	err = s.read("get blob", func(b *store.Bolt) error { data, err = b.GetBlob(ctx, h); return err })
	return data, err
}

// ReadBlob implements store.Store, from the local store.
func (s *Store) ReadBlob(ctx context.Context, h blob.Hash, off int64, p []byte) (size int64, n int, err error) {
	err = s.read("read blob", func(b *store.Bolt) error { size, n, err = b.ReadBlob(ctx, h, off, p); return err })
	return size, n, err
}

// HasBlob implements store.Store, from the local store.
func (s *Store) HasBlob(ctx context.Context, h blob.Hash) (ok bool, err error) {
	err = s.read("has blob", func(b *store.Bolt) error { ok, err = b.HasBlob(ctx, h); return err })
	return ok, err
}

// LoadJobs implements store.JobStore, from the local store.
func (s *Store) LoadJobs(ctx context.Context) (jobs []store.Job, err error) {
	err = s.read("load jobs", func(b *store.Bolt) error { jobs, err = b.LoadJobs(ctx); return err })
	return jobs, err
}

// Close implements store.Store: later calls fail with store.ErrClosed.
// Raft and the local store go on (the Replica closes them).
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
