package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
)

// The commands of the Raft log: one byte of kind, then the payload.
const (
	cmdRecords byte = 'R' // store.EncodeBatch of a batch: Store.Apply
	cmdBlob    byte = 'B' // a blob's hash (32 bytes), then its bytes: PutBlob, CreateBlob
	cmdJobs    byte = 'J' // JSON of jobsCmd: PutJobs
	cmdPeer    byte = 'P' // JSON of peerCmd: a replica's client address
	// cmdStage and cmdCommit carry a command too large for one log entry
	// (see maxEntryBytes) in pieces: each cmdStage (a stage ID, 8 bytes,
	// then a piece) appends its piece to the stage; cmdCommit (the stage
	// ID, then the command's size, 8 bytes) applies the stage's bytes as
	// one command, and drops it; a stage of another size (a piece that
	// never reached the log) applies nothing.
	cmdStage  byte = 'S'
	cmdCommit byte = 'C'
	// cmdDrop (the stage ID) drops a stage without applying it: its
	// writer's raft did not take all its pieces, or its commit. (A riotd
	// that does not know it stops at it, as at any command it does not
	// know: replicas are upgraded followers first.)
	cmdDrop byte = 'D'
	// cmdBlobPiece and cmdBlobCommit carry a blob too large for one log
	// entry, as cmdStage and cmdCommit carry other commands, but its
	// pieces are staged in a file of the replica's stage directory
	// (stageDirName), not in memory: cmdBlobPiece (a stage ID, then a
	// piece) appends its piece to the stage's file; cmdBlobCommit (the
	// stage ID, the blob's hash, 32 bytes, and its size, 8 bytes) makes
	// the file the local store's blob, and drops the stage; a stage of
	// another size applies nothing. cmdDrop drops such a stage too.
	cmdBlobPiece  byte = 'p'
	cmdBlobCommit byte = 'c'
	// cmdTermed wraps one of the above with the Raft term of the tracker
	// that wrote it (8 bytes, big-endian): the command applies only if
	// raft appended it in that term (see errStaleTerm).
	cmdTermed byte = 'T'
)

// termedHeader is the size of cmdTermed's header: its kind and the term.
const termedHeader = 1 + 8

// errStaleTerm: a command written by a tracker opened in an earlier term
// than the one raft appended it in, which no replica applies. A replica
// that loses the lead and wins it back (a newer term) may still run the
// tracker it opened in the earlier term for a moment; another leader may
// have written the store in between, which that tracker's table does not
// know: its writes must not land on top (a stale record over a newer one,
// an ID that the other leader gave another workunit). The term in the
// command and the entry's term are both in the log, so every replica
// rejects the same commands.
var errStaleTerm = errors.New("written by the tracker of an earlier term (this replica lost the lead since)")

// peerCmd is the payload of cmdPeer: the client address of a replica
// (where clients are sent while it leads), or, with Client empty, its
// removal. Raft's configuration has the replicas' IDs and replication
// addresses; this keeps their client addresses beside them, replicated
// too, so that a replica added while the cluster serves is known to all.
type peerCmd struct {
	ID     string `json:"id"`
	Client string `json:"client"`
}

// jobsCmd is the payload of cmdJobs.
type jobsCmd struct {
	Jobs   []store.Job `json:"jobs"`
	Forget []string    `json:"forget"`
}

// stageDirName is the directory, in the local store's, of the blobs
// being written in pieces (cmdBlobPiece): a file each, named by its stage
// ID. Like the local store, it is derived state: emptied at every start,
// and rebuilt from the snapshot and the log.
const stageDirName = "stages"

// pieceThreshold: a blob larger than this goes to the local store in
// pieces (a file of store.BlobDir), as the single riotd stores blobs that
// came in pieces; smaller ones with PutBlob.
const pieceThreshold = 1 << 20

