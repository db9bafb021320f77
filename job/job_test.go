package job

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// runJob runs a script from ../scripts on the embedded default.
func runJob(t *testing.T, opts Options) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &errb
	if opts.Progress == ProgressAuto {
		opts.Progress = ProgressOff
	}
	err = Run(context.Background(), opts)
	return out.String(), errb.String(), err
}

func TestRun_SeedScripts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		script  string
		args    []string
		workers int
		stdout  string // a regexp that must match the whole output
	}{
		{"do-work-call.js", nil, 2, `^\[\n   0,  2,  4,  6,  8,\n  10, 12, 14, 16, 18\n\]\n$`},
		{"do-work-eval.js", nil, 1, `^8\n$`},
		{"free-variables.js", nil, 2, `^(Workunit #\d: Master chose (\d+), but we choose \d+\.\n){10}$`},
		{"dict.js", []string{"--words", "../scripts/testdata/words.txt"}, 2, `^real time: \d+ ms\nThere are 4 words\.\n\[(\["(abc|def)","(abc|def|ghi)"\],?){4}\]\n$`},
		{"low-level.js", nil, 0, `^who am I: string\ninfo: waiting\ntook my own workunit: true fn\nfinished: done 42\ninfo: done 42 true\n$`},
	} {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, err := runJob(t, Options{Script: "../scripts/" + tt.script, Args: tt.args, Workers: tt.workers})
			require.NoError(t, err, stderr)
			assert.Regexp(t, regexp.MustCompile(tt.stdout), stdout)
		})
	}
}

func TestRun_FreeVariables_MasterChoosesOnce(t *testing.T) {
	t.Parallel()
	stdout, _, err := runJob(t, Options{Script: "../scripts/free-variables.js", Workers: 2})
	require.NoError(t, err)
	chosen := regexp.MustCompile(`Master chose (\d+)`).FindAllStringSubmatch(stdout, -1)
	require.Len(t, chosen, 10)
	for _, c := range chosen {
		assert.Equal(t, chosen[0][1], c[1], "every workunit sees the master's number")
	}
}

func TestRun_Failing(t *testing.T) {
	t.Parallel()
	stdout, _, err := runJob(t, Options{Script: "../scripts/failing.js", Workers: 2})
	assert.Contains(t, stdout, `caught WorkunitError: workunit `)
	assert.Contains(t, stdout, ` failed on worker local: TypeError: row "three" is not a number`)
	assert.Contains(t, stdout, "callWhenDone: error? true, from a worker: true, message: row \"four\" is not a number\n")
	var se *master.ScriptError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Regexp(t, `^WorkunitError: workunit [0-9a-f]{12} failed on worker local: TypeError: row "six" is not a number\n`, se.Stack)
	assert.Contains(t, se.Stack, "Caused by: TypeError: row \"six\" is not a number\n    at parse (failing.js:15:11)")
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, "local", werr.Worker)
}

func TestRun_ConsoleAndProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := dir + "/job.js"
	writeFile(t, script, `
		const out = riot.forWork([1, 2, 3], (n) => { console.log('working on', n); return n * 2; });
		console.log(out.join(','));
	`)
	stdout, stderr, err := runJob(t, Options{Script: script, Workers: 1, Progress: ProgressOn})
	require.NoError(t, err)
	// The workunits' console.log goes to stdout, as Node's would, each
	// line with its worker and short key; the script's own after them.
	assert.Regexp(t, `^(\[local [0-9a-f]{12}\] working on [123]\n){3}2,4,6\n$`, stdout)
	for _, n := range []string{"1", "2", "3"} {
		assert.Contains(t, stdout, "] working on "+n+"\n")
	}
	plain := regexp.MustCompile("\r\x1b\\[2K").ReplaceAllString(stderr, "\n")
	assert.NotContains(t, plain, "working on")
	assert.Contains(t, plain, "] 0/3")
	last := stderr[strings.LastIndex(stderr, "\n")+1:]
	assert.NotContains(t, last, "/3", "the bar is gone when the work is done: %q", stderr)
	assert.Regexp(t, `\nriot: 3 workunits finished in [0-9.]+m?s\n$`, plain, "a summary ends the bar")
}

