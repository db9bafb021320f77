package master_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
)

// lines is a script's stdout that a test can wait on, line by line.
type lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // a value when buf may have grown
}

func newLines() *lines { return &lines{changed: make(chan struct{}, 1)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.buf.Write(p)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLine blocks until the output has the line s, or the script ended
// (done gives its error), or the test's wait ran out.
func (l *lines) waitLine(t *testing.T, s string, done <-chan error) {
	t.Helper()
	timeout := time.After(trackertest.DefaultWait)
	for {
		if strings.Contains("\n"+l.String(), "\n"+s+"\n") {
			return
		}
		select {
		case <-l.changed:
		case err := <-done:
			t.Fatalf("the script ended before it printed %q: %v\n%s", s, err, l.String())
		case <-timeout:
			t.Fatalf("the script did not print %q within %v:\n%s", s, trackertest.DefaultWait, l.String())
		}
	}
}

// startWorker runs a worker for the tracker at addr in this process until
// the test ends.
func startWorker(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{Tracker: addr, Name: "w", Slots: 2, Grace: -1, Ready: func(string) { close(ready) },
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("worker: %v", err)
	}
}

// freeingScript sends a large array (its encoding over
// master.KeepBlobBytes, dropped once uploaded, encoded again from the
// array when needed) and a smaller one (a blob whose bytes the master
// keeps), captured, in three calls, each after the test let it go on: it
// prints "phase N" and waits for the file go-N in the directory it is
// given.
const freeingScript = `
const dir = riot.args[0];
const big = Array.from({length: 300000}, (_, i) => i);   // about 1.4 MiB encoded
const small = Array.from({length: 30000}, (_, i) => i);  // about 90 KiB
function after(n, then) {
	console.log('phase ' + n);
	const poll = () => {
		try { riot.readFile(dir + '/go-' + n); } catch (e) { setTimeout(poll, 2); return; }
		then();
	};
	poll();
}
console.log(riot.waitUntilDone(riot.doWork((k) => big[k] + small[k], 5)));
after(1, () => {
	console.log(JSON.stringify(riot.forWork([1, 2, 3], (k) => big[k] - small[k] + k)));
	after(2, () => {
		console.log(riot.waitUntilDone(riot.doWork((k) => big[k] * small[k], 6)));
	});
});
`

// TestRun_UnknownBlob_UploadedAgain: a job script against riotd --memory
// sends the same values again after riotd freed their blobs (their
// workunits done and forgotten: --keep-results and --blob-grace tiny),
// and again after riotd restarted (and lost every blob): the tracker
// refuses each submission that names them with unknown-blob, and the
// master uploads them again, the large one encoded again from the array,
// and submits again; the script sees only its results. A regression
// test: riot.forWork threw the tracker's message.
func TestRun_UnknownBlob_UploadedAgain(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = time.Millisecond
		o.KeepResults = time.Millisecond
	}))
	startWorker(t, tr.Addr())
	dir := t.TempDir()
	script := filepath.Join(dir, "freeing.js")
	require.NoError(t, os.WriteFile(script, []byte(freeingScript), 0o644))
	out := newLines()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- job.Run(t.Context(), job.Options{Script: script, Args: []string{dir}, Tracker: tr.Addr(),
			Progress: job.ProgressOff, Stdout: out, Stderr: &stderr})
	}()

	out.waitLine(t, "phase 1", done)
	// The first call's workunit is done and forgotten, its blobs freed.
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Blobs == 0 })
	assert.GreaterOrEqual(t, st.FreedBlobs, uint64(2))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-1"), nil, 0o644))

	out.waitLine(t, "phase 2", done)
	tr.Restart(t) // in memory: it comes back without a blob
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go-2"), nil, 0o644))

	select {
	case err := <-done:
		require.NoError(t, err, "stderr:\n%s", stderr.String())
	case <-time.After(trackertest.DefaultWait):
		t.Fatalf("the script did not end:\n%s", out.String())
	}
	assert.Equal(t, "10\nphase 1\n[1,2,3]\nphase 2\n36\n", out.String())
}

// TestRun_UnknownBlob_LostInARestart: riotd --memory restarts while a job
// script's workunits wait (no worker yet), and comes back without them and
// without their blobs; the Go client submits them again as it reconnects,
// riotd refuses them with unknown-blob, and the client asks the master to
// upload their blobs again, which the script's goroutine does (the large
// array encoded again from the script's value) while it waits for those
// very workunits (riot.waitUntilDone, riot.forWork) or in its event loop
// (a promise): the script gets its results. A regression test: the wait
// threw the tracker's message.
func TestRun_UnknownBlob_LostInARestart(t *testing.T) {
	t.Parallel()
	const values = `
const big = Array.from({length: 300000}, (_, i) => i);   // about 1.4 MiB encoded
const small = Array.from({length: 30000}, (_, i) => i);  // about 90 KiB
`
	for _, tc := range []struct {
		name, script, want string
		waiting            int
		// wantErr, when set, is in the script's error instead.
		wantErr string
	}{
		{name: "waitUntilDone", script: `console.log(riot.waitUntilDone(riot.doWork((k) => big[k] + small[k], 5)));`, want: "10\n", waiting: 1},
		{name: "forWork", script: `console.log(JSON.stringify(riot.forWork([1, 2, 3], (k) => big[k] - small[k] + k)));`, want: "[1,2,3]\n", waiting: 3},
		{name: "promise", script: `riot.run((k) => big[k] * small[k], 6).then((v) => console.log(v));`, want: "36\n", waiting: 1},
		// Changed in place once sent, the array no longer encodes to its
		// blob: the upload fails as for another tracker, and so does the
		// workunit, rather than run on other bytes than its hash names.
		{name: "changed", script: `riot.run((k) => big[k] + small[k], 6).then((v) => console.log(v)); big[6] = 60;`, waiting: 1,
			wantErr: "changed since it was first sent"},
		{name: "changed, waited", script: `const key = riot.doWork((k) => big[k] + small[k], 6); big[6] = 60; riot.waitUntilDone(key);`, waiting: 1,
			wantErr: "changed since it was first sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := trackertest.Start(t)
			dir := t.TempDir()
			script := filepath.Join(dir, "lost.js")
			require.NoError(t, os.WriteFile(script, []byte(values+tc.script), 0o644))
			out := newLines()
			var stderr bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- job.Run(t.Context(), job.Options{Script: script, Tracker: tr.Addr(), Progress: job.ProgressOff, Stdout: out, Stderr: &stderr})
			}()
			tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == tc.waiting && s.Blobs == 2 })
			tr.Restart(t) // in memory: no workunits, no blobs
			startWorker(t, tr.Addr())
			var err error
			select {
			case err = <-done:
			case <-time.After(trackertest.DefaultWait):
				t.Fatalf("the script did not end:\n%s", out.String())
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err, "stderr:\n%s", stderr.String())
			assert.Equal(t, tc.want, out.String())
		})
	}
}