// fsm is the replica's raft.FSM: it applies each committed command to the
// replica's local store, a store.Bolt in its state directory. The local
// store is derived state: it is emptied at every start and rebuilt from
// the last snapshot (Restore) and the log after it, so that a command is
// applied to it exactly once whatever a crash interrupted, and it need not
// be durable at all (store.BoltOptions.Deferred: no fsync, and the records
// of many commands held in memory and written to its file in one bbolt
// transaction): the Raft log is durable before a command is applied.
// Snapshot's BeginCopy writes what memory holds first, so a snapshot has
// every command up to its index.
//
// raft calls Apply, Snapshot and Restore from one goroutine; the tracker
// reads the local store (through Store) from others: mu guards local
// against Restore replacing it.
type fsm struct {
	dir string // the local store's directory
	log *slog.Logger
	// fatal is called when a command fails to apply on this replica (its
	// local store failed): the replica must stop, and rebuild at its next
	// start, rather than go on with a store that lacks a command.
	fatal func(error)

	mu      sync.RWMutex
	local   *store.Bolt
	applied atomic.Uint64 // the index of the last command applied

	peersMu sync.Mutex
	peers   map[string]string // replica ID → client address (cmdPeer)

	// stages are the commands being written in pieces (cmdStage), by
	// stage ID: only raft's FSM goroutine (Apply, Snapshot, Restore) uses
	// them.
	stages map[uint64][]byte
	// blobStages are the blobs being written in pieces (cmdBlobPiece), by
	// stage ID: each a file of stageDirName, open for appending. Only
	// raft's FSM goroutine uses them, as stages.
	blobStages map[uint64]*blobStage
	// stageSeq numbers the stages this replica's Stores write (a stage ID
	// is the writer's term and this number).
	stageSeq atomic.Uint64
}

// peerClient returns the client address of replica id that the log
// gave, or "".
func (f *fsm) peerClient(id string) string {
	f.peersMu.Lock()
	defer f.peersMu.Unlock()
	return f.peers[id]
}

func (f *fsm) setPeer(c peerCmd) {
	f.peersMu.Lock()
	defer f.peersMu.Unlock()
	if c.Client == "" {
		delete(f.peers, c.ID)
		return
	}
	f.peers[c.ID] = c.Client
}

func (f *fsm) peerList() []peerCmd {
	f.peersMu.Lock()
	defer f.peersMu.Unlock()
	out := make([]peerCmd, 0, len(f.peers))
	for id, c := range f.peers {
		out = append(out, peerCmd{ID: id, Client: c})
	}
	return out
}

// openFSM empties dir and opens an empty local store in it.
func openFSM(ctx context.Context, dir string, log *slog.Logger, fatal func(error)) (*fsm, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("replica: empty the local store: %w", err)
	}
	local, err := openLocal(ctx, dir, log)
	if err != nil {
		return nil, err
	}
	return &fsm{dir: dir, log: log, fatal: fatal, local: local, peers: map[string]string{}}, nil
}

func openLocal(ctx context.Context, dir string, log *slog.Logger) (*store.Bolt, error) {
	local, err := store.OpenBolt(ctx, dir, store.BoltOptions{Deferred: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("replica: local store: %w", err)
	}
	return local, nil
}

// use runs f with the local store, under the read lock.
func (f *fsm) use(g func(*store.Bolt) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.local == nil {
		return fmt.Errorf("replica: local store: %w", store.ErrClosed)
	}
	return g(f.local)
}

// Applied returns the index of the last command applied.
func (f *fsm) Applied() uint64 { return f.applied.Load() }

// Apply implements raft.FSM. It returns nil or the error of the command.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.apply(l, l.Data)
}