// A rerun on the same tracker is answered from memory, and the bar's
// summary says so (nothing else would show it).
func TestRun_SummarySaysFromMemory(t *testing.T) {
	t.Parallel()
	emb, err := StartEmbedded(context.Background(), EmbeddedOptions{Workers: 1, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(emb.Stop)
	script := t.TempDir() + "/job.js"
	writeFile(t, script, `console.log(riot.forWork([1, 2, 3], (n) => n * 2).join(','));`)
	for i, want := range []string{"riot: 3 workunits finished in", "riot: 3 workunits finished in"} {
		stdout, stderr, err := runJob(t, Options{Script: script, Tracker: emb.Addr(), Progress: ProgressOn})
		require.NoError(t, err, stderr)
		assert.Equal(t, "2,4,6\n", stdout)
		assert.Contains(t, stderr, want)
		if i == 0 {
			assert.NotContains(t, stderr, "from memory", "the first run ran them")
		} else {
			assert.Contains(t, stderr, ", all from memory (the tracker had their results; nothing ran)\n")
		}
	}
}

func TestRun_SyntaxError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/bad.js", "riot.doWork(() => {\n  return (;\n})")
	_, _, err := runJob(t, Options{Script: dir + "/bad.js", Workers: 1})
	var se *master.ScriptError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "SyntaxError", se.Name)
	assert.True(t, strings.HasPrefix(se.Message, "bad.js:2:"), "no internal prefix: %q", se.Message)
	assert.True(t, strings.HasPrefix(se.Stack, "SyntaxError: bad.js:2:"), "no internal prefix: %q", se.Stack)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// cancelOnLine is a writer that cancels a context when a line it is given
// contains mark.
type cancelOnLine struct {
	mark   string
	cancel context.CancelFunc
	mu     sync.Mutex
	buf    bytes.Buffer
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.cancel()
	}
	return len(p), nil
}

// String returns what was written.
func (w *cancelOnLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRun_Interrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := dir + "/job.js"
	// No workers: nothing finishes but what the script itself completes.
	writeFile(t, script, `
		const ids = [1, 2, 3].map((n) => riot.doWork((x) => x, n));
		const c = riot.currentClient();
		const [key, work] = c.waitForWork();
		c.completeWorkunit(key, false, work.fn(...work.args));
		riot.waitUntilDone(key);
		console.log('submitted');
		ids.forEach((id) => riot.waitUntilDone(id));
	`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnLine{mark: "submitted\n", cancel: cancel}
	err := Run(ctx, Options{Script: script, Workers: 0, Progress: ProgressOff, Stdout: out, Stderr: &bytes.Buffer{}})
	var ie *InterruptedError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, 3, ie.Submitted)
	assert.Equal(t, 2, ie.Unfinished)
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, "job: interrupted with 2 of 3 workunits unfinished")
	// (A cancel while the script's last statement runs may or may not
	// interrupt it, as a Ctrl-C then may: the context interrupts the
	// runtime wherever it is, from another goroutine. So no case here
	// cancels during a script that is about to end.)
}

// TestRun_FirstWins: scripts/first-wins.js cancels the losers of a race.
func TestRun_FirstWins(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := runJob(t, Options{Script: "../scripts/first-wins.js", Workers: 3})
	require.NoError(t, err, stderr)
	assert.Equal(t, "quick guess won; canceled 2 others\n", stdout)
}

// Options.Timeout is the time limit of every workunit that sets none, on
// the embedded default and through a tracker alike; riot.with({timeout})
// sets a workunit's own.
func TestRun_Timeout(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	startWorker(t, tr.Addr())
	dir := t.TempDir()
	spin := dir + "/spin.js"
	writeFile(t, spin, `riot.waitUntilDone(riot.doWork(() => { for (;;) {} }));`)
	own := dir + "/own.js"
	writeFile(t, own, `riot.waitUntilDone(riot.with({timeout: '80ms'}).doWork(() => { for (;;) {} }));`)
	for _, tt := range []struct {
		name, tracker, script, limit string
	}{
		{"embedded", "", spin, "50ms"},
		{"tracker", tr.Addr(), spin, "50ms"},
		{"embedded, the script's own", "", own, "80ms"},
		{"tracker, the script's own", tr.Addr(), own, "80ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, err := runJob(t, Options{Script: tt.script, Tracker: tt.tracker, Workers: 1, Timeout: 50 * time.Millisecond})
			var werr *workunit.Error
			require.True(t, errors.As(err, &werr), "%v\n%s", err, stderr)
			assert.Equal(t, workunit.TimeLimit, werr.Kind)
			assert.Contains(t, werr.Error(), "time limit of "+tt.limit)
		})
	}
}

// startWorker runs a worker with one slot and no time limit of its own for
// the tracker at addr, until the test ends.
func startWorker(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{Tracker: addr, Name: "w", Slots: 1,
			Logger: slog.New(slog.DiscardHandler), Ready: func(string) { close(ready) }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("worker: %v", err)
	}
}

