package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/browsertest"
	"github.com/riot-go/riot/tracker/dashboard"
)

// evil is a string that would run script if the page parsed the API's
// text as HTML.
const evil = `<img src=x onerror="window.pwned=1">`

// fakeAPI answers the dashboard's API from fixed documents shaped as
// docs/http.md says, with evil in every string a user controls, and pushes
// overview events when the test asks.
type fakeAPI struct {
	mu            sync.Mutex
	overview      map[string]any
	canceled      []string
	events        chan struct{}
	queries       []string
	workersServed int    // GET /api/v1/workers so far: the worker's "done", to tell a reload
	leader        string // the replica that leads, in GET /api/v1/replicas
}

func now(d time.Duration) string {
	return time.Now().Add(d).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

const key1 = "5f2c0a1b9e3d00112233445566778899aabbccddeeff00112233445566778899"

func newFakeAPI() *fakeAPI {
	f := &fakeAPI{events: make(chan struct{}, 16), leader: "a"}
	f.overview = f.overviewDoc(120, 9000)
	return f
}

func (f *fakeAPI) job() map[string]any {
	return map[string]any{"id": "j3f9a0c2b7d1e", "name": "words.js" + evil, "master": "laptop" + evil,
		"state": "running", "started": now(-time.Minute), "submitted": 1000, "from_memory": 12,
		"waiting": 400, "running": 4, "done": 578, "failed": 6, "canceled": 0,
		"finished_per_second": 80.1, "eta_seconds": 5.0}
}

func (f *fakeAPI) overviewDoc(waiting, done int) map[string]any {
	var tp []map[string]any
	for i := 120; i > 0; i-- {
		tp = append(tp, map[string]any{"t": now(-time.Duration(i) * 5 * time.Second), "done": 4000 + 10*i%300, "failed": i % 7})
	}
	return map[string]any{
		"tracker": "riot-1:2355", "protocol_version": 4, "started": now(-time.Hour), "uptime_seconds": 3600.5,
		"durable": true, "workunits": map[string]int{"waiting": waiting, "running": 4, "done": done, "error": 3},
		"finished_per_second": 812.5, "throughput": tp,
		"workers": map[string]int{"count": 2, "slots": 4, "running": 4, "prefetched": 2},
		"jobs":    []any{f.job()},
	}
}

func (f *fakeAPI) setOverview(waiting, done int) {
	f.mu.Lock()
	f.overview = f.overviewDoc(waiting, done)
	f.mu.Unlock()
	f.events <- struct{}{}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) routes(d *dashboard.Dashboard) http.Handler {
	m := mux(d)
	m.HandleFunc("GET /api/v1/overview", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, f.overview)
	})
	m.HandleFunc("GET /api/v1/workers", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.workersServed++
		served := f.workersServed
		f.mu.Unlock()
		writeJSON(w, map[string]any{"workers": []any{map[string]any{
			"name": "gpu-box" + evil, "remote": "10.0.0.7:51234", "agent": "riot-worker/0.1.0 go1.26",
			"since": now(-10 * time.Minute), "slots": 2, "prefetch": 1, "running": 2, "prefetched": 1, "credit": 0,
			"gpus": 1, "memory_limit": 4294967296, "memory_in_use": 812345344, "done": served, "failed": 1,
		}}})
	})
	m.HandleFunc("GET /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"jobs": []any{f.job()}})
	})
	failures := []any{map[string]any{"name": "TypeError", "message": "x is not a function" + evil,
		"count": 6, "latest": now(-time.Second), "keys": []string{key1}, "job": "j3f9a0c2b7d1e"}}
	m.HandleFunc("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		j := f.job()
		j["failures"] = failures
		writeJSON(w, j)
	})
	m.HandleFunc("POST /api/v1/jobs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.canceled = append(f.canceled, r.PathValue("id")+" origin="+r.Header.Get("Origin"))
		f.mu.Unlock()
		writeJSON(w, map[string]int{"canceled": 404})
	})
	m.HandleFunc("GET /api/v1/workunits", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.RawQuery)
		f.mu.Unlock()
		next := "812"
		if r.URL.Query().Get("cursor") == "812" {
			next = ""
		}
		writeJSON(w, map[string]any{"workunits": []any{map[string]any{
			"key": key1, "short": key1[:12], "status": "error", "job": "j3f9a0c2b7d1e", "worker": "gpu-box" + evil,
			"changed": now(-time.Second), "attempts": 1, "error": map[string]string{"name": "TypeError", "message": "x is not a function" + evil},
		}}, "next": next, "partial": false})
	})
	m.HandleFunc("GET /api/v1/workunits/{key}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"key": key1, "status": "error", "job": "j3f9a0c2b7d1e", "worker": "gpu-box" + evil,
			"kind": "fn", "name": "job.js", "source": "(x) => {\n  // " + evil + "\n  return x.y();\n}",
			"args":      []any{map[string]any{"preview": "{ y: '" + evil + "' }"}},
			"error":     map[string]any{"kind": "thrown", "name": "TypeError", "message": "x.y is not a function" + evil, "stack": "TypeError: x.y is not a function\n    at job.js:3:12", "worker": "gpu-box" + evil},
			"console":   []any{map[string]string{"level": "log", "text": "hello " + evil}},
			"submitted": now(-3 * time.Second), "assigned": now(-2 * time.Second), "started": now(-2 * time.Second), "finished": now(-time.Second),
			"queue_seconds": 0.012, "run_seconds": 0.3, "attempts": 1, "lost_from": []string{},
			"options": map[string]any{"no_cache": false, "gpus": 0, "timeout_seconds": 0},
		})
	})
	m.HandleFunc("GET /api/v1/failures", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"failures": failures})
	})
	m.HandleFunc("GET /api/v1/stream", func(w http.ResponseWriter, r *http.Request) {
		var tasks []any
		for i := range 40 {
			st := "done"
			if i%9 == 0 {
				st = "error"
			}
			task := map[string]any{"key": fmt.Sprintf("%064x", i), "worker": fmt.Sprintf("w%d", i%2), "status": st,
				"start": now(-time.Duration(50-i) * time.Second), "end": now(-time.Duration(48-i) * time.Second)}
			tasks = append(tasks, task)
		}
		tasks = append(tasks, map[string]any{"key": key1, "worker": "w0", "status": "running", "start": now(-3 * time.Second)},
			map[string]any{"key": fmt.Sprintf("%064x", 99), "worker": "w1", "status": "done", "start": now(-30 * time.Second), "end": now(-25 * time.Second)})
		writeJSON(w, map[string]any{"now": now(0), "tasks": tasks})
	})
	m.HandleFunc("GET /api/v1/replicas", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		leader := f.leader
		f.mu.Unlock()
		var rs []any
		for i, id := range []string{"a", "b"} {
			st := "Follower"
			if id == leader {
				st = "Leader"
			}
			rs = append(rs, map[string]any{"id": id, "client": fmt.Sprintf("10.0.0.%d:2355", i+1), "raft": fmt.Sprintf("10.0.0.%d:2356", i+1),
				"state": st, "voter": true, "term": 7, "applied_index": 81234 + i})
		}
		rs = append(rs, map[string]any{"id": "c" + evil, "client": "10.0.0.3:2355", "raft": "10.0.0.3:2356",
			"state": "unreachable", "voter": true, "error": "dial tcp 10.0.0.3:2355: connection refused" + evil})
		writeJSON(w, map[string]any{"replicas": rs})
	})
	m.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		fl := w.(http.Flusher)
		fmt.Fprint(w, ": hello\n\n")
		fl.Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-f.events:
				f.mu.Lock()
				b, _ := json.Marshal(f.overview)
				f.mu.Unlock()
				fmt.Fprintf(w, "event: overview\ndata: %s\n\n", b)
				fl.Flush()
			}
		}
	})
	return m
}

