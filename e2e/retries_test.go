package e2e_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/workunit"
)

// retriesScript runs, with await, a workunit that fails its first two
// attempts (a counter in the job's realm, which the worker's one slot
// keeps between workunits of the job) and succeeds on the third; one that
// fails every attempt; and one whose error retryOn does not list.
const retriesScript = `
async function main() {
	const flaky = () => {
		globalThis.tries = (globalThis.tries || 0) + 1;
		if (globalThis.tries < 3) throw new TypeError('try ' + globalThis.tries + ' on ' + riot.worker.name);
		return 'ok on try ' + globalThis.tries;
	};
	console.log(await riot.with({retries: 2}).run(flaky));
	try {
		await riot.with({retries: 2}).run(() => { throw new RangeError('always') });
	} catch (e) {
		console.log(e.name, e.message.replace(/[0-9a-f]{12}/, 'KEY'));
		console.log(JSON.stringify(e.attempts));
	}
	const [a, b] = await Promise.allSettled([
		riot.with({retries: 5, retryOn: ['TypeError']}).run(() => { throw new RangeError('not listed') }),
		riot.run(() => 'plain'),
	]);
	console.log(a.reason.attempts.length, b.value);
}
main();
`

// TestE2E_Retries: riotd and a riot-worker run a job script's retries:
// the flaky workunit succeeds on its third attempt, the failing one shows
// its three attempts and their worker, and a Go client's submission with
// retries gets the attempts in its workunit.Error.
func TestE2E_Retries(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "retrier", Slots: 1})
	tr.WaitFor(t, workers(1))

	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "retries.js", retriesScript))
	require.Equal(t, 0, res.Code, res)
	attempt := `{"worker":"` + w.Name() + `","name":"RangeError","message":"always"}`
	assert.Equal(t, "ok on try 3\n"+
		"WorkunitError workunit KEY failed 3 attempts, the last on worker "+w.Name()+": RangeError: always\n"+
		"["+strings.Join([]string{attempt, attempt, attempt}, ",")+"]\n"+
		"1 plain\n", res.Stdout, res)

	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	_, err := m.Submit(fnSpec(t, "() => { throw new Error('go ' + riot.worker.name) }"), workunit.Options{Retries: 1}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	want := workunit.Attempt{Worker: w.Name(), Name: "Error", Message: "go " + w.Name()}
	assert.Equal(t, []workunit.Attempt{want, want}, werr.Attempts)
	assert.Contains(t, err.Error(), "(after 2 attempts)")
}

// TestE2E_RetriesSurviveRestart: an attempt spent before riotd is killed
// stays spent after it restarts. A Go client takes the workunit as a
// worker and fails it; the retry's assignment, which riotd sends only once
// the attempt is on disk, comes; riotd is killed and restarted; the
// attempt after the restart is the last one (retries: 1), and the error
// the master gets has both.
func TestE2E_RetriesSurviveRestart(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	ctx := e2e.Context(t, 2*e2e.DefaultWait)
	w, err := client.Dial(ctx, tr.Addr(), client.Options{
		Name: "gw", Slots: 1,
		Logger:     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	m := dial(t, tr.Addr(), "master")

	call := m.Submit(fnSpec(t, "() => 1"), workunit.Options{Retries: 1})
	_, err = call.Accepted(ctx)
	require.NoError(t, err)
	a, err := w.WaitForWork(ctx)
	require.NoError(t, err)
	require.NoError(t, w.CompleteWorkunit(a, nil, errors.New("before the restart")))
	a, err = w.WaitForWork(ctx)
	require.NoError(t, err)

	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Restart(ctx))
	a, err = w.WaitForWork(ctx)
	require.NoError(t, err)
	require.NoError(t, w.CompleteWorkunit(a, nil, errors.New("after the restart")))

	_, err = call.Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	require.Len(t, werr.Attempts, 2, "%+v", werr.Attempts)
	assert.Equal(t, "before the restart", werr.Attempts[0].Message)
	assert.Equal(t, "after the restart", werr.Attempts[1].Message)
	assert.Equal(t, "after the restart", werr.Message)
}
