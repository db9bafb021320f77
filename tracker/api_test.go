package tracker_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// apiDo makes a request of the HTTP API and decodes its JSON answer into
// out (when not nil); it returns the status.
func apiDo(t *testing.T, c *http.Client, method, u string, hdr map[string]string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, out), "%s %s: %s", method, u, body)
	}
	if out != nil && resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			t.Logf("%s %s: %d %s", method, u, resp.StatusCode, e.Error)
		}
	}
	return resp.StatusCode
}

// The API shows a job's work as it happens: the overview's counts, the
// workers with their stats, the job with its counts, the workunits with
// filters, a failed one's error, stack, worker and console, the failures
// grouped, the task stream; and cancels a job's waiting work from the
// dashboard's own origin only.
func TestAPI_JobsWorkunitsAndCancel(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	base := "http://" + tr.Addr()
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop", Job: "words.js"})
	kOK, _ := m.submit("1 + 1")
	kBad, _ := m.submit("null.x")
	kWait, _ := m.submit("'waits'")

	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "alfred", Slots: 2, MemoryLimit: 1 << 30, Agent: "test/1"})
	w.send(&wire.Credit{N: 2})
	a1, a2 := recv[*wire.Assign](w), recv[*wire.Assign](w)
	byKey := map[workunit.Key]*wire.Assign{a1.Key: a1, a2.Key: a2}
	require.Contains(t, byKey, kOK)
	require.Contains(t, byKey, kBad)
	console := workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "about to fail"}})
	w.send(&wire.Stats{Heap: 300 << 20, Running: 1},
		&wire.Done{Key: kOK, Token: byKey[kOK].Token, Result: result(2), Elapsed: time.Millisecond},
		&wire.Failed{Key: kBad, Token: byKey[kBad].Token, Console: console, Elapsed: 2 * time.Millisecond,
			Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "Cannot read property 'x' of null",
				Stack: "TypeError: Cannot read property 'x' of null\n    at test.js:1:5"}})
	recv[*wire.Finished](m)
	recv[*wire.Finished](m)

	metrics, _ := get(t, base+"/metrics")
	assert.Contains(t, metrics, `riot_workunit_run_seconds_count{outcome="done"} 1`)
	assert.Contains(t, metrics, `riot_workunit_run_seconds_count{outcome="error"} 1`)
	assert.Contains(t, metrics, `riot_workunit_run_seconds_bucket{outcome="error",le="0.01"} 1`, "a run of 2 ms")
	assert.Contains(t, metrics, "riot_workunit_wait_seconds_count 2")
	assert.Contains(t, metrics, `riot_job_workunits{job_id="`)

	var ov tracker.Overview
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/overview", nil, &ov))
	assert.Equal(t, tracker.StatusCounts{Waiting: 1, Done: 1, Error: 1}, ov.Workunits)
	assert.Equal(t, wire.ProtocolVersion, ov.Protocol)
	assert.Equal(t, 1, ov.Workers.Count)
	assert.Equal(t, 2, ov.Workers.Slots)
	require.Len(t, ov.Jobs, 1)
	job := ov.Jobs[0]
	assert.Equal(t, "words.js", job.Name)
	assert.Equal(t, "laptop", job.Master)
	assert.Equal(t, "running", job.State)
	assert.Equal(t, uint64(3), job.Submitted)
	assert.Equal(t, 1, job.Waiting)
	assert.Equal(t, 1, job.Done)
	assert.Equal(t, 1, job.Failed)

	var workers struct{ Workers []tracker.WorkerInfo }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workers", nil, &workers))
	require.Len(t, workers.Workers, 1)
	wk := workers.Workers[0]
	assert.Equal(t, "alfred", wk.Name)
	assert.Equal(t, "test/1", wk.Agent)
	assert.Equal(t, uint64(1<<30), wk.MemoryLimit)
	assert.Equal(t, uint64(300<<20), wk.MemoryInUse)
	assert.Equal(t, uint64(1), wk.Done)
	assert.Equal(t, uint64(1), wk.Failed)
	assert.Zero(t, wk.Running+wk.Prefetched, "it holds nothing now")

	// The memoized answer counts as from memory.
	m.submit("1 + 1")
	var one tracker.JobInfo
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs/"+job.ID, nil, &one))
	assert.Equal(t, uint64(1), one.FromMemory)
	assert.Equal(t, uint64(4), one.Submitted)
	require.Len(t, one.Failures, 1)
	assert.Equal(t, "TypeError", one.Failures[0].Name)
	assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "GET", base+"/api/v1/jobs/jnothing", nil, &struct{}{}))

	var list struct {
		Workunits []tracker.WorkunitSummary
		Next      string
		Partial   bool
	}
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits?status=error&job="+job.ID, nil, &list))
	require.Len(t, list.Workunits, 1)
	assert.Equal(t, kBad.String(), list.Workunits[0].Key)
	assert.Equal(t, "alfred", list.Workunits[0].Worker)
	require.NotNil(t, list.Workunits[0].Error)
	assert.Equal(t, "TypeError", list.Workunits[0].Error.Name)
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits?limit=2", nil, &list))
	assert.Len(t, list.Workunits, 2)
	assert.NotEmpty(t, list.Next)
	assert.Equal(t, kWait.String(), list.Workunits[0].Key, "newest first")
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits?limit=2&cursor="+list.Next, nil, &list))
	assert.Len(t, list.Workunits, 1)
	assert.Equal(t, http.StatusBadRequest, apiDo(t, nil, "GET", base+"/api/v1/workunits?status=lost", nil, &struct{}{}))

	var det tracker.WorkunitDetail
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+kBad.Short(), nil, &det))
	assert.Equal(t, kBad.String(), det.Key)
	assert.Equal(t, "error", det.Status)
	assert.Equal(t, "eval", det.Kind)
	assert.Equal(t, "null.x", det.Source)
	require.NotNil(t, det.Error)
	assert.Contains(t, det.Error.Stack, "at test.js:1:5")
	assert.Equal(t, "alfred", det.Error.Worker)
	assert.Equal(t, []tracker.ConsoleLine{{Level: "log", Text: "about to fail"}}, det.Console)
	assert.NotEmpty(t, det.Submitted)
	assert.NotEmpty(t, det.Finished)
	require.NotNil(t, det.RunSeconds)
	assert.InDelta(t, 0.002, *det.RunSeconds, 1e-9)
	assert.Equal(t, 1, det.Attempts)

	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+kOK.String(), nil, &det))
	require.NotNil(t, det.Result)
	assert.Equal(t, "2", det.Result.Text)
	assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+strings.Repeat("ab", 32), nil, &struct{}{}))

	var fails struct{ Failures []tracker.FailureGroup }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/failures", nil, &fails))
	require.Len(t, fails.Failures, 1)
	assert.Equal(t, 1, fails.Failures[0].Count)
	assert.Equal(t, []string{kBad.String()}, fails.Failures[0].Keys)
	assert.Equal(t, job.ID, fails.Failures[0].Job)

	var stream struct{ Tasks []tracker.Task }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/stream", nil, &stream))
	require.Len(t, stream.Tasks, 2)
	for _, task := range stream.Tasks {
		assert.Equal(t, "alfred", task.Worker)
		assert.NotEmpty(t, task.End)
	}

	// Without credentials: only requests for a loopback host, and
	// changes only from riotd's own origin.
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "GET", base+"/api/v1/overview", map[string]string{"Host": "riot.evil.example"}, &struct{}{}))
	cancelURL := base + "/api/v1/jobs/" + job.ID + "/cancel"
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", cancelURL, map[string]string{"Sec-Fetch-Site": "cross-site"}, &struct{}{}))
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", cancelURL, map[string]string{"Origin": "http://evil.example"}, &struct{}{}))
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", cancelURL, map[string]string{"Origin": "null"}, &struct{}{}))
	var canceled struct{ Canceled int }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", cancelURL, map[string]string{"Origin": base}, &canceled))
	assert.Equal(t, 1, canceled.Canceled)
	fin := recv[*wire.Finished](m)
	for fin.Key != kWait { // the memoized submission's finished comes first
		fin = recv[*wire.Finished](m)
	}
	require.NotNil(t, fin.Err)
	assert.Equal(t, workunit.Canceled, fin.Err.Kind)
	assert.Contains(t, fin.Err.Message, "the dashboard")
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs/"+job.ID, nil, &one))
	assert.Equal(t, 1, one.Canceled)
	assert.Equal(t, 1, one.Failed, "the canceled one is not counted as failed")
	assert.Zero(t, one.Waiting)
	require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", cancelURL, map[string]string{"Sec-Fetch-Site": "same-origin"}, &canceled))
	assert.Zero(t, canceled.Canceled, "nothing left to cancel")
	require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", cancelURL, nil, &canceled), "a script's request: no browser's headers")
}

