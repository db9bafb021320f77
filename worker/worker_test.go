package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// running is a worker.Run in a goroutine.
type running struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned err
	err    error
}

// stop ends the worker's context and returns what Run returned.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(60 * time.Second):
		t.Fatal("worker.Run did not return")
		return nil
	}
}

// start runs a worker for the tracker at addr and returns once it has
// asked for work.
func start(t *testing.T, addr string, opts worker.Options) *running {
	t.Helper()
	opts.Tracker = addr
	if opts.Logger == nil {
		opts.Logger = logger(t)
	}
	opts.Client.MinBackoff = 5 * time.Millisecond
	opts.Client.MaxBackoff = 100 * time.Millisecond
	if opts.Slots == 0 {
		opts.Slots = 2
	}
	ready := make(chan string, 1)
	opts.Ready = func(name string) { ready <- name }
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = worker.Run(ctx, opts)
		close(r.done)
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	select {
	case r.name = <-ready:
	case <-r.done:
		t.Fatalf("worker.Run: %v", r.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the worker did not start")
	}
	return r
}

func master(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(ctxFor(t), addr, client.Options{Name: "master", Logger: logger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func eval(src string) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval"}
}

func TestWorker_Evaluates(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	w := start(t, tr.Addr(), worker.Options{Name: "alfred"})
	assert.Equal(t, "alfred", w.name)
	m := master(t, tr.Addr())

	k := m.Submit(eval("console.log('hi', riot.worker.name); [1, 2, 3].map(x => x * 2)"), workunit.Options{})
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "alfred", out.Worker)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, []any{2.0, 4.0, 6.0}, v)
	assert.Equal(t, workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "hi alfred"}}), out.Console)
	assert.Positive(t, out.Elapsed)

	// A fn workunit: a function with a captured variable, and arguments.
	fn, err := m.DoWork(&value.Function{Source: "(x) => x * factor", Env: map[string]any{"factor": 10}}, 4.2)
	require.NoError(t, err)
	got, err := m.WaitUntilDone(ctxFor(t), fn.Key)
	require.NoError(t, err)
	assert.Equal(t, 42.0, got)
	require.NoError(t, w.stop(t))
}

func TestWorker_CallModuleBlob(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	start(t, tr.Addr(), worker.Options{})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)

	helper := &workunit.Module{Path: "/job/helper.js", Source: "exports.twice = (x) => 2 * x;"}
	helperData, err := helper.MarshalBinary()
	require.NoError(t, err)
	mod := &workunit.Module{Path: "/job/main.js", Source: "const h = require('./helper'); exports.quad = (x) => h.twice(h.twice(x));",
		Requires: map[string]blob.Hash{"./helper": helper.Hash()}}
	modData, err := mod.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, m.EnsureBlobs(ctx, map[blob.Hash][]byte{helper.Hash(): helperData, mod.Hash(): modData}))

	var calls []*client.Call
	for i := range 20 {
		args, err := value.Marshal([]any{i})
		require.NoError(t, err)
		calls = append(calls, m.Submit(&workunit.Spec{Kind: workunit.Call, Module: mod.Hash(), Export: "quad",
			Payload: args, Blobs: []blob.Hash{mod.Hash(), helper.Hash()}}, workunit.Options{}))
	}
	for i, k := range calls {
		out, err := k.Wait(ctx)
		require.NoError(t, err)
		v, _ := out.Value()
		assert.Equal(t, float64(4*i), v)
	}

	// A tracker in memory refuses a spec that names a blob it does not
	// hold (wire.CodeUnknownBlob): nothing reaches the worker.
	missing := blob.Hash{9}
	bad := m.Submit(&workunit.Spec{Kind: workunit.Call, Module: missing, Export: "f", Blobs: []blob.Hash{missing}},
		workunit.Options{})
	_, err = bad.Wait(ctx)
	require.ErrorIs(t, err, wire.ErrUnknownBlob)
	ok := m.Submit(eval("'still alive'"), workunit.Options{})
	_, err = ok.Wait(ctx)
	require.NoError(t, err)
}

