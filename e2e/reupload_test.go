package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// reuploadScript sends the same array of about 2.5 MiB encoded (over the
// master's KeepBlobBytes: its encoding is dropped once uploaded) in three
// workunits, one after the other, each after the test let it go on: it
// waits for the file go-N, N = 1, 2, in the directory it is given.
const reuploadScript = `
const dir = riot.args[0];
const big = Array.from({length: 1 << 19}, (_, i) => i);
function after(n, then) {
	const poll = () => {
		try { riot.readFile(dir + '/go-' + n); } catch (e) { setTimeout(poll, 5); return; }
		then();
	};
	poll();
}
console.log(riot.waitUntilDone(riot.doWork((k) => big[k] + big.length, 1)));
after(1, () => {
	console.log(riot.waitUntilDone(riot.doWork((k) => big[k] * 2, 2)));
	after(2, () => console.log(riot.waitUntilDone(riot.doWork((k) => big[k] * 3, 3))));
});
`

// TestE2E_UnknownBlob_JobScriptUploadsAgain: a job script (riot-worker
// eval) sends the same large array again after riotd --memory freed its
// blob (the first workunit done and forgotten: --keep-results 1ms,
// --blob-grace 1ms), and again after riotd restarted and lost every blob:
// riotd refuses each of those submissions with unknown-blob, the master
// uploads the array again (encoded again from the script's array) and
// submits again, and the script ends well with every result. A
// regression test: the second riot.doWork threw the tracker's message.
func TestE2E_UnknownBlob_JobScriptUploadsAgain(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--keep-results", "1ms", "--blob-grace", "1ms"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	dir := t.TempDir()
	script := writeScript(t, "reupload.js", reuploadScript)
	ctx, cancel := context.WithTimeout(t.Context(), e2e.DefaultWait)
	defer cancel()
	// The script's end stops the waits below: one that ends early fails
	// the test with what it printed.
	wctx, stop := context.WithCancel(ctx)
	var res e2e.EvalResult
	var evalErr error
	ended := make(chan struct{})
	go func() {
		defer stop()
		defer close(ended)
		res, evalErr = bins.Eval(ctx, nil, "--tracker", tr.Addr(), script, dir)
	}()
	waitFor := func(cond func(tracker.Status) bool) tracker.Status {
		t.Helper()
		st, err := tr.WaitStatus(wctx, cond)
		if err != nil {
			select {
			case <-ended:
				t.Fatalf("the script ended early (%v): %v", evalErr, res)
			default:
			}
			t.Fatalf("%v", err)
		}
		return st
	}

	// The array's blob is freed once the first workunit is done and
	// forgotten (nothing before frees a blob); then again after the
	// second, uploaded again for it.
	st := waitFor(func(s tracker.Status) bool { return s.FreedBlobs >= 1 })
	assert.Zero(t, st.Blobs)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-1"), nil, 0o644))
	st = waitFor(func(s tracker.Status) bool { return s.FreedBlobs >= 2 })
	assert.Zero(t, st.Blobs)
	require.NoError(t, tr.Restart(ctx)) // in memory: it comes back without a blob
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-2"), nil, 0o644))

	<-ended
	require.NoError(t, evalErr)
	require.Equal(t, 0, res.Code, "%v", res)
	assert.Equal(t, []string{"524289", "4", "9"}, strings.Fields(res.Stdout), "%v", res)
}