// The event stream sends the overview at once, then again when it
// changes.
func TestAPI_Events(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	resp, err := http.Get("http://" + tr.Addr() + "/api/v1/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	next := func() tracker.Overview {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var o tracker.Overview
				require.NoError(t, json.Unmarshal([]byte(data), &o))
				return o
			}
		}
	}
	first := next()
	assert.Zero(t, first.Workunits.Waiting)
	m := master(t, tr, "boss")
	m.submit("'x'")
	for o := next(); o.Workunits.Waiting != 1; o = next() {
	}
}

// With credentials: a viewer's token reads but cannot cancel, a worker's
// reads nothing, a wrong one is refused; a browser logs in with a form and
// gets a session cookie that is not the token, and a cross-site request
// with that cookie cannot cancel.
func TestAPI_Credentials(t *testing.T) {
	t.Parallel()
	const viewerTok = "viewer-0123456789abcdef0123456789"
	tr := trackertest.Start(t, trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: aliceTok, Name: "alice"},
		tracker.Credential{Role: tracker.RoleViewer, Token: viewerTok, Name: "ops"},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok, Name: "workers"},
	))
	base := "http://" + tr.Addr()
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop", Job: "j.js", Token: aliceTok})
	m.submit("'x'")
	var jobs struct{ Jobs []tracker.JobInfo }
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	assert.Equal(t, http.StatusUnauthorized, apiDo(t, nil, "GET", base+"/api/v1/jobs", nil, &jobs))
	assert.Equal(t, http.StatusUnauthorized, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer("wrong-0123456789abcdef0123456789"), &jobs))
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer(workerTok), &jobs))
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer(viewerTok), &jobs))
	require.Len(t, jobs.Jobs, 1)
	cancelURL := base + "/api/v1/jobs/" + jobs.Jobs[0].ID + "/cancel"
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", cancelURL, bearer(viewerTok), &struct{}{}), "a viewer only looks")

	// A viewer's token cannot connect as a master.
	r, _ := refusedHello(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "x", Token: viewerTok})
	assert.Equal(t, wire.CodeAuth, r.Code)
	assert.Contains(t, r.Message, "viewer")

	// A browser: the login form, then the cookie.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	login := func(tok string) *http.Response {
		req, err := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := browser.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, http.StatusUnauthorized, login("wrong-0123456789abcdef0123456789").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, login(workerTok).StatusCode)
	resp := login(aliceTok)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "redirected to the dashboard")
	u, _ := url.Parse(base)
	cookies := jar.Cookies(u)
	require.Len(t, cookies, 1)
	assert.Equal(t, "riot_session", cookies[0].Name)
	assert.NotContains(t, cookies[0].Value, aliceTok)
	require.Equal(t, http.StatusOK, apiDo(t, browser, "GET", base+"/api/v1/jobs", nil, &jobs))
	assert.Equal(t, http.StatusForbidden, apiDo(t, browser, "POST", cancelURL, map[string]string{"Origin": "http://evil.example"}, &struct{}{}))
	var canceled struct{ Canceled int }
	require.Equal(t, http.StatusOK, apiDo(t, browser, "POST", cancelURL, map[string]string{"Origin": base}, &canceled))
	assert.Equal(t, 1, canceled.Canceled)
}

