package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// backupOf writes a backup of the cluster c, taken on its leader l, to a
// file and returns its path.
func backupOf(t *testing.T, c *inmemCluster, l int) string {
	t.Helper()
	rp := &Replica{node: c.nodes[l]}
	meta, rc, err := rp.openBackup()
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	defer rc.Close()
	path := filepath.Join(t.TempDir(), "backup.snap")
	fd, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(fd, rc)
	if err != nil || n != meta.Size {
		t.Fatalf("backup: %d bytes of %d: %v", n, meta.Size, err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func servers(c *inmemCluster) []raft.Server {
	var s []raft.Server
	for i, a := range c.addrs {
		s = append(s, raft.Server{ID: raft.ServerID(fmt.Sprintf("r%d", i)), Address: a, Suffrage: raft.Voter})
	}
	return s
}

// TestBackup_RestoreStartsANewCluster: a backup taken on the leader
// starts a new cluster of three with the old one's store; the restored
// cluster serves (applies more), and its replicas restarted with the same
// --raft-restore go on from their own state rather than the backup's.
func TestBackup_RestoreStartsANewCluster(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	old := newInmemCluster(t, 3, fastTiming)
	l := old.leader(ctx)
	if err := old.store(l).Apply(ctx, batchOf(1, 20, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	if err := old.store(l).Apply(ctx, batchOf(1, 8, workunit.StatusDone)); err != nil {
		t.Fatal(err)
	}
	want := append(batchOf(1, 8, workunit.StatusDone), batchOf(9, 20, workunit.StatusWaiting)...)
	path := backupOf(t, old, l)
	// Nothing new since: the same snapshot again.
	if again := backupOf(t, old, l); again == "" {
		t.Fatal("no second backup")
	}
	for i := range old.nodes {
		old.stop(i)
	}

	c := newRestoredCluster(t, 3, fastTiming, path)
	l = c.leader(ctx)
	c.wantEverywhere(t, ctx, l, "restored", want)
	if err := c.store(l).Apply(ctx, batchOf(9, 12, workunit.StatusDone)); err != nil {
		t.Fatal(err)
	}
	want = append(batchOf(1, 12, workunit.StatusDone), batchOf(13, 20, workunit.StatusWaiting)...)
	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i, servers(c))
	}
	c.wantEverywhere(t, ctx, c.leader(ctx), "restarted with the same backup", want)
}

// TestBackup_RestoreRefuses: a file that is not a whole backup, and a
// data directory that holds another replica's state, are refused with
// errors that say so, and leave the directory as it was.
func TestBackup_RestoreRefuses(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	if err := c.store(l).Apply(ctx, batchOf(1, 5, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	path := backupOf(t, c, l)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"not a backup", []byte("hello, riot\n"), "not a whole backup"},
		{"cut short", whole[:len(whole)-10], "cut short"},
		{"bytes past its end", append(append([]byte{}, whole...), "more"...), "4 bytes past its end"},
	} {
		bad := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(bad, tc.bytes, 0o600); err != nil {
			t.Fatal(err)
		}
		c.stop(0)
		c.restore = bad
		_, tr := raft.NewInmemTransport(c.addrs[0])
		n, err := c.open(0, tr, servers(c))
		if err == nil {
			n.close()
			t.Fatalf("%s: restored", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: error %q; want it to name the file and say %q", tc.name, err, tc.want)
		}
		// A whole backup over the node's own state is refused too.
		c.restore = path
		if n, err := c.open(0, tr, servers(c)); err == nil {
			n.close()
			t.Fatal("a backup replaced a replica's state")
		} else if !strings.Contains(err.Error(), "already holds a replica's raft state") {
			t.Errorf("over existing state: %v", err)
		}
		c.restore = ""
		c.start(0, nil)
	}
	// The node kept its own state through the refusals.
	c.waitApplied(ctx, 0, c.barrier(c.leader(ctx)))
	wantSame(t, "node 0 after the refusals", c.localLoad(0), batchOf(1, 5, workunit.StatusWaiting))
}

// TestBackup_CopyDropsStages: a backup taken while a command was staged
// in pieces starts the new cluster without that stage: its writer, of the
// old cluster, never commits it, and the new cluster's terms start again
// at 1, so that it would outlive every term below the old one's (held in
// memory and in every snapshot), and a stage ID of the new cluster in
// that term would add its pieces to it.
func TestBackup_CopyDropsStages(t *testing.T) {
	t.Parallel()
	f := testFSM(t)
	if r := f.Apply(&raft.Log{Index: 9, Term: 7, Type: raft.LogCommand, Data: append([]byte{cmdRecords}, store.EncodeBatch(batchOf(1, 3, workunit.StatusWaiting))...)}); r != nil {
		t.Fatal(r)
	}
	if r := f.Apply(stageEntry(10, 7, 7<<32|1, cmdStage, []byte("the first piece of a command"))); r != nil {
		t.Fatal(r)
	}
	path := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(path, snapshotOf(t, f), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	_, backup, err := extractBackup(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(backup.stages) != 1 {
		t.Fatalf("the backup has %d stages, want the one staged", len(backup.stages))
	}
	var restored bytes.Buffer
	if err := writeRestored(&restored, dir, backup.peers, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	got, err := readSnapshot(bufio.NewReader(&restored), filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.stages) != 0 {
		t.Errorf("the new cluster's first snapshot has %d stages of the old one", len(got.stages))
	}
	if got.applied != 1 {
		t.Errorf("applied index %d, want 1", got.applied)
	}
	if restored.Len() != 0 {
		t.Errorf("%d bytes past the snapshot's end", restored.Len())
	}
}

// failingTerm is a stable store whose SetUint64 fails while fail is set:
// a restore that stops after its snapshot (a full disk, or a crash there).
type failingTerm struct {
	raft.StableStore
	fail bool
}

func (s *failingTerm) SetUint64(key []byte, v uint64) error {
	if s.fail {
		return errors.New("the disk is full")
	}
	return s.StableStore.SetUint64(key, v)
}

// TestBackup_RestoreStoppedAfterItsSnapshot_RunsAgain: a restore that
// stopped after it wrote the new cluster's first snapshot, before it
// recorded the backup it started from, goes on when the replica starts
// again with the same --raft-restore, rather than refuse that replica's
// data directory for good as another replica's state.
func TestBackup_RestoreStoppedAfterItsSnapshot_RunsAgain(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	old := newInmemCluster(t, 1, fastTiming)
	l := old.leader(ctx)
	if err := old.store(l).Apply(ctx, batchOf(1, 3, workunit.StatusWaiting)); err != nil {
		t.Fatal(err)
	}
	path := backupOf(t, old, l)

	raftDir := t.TempDir()
	snaps, err := raft.NewFileSnapshotStore(raftDir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	logs := raft.NewInmemStore()
	stable := &failingTerm{StableStore: logs, fail: true}
	addr, tr := raft.NewInmemTransport("")
	servers := []raft.Server{{ID: "r0", Address: addr, Suffrage: raft.Voter}}
	if err := restoreBackup(path, raftDir, stable, logs, snaps, tr, servers, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("the restore did not fail")
	}
	stable.fail = false
	if err := restoreBackup(path, raftDir, stable, logs, snaps, tr, servers, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("the same restore again: %v", err)
	}
	if term, err := logs.GetUint64([]byte("CurrentTerm")); err != nil || term != 1 {
		t.Errorf("current term %d (%v), want 1", term, err)
	}
	list, err := snaps.List()
	if err != nil || len(list) != 1 || list[0].Index != 1 {
		t.Errorf("snapshots %+v (%v), want the backup's at index 1", list, err)
	}
}
