package replica

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// A backup of a replicated tracker is one of its snapshots: the bytes the
// FSM's Persist writes (snapMagic, the replicas' client addresses, the
// bbolt file, the blobs), as the leader's GET /api/v1/replicas/backup
// answers them. A new cluster starts from one with riotd --raft-restore:
// each replica's raft takes it as its first snapshot, at index 1 of term
// 1, with the configuration of --peers, so that replicas given the same
// backup start equal and elect a leader as a new cluster does.

// restoredName is the file in a replica's raft directory that names the
// backup it started from (its SHA-256): a restart with the same
// --raft-restore goes on from the replica's own state, and any other
// backup is refused rather than silently ignored.
const restoredName = "restored-from"

// restoreBackup makes the backup at path the first snapshot of a new
// replica whose raft has no state yet, with the configuration servers.
// On a replica that started from this very backup before, it does
// nothing; on one with other state, it fails.
func restoreBackup(path, raftDir string, stable raft.StableStore, logs raft.LogStore, snaps raft.SnapshotStore, trans raft.Transport, servers []raft.Server) error {
	sum, err := checkBackup(path, raftDir)
	if err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("replica: raft state: %w", err)
	}
	marker := filepath.Join(raftDir, restoredName)
	if has {
		was, _ := os.ReadFile(marker)
		if strings.TrimSpace(string(was)) == sum {
			// A restart of the replica restored from it, or of one whose
			// restore stopped after its snapshot: the term as below.
			if term, err := stable.GetUint64(keyCurrentTerm); err == nil && term > 0 {
				return nil
			}
			if err := stable.SetUint64(keyCurrentTerm, 1); err != nil {
				return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
			}
			return nil
		}
		return fmt.Errorf("replica: --raft-restore %s: %s already holds a replica's raft state, which a restore would replace: "+
			"start the restored cluster on empty --data directories, or start this one without --raft-restore", path, raftDir)
	}
	if len(servers) == 0 {
		return fmt.Errorf("replica: --raft-restore %s: a restored cluster is a new one: give its replicas in --peers, without --join", path)
	}
	// The backup is named before the snapshot is made: a restore that
	// stops after it (a crash, a full disk) goes on at the next start
	// with the same backup, not refused as another replica's state.
	if err := os.WriteFile(marker, []byte(sum+"\n"), 0o600); err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	fd, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("replica: --raft-restore: %w", err)
	}
	defer fd.Close()
	conf := raft.Configuration{Servers: servers}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 1, 1, conf, 1, trans)
	if err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	if err := copyBackup(sink, fd); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	// As a bootstrap does: the term of the last entry is this replica's.
	if err := stable.SetUint64(keyCurrentTerm, 1); err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	return nil
}

// keyCurrentTerm is raft's key of the current term in its stable store.
var keyCurrentTerm = []byte("CurrentTerm")

// copyBackup copies a backup into the new cluster's first snapshot. The
// index of the last command applied that it records is the old
// cluster's; in the new one the snapshot is at index 1, which it records
// instead (an older backup, without the index, is copied as it is). The
// commands staged in pieces that it holds are left out: their writers,
// of the old cluster, never commit them in the new one, and its terms
// start again at 1, so that no command of a newer term would drop them
// before the old term (see fsm.dropStages). The backup was checked whole
// (checkBackup).
func copyBackup(w io.Writer, r io.Reader) error {
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return err
	}
	if _, err := w.Write(magic); err != nil {
		return err
	}
	var n [8]byte
	if string(magic) == snapMagic || string(magic) == snapMagic3 {
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return err
		}
		binary.BigEndian.PutUint64(n[:], 1)
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
	}
	// copySized copies a size (8 bytes) and that many bytes after skip
	// bytes more of header, or drops them all.
	copySized := func(skip int, keep bool) error {
		hdr := make([]byte, skip+8)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return err
		}
		size := int64(binary.BigEndian.Uint64(hdr[skip:]))
		out := w
		if !keep {
			out = io.Discard
		}
		if _, err := out.Write(hdr); err != nil {
			return err
		}
		if m, err := io.CopyN(out, r, size); err != nil {
			return fmt.Errorf("backup cut short (%d bytes of %d): %w", m, size, err)
		}
		return nil
	}
	// The peers' section, then the bbolt file.
	for range 2 {
		if err := copySized(0, true); err != nil {
			return err
		}
	}
	var tag [1]byte
	for {
		if _, err := io.ReadFull(r, tag[:]); err != nil {
			return err
		}
		var err error
		switch tag[0] {
		case 0:
			_, err = w.Write(tag[:])
			return err
		case 1: // a blob: its hash, then its size and bytes
			if _, err = w.Write(tag[:]); err == nil {
				err = copySized(32, true)
			}
		case 2: // a stage: its ID, then its size and bytes
			err = copySized(8, false)
		default:
			err = fmt.Errorf("an unknown section %d", tag[0])
		}
		if err != nil {
			return err
		}
	}
}