// TestWorker_CallModuleMissing: a tracker with a durable store takes a
// spec whose module it does not hold (it checks no blobs): the workunit
// fails on the worker, which lives on.
func TestWorker_CallModuleMissing(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	start(t, tr.Addr(), worker.Options{})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	missing := blob.Hash{9}
	bad := m.Submit(&workunit.Spec{Kind: workunit.Call, Module: missing, Export: "f", Blobs: []blob.Hash{missing}},
		workunit.Options{})
	_, err := bad.Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	ok := m.Submit(eval("'still alive'"), workunit.Options{})
	_, err = ok.Wait(ctx)
	require.NoError(t, err)
}

func TestWorker_TwoWorkersShare1000(t *testing.T) {
	t.Parallel()
	const n = 1000
	tr := trackertest.Start(t)
	w1 := start(t, tr.Addr(), worker.Options{Name: "twin"})
	w2 := start(t, tr.Addr(), worker.Options{Name: "twin"})
	assert.Equal(t, "twin", w1.name)
	assert.Equal(t, "twin-2", w2.name, "the tracker makes names unique")
	waitCredit(t, tr, 2)

	m := master(t, tr.Addr())
	calls := make([]*client.Call, n)
	for i := range calls {
		calls[i] = m.Submit(eval(fmt.Sprintf("%d * %d", i, i)), workunit.Options{})
	}
	by := map[string]int{}
	for i, k := range calls {
		out, err := k.Wait(ctxFor(t))
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		require.Equal(t, float64(i*i), v, "workunit %d", i)
		by[out.Worker]++
	}
	assert.Len(t, by, 2, "both workers took work: %v", by)
	assert.Equal(t, n, by["twin"]+by["twin-2"])
}

// TestWorker_SlowWork_SharedBySlots: workers that size their prefetch
// take slow workunits (30 ms) in proportion to their slots: the one-slot
// worker holds its slot and 2 queued, not a share of the queue, so the
// three-slot one runs about three quarters (a worker that hoarded, holding
// as many as the other, would run about half).
func TestWorker_SlowWork_SharedBySlots(t *testing.T) {
	t.Parallel()
	const n = 40
	tr := trackertest.Start(t)
	start(t, tr.Addr(), worker.Options{Name: "small", Slots: 1})
	start(t, tr.Addr(), worker.Options{Name: "big", Slots: 3})
	waitCredit(t, tr, 2)

	m := master(t, tr.Addr())
	calls := make([]*client.Call, n)
	for i := range calls {
		calls[i] = m.Submit(eval(fmt.Sprintf("sleep(0.03); %d", i)), workunit.Options{})
	}
	by := map[string]int{}
	for i, k := range calls {
		out, err := k.Wait(ctxFor(t))
		require.NoError(t, err)
		v, err := out.Value()
		require.NoError(t, err)
		require.Equal(t, float64(i), v)
		by[out.Worker]++
	}
	t.Logf("workunits by worker: %v", by)
	assert.Equal(t, n, by["small"]+by["big"])
	assert.GreaterOrEqual(t, by["big"], 24, "the three-slot worker runs most: %v", by)
	assert.Positive(t, by["small"], "both work: %v", by)
}

// waitCredit waits until n workers hold credit.
func waitCredit(t *testing.T, tr *trackertest.Tracker, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := tr.Server().Status(ctxFor(t))
		require.NoError(t, err)
		with := 0
		for _, w := range st.Workers {
			if w.Credit > 0 {
				with++
			}
		}
		if with >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers with credit, want %d", with, n)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline (no event to wait on)
	}
}

func TestWorker_Throws(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	w := start(t, tr.Addr(), worker.Options{Name: "carol", Slots: 1})
	m := master(t, tr.Addr())
	k := m.Submit(eval("console.warn('about to fail');\nfunction f() {\n  throw new TypeError('bad input')\n}\nf()"),
		workunit.Options{})
	out, err := k.Wait(ctxFor(t))
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, w.name, werr.Worker)
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "TypeError", werr.Name)
	assert.Equal(t, "bad input", werr.Message)
	assert.Contains(t, werr.Stack, "at f (eval:3:9)")
	assert.Contains(t, err.Error(), "worker carol: TypeError: bad input")
	assert.Equal(t, workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "warn", Text: "about to fail"}}), out.Console)

	// The worker lives on.
	v, err := m.WaitUntilDone(ctxFor(t), m.DoWorkEval("'after'").Key)
	require.NoError(t, err)
	assert.Equal(t, "after", v)
}