// run runs chromedp actions with a deadline, failing the test on error.
func run(t *testing.T, b *browsertest.Browser, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

func text(t *testing.T, b *browsertest.Browser, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return s
}

// waitText waits until the element's text contains want.
func waitText(t *testing.T, b *browsertest.Browser, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	run(t, b, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(20*time.Second)))
}

// route goes to one of the page's hash routes, as a click on a link does
// (Navigate would wait for a load that a hash change never fires).
func route(t *testing.T, b *browsertest.Browser, hash string) {
	t.Helper()
	run(t, b, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash)))
}

// shot saves a screenshot of the page when RIOT_DASHBOARD_SHOTS names a
// directory (to look at the pages while changing them).
func shot(t *testing.T, b *browsertest.Browser, name string) {
	dir := os.Getenv("RIOT_DASHBOARD_SHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.Ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// TestBrowser_Pages drives every page of the dashboard in Chromium against
// a fake API: each shows what the API said, as text (the markup in the
// API's strings never becomes elements, nor runs), live events update the
// overview without a reload, paging follows next, Cancel asks first and
// POSTs from the page's origin, and no page throws or logs an error (a
// Content-Security-Policy refusal would be one).
func TestBrowser_Pages(t *testing.T) {
	api := newFakeAPI()
	srv := httptest.NewServer(api.routes(dashboard.New(dashboard.Options{Title: "riot-1:2355", Logout: true})))
	t.Cleanup(srv.Close)
	b := browsertest.New(t) // closed first: its event stream ends before the server's Close
	t.Cleanup(func() { assert.Empty(t, b.Errors(), "the pages threw or logged errors") })

	// Overview, then a live event changes its counts in place.
	run(t, b, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
	waitText(t, b, "#count-waiting", "120")
	waitText(t, b, "#live", "live")
	waitText(t, b, "#jobs-in-progress", "words.js"+evil)
	run(t, b, chromedp.WaitVisible(chromedp.CSS("#throughput canvas")),
		chromedp.Evaluate[chromedp.Void](`window.marker = 1`))
	shot(t, b, "overview")
	api.setOverview(77, 9500)
	waitText(t, b, "#count-waiting", "77")
	waitText(t, b, "#count-done", "9,500")
	marker, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`window.marker`))
	require.NoError(t, err)
	assert.Equal(t, 1, marker, "the page was not reloaded")

	// Workers.
	route(t, b, "#/workers")
	waitText(t, b, "#workers", "gpu-box"+evil)
	assert.Contains(t, text(t, b, "#workers"), "774.7 MiB of 4.0 GiB (19%)")
	done := `document.querySelector('#workers tbody td:nth-child(9)').textContent`
	run(t, b, chromedp.Poll[chromedp.Void](done+` === '1'`))
	api.setOverview(70, 9600) // an event: the page loads its data again
	run(t, b, chromedp.Poll[chromedp.Void](done+` === '2'`, chromedp.WithPollingTimeout(20*time.Second)))
	shot(t, b, "workers")

	// Jobs and a job.
	route(t, b, "#/jobs")
	waitText(t, b, "#jobs", "words.js"+evil)
	run(t, b, chromedp.Click(chromedp.CSS("#jobs a[href^='#/jobs/']")))
	waitText(t, b, "#job-name", "words.js"+evil)
	waitText(t, b, "#job-failures", "x is not a function"+evil)
	waitText(t, b, "#job-workunits", key1[:12])
	title, err := chromedp.Run(b.Ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "Jobs j3f9a0c2b7d1 · riot-1:2355", title)
	shot(t, b, "job")

	// Cancel: the dialog asks; "Keep it" does nothing, "Cancel it" POSTs.
	run(t, b, chromedp.Click(chromedp.CSS("#job-cancel button")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm-no")), chromedp.WaitNotVisible(chromedp.CSS("#confirm")))
	api.mu.Lock()
	assert.Empty(t, api.canceled)
	api.mu.Unlock()
	run(t, b, chromedp.Click(chromedp.CSS("#job-cancel button")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm-yes")))
	waitText(t, b, "#job-cancel", "Canceled 404 workunits.")
	api.mu.Lock()
	assert.Equal(t, []string{"j3f9a0c2b7d1e origin=" + srv.URL}, api.canceled, "the POST carries the page's Origin")
	api.mu.Unlock()

	// Workunits: the filters go to the server; Next follows the cursor.
	route(t, b, "#/workunits?status=error&worker=gpu-box")
	waitText(t, b, "#workunits", "x is not a function"+evil)
	run(t, b, chromedp.Click(chromedp.CSS("#page-next")))
	waitText(t, b, "#page-note", "Page 2")
	api.mu.Lock()
	qs := strings.Join(api.queries, "\n")
	api.mu.Unlock()
	assert.Contains(t, qs, "status=error&worker=gpu-box&cursor=812&limit=50")
	run(t, b, chromedp.Poll[chromedp.Void](`document.querySelector('#choices-job option[value="j3f9a0c2b7d1e"]') !== null &&
		document.querySelectorAll('#choices-worker option').length === 1`))
	shot(t, b, "workunits")

	// A workunit.
	run(t, b, chromedp.Click(chromedp.CSS("#workunits a.key")))
	waitText(t, b, "#wu-stack", "at job.js:3:12")
	assert.Equal(t, "gpu-box"+evil, text(t, b, "#wu-error-worker"))
	assert.Contains(t, text(t, b, "#wu-source"), evil)
	assert.Contains(t, text(t, b, "#wu-console"), "hello "+evil)
	assert.Contains(t, text(t, b, "#wu-arg-0"), evil)
	run(t, b, chromedp.WaitNotVisible(chromedp.CSS("#wu-cancel")))
	shot(t, b, "workunit")

	// Failures and the task stream.
	route(t, b, "#/failures")
	waitText(t, b, "#failures", "x is not a function"+evil)
	route(t, b, "#/stream")
	// Each worker's tasks follow one another (the running one too), but
	// one of w1's overlaps them: a lane for w0, two for w1.
	waitText(t, b, "#stream-note", "42 workunits on 2 workers, in 3 lanes.")
	shot(t, b, "stream")

	pwned, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`window.pwned === 1 || document.querySelector('img[src=x]') !== null`))
	require.NoError(t, err)
	assert.False(t, pwned, "markup from the API became an element")
}

// TestBrowser_Replicas: a replicated riotd's dashboard has a Replicas page
// (its link in the navigation) that shows each replica, the leader, and
// what did not answer, as text; it loads them again by itself, without an
// overview event, so a new leader shows up.
func TestBrowser_Replicas(t *testing.T) {
	api := newFakeAPI()
	srv := httptest.NewServer(api.routes(dashboard.New(dashboard.Options{Title: "riot-1:2355", Replicas: true})))
	t.Cleanup(srv.Close)
	b := browsertest.New(t)
	t.Cleanup(func() { assert.Empty(t, b.Errors(), "the pages threw or logged errors") })

	run(t, b, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
	run(t, b, chromedp.Click(chromedp.CSS(`#nav a[data-route="replicas"]`)))
	waitText(t, b, "#replicas-summary", "Leader: a (10.0.0.1:2355) · 3 replicas, 3 voting · 1 unreachable")
	waitText(t, b, "#replicas", "c"+evil)
	list := text(t, b, "#replicas")
	assert.Contains(t, list, "connection refused"+evil)
	assert.Contains(t, list, "81,235")
	state := func(row int) string {
		return fmt.Sprintf(`document.querySelector('#replicas tbody tr:nth-child(%d) td:nth-child(2)').textContent`, row)
	}
	run(t, b, chromedp.Poll[chromedp.Void](state(1)+` === 'Leader' && `+state(2)+` === 'Follower' && `+state(3)+` === 'unreachable'`))
	title, err := chromedp.Run(b.Ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "Replicas · riot-1:2355", title)
	shot(t, b, "replicas")

	// Another leads: no event says so, the page finds out.
	api.mu.Lock()
	api.leader = "b"
	api.mu.Unlock()
	waitText(t, b, "#replicas-summary", "Leader: b (10.0.0.2:2355)")
	run(t, b, chromedp.Poll[chromedp.Void](state(1)+` === 'Follower' && `+state(2)+` === 'Leader'`))

	pwned, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`window.pwned === 1 || document.querySelector('img[src=x]') !== null`))
	require.NoError(t, err)
	assert.False(t, pwned, "markup from the API became an element")
}