// apply applies one command of entry l: the entry's data, or a command
// it committed from a stage.
func (f *fsm) apply(l *raft.Log, data []byte) any {
	if len(data) > 0 && data[0] == cmdTermed {
		if len(data) < termedHeader {
			return f.failed(l, errors.New("a termed command cut short"))
		}
		if term := binary.BigEndian.Uint64(data[1:termedHeader]); term != l.Term {
			// Not applied, on any replica: an answer to its writer only.
			f.applied.Store(l.Index)
			return fmt.Errorf("replica: log entry %d of term %d: %w (its tracker's term %d)", l.Index, l.Term, errStaleTerm, term)
		}
		data = data[termedHeader:]
		f.dropStages(l.Term)
	}
	var err error
	switch {
	case len(data) > 0 && data[0] == cmdPeer:
		var c peerCmd
		if err = json.Unmarshal(data[1:], &c); err == nil {
			f.setPeer(c)
		}
	case len(data) > 0 && (data[0] == cmdBlobPiece || data[0] == cmdBlobCommit):
		return f.applyBlobStage(l, data)
	case len(data) > 0 && (data[0] == cmdStage || data[0] == cmdCommit || data[0] == cmdDrop):
		if len(data) < 1+8 {
			return f.failed(l, errors.New("a staged command cut short"))
		}
		id := binary.BigEndian.Uint64(data[1:9])
		if data[0] == cmdStage {
			if f.stages == nil {
				f.stages = map[uint64][]byte{}
			}
			f.stages[id] = append(f.stages[id], data[9:]...)
			f.applied.Store(l.Index)
			return nil
		}
		cmd, ok := f.stages[id]
		delete(f.stages, id)
		if data[0] == cmdDrop {
			f.dropBlobStage(id)
			f.applied.Store(l.Index)
			return nil
		}
		if !ok {
			// The same on every replica (snapshots keep the stages):
			// an answer to its writer only.
			f.applied.Store(l.Index)
			return fmt.Errorf("replica: log entry %d commits stage %x, which has no pieces", l.Index, id)
		}
		if len(data) < 1+16 {
			return f.failed(l, errors.New("a commit of a stage cut short"))
		}
		if want := binary.BigEndian.Uint64(data[9:17]); uint64(len(cmd)) != want {
			f.applied.Store(l.Index)
			return fmt.Errorf("replica: log entry %d commits stage %x of %d bytes, not %d: a piece is missing (raft did not take it)", l.Index, id, len(cmd), want)
		}
		return f.apply(l, cmd)
	default:
		err = f.use(func(local *store.Bolt) error { return applyCmd(local, data) })
	}
	if err != nil {
		return f.failed(l, err)
	}
	f.applied.Store(l.Index)
	return nil
}

// dropStages drops the stages of trackers of terms before term (a stage
// ID's upper 32 bits are its term's lower ones): a tracker that lost the
// lead mid-command never commits them. (Stages of a Store without a term
// are its own to commit.)
func (f *fsm) dropStages(term uint64) {
	old := func(id uint64) bool { t := id >> 32; return t != 0 && t < term&(1<<32-1) }
	for id := range f.stages {
		if old(id) {
			delete(f.stages, id)
		}
	}
	for id := range f.blobStages {
		if old(id) {
			f.dropBlobStage(id)
		}
	}
}

// failed reports a committed entry that did not apply: the replica stops.
func (f *fsm) failed(l *raft.Log, err error) error {
	err = fmt.Errorf("replica: apply log entry %d: %w", l.Index, err)
	f.log.Error("replica: a committed entry failed to apply to the local store; the replica stops (it rebuilds its store from the log at its next start)",
		"index", l.Index, "err", err)
	if f.fatal != nil {
		f.fatal(err)
	}
	return err
}

// applyCmd applies one command to local.
func applyCmd(local *store.Bolt, data []byte) error {
	ctx := context.Background()
	if len(data) == 0 {
		return errors.New("an empty command")
	}
	body := data[1:]
	switch data[0] {
	case cmdRecords:
		// The local store keeps body's records as they are (until its
		// next flush): raft's entry is not modified after it is applied.
		return local.ApplyEncoded(ctx, body)
	case cmdBlob:
		if len(body) < len(blob.Hash{}) {
			return errors.New("a blob command cut short")
		}
		var h blob.Hash
		copy(h[:], body)
		b := body[len(h):]
		if len(b) <= pieceThreshold {
			return local.PutBlob(ctx, h, b)
		}
		if ok, err := local.HasBlob(ctx, h); err != nil || ok {
			return err
		}
		w, err := local.CreateBlob(ctx, h, int64(len(b)))
		if err != nil {
			return err
		}
		defer w.Abort()
		if _, err := w.Write(b); err != nil {
			return err
		}
		return w.Commit(ctx)
	case cmdJobs:
		var c jobsCmd
		if err := json.Unmarshal(body, &c); err != nil {
			return fmt.Errorf("a jobs command: %w", err)
		}
		return local.PutJobs(ctx, c.Jobs, c.Forget)
	default:
		return fmt.Errorf("unknown command %q (written by a newer riotd?)", data[0])
	}
}

// The snapshot's format: snapMagic, the index of the last command applied
// (8 bytes, big-endian), the JSON of the replicas' client addresses (its
// size in 8 bytes, then its bytes), the bbolt file's size (8 bytes) and
// bytes, then for each blob of store.BlobDir a 1, its hash (32 bytes), its
// size (8 bytes) and bytes, for each command staged in pieces (cmdStage)
// a 2, its stage ID (8 bytes), its size (8 bytes) and bytes, for each blob
// staged in pieces (cmdBlobPiece) a 3 and likewise, and a 0 at the end.
const snapMagic = "riotsnap4\n"