func TestWorker_TimeLimit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	start(t, tr.Addr(), worker.Options{Slots: 1, Engine: engine.Options{Timeout: time.Minute}})
	m := master(t, tr.Addr())
	k := m.Submit(eval("while (true) {}"), workunit.Options{Timeout: 50 * time.Millisecond})
	_, err := k.Wait(ctxFor(t))
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)
	assert.ErrorIs(t, err, &workunit.Error{Kind: workunit.TimeLimit})
	v, err := m.WaitUntilDone(ctxFor(t), m.DoWorkEval("1 + 1").Key)
	require.NoError(t, err)
	assert.Equal(t, 2.0, v)
}

// A stopping worker finishes what runs within its grace, interrupts the
// rest, and returns what it did not finish to the tracker, which gives it
// to another worker; returned work is not counted as lost.
func TestWorker_GracefulStop(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	// Slot 1 holds a workunit that never ends on this worker; the rest
	// wait in its prefetch.
	started := make(chan workunit.Key, 4)
	w1 := start(t, tr.Addr(), worker.Options{Name: "first", Slots: 1, Prefetch: 3, Grace: 50 * time.Millisecond,
		Started: func(a *client.Assignment) { started <- a.Key }})
	m := master(t, tr.Addr())
	spin := m.Submit(eval("if (riot.worker.name === 'first') { while (true) {} }; 'spun'"), workunit.Options{})
	assert.Equal(t, spin.Key, <-started)
	var rest []*client.Call
	for i := range 3 {
		rest = append(rest, m.Submit(eval(fmt.Sprint(i)), workunit.Options{}))
	}
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Leases == 4 })
	require.NoError(t, w1.stop(t))
	assert.Empty(t, started, "nothing else started")
	// The worker returns its leases before it closes its connection, so
	// wait for both events.
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 4 && s.Workers == 0 })
	assert.Zero(t, st.Leases)

	w2 := start(t, tr.Addr(), worker.Options{Name: "second", Slots: 2})
	for _, k := range append([]*client.Call{spin}, rest...) {
		out, err := k.Wait(ctxFor(t))
		require.NoError(t, err)
		assert.Equal(t, w2.name, out.Worker)
		rec, ok := tr.Lookup(t, k.Key)
		require.True(t, ok)
		assert.Empty(t, rec.LostFrom)
	}
	v, _ := m.WaitUntilDone(ctxFor(t), spin.Key)
	assert.Equal(t, "spun", v)
}

// A workunit that finishes within the grace is reported, not returned.
func TestWorker_GracefulStop_FinishesWithinGrace(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	started := make(chan struct{}, 1)
	w := start(t, tr.Addr(), worker.Options{Name: "patient", Slots: 1, Prefetch: -1, Grace: time.Minute,
		Started: func(*client.Assignment) { started <- struct{}{} }})
	m := master(t, tr.Addr())
	// It waits on a timer, so it is still running at the stop.
	k := m.Submit(eval("new Promise(r => setTimeout(() => r('finished'), 100))"), workunit.Options{})
	<-started
	require.NoError(t, w.stop(t))
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, "patient", out.Worker)
}

func TestWorker_ReconnectAfterTrackerRestart(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	start(t, tr.Addr(), worker.Options{Name: "steady"})
	m := master(t, tr.Addr())
	before, err := m.WaitUntilDone(ctxFor(t), m.DoWorkEval("'before'").Key)
	require.NoError(t, err)
	assert.Equal(t, "before", before)
	tr.Restart(t)
	after, err := m.WaitUntilDone(ctxFor(t), m.DoWorkEval("'after'").Key)
	require.NoError(t, err)
	assert.Equal(t, "after", after)
}

