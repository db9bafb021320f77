package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/internal/browsertest"
	"github.com/riot-go/riot/tracker"
)

// browserWait bounds each wait on the page: generous, for a loaded 2-core
// machine; the waits end as soon as the page shows what they wait for.
const browserWait = 45 * time.Second

// page drives the browser for a test.
type page struct {
	t *testing.T
	b *browsertest.Browser
}

func (p page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.Ctx, browserWait)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

func (p page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.Ctx, browserWait)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(p.t, err, sel)
	return s
}

// until waits until the JavaScript expression is true on the page.
func (p page) until(expr string) {
	p.t.Helper()
	p.do(chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(browserWait)))
}

// untilText waits until the element's text contains want.
func (p page) untilText(sel, want string) {
	p.t.Helper()
	p.until(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want))
}

// clickLive clicks the first element that matches sel, finding and
// clicking it in one evaluation on the page: the dashboard redraws its
// live lists (jobs, failures) as events come, and a node found by one
// call may be gone by the next ("Could not find node with given id").
func (p page) clickLive(sel string) {
	p.t.Helper()
	p.until(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel))
}

// route follows one of the dashboard's hash routes, as a click on a link
// does.
func (p page) route(hash string) {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", hash)))
}

// logIn types token into the login page and submits it.
func (p page) logIn(token string) {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#login-form")))
}

// apiGet reads one of riotd's API documents with a Bearer token.
func apiGet(t *testing.T, tr *e2e.Tracker, token, path string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tr.Addr()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v), path)
}

