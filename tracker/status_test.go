package tracker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, url string) (string, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body), resp.Header.Get("Content-Type")
}

func TestServer_StatusPage(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) {
		o.KeepResults = 30 * 24 * time.Hour
	}))
	m := master(t, tr, "boss")
	m.submit("a")
	m.submit("b")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "alfred", Slots: 2, Prefetch: 1, Agent: "test/1"})
	w.send(&wire.Credit{N: 1})
	recv[*wire.Assign](w)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Running == 1 })

	body, ct := get(t, "http://"+tr.Addr()+"/status")
	assert.Equal(t, "application/json", ct)
	var st tracker.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, tr.Server().Name(), st.Tracker)
	assert.True(t, st.Durable)
	assert.Equal(t, tr.DataDir(), st.Data)
	assert.Equal(t, 1, st.Workunits.Waiting)
	assert.Equal(t, 1, st.Workunits.Running)
	assert.Equal(t, uint64(2), st.Submitted)
	assert.Equal(t, float64(30*24*3600), st.KeepResultsSeconds)
	assert.Zero(t, st.Forgotten)
	require.Len(t, st.Workers, 1)
	assert.Equal(t, "alfred", st.Workers[0].Name)
	assert.Equal(t, "test/1", st.Workers[0].Agent)
	assert.Equal(t, 2, st.Workers[0].Slots)
	assert.Equal(t, 1, st.Workers[0].Prefetch)
	assert.Equal(t, 1, st.Workers[0].Busy)
	require.Len(t, st.Masters, 1)
	assert.Equal(t, "boss", st.Masters[0].Name)

	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, "1 waiting, 1 running")
	assert.Contains(t, text, "alfred")
	assert.Contains(t, text, "results kept for 30d after they finish; 0 forgotten")

	metrics, _ := get(t, "http://"+tr.Addr()+"/metrics")
	for _, want := range []string{
		`riot_workunits{status="waiting"} 1`,
		`riot_workunits{status="running"} 1`,
		"riot_workers 1",
		"riot_masters 1",
		`riot_jobs{state="running"} 1`,
		`riot_job_workunits{job_id="`,
		"riot_submitted_total 2",
		"riot_forgotten_total 0",
		`riot_frames_total{direction="in"}`,
		"riot_store_commits_total",
		"go_goroutines",
	} {
		assert.Contains(t, metrics, want)
	}
	// Both submissions were written (durable) before they were accepted.
	assert.Regexp(t, `(?m)^riot_store_commits_total [1-9]`, metrics)
	assert.Regexp(t, `(?m)^riot_store_records_total ([2-9]|\d\d)`, metrics)
}

func TestServer_StatusPage_Replicas(t *testing.T) {
	t.Parallel()
	replicas := []tracker.ReplicaStatus{
		{ID: "a", Client: "10.0.0.1:2355", Raft: "10.0.0.1:2356", State: "Leader", Voter: true, Term: 3, AppliedIndex: 42},
		{ID: "b", Client: "10.0.0.2:2355", Raft: "10.0.0.2:2356", State: "unreachable", Voter: true, Error: "connection refused"},
	}
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Replicas = func(context.Context) []tracker.ReplicaStatus { return replicas }
	}))
	body, _ := get(t, "http://"+tr.Addr()+"/status")
	var st tracker.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	assert.Equal(t, replicas, st.Replicas)
	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, "replicas: 2\n")
	assert.Contains(t, text, "unreachable (connection refused)")

	// A single riotd shows none.
	single := trackertest.Start(t)
	body, _ = get(t, "http://"+single.Addr()+"/status")
	assert.NotContains(t, body, `"replicas"`)
}