func TestWorker_WaitsForTracker(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	addr := tr.Addr()
	tr.Stop(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{Tracker: addr, Slots: 1, Logger: logger(t),
			Client: client.Options{MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}})
	}()
	tr.Restart(t)
	m := master(t, tr.Addr())
	v, err := m.WaitUntilDone(ctxFor(t), m.DoWorkEval("'late'").Key)
	require.NoError(t, err)
	assert.Equal(t, "late", v)
	cancel()
	require.NoError(t, <-done)
}

func TestWorker_Options(t *testing.T) {
	t.Parallel()
	err := worker.Run(context.Background(), worker.Options{})
	assert.ErrorContains(t, err, "no tracker address")
}

func TestCache_LRU(t *testing.T) {
	t.Parallel()
	store := blob.Map{}
	a, b, c := store.Put([]byte("aaaa")), store.Put([]byte("bbbb")), store.Put([]byte("cccc"))
	big := store.Put(make([]byte, 100))
	fetches := 0
	cache := worker.NewCache(8, func(ctx context.Context, h blob.Hash) ([]byte, error) {
		fetches++
		return store.Blob(ctx, h)
	})
	ctx := context.Background()
	for _, h := range []blob.Hash{a, b, a, c} { // c evicts b, the least recently used
		_, err := cache.Blob(ctx, h)
		require.NoError(t, err)
	}
	assert.Equal(t, 3, fetches)
	assert.True(t, cache.Has(a))
	assert.False(t, cache.Has(b))
	assert.True(t, cache.Has(c))
	_, err := cache.Blob(ctx, big) // larger than the cache: not kept
	require.NoError(t, err)
	assert.False(t, cache.Has(big))
	size, n, hits, misses := cache.Stats()
	assert.Equal(t, int64(8), size)
	assert.Equal(t, 2, n)
	assert.Equal(t, uint64(1), hits)
	assert.Equal(t, uint64(4), misses)
	_, err = cache.Blob(ctx, blob.Hash{1})
	assert.ErrorIs(t, err, blob.ErrNotFound)
}

// A master cancels a running workunit and a queued one: the worker stops
// the first, never starts the second, and its slot and window are free for
// the next workunit; the master sees canceled errors.
func TestWorker_Cancel(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	started := make(chan workunit.Key, 4)
	start(t, tr.Addr(), worker.Options{Name: "canceled", Slots: 1, Prefetch: 1,
		Started: func(a *client.Assignment) { started <- a.Key }})
	m := master(t, tr.Addr())
	spin := m.Submit(eval("while (true) {}"), workunit.Options{})
	assert.Equal(t, spin.Key, <-started)
	queued := m.Submit(eval("'never'"), workunit.Options{})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Leases == 2 })

	got, err := m.Cancel(ctxFor(t), spin.Key, queued.Key)
	require.NoError(t, err)
	assert.ElementsMatch(t, []workunit.Key{spin.Key, queued.Key}, got)
	for _, k := range []*client.Call{spin, queued} {
		_, err := k.Wait(ctxFor(t))
		var werr *workunit.Error
		require.ErrorAs(t, err, &werr)
		assert.Equal(t, workunit.Canceled, werr.Kind)
		assert.Equal(t, "canceled by master", werr.Message)
	}

	// Both leases come back to the worker's window once it has answered
	// them; the next workunit runs on its one slot.
	after := m.DoWorkEval("'after'")
	v, err := m.WaitUntilDone(ctxFor(t), after.Key)
	require.NoError(t, err)
	assert.Equal(t, "after", v)
	assert.Equal(t, after.Key, <-started, "the queued workunit never started")
	assert.Empty(t, started)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Leases == 0 && s.Discarded == 2 })
	assert.Equal(t, uint64(2), st.Canceled)

	// Canceling again, or a finished key, cancels nothing; submitting a
	// canceled key again runs it again.
	got, err = m.Cancel(ctxFor(t), spin.Key, queued.Key)
	require.NoError(t, err)
	assert.Empty(t, got)
	again, err := m.Submit(eval("'never'"), workunit.Options{}).Wait(ctxFor(t))
	require.NoError(t, err)
	v, err = again.Value()
	require.NoError(t, err)
	assert.Equal(t, "never", v)
}