// checkBackup reads the backup at path whole, as a restore would, into a
// directory it then removes, and returns its SHA-256 in hex. A file that
// is not a backup, is cut short or has bytes past its end is an error
// that says so.
func checkBackup(path, tmpParent string) (string, error) {
	fd, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fd.Close()
	tmp, err := os.MkdirTemp(tmpParent, "restore-check-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	h := sha256.New()
	r := bufio.NewReaderSize(io.TeeReader(fd, h), 1<<20)
	if _, err := readSnapshot(r, filepath.Join(tmp, "state")); err != nil {
		return "", fmt.Errorf("not a whole backup of a replicated riotd (GET /api/v1/replicas/backup): %w", err)
	}
	if n, _ := io.Copy(io.Discard, r); n > 0 {
		return "", fmt.Errorf("not a backup of a replicated riotd: %d bytes past its end", n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// backupTimeout bounds the snapshot a backup asks raft for; streaming it
// to the client then takes as long as the client reads.
const backupTimeout = 5 * time.Minute

// serveBackup answers GET /api/v1/replicas/backup on the leader: raft
// takes a snapshot now (or, when nothing was applied since the last one,
// the last one is sent), and the answer's body is its bytes, a file that
// riotd --raft-restore starts a new cluster from. Riot-Snapshot-Index and
// Riot-Snapshot-Term say where in the log it was taken.
func (rp *Replica) serveBackup(w http.ResponseWriter, r *http.Request) {
	meta, rc, err := rp.openBackup()
	if err != nil {
		rp.adminFailed(w, "back up", err)
		return
	}
	defer rc.Close()
	// A large store takes longer to send than the HTTP server's write
	// timeout allows an answer.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(meta.Size, 10))
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="riot-backup-%d.snap"`, meta.Index))
	h.Set("Riot-Snapshot-Index", strconv.FormatUint(meta.Index, 10))
	h.Set("Riot-Snapshot-Term", strconv.FormatUint(meta.Term, 10))
	if _, err := io.Copy(w, rc); err != nil {
		rp.log.Warn("replica: a backup was not sent whole", "index", meta.Index, "err", err)
		return
	}
	rp.log.Info("replica: a backup was sent", "index", meta.Index, "bytes", meta.Size)
}

// openBackup takes a snapshot and opens it, or opens the last one when
// nothing is new since.
func (rp *Replica) openBackup() (*raft.SnapshotMeta, io.ReadCloser, error) {
	if st := rp.node.raft.State(); st != raft.Leader {
		return nil, nil, fmt.Errorf("%w (it is %s)", raft.ErrNotLeader, st)
	}
	f := rp.node.raft.Snapshot()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(backupTimeout):
		return nil, nil, fmt.Errorf("the snapshot took more than %v", backupTimeout)
	}
	if err == nil {
		return f.Open()
	}
	if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	list, err := rp.node.snaps.List()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshots: %w", err)
	}
	if len(list) == 0 {
		return nil, nil, errors.New("nothing to back up yet: the cluster has applied nothing")
	}
	return rp.node.snaps.Open(list[0].ID)
}