// A run interrupted with CancelOnInterrupt cancels its own workunits, and
// those it joined (left by an earlier run) that no other master waits
// for; those another master still waits for run on, and it says so.
func TestRun_CancelOnInterrupt_JoinedWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet()) // no workers: all waits
	// The same script each time: a run with 3 submits the two workunits of
	// a run with 2 again (the same keys) and one more.
	script := t.TempDir() + "/job.js"
	writeFile(t, script, `
		const ids = Array.from({length: Number(riot.args[0])}, (_, i) => riot.doWork((x) => x, i));
		console.log('submitted');
		ids.forEach((id) => riot.waitUntilDone(id));
	`)
	run := func(ctx context.Context, n string, cancelInt bool, submitted func()) error {
		out := &cancelOnLine{mark: "submitted\n", cancel: submitted}
		return Run(ctx, Options{Script: script, Args: []string{n}, Tracker: tr.Addr(), CancelOnInterrupt: cancelInt, Progress: ProgressOff,
			Stdout: out, Stderr: &bytes.Buffer{}})
	}
	interrupted := func(n string, cancelInt bool) *InterruptedError {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		err := run(ctx, n, cancelInt, cancel)
		var ie *InterruptedError
		require.True(t, errors.As(err, &ie), "%v", err)
		return ie
	}

	// The first run waits on while the second is interrupted.
	first, stopFirst := context.WithCancel(context.Background())
	defer stopFirst()
	submitted := make(chan struct{})
	firstDone := make(chan error, 1)
	go func() { firstDone <- run(first, "2", false, func() { close(submitted) }) }()
	<-submitted
	ie := interrupted("3", true)
	require.NoError(t, ie.CancelErr)
	assert.Equal(t, 3, ie.Unfinished)
	assert.Equal(t, 1, ie.Canceled, "its own")
	assert.Equal(t, 2, ie.OtherRuns, "the first run waits for them")
	assert.Zero(t, ie.Unchecked)
	stopFirst()
	var fie *InterruptedError
	require.ErrorAs(t, <-firstDone, &fie)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 2 && s.Canceled == 1 && s.Watches == 0 })

	// Nobody waits for the first run's any more: a rerun cancels them all.
	ie = interrupted("3", true)
	require.NoError(t, ie.CancelErr)
	assert.Equal(t, 3, ie.Canceled)
	assert.Zero(t, ie.OtherRuns)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 0 && s.Canceled == 4 })
}

// Ctrl-C on the embedded default ends the job while its worker runs
// workunits: the worker hands them back to a tracker that is still there.
func TestRun_InterruptedEmbeddedWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := dir + "/job.js"
	writeFile(t, script, `
		const ids = [1, 2].map((n) => riot.doWork((x) => { console.log('started'); for (;;) {} }, n));
		console.log('submitted');
		ids.forEach((id) => riot.waitUntilDone(id));
	`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnLine{mark: "submitted\n", cancel: cancel}
	err := Run(ctx, Options{Script: script, Workers: 2, Progress: ProgressOff, Stdout: out, Stderr: &bytes.Buffer{}})
	var ie *InterruptedError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Equal(t, 2, ie.Unfinished)
}

func TestRun_ConnectError(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: one a listener had, closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	dir := t.TempDir()
	writeFile(t, dir+"/job.js", `console.log(1)`)
	_, _, err = runJob(t, Options{Script: dir + "/job.js", Tracker: addr})
	var ce *ConnectError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, addr, ce.Tracker)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.True(t, strings.HasPrefix(err.Error(), "job: connecting to the tracker at "+addr+": "), err.Error())
}

// scripts/low-level.js takes its own workunit: where a worker takes it
// first, the script says so rather than wait for ever (or, when the worker
// took it after the script looked, the job's hint says so). Which comes
// first is a race: when the script wins, it runs as with --workers 0.
func TestRun_LowLevelWithAWorker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnLine{mark: "--workers 0", cancel: cancel}
	var stdout bytes.Buffer
	err := Run(ctx, Options{Script: "../scripts/low-level.js", Workers: 1, Progress: ProgressAuto, Stdout: &stdout, Stderr: stderr})
	if err == nil {
		// The script looked, and took its own workunit, before the worker
		// took it: it ran as with --workers 0.
		assert.Contains(t, stdout.String(), "took my own workunit: true")
		return
	}
	assert.Contains(t, err.Error()+stderr.String(), "--workers 0")
}

// TestRun_NoScript: Run without a script says so instead of running
// nothing.
func TestRun_NoScript(t *testing.T) {
	t.Parallel()
	err := Run(t.Context(), Options{})
	assert.ErrorContains(t, err, "job: no script")
}

// TestEmbedded_StopTwice: a second Stop returns at once (a deferred Stop
// beside an explicit one must not hang).
func TestEmbedded_StopTwice(t *testing.T) {
	t.Parallel()
	emb, err := StartEmbedded(t.Context(), EmbeddedOptions{Workers: 1})
	require.NoError(t, err)
	emb.Stop()
	emb.Stop()
}