// TestWorker_ConnectionLost_StopsItsWork: the workunits a worker held when
// its connection was lost are the tracker's again (it gives them to
// others and discards their answers): after the reconnect the worker
// stops them, so that its slot takes new work at once. Here its one slot
// runs a workunit that never ends; after the tracker's restart, the next
// workunit runs on that slot.
func TestWorker_ConnectionLost_StopsItsWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	started := make(chan workunit.Key, 4)
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1, Prefetch: -1,
		Started: func(a *client.Assignment) { started <- a.Key }})
	m, err := client.Dial(ctxFor(t), tr.Addr(), client.Options{Name: "first", Logger: logger(t)})
	require.NoError(t, err)
	spin := m.Submit(eval("while (true) {}"), workunit.Options{})
	assert.Equal(t, spin.Key, <-started)
	require.NoError(t, m.Close()) // nobody will submit it again

	tr.Restart(t) // in memory: it comes back empty, and the worker reconnects
	m2 := master(t, tr.Addr())
	next := m2.DoWorkEval("'next'")
	v, err := m2.WaitUntilDone(ctxFor(t), next.Key)
	require.NoError(t, err)
	assert.Equal(t, "next", v)
	assert.Equal(t, next.Key, <-started)
}

// TestWorker_ResultBlobFreedThenAgain: a result too large for a done
// message goes as a blob; once its workunit is forgotten a tracker in
// memory frees it, and an equal result later is uploaded again (the
// worker does not trust that the tracker still holds it): the master gets
// it. Before, the worker skipped the upload and the master's fetch found
// no blob.
func TestWorker_ResultBlobFreedThenAgain(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		// The grace is what lets the master read the result after its
		// record is forgotten (a millisecond later): with a grace of a
		// millisecond too, a master slowed by the tests around it found
		// the blob freed before it asked for it.
		o.BlobGrace = time.Second
		o.KeepResults = time.Millisecond
		o.Limits.MaxResultBytes = 1000
	}))
	start(t, tr.Addr(), worker.Options{})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	for i := range 2 {
		// Two specs (their names differ), one result of 5000 bytes.
		spec := &workunit.Spec{Kind: workunit.Eval, Source: "'r'.repeat(5000)", Name: fmt.Sprintf("run%d.js", i)}
		out, err := m.Submit(spec, workunit.Options{}).Wait(ctx)
		require.NoError(t, err, "run %d", i)
		v, err := out.Value()
		require.NoError(t, err)
		require.Len(t, v, 5000)
		tr.WaitFor(t, func(s tracker.Stats) bool { return s.FreedBlobs > uint64(i) && s.Blobs == 0 })
	}
}

// TestWorker_SmallerTrackerWindow: a worker that sizes its prefetch,
// behind a tracker whose --max-worker-window is below the window that
// trivial workunits make it grow to, keeps working when slower ones come
// and its window shrinks: the credit past the tracker's bound was dropped
// there, and a worker that counted on it held nothing and got nothing.
//
// Not parallel: its 2,030 workunits go through a window of 4, a round trip
// each 4, and beside the package's CPU-bound parallel tests (runaway
// regular expressions on several workers' slots) each hop of a round trip
// waited for a core, so that it passed its deadline without any stall
// (both sides idle, their readers runnable, in a goroutine dump of a
// failure).
func TestWorker_SmallerTrackerWindow(t *testing.T) {
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWorkerWindow = 4 }))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	run := func(n int, src string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		calls := make([]*client.Call, n)
		for i := range calls {
			calls[i] = m.Submit(eval(fmt.Sprintf("%s; %d", src, i)), workunit.Options{})
		}
		for i, k := range calls {
			out, err := k.Wait(ctx)
			require.NoError(t, err, "workunit %d of %d (%s)", i, n, src)
			_, err = out.Value()
			require.NoError(t, err)
		}
	}
	run(2000, "1")          // the worker's window grows past the tracker's
	run(30, "sleep(0.005)") // and shrinks
}