// Snapshot implements raft.FSM: a read transaction of the local store,
// written out by Persist while commands go on being applied.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	var c *store.Copy
	err := f.use(func(local *store.Bolt) error {
		var err error
		c, err = local.BeginCopy()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("replica: snapshot: %w", err)
	}
	peers, err := json.Marshal(f.peerList())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("replica: snapshot: %w", err)
	}
	// On raft's FSM goroutine, as BeginCopy: the copy holds exactly the
	// commands up to this one.
	stages := make(map[uint64][]byte, len(f.stages))
	for id, b := range f.stages {
		stages[id] = slices.Clone(b)
	}
	blobStages, err := f.snapshotBlobStages()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("replica: snapshot: %w", err)
	}
	return &snapshot{copy: c, blobDir: filepath.Join(f.dir, store.BlobDir), peers: peers, applied: f.applied.Load(),
		stages: stages, blobStages: blobStages}, nil
}

type snapshot struct {
	copy    *store.Copy
	blobDir string
	peers   []byte // JSON of []peerCmd
	applied uint64 // the index of the last command in copy
	stages  map[uint64][]byte
	// blobStages are the blobs staged in pieces (cmdBlobPiece), each
	// open for the snapshot.
	blobStages []snapBlobStage
}

// Persist implements raft.FSMSnapshot.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	err := s.write(sink)
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("replica: snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) write(sink io.Writer) error {
	w := bufio.NewWriterSize(sink, 1<<20)
	w.WriteString(snapMagic)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], s.applied)
	w.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(len(s.peers)))
	w.Write(n[:])
	w.Write(s.peers)
	binary.BigEndian.PutUint64(n[:], uint64(s.copy.Size()))
	w.Write(n[:])
	if _, err := s.copy.WriteTo(w); err != nil {
		return err
	}
	ents, err := os.ReadDir(s.blobDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Blobs are written once and never removed: those stored after the
	// copy began may be in it too, which is harmless (a later command
	// stores them again as a no-op).
	for _, e := range ents {
		h, err := blob.Parse(e.Name())
		if err != nil || !e.Type().IsRegular() {
			continue // a .part file, or not a blob
		}
		if err := writeBlobFile(w, h, filepath.Join(s.blobDir, e.Name())); err != nil {
			return err
		}
	}
	for id, b := range s.stages {
		w.WriteByte(2)
		binary.BigEndian.PutUint64(n[:], id)
		w.Write(n[:])
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		w.Write(n[:])
		w.Write(b)
	}
	if err := writeSnapBlobStages(w, s.blobStages); err != nil {
		return err
	}
	w.WriteByte(0)
	return w.Flush()
}

func writeBlobFile(w *bufio.Writer, h blob.Hash, path string) error {
	fd, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return err
	}
	w.WriteByte(1)
	w.Write(h[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(fi.Size()))
	w.Write(n[:])
	if _, err := io.CopyN(w, fd, fi.Size()); err != nil {
		return fmt.Errorf("blob %s: %w", h.Short(), err)
	}
	return nil
}

// Release implements raft.FSMSnapshot.
func (s *snapshot) Release() {
	_ = s.copy.Close()
	closeSnapBlobStages(s.blobStages)
	s.blobStages = nil
}

// Restore implements raft.FSM: it replaces the local store with the
// snapshot's. The new store is written beside the old one and swapped in
// whole, so that a failure leaves the old one.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	tmp := f.dir + ".restore"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("replica: restore: %w", err)
	}
	got, err := readSnapshot(bufio.NewReaderSize(rc, 1<<20), tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("replica: restore: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.local != nil {
		if err := f.local.Close(); err != nil {
			f.log.Warn("replica: close the local store before a restore", "err", err)
		}
		f.local = nil
	}
	f.closeBlobStages()
	if err := os.RemoveAll(f.dir); err != nil {
		return fmt.Errorf("replica: restore: %w", err)
	}
	if err := os.Rename(tmp, f.dir); err != nil {
		return fmt.Errorf("replica: restore: %w", err)
	}
	local, err := openLocal(context.Background(), f.dir, f.log)
	if err != nil {
		return fmt.Errorf("replica: restore: %w", err)
	}
	f.local = local
	f.applied.Store(got.applied)
	f.stages = got.stages
	if err := f.openBlobStages(got.blobStages); err != nil {
		return fmt.Errorf("replica: restore: %w", err)
	}
	f.peersMu.Lock()
	f.peers = map[string]string{}
	for _, p := range got.peers {
		f.peers[p.ID] = p.Client
	}
	f.peersMu.Unlock()
	return nil
}