// Jobs survive a restart of a durable tracker: listed as ended, with
// their names and counts, and their workunits still theirs; a master that
// comes back with its session continues its job.
func TestAPI_JobsSurviveRestart(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	const session = "0123456789abcdef0123456789abcdef"
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop", Job: "words.js", Session: session})
	m.submit("'one'")
	m.submit("'two'")
	var jobs struct{ Jobs []tracker.JobInfo }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", "http://"+tr.Addr()+"/api/v1/jobs", nil, &jobs))
	require.Len(t, jobs.Jobs, 1)
	id := jobs.Jobs[0].ID

	tr.Restart(t)
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", "http://"+tr.Addr()+"/api/v1/jobs", nil, &jobs))
	require.Len(t, jobs.Jobs, 1)
	j := jobs.Jobs[0]
	assert.Equal(t, id, j.ID)
	assert.Equal(t, "words.js", j.Name)
	assert.Equal(t, "laptop", j.Master)
	assert.Equal(t, "ended", j.State)
	assert.NotEmpty(t, j.Ended)
	assert.Equal(t, uint64(2), j.Submitted)
	assert.Equal(t, 2, j.Waiting, "its workunits are still its own")

	dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop", Job: "words.js", Session: session})
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", "http://"+tr.Addr()+"/api/v1/jobs/"+id, nil, &j))
	assert.Equal(t, "running", j.State, "the same session: the same job, going on")
}