// TestE2E_Dashboard opens riotd's dashboard in Chromium, with a real riotd
// (with --token-file), a real riot-worker and a real job script: a wrong
// token is refused and the page never shows it; a viewer's token logs in
// and watches the overview's counts change while the job runs, without a
// reload; a failing workunit's page shows its stack and its worker; the
// viewer may not cancel; a master, logged in after a log out, cancels the
// job from its page, and its waiting workunits are canceled: the job
// script ends, having seen them canceled.
func TestE2E_Dashboard(t *testing.T) {
	t.Parallel()
	b := browsertest.New(t) // skips without Chromium
	p := page{t, b}
	const (
		master = "dash-master-token-0123456789abcdef"
		viewer = "dash-viewer-token-0123456789abcdef"
		worker = "dash-worker-token-0123456789abcdef"
		wrong  = "dash-wrong-token-0123456789abcdef"
	)
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("master "+master+" ann\nviewer "+viewer+" vic\nworker "+worker+"\n"), 0o600))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: bearer{master}}
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--token-file", file}, HTTPClient: hc})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "dash-w", Slots: 2, Env: []string{"RIOT_TOKEN=" + worker}})
	tr.WaitFor(t, workers(1))
	base := "http://" + tr.Addr()
	t.Cleanup(func() {
		// The refusals the test asks for are logged by the browser as
		// failed requests: the wrong token's 401, the viewer's 403.
		assert.Empty(t, b.Errors("401 (Unauthorized) ("+base+"/login)", "403 (Forbidden) ("+base+"/api/v1/jobs/"),
			"the pages threw or logged errors")
	})

	// A browser without a session gets the login page; a wrong token is
	// refused, and the page does not show it.
	p.do(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	p.logIn(wrong)
	p.do(chromedp.WaitVisible(chromedp.CSS("#login-message")))
	assert.Contains(t, p.text("#login-message"), "not accepted")
	html, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	require.NoError(t, err)
	assert.NotContains(t, html, wrong, "the login page shows no token")
	cookies, err := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.cookie`))
	require.NoError(t, err)
	assert.Empty(t, cookies, "no cookie the page's script can read")

	// A viewer logs in, and sees the job run: the overview's counts
	// change in place, pushed by the event stream.
	p.logIn(viewer)
	p.do(chromedp.WaitVisible(chromedp.CSS("#count-done")))
	p.untilText("#live", "live")
	p.do(chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	job := make(chan e2e.EvalResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 4*e2e.DefaultWait)
		defer cancel()
		res, err := bins.Eval(ctx, []string{"RIOT_TOKEN=" + master}, "--tracker", tr.Addr(), "--job", "dash",
			"e2e/testdata/dashboard.js", "2000", "0.05")
		if err != nil {
			res.Stderr += err.Error()
			res.Code = -1
		}
		job <- res
	}()
	p.until(`(() => {
		const n = (id) => Number(document.querySelector(id).textContent.replace(/,/g, ''));
		window.doneSeen = window.doneSeen || new Set();
		window.doneSeen.add(n('#count-done'));
		return window.doneSeen.size >= 3 && n('#count-waiting') > 0;
	})()`)
	p.untilText("#jobs-in-progress", "dash")
	reloaded, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`window.notReloaded !== true`))
	require.NoError(t, err)
	assert.False(t, reloaded, "the overview updated without reloading the page")

	// The failing workunit, from the failures page: its stack, its worker.
	p.route("#/failures")
	p.untilText("#failures", `row "three" is not a number`)
	p.clickLive("#failures a.key")
	p.do(chromedp.WaitVisible(chromedp.CSS("#wu-stack")))
	assert.Contains(t, p.text("#wu-stack"), "at parseRow (dashboard.js:")
	assert.Equal(t, "TypeError", p.text("#wu-error-name"))
	assert.Equal(t, w.Name(), p.text("#wu-error-worker"))
	assert.Equal(t, w.Name(), p.text("#wu-worker"))
	p.do(chromedp.WaitNotVisible(chromedp.CSS("#wu-cancel"))) // it has finished: nothing to cancel

	// The job's page; the viewer's Cancel is refused.
	p.route("#/jobs")
	p.untilText("#jobs", "dash")
	p.clickLive("#jobs a[href^='#/jobs/']")
	p.untilText("#job-name", "dash")
	loc, err := chromedp.Run(b.Ctx, chromedp.Location())
	require.NoError(t, err)
	m := regexp.MustCompile(`#/jobs/([0-9a-z]+)$`).FindStringSubmatch(loc)
	require.NotNil(t, m, "a job's page at %s", loc)
	id := m[1]
	p.until(`!document.querySelector('#job-cancel button').disabled`)
	p.do(chromedp.Click(chromedp.CSS("#job-cancel button")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm-yes")))
	p.untilText("#job-cancel", "Not canceled")
	assert.Contains(t, p.text("#job-cancel"), "master's token")

	// A master, after the viewer logs out, cancels the job.
	p.do(chromedp.Click(chromedp.CSS("form.logout button")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	p.logIn(master)
	p.do(chromedp.WaitVisible(chromedp.CSS("#count-done")))
	p.route("#/jobs/" + id)
	p.untilText("#job-name", "dash")
	p.until(`!document.querySelector('#job-cancel button').disabled`)
	p.do(chromedp.Click(chromedp.CSS("#job-cancel button")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm-yes")))
	p.untilText("#job-cancel", "Canceled ")
	var canceled int
	_, err = fmt.Sscanf(strings.ReplaceAll(p.text("#job-cancel .note"), ",", ""), "Canceled %d", &canceled)
	require.NoError(t, err)
	assert.Positive(t, canceled)
	p.until(`document.querySelector('#job-waiting').textContent === '0'`)

	// Its work stopped: nothing of it waits, the tracker holds nothing
	// waiting, and the script saw its workunits canceled.
	var left struct {
		Workunits []json.RawMessage `json:"workunits"`
	}
	apiGet(t, tr, master, "/api/v1/workunits?status=waiting&job="+id, &left)
	assert.Empty(t, left.Workunits, "the job's waiting workunits")
	var aborted struct {
		Workunits []struct {
			Status string `json:"status"`
			Error  struct{ Name, Message string }
		} `json:"workunits"`
	}
	apiGet(t, tr, master, "/api/v1/workunits?limit=500&error=canceled+by+the+dashboard&job="+id, &aborted)
	require.NotEmpty(t, aborted.Workunits, "the job's canceled workunits")
	for _, wu := range aborted.Workunits {
		assert.Equal(t, "error", wu.Status)
		assert.Equal(t, "AbortError", wu.Error.Name)
	}
	var j struct{ Waiting, Running int }
	apiGet(t, tr, master, "/api/v1/jobs/"+id, &j)
	assert.Zero(t, j.Waiting+j.Running, "the job's waiting and running workunits")
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Waiting == 0 && s.Workunits.Running == 0 })
	select {
	case res := <-job:
		require.Equal(t, 0, res.Code, res)
		assert.Regexp(t, `done \d+, canceled [1-9]\d*`, res.Stdout, res)
	case <-time.After(browserWait):
		t.Fatal("the job script did not end after its job was canceled")
	}
}
