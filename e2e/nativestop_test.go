package e2e_test

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// stuckSource does not return for hours: a regular expression with a
// back-reference (regexp2) that backtracks, which no interrupt reaches.
const stuckSource = `/^(a+)+\1b$/.test('a'.repeat(40))`

// stuckCall is a workunit's function that runs stuckSource.
const stuckCall = `() => ` + stuckSource

// stuckScript submits a stuck workunit with a time limit of 1s and 20
// short ones, and prints what became of each.
const stuckScript = `
const stuck = riot.with({timeout: '1s'}).doWork(` + stuckCall + `);
const ids = [];
for (let i = 0; i < 20; i++) ids.push(riot.doWork((i) => i * 2, i));
let sum = 0;
for (const id of ids) sum += riot.waitUntilDone(id);
console.log('sum', sum);
try {
	riot.waitUntilDone(stuck);
	console.log('stuck: returned');
} catch (e) {
	console.log('stuck:', String(e));
}
`

// exitBound is how long a worker may take to exit after SIGTERM in these
// tests: its grace (2s) and far more, for a loaded machine.
const exitBound = 30 * time.Second

// TestE2E_StuckNativeCall: a workunit stuck in a built-in call past its
// time limit fails with the time limit, once (the tracker does not hand
// it out again), while the worker's other slot runs the other work; and a
// worker whose slot is stuck in such a call when it gets SIGTERM exits
// within its grace, with status 0. A regression test: the stuck call kept
// its slot for good, and the worker ignored SIGTERM.
func TestE2E_StuckNativeCall(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 2, Args: []string{"--grace", "2s", "--log-level", "debug"}})
	tr.WaitFor(t, workers(1))

	res := bins.RunEval(t, "--quiet", "--tracker", tr.Addr(), jobScript(t, "stuck.js", stuckScript))
	require.Equal(t, 0, res.Code, res)
	assert.Contains(t, res.Stdout, "sum 380\n", res)
	assert.Contains(t, res.Stdout, "stuck: ", res)
	assert.Contains(t, res.Stdout, "workunit ran past its time limit of 1s", res)
	assert.Contains(t, res.Stdout, "its runtime was abandoned", res)
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Error == 1 && s.Workunits.Done == 20 })
	assert.Equal(t, 0, st.Workunits.Running)
	assert.NotContains(t, tr.Log(), "workunit reassigned", "the stuck workunit was handed out once")
	_, err := w.WaitLog(e2eCtx(t), workerMsg("engine: a stopped workunit did not return; its runtime is abandoned"))
	require.NoError(t, err)

	// Another stuck call, with no time limit, runs as the worker gets
	// SIGTERM.
	mark := w.Mark()
	bg, cancelBG := context.WithCancel(t.Context())
	defer cancelBG()
	go func() {
		_, _ = bins.Eval(bg, nil, "--tracker", tr.Addr(), "-e", stuckSource)
	}()
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 1 })
	_, err = w.WaitLogAfter(e2eCtx(t), mark, workerMsg("worker: workunit started"))
	require.NoError(t, err, "the worker runs the stuck workunit")
	start := time.Now()
	require.NoError(t, w.Signal(syscall.SIGTERM))
	ctx, cancel := context.WithTimeout(t.Context(), exitBound)
	defer cancel()
	code, err := w.Wait(ctx)
	require.NoError(t, err, "riot-worker did not exit within %s of SIGTERM", exitBound)
	assert.Equal(t, 0, code, w.Log())
	t.Logf("riot-worker exited %s after SIGTERM (grace 2s)", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 1, w.CountLogAfter(mark, workerMsg("engine: a stopped workunit did not return; its runtime is abandoned")), w.Log())
	assert.Equal(t, 1, w.CountLogAfter(mark, workerMsg("worker: returning unfinished workunits")), w.Log())
}

// TestE2E_StuckWorkerExits: a worker with --max-stuck 1 reports the
// stuck workunit's failure, then stops and exits with status 1, for its
// supervisor to start it again without the stuck goroutine.
func TestE2E_StuckWorkerExits(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 2, Args: []string{"--grace", "2s", "--max-stuck", "1"}})
	tr.WaitFor(t, workers(1))
	res := bins.RunEval(t, "--tracker", tr.Addr(), "--timeout", "1s", "-e", stuckSource)
	require.Equal(t, 1, res.Code, res)
	assert.Contains(t, res.Stderr, "TimeoutError: workunit ran past its time limit of 1s", res)
	ctx, cancel := context.WithTimeout(t.Context(), exitBound)
	defer cancel()
	code, err := w.Wait(ctx)
	require.NoError(t, err, "riot-worker did not exit")
	assert.Equal(t, 1, code, w.Log())
	assert.Regexp(t, `too many stuck workunits`, w.Log())
}

// workerMsg matches a log line of riot-worker (log/slog's text format)
// whose message is msg.
func workerMsg(msg string) *regexp.Regexp {
	return regexp.MustCompile(`msg=` + regexp.QuoteMeta(strconv.Quote(msg)))
}

// e2eCtx is a context for a wait of the test, bounded by e2e.DefaultWait.
func e2eCtx(t *testing.T) context.Context {
	return e2e.Context(t, e2e.DefaultWait)
}