// maxSnapPeers bounds the peers' section of a snapshot.
const maxSnapPeers = 1 << 20

// snapContents is what a snapshot holds besides the store.
type snapContents struct {
	peers   []peerCmd
	applied uint64            // the index of its last command (0 in snapMagic2's)
	stages  map[uint64][]byte // commands being written in pieces (snapMagic's)
	// blobStages are the sizes of the blobs being written in pieces, by
	// stage ID, whose bytes are in the stage directory.
	blobStages map[uint64]int64
}

// maxStageBytes bounds a stage read from a snapshot.
const maxStageBytes = 4 << 30

// readSnapshot writes the store of a snapshot into dir, and returns the
// rest of it.
func readSnapshot(r *bufio.Reader, dir string) (snapContents, error) {
	var got snapContents
	cut := func(err error) (snapContents, error) {
		return snapContents{}, fmt.Errorf("snapshot cut short: %w", err)
	}
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapMagic {
		return got, fmt.Errorf("not a riot snapshot (magic %q)", magic)
	}
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return cut(err)
	}
	got.applied = binary.BigEndian.Uint64(n[:])
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return cut(err)
	}
	size := binary.BigEndian.Uint64(n[:])
	if size > maxSnapPeers {
		return snapContents{}, fmt.Errorf("snapshot: a peers section of %d bytes", size)
	}
	pj := make([]byte, size)
	if _, err := io.ReadFull(r, pj); err != nil {
		return cut(err)
	}
	if err := json.Unmarshal(pj, &got.peers); err != nil {
		return snapContents{}, fmt.Errorf("snapshot: its peers: %w", err)
	}
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return cut(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, store.BlobDir), 0o700); err != nil {
		return snapContents{}, err
	}
	if err := copyToFile(filepath.Join(dir, store.FileName), r, int64(binary.BigEndian.Uint64(n[:]))); err != nil {
		return snapContents{}, err
	}
	for {
		tag, err := r.ReadByte()
		if err != nil {
			return cut(err)
		}
		switch tag {
		case 0:
			return got, nil
		case 1:
			var h blob.Hash
			if _, err := io.ReadFull(r, h[:]); err != nil {
				return cut(err)
			}
			if _, err := io.ReadFull(r, n[:]); err != nil {
				return cut(err)
			}
			if err := copyToFile(filepath.Join(dir, store.BlobDir, h.String()), r, int64(binary.BigEndian.Uint64(n[:]))); err != nil {
				return snapContents{}, err
			}
		case 2:
			var hdr [16]byte
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return cut(err)
			}
			id, size := binary.BigEndian.Uint64(hdr[:8]), binary.BigEndian.Uint64(hdr[8:])
			if size > maxStageBytes {
				return snapContents{}, fmt.Errorf("snapshot: a staged command of %d bytes", size)
			}
			b := make([]byte, size)
			if _, err := io.ReadFull(r, b); err != nil {
				return cut(err)
			}
			if got.stages == nil {
				got.stages = map[uint64][]byte{}
			}
			got.stages[id] = b
		case 3:
			id, size, err := readSnapBlobStage(r, dir)
			if err != nil {
				return snapContents{}, err
			}
			if got.blobStages == nil {
				got.blobStages = map[uint64]int64{}
			}
			got.blobStages[id] = size
		default:
			return snapContents{}, fmt.Errorf("snapshot: an unknown section %d (written by a newer riotd?)", tag)
		}
	}
}

func copyToFile(path string, r io.Reader, size int64) error {
	fd, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(fd, r, size); err != nil {
		fd.Close()
		return fmt.Errorf("snapshot cut short in %s: %w", filepath.Base(path), err)
	}
	return fd.Close()
}

// close closes the local store.
func (f *fsm) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeBlobStages()
	if f.local == nil {
		return nil
	}
	err := f.local.Close()
	f.local = nil
	return err
}
