package e2e_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// TestReplicas_BackupAndRestore: a backup taken from the leader of three
// riotd replicas (GET /api/v1/replicas/backup) starts a new cluster of
// three on empty directories (--raft-restore) that has every result of
// the old one: a job of the same workunits finishes with no worker at
// all, from the restored results, and one with new work runs.
func TestReplicas_BackupAndRestore(t *testing.T) {
	ctx := e2e.Context(t, 2*e2e.DefaultWait)
	rs := bins.StartReplicas(t, 3)
	w := bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: "w1", Slots: 2})
	job := "riot.forWork([1, 2, 3, 4, 5], (x) => x * 7)"
	first := bins.RunEval(t, "--tracker", rs.Addrs(), "-e", job)
	require.Equal(t, 0, first.Code, first.String())
	leader, err := rs.WaitLeader(ctx, -1)
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rs.Client(leader)+"/api/v1/replicas/backup", nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	require.NoError(t, err)
	backup, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(backup))
	assert.NotEmpty(t, resp.Header.Get("Riot-Snapshot-Index"))
	file := filepath.Join(t.TempDir(), "riot.backup")
	require.NoError(t, os.WriteFile(file, backup, 0o600))

	// A follower does not take backups: it names the leader.
	follower := (leader + 1) % rs.Len()
	resp, err = (&http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}).Get("http://" + rs.Client(follower) + "/api/v1/replicas/backup")
	require.NoError(t, err)
	resp.Body.Close()
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "a follower's backup")

	// Every replica and the worker gone, as if their machines were lost.
	w.Close()
	rs.Close()

	restored := bins.StartReplicas(t, 3, "--raft-restore", file)
	again := bins.RunEval(t, "--tracker", restored.Addrs(), "-e", job)
	require.Equal(t, 0, again.Code, again.String())
	assert.Equal(t, "[7,14,21,28,35]", strings.Join(strings.Fields(again.Stdout), ""))

	bins.StartWorker(t, restored.Addrs(), e2e.WorkerOptions{Name: "w2", Slots: 2})
	more := bins.RunEval(t, "--tracker", restored.Addrs(), "-e", "riot.forWork([6, 7], (x) => x * 7)")
	require.Equal(t, 0, more.Code, more.String())
	assert.Equal(t, "[42,49]", strings.Join(strings.Fields(more.Stdout), ""))

	// A replica of the restored cluster restarted with the same flags goes
	// on from its own state.
	l, err := restored.WaitLeader(ctx, -1)
	require.NoError(t, err)
	f := (l + 1) % restored.Len()
	restored.Proc(f).Close()
	require.NoError(t, restored.Proc(f).Start())
	_, err = restored.Proc(f).WaitLog(ctx, e2e.LogMsg("replica: following: clients are sent to the leader"))
	require.NoError(t, err)
}
