package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker/trackertest"
)

// adminDo sends a membership change to the leader's HTTP API and returns
// the status and the replicas of its answer.
func adminDo(t *testing.T, method, url string, body any) (int, []map[string]any, string) {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		b, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(b))
	require.NoError(t, err)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Replicas []map[string]any `json:"replicas"`
		Error    string           `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out.Replicas, out.Error
}

// TestReplicas_AddAndRemove_WhileServing: three riotd replicas serve; a
// fourth, started with --join, is added through the leader's API and
// catches up; a follower is removed; then the leader is killed, and the
// three left (the added one among them) elect a leader that runs a job
// with every result of before.
func TestReplicas_AddAndRemove_WhileServing(t *testing.T) {
	ctx := e2e.Context(t, 2*e2e.DefaultWait)
	rs := bins.StartReplicas(t, 3)
	t.Cleanup(rs.Close)
	leader, err := rs.WaitLeader(ctx, -1)
	require.NoError(t, err)
	w1 := bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: "w1", Slots: 2})
	first := bins.RunEval(t, "--tracker", rs.Addrs(), "-e", "riot.forWork([1, 2, 3], (x) => x * 10)")
	require.Equal(t, 0, first.Code, first.String())

	d, err := rs.Join(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", rs.Proc(d).Label, rs.Proc(d).Log())
		}
	})
	api := "http://" + rs.Client(leader) + "/api/v1/replicas"
	code, _, msg := adminDo(t, http.MethodPost, api, map[string]string{"id": rs.ID(d), "raft": "nonsense", "client": rs.Client(d)})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, msg, `address "nonsense"`)
	code, replicas, msg := adminDo(t, http.MethodPost, api, map[string]string{"id": rs.ID(d), "raft": rs.Raft(d), "client": rs.Client(d)})
	require.Equal(t, http.StatusOK, code, msg)
	assert.Len(t, replicas, 4)

	// The new replica follows the leader and has applied its log.
	err = e2e.CheckFor(ctx, 10*time.Millisecond, func() error {
		st, err := rs.Status(ctx, d)
		if err != nil {
			return err
		}
		if st.State != "Follower" || st.LeaderClient != rs.Client(leader) || st.Applied == 0 {
			return fmt.Errorf("replica %s: %+v", rs.ID(d), st)
		}
		return nil
	})
	require.NoError(t, err)

	// The operator gives the workers the new replica's address too (a
	// client follows a redirect only to an address it was given, and the
	// new one may lead after the kill below).
	w1.Close()
	bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: "w2", Slots: 2})

	// Remove a follower (not the new one).
	gone := (leader + 1) % 3
	code, replicas, msg = adminDo(t, http.MethodDelete, api+"/"+rs.ID(gone), nil)
	require.Equal(t, http.StatusOK, code, msg)
	assert.Len(t, replicas, 3)
	for _, r := range replicas {
		assert.NotEqual(t, rs.ID(gone), r["id"])
	}
	code, _, msg = adminDo(t, http.MethodDelete, api+"/nobody", nil)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, msg, `no replica "nobody"`)
	rs.Proc(gone).Close()

	// Kill the leader: of the three voters, two are left, a majority.
	require.NoError(t, rs.Proc(leader).Kill())
	next, err := rs.WaitLeader(ctx, leader)
	require.NoError(t, err)
	require.NotEqual(t, gone, next)
	again := bins.RunEval(t, "--tracker", rs.Addrs(), "-e", "riot.forWork([1, 2, 3, 4], (x) => x * 10)")
	require.Equal(t, 0, again.Code, again.String())
	assert.Equal(t, "[10,20,30,40]", strings.Join(strings.Fields(again.Stdout), ""))
	// The new leader kept the work of before the changes, and the jobs'.
	st, err := rs.Tracker(next).Status(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.Workunits.Done, 4, "workunits done")
	assert.Zero(t, st.Workunits.Error)
	assert.Len(t, st.Replicas, 3)
}

// TestReplicas_RaftTLS: replicas that speak TLS and the shared secret
// to each other elect a leader, serve a job, and fail over.
func TestReplicas_RaftTLS(t *testing.T) {
	ctx := e2e.Context(t, 2*e2e.DefaultWait)
	cert := trackertest.NewCert(t, "127.0.0.1")
	secret := filepath.Join(t.TempDir(), "raft-secret")
	require.NoError(t, os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	rs := bins.StartReplicas(t, 3, "--raft-secret-file", secret,
		"--raft-tls-cert", cert.CertFile, "--raft-tls-key", cert.KeyFile, "--raft-tls-ca", cert.CAFile)
	bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: "w1", Slots: 2})
	res := bins.RunEval(t, "--tracker", rs.Addrs(), "-e", "riot.forWork([1, 2, 3], (x) => x + 1)")
	require.Equal(t, 0, res.Code, res.String())
	leader, err := rs.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, rs.Proc(leader).Kill())
	_, err = rs.WaitLeader(ctx, leader)
	require.NoError(t, err)
	res = bins.RunEval(t, "--tracker", rs.Addrs(), "-e", "riot.forWork([1, 2, 3, 4], (x) => x + 1)")
	require.Equal(t, 0, res.Code, res.String())
	assert.Equal(t, "[2,3,4,5]", strings.Join(strings.Fields(res.Stdout), ""))
}

// TestReplicas_Membership_NeedsAnAdminToken: replicas with --token-file
// take membership changes with an admin's token only (docs/replicas.md):
// a master's is refused before the change is looked at, an admin's gets
// as far as the change itself (here a bad one, so nothing changes).
func TestReplicas_Membership_NeedsAnAdminToken(t *testing.T) {
	const (
		masterTok = "master-0123456789abcdef0123456789"
		adminTok  = "admin-0123456789abcdef0123456789ab"
	)
	ctx := e2e.Context(t, e2e.DefaultWait)
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("master "+masterTok+"\nadmin "+adminTok+" ops\n"), 0o600))
	rs := bins.StartReplicas(t, 3, "--token-file", file)
	t.Cleanup(rs.Close)
	leader, err := rs.WaitLeader(ctx, -1)
	require.NoError(t, err)
	api := "http://" + rs.Client(leader) + "/api/v1/replicas"
	change := func(method, url, tok string, body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error
	}
	bad := `{"id": "d", "raft": "nonsense", "client": "127.0.0.1:1"}`
	code, msg := change(http.MethodPost, api, "", bad)
	assert.Equal(t, http.StatusUnauthorized, code, msg)
	code, msg = change(http.MethodPost, api, masterTok, bad)
	assert.Equal(t, http.StatusForbidden, code, msg)
	assert.Contains(t, msg, "admin's token")
	code, msg = change(http.MethodDelete, api+"/"+rs.ID((leader+1)%3), masterTok, "")
	assert.Equal(t, http.StatusForbidden, code, msg)
	code, msg = change(http.MethodPost, api, adminTok, bad)
	assert.Equal(t, http.StatusBadRequest, code, msg)
	assert.Contains(t, msg, `address "nonsense"`)
	code, msg = change(http.MethodDelete, api+"/nobody", adminTok, "")
	assert.Equal(t, http.StatusBadRequest, code, msg)
	assert.Contains(t, msg, `no replica "nobody"`)
	st, err := rs.Status(ctx, (leader+1)%3)
	require.NoError(t, err)
	assert.Equal(t, "Follower", st.State, "the follower a master asked to remove")
}
