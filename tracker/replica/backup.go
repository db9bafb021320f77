package replica

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
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
func restoreBackup(path, raftDir string, stable raft.StableStore, logs raft.LogStore, snaps raft.SnapshotStore,
	trans raft.Transport, servers []raft.Server, log *slog.Logger) error {
	tmp, err := os.MkdirTemp(raftDir, "restore-")
	if err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, stateDirName)
	sum, got, err := extractBackup(path, dir)
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
	conf := raft.Configuration{Servers: servers}
	sink, err := snaps.Create(raft.SnapshotVersionMax, 1, 1, conf, 1, trans)
	if err != nil {
		return fmt.Errorf("replica: --raft-restore %s: %w", path, err)
	}
	if err := writeRestored(sink, dir, got.peers, log); err != nil {
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

// extractBackup reads the backup at path whole, as a restore does, into
// the local store's directory dir, and returns its SHA-256 in hex and the
// rest of it. A file that is not a backup, is cut short or has bytes past
// its end is an error that says so.
func extractBackup(path, dir string) (string, snapContents, error) {
	fd, err := os.Open(path)
	if err != nil {
		return "", snapContents{}, err
	}
	defer fd.Close()
	h := sha256.New()
	r := bufio.NewReaderSize(io.TeeReader(fd, h), 1<<20)
	got, err := readSnapshot(r, dir)
	if err != nil {
		return "", snapContents{}, fmt.Errorf("not a whole backup of a replicated riotd (GET /api/v1/replicas/backup): %w", err)
	}
	if n, _ := io.Copy(io.Discard, r); n > 0 {
		return "", snapContents{}, fmt.Errorf("not a backup of a replicated riotd: %d bytes past its end", n)
	}
	return hex.EncodeToString(h.Sum(nil)), got, nil
}

// writeRestored writes the new cluster's first snapshot, as the FSM
// writes one, of the backup extracted into dir, with its replicas' client
// addresses peers. The snapshot is at index 1, which it records as its
// last command applied (the backup's index is the old cluster's). The
// backup's commands staged in pieces are left out: their writers, of the
// old cluster, never commit them in the new one, and its terms start
// again at 1, so that no command of a newer term would drop them before
// the old term (see fsm.dropStages).
func writeRestored(w io.Writer, dir string, peers []peerCmd, log *slog.Logger) error {
	local, err := openLocal(context.Background(), dir, log)
	if err != nil {
		return err
	}
	defer local.Close()
	c, err := local.BeginCopy()
	if err != nil {
		return err
	}
	defer c.Close()
	pj, err := json.Marshal(peers)
	if err != nil {
		return err
	}
	s := &snapshot{copy: c, blobDir: filepath.Join(dir, store.BlobDir), peers: pj, applied: 1}
	return s.write(w)
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
