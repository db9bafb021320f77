package worker

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
)

func TestGCPercent(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	for _, c := range []struct {
		name       string
		live, idle uint64
		limit      uint64
		want       int
	}{
		{"no heap yet", 0, 0, 0, 100},
		{"no idle runtimes: Go's default", 50 * mb, 0, 0, 100},
		{"idle runtimes a tenth of the heap", 100 * mb, 10 * mb, 0, 130},
		{"half", 100 * mb, 50 * mb, 0, 250},
		{"500 masters: 400 MB of idle runtimes beside 40 MB", 440 * mb, 400 * mb, 0, 373},
		{"all of it", 100 * mb, 100 * mb, 0, 400},
		{"an estimate over the live heap counts as all of it", 10 * mb, 50 * mb, 0, 400},
		{"no live heap yet, some estimated idle", 0, 10 * mb, 0, 100},
		{"a limit far off changes nothing", 440 * mb, 400 * mb, 16 << 30, 373},
		{"the paced goal held under half the limit", 100 * mb, 100 * mb, 1000 * mb, 400},
		{"half the limit is 250 MB: the goal stops there", 100 * mb, 100 * mb, 500 * mb, 150},
		{"near the limit: Go's default", 200 * mb, 100 * mb, 500 * mb, 100},
		{"over half the limit live: Go's default", 300 * mb, 100 * mb, 500 * mb, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := gcPercent(c.live, c.idle, c.limit)
			assert.Equal(t, c.want, got)
			assert.GreaterOrEqual(t, got, defaultGCPercent)
			assert.LessOrEqual(t, got, maxGCPercent)
			if c.live > 0 && c.limit == 0 {
				// The heap goal: live, plus the live heap that is not idle
				// runtimes, plus IdleHeadroom times those that are.
				idle := min(c.idle, c.live)
				goal := float64(c.live) * (1 + float64(got)/100)
				want := float64(c.live) + float64(c.live-idle) + IdleHeadroom*float64(idle)
				assert.InDelta(t, want, goal, float64(c.live)/100)
			}
		})
	}
}

// fakeGCRuntime stands for the process's collector settings in a pacer's
// tests: what it reads (the live heap, the idle runtimes) is set by the
// test, and each percent set is sent on set.
type fakeGCRuntime struct {
	mu         sync.Mutex
	live, idle uint64
	percent    int
	set        chan int
}

func (f *fakeGCRuntime) pacer() *gcPacer {
	return &gcPacer{
		idle: func() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.idle },
		live: func() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.live },
		setPercent: func(p int) int {
			f.mu.Lock()
			before := f.percent
			f.percent = p
			f.mu.Unlock()
			f.set <- p
			return before
		},
		cycles: make(chan struct{}, 1),
		log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func (f *fakeGCRuntime) heap(live, idle uint64) {
	f.mu.Lock()
	f.live, f.idle = live, idle
	f.mu.Unlock()
}

// next returns the next percent the pacer sets, running collections (the
// process's, for real) until it does.
func (f *fakeGCRuntime) next(t *testing.T) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		runtime.GC()
		select {
		case p := <-f.set:
			return p
		case <-deadline:
			t.Fatal("the pacer set no GC percent after collections for 30 s")
		default:
			// The cleanup that tells the pacer of the collection runs on
			// the runtime's own goroutine, after runtime.GC returns: wait
			// for it a little before collecting again.
			select {
			case p := <-f.set:
				return p
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// TestGCPacer_AfterEachCollection: the pacer sets the GC percent at its
// start and after a collection that changed what gcPercent gives, from
// the heap as it is then, and sets back the percent it found when it
// stops.
func TestGCPacer_AfterEachCollection(t *testing.T) {
	f := &fakeGCRuntime{percent: 77, set: make(chan int, 16)}
	f.heap(100, 0)
	p := f.pacer()
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		p.run(ctx)
	}()
	assert.Equal(t, 100, <-f.set, "at the start: no idle runtimes")

	f.heap(100, 50)
	assert.Equal(t, 250, f.next(t), "after a collection: half the heap idle runtimes")
	f.heap(100, 100)
	assert.Equal(t, 400, f.next(t))

	cancel()
	<-ended
	assert.Equal(t, 77, <-f.set, "the percent it found, set back")
	select {
	case p := <-f.set:
		t.Fatalf("the pacer set %d after it stopped", p)
	default:
	}
	// Nor does a collection after it stopped reach it.
	runtime.GC()
	runtime.GC()
	select {
	case <-p.cycles:
	default:
	}
	runtime.GC()
	select {
	case <-p.cycles:
		t.Fatal("a collection was sent to a stopped pacer")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestFlags_GCPacing(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"h"})
	require.NoError(t, err)
	assert.Equal(t, GCPacing{Percent: true, SoftLimit: true}, o.GCPacing, "riot-worker paces its collector")
	o, err = parseFlags(t, []string{"h"}, "GOGC", "50")
	require.NoError(t, err)
	assert.Equal(t, GCPacing{SoftLimit: true}, o.GCPacing, "GOGC set: its percent is left alone")
	o, err = parseFlags(t, []string{"h"}, "GOMEMLIMIT", "1GiB")
	require.NoError(t, err)
	assert.Equal(t, GCPacing{Percent: true}, o.GCPacing, "GOMEMLIMIT set: its soft limit is left alone")
}

// TestPaceGC_OverlappingWorkers: workers of one process that pace its
// collector and stop in another order than they started (tests run many
// workers in one process) leave the GC percent and the soft memory limit
// as they found them once the last one stopped, not the settings a later
// worker found the earlier one had made.
func TestPaceGC_OverlappingWorkers(t *testing.T) {
	percent0 := debug.SetGCPercent(91)
	limit0 := debug.SetMemoryLimit(3 << 30)
	t.Cleanup(func() {
		debug.SetGCPercent(percent0)
		debug.SetMemoryLimit(limit0)
	})
	newWorker := func(limit uint64) *worker {
		e, err := engine.New(engine.Options{Slots: 1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		w := &worker{eng: e}
		w.opts.GCPacing = GCPacing{Percent: true, SoftLimit: true}
		w.opts.Engine.MemoryLimit = limit
		w.opts.Logger = slog.New(slog.DiscardHandler)
		return w
	}
	// Wait for a pacer to set its percent (at its start) over from, a
	// percent no pacer sets.
	paced := func(from int) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if p := debug.SetGCPercent(from); p != from {
				debug.SetGCPercent(p)
				return
			}
		}
		t.Fatal("the pacer set no GC percent")
	}
	stopA := newWorker(1 << 30).paceGC()
	paced(91)
	// What the first pacer set after a collection, as the second starts.
	debug.SetGCPercent(93)
	stopB := newWorker(2 << 30).paceGC()
	paced(93)
	stopA()
	stopB()
	assert.Equal(t, 91, debug.SetGCPercent(91), "the GC percent the first worker found")
	assert.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1), "the soft memory limit the first worker found")
}