// TestAPI_CancelOwnCredentialOnly: on the dashboard, a master's token
// cancels its own credential's jobs and workunits, not another's (403),
// as on the websocket; with --shared-cache masters trust each other, and
// may.
func TestAPI_CancelOwnCredentialOnly(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		tr := withTokens(t, trackertest.WithOptions(func(o *tracker.Options) { o.SharedCache = shared }))
		base := "http://" + tr.Addr()
		bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
		m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "alice", Job: "a.js", Token: aliceTok})
		key, _ := m.submit("'x'")
		var jobs struct{ Jobs []tracker.JobInfo }
		require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer(aliceTok), &jobs))
		require.Len(t, jobs.Jobs, 1)
		jobURL := base + "/api/v1/jobs/" + jobs.Jobs[0].ID + "/cancel"
		unitURL := base + "/api/v1/workunits/" + key.String() + "/cancel"
		var canceled struct{ Canceled int }
		if !shared {
			assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "POST", jobURL, bearer(bobTok), &canceled), "bob's token, alice's job: not found, as for reads")
			assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "POST", unitURL, bearer(bobTok), &canceled), "bob's token, alice's workunit")
			rec, ok := tr.LookupIn(t, "alice", key)
			require.True(t, ok)
			assert.Equal(t, workunit.StatusWaiting, rec.Status, "not canceled")
			require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", unitURL, bearer(aliceTok), &canceled))
		} else {
			require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", jobURL, bearer(bobTok), &canceled), "--shared-cache")
		}
		assert.Equal(t, 1, canceled.Canceled)
	}
}

// A master's token reads its own credential's work only, as on the
// websocket: another credential's jobs, workunits and failures are not
// listed, and a workunit of theirs is not found; a viewer's token reads
// everyone's.
func TestAPI_MasterReadsOwnCredentialOnly(t *testing.T) {
	t.Parallel()
	const viewerTok = "viewer-0123456789abcdef0123456789"
	tr := trackertest.Start(t, trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: aliceTok, Name: "alice"},
		tracker.Credential{Role: wire.RoleMaster, Token: bobTok, Name: "bob"},
		tracker.Credential{Role: tracker.RoleViewer, Token: viewerTok, Name: "ops"},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok, Name: "workers"},
	))
	base := "http://" + tr.Addr()
	alice := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "a", Job: "alice.js", Token: aliceTok})
	kA, _ := alice.submit("null.x")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 1, Token: workerTok})
	w.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](w)
	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "secret"}})
	recv[*wire.Finished](alice)
	dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "b", Job: "bob.js", Token: bobTok})
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	names := func(tok string) []string {
		var jobs struct{ Jobs []tracker.JobInfo }
		require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer(tok), &jobs))
		var out []string
		for _, j := range jobs.Jobs {
			out = append(out, j.Name)
		}
		return out
	}
	assert.Equal(t, []string{"alice.js"}, names(aliceTok))
	assert.Equal(t, []string{"bob.js"}, names(bobTok))
	assert.ElementsMatch(t, []string{"alice.js", "bob.js"}, names(viewerTok))

	var list struct{ Workunits []tracker.WorkunitSummary }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits", bearer(bobTok), &list))
	assert.Empty(t, list.Workunits)
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits", bearer(aliceTok), &list))
	assert.Len(t, list.Workunits, 1)
	var det tracker.WorkunitDetail
	assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+kA.String(), bearer(bobTok), &det))
	assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+kA.Short(), bearer(bobTok), &det))
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+kA.Short(), bearer(viewerTok), &det))
	assert.Equal(t, "secret", det.Error.Message)

	var fails struct{ Failures []tracker.FailureGroup }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/failures", bearer(bobTok), &fails))
	assert.Empty(t, fails.Failures)
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/failures", bearer(aliceTok), &fails))
	assert.Len(t, fails.Failures, 1)
	var stream struct{ Tasks []tracker.Task }
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/stream", bearer(bobTok), &stream))
	assert.Empty(t, stream.Tasks)
}

// Without credentials riotd answers requests for a loopback host only:
// the API, the status pages, the metrics and the websocket alike, so that
// a page elsewhere that points its own name at 127.0.0.1 (DNS rebinding)
// reaches none of them. A regression test: only the API checked.
func TestServer_NoAuth_LoopbackHostOnly(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	base := "http://" + tr.Addr()
	evil := map[string]string{"Host": "riot.evil.example:2355"}
	for _, path := range []string{"/api/v1/jobs", "/status", "/metrics", "/"} {
		assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "GET", base+path, evil, nil), path)
		assert.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+path, nil, nil), path)
	}
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}}
	_, resp, err := d.Dial(tr.URL(), http.Header{"Host": {"riot.evil.example:2355"}})
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	ws, resp, err := d.Dial(tr.URL(), nil)
	require.NoError(t, err)
	resp.Body.Close()
	ws.Close()
}
