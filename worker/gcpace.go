package worker

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// GCPacing is what a worker may set of its process's garbage collector
// (Options.GCPacing). The collector's settings are the process's: only a
// worker that has its process to itself, as riot-worker does, should set
// them, and then only those the user did not (riot-worker leaves the GC
// percent alone when GOGC is set, the soft memory limit when GOMEMLIMIT
// is).
type GCPacing struct {
	// Percent paces the collector after each of its cycles (gcPercent):
	// the heap may grow past the live heap by the live heap that is not
	// the engine's idle runtimes, as with GOGC=100, plus IdleHeadroom
	// times the idle runtimes' estimated bytes. Go's default charges
	// every cycle the marking of the idle runtimes (one or two a master)
	// and runs one each time the workunits allocated as much as the live
	// heap, idle runtimes included: with hundreds of masters that is most
	// of the worker's CPU.
	Percent bool
	// SoftLimit sets the runtime's soft memory limit
	// (debug.SetMemoryLimit) to Engine.MemoryLimit, when there is one, so
	// that a heap that nears --memory-limit is collected as often as it
	// takes, whatever the GC percent.
	SoftLimit bool
}

const (
	// IdleHeadroom is how many times its idle runtimes' estimated bytes
	// a paced worker's heap may grow by between collections (GCPacing):
	// the marking of the idle runtimes is shared by that much more
	// allocation. The idle runtimes are at most Engine.IdleRuntimeBytes
	// (an eighth of --memory-limit by default), so this headroom is at
	// most half the memory limit; gcPercent keeps the paced heap goal
	// under half of it, and the soft limit bounds the heap as well.
	IdleHeadroom = 4
	// maxGCPercent bounds the GC percent a paced worker sets.
	maxGCPercent = 100 * IdleHeadroom
	// defaultGCPercent is Go's default, GOGC=100.
	defaultGCPercent = 100
)

// gcPercent returns the GC percent for a heap whose last collection found
// live bytes live, of which idle (as the engine estimates its idle
// runtimes) are idle runtimes, in a worker whose memory limit is limit (0:
// none): the percent whose heap goal is live plus the live bytes that are
// not idle runtimes (Go's default for them) plus IdleHeadroom times the
// idle ones. That is 100 with no idle runtimes and up to maxGCPercent
// when they are all of the heap. An estimate over live counts as all of
// it. With a limit, the goal that pacing adds stays under half of it: past
// that the percent is less, down to Go's 100, so that a worker near its
// limit collects as it would unpaced.
func gcPercent(live, idle, limit uint64) int {
	if live == 0 {
		return defaultGCPercent
	}
	idle = min(idle, live)
	head := float64(live-idle) + IdleHeadroom*float64(idle)
	if limit > 0 {
		head = min(head, float64(limit)/2-float64(live))
	}
	p := int(math.Round(100 * head / float64(live)))
	return max(defaultGCPercent, min(p, maxGCPercent))
}

// gcPacer sets the GC percent after each collection from the live heap
// and the engine's idle runtimes (gcPercent). Its fields are what it
// reads and sets: the process's runtime in a worker, fakes in tests.
type gcPacer struct {
	// idle returns the idle runtimes' estimated bytes
	// (engine.Engine.IdleRuntimes).
	idle func() uint64
	// live returns the bytes the last collection found live.
	live func() uint64
	// setPercent sets the GC percent and returns the one before.
	setPercent func(int) int
	// limit is the worker's memory limit (Engine.MemoryLimit; 0: none).
	limit uint64
	// cycles is told of each collection: armCycles arms it.
	cycles chan struct{}
	log    *slog.Logger
	// keep leaves the percent as the pacer last set it when it stops,
	// rather than set back the one it found: paceGC sets back the
	// process's once the last pacer stopped (another may still pace).
	keep bool
}

// newGCPacer returns the pacer of this process's collector for the idle
// runtimes that idle reports, in a worker whose memory limit is limit.
func newGCPacer(idle func() uint64, limit uint64, log *slog.Logger) *gcPacer {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return &gcPacer{
		idle: idle,
		live: func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		},
		setPercent: debug.SetGCPercent,
		limit:      limit,
		cycles:     make(chan struct{}, 1),
		log:        log,
	}
}

// gcSentinel is an object that nothing keeps: the collection that finds
// it unreachable runs its cleanup. It holds a pointer so that it is never
// one of the tiny allocator's blocks, whose cleanups may never run.
type gcSentinel struct{ _ *byte }

// armCycles arranges for p.cycles to be told of the next collection, and
// of each after it until done is closed.
func (p *gcPacer) armCycles(done <-chan struct{}) {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		select {
		case <-done:
			return
		default:
		}
		select {
		case p.cycles <- struct{}{}:
		default: // the pacer has one to see already
		}
		p.armCycles(done)
	}, struct{}{})
}

// run paces the collector until ctx ends, then restores the GC percent it
// found (unless p.keep). It sets the percent once at the start and after each collection.
func (p *gcPacer) run(ctx context.Context) {
	done := make(chan struct{})
	defer close(done)
	p.armCycles(done)
	cur := gcPercent(p.live(), p.idle(), p.limit)
	before := p.setPercent(cur)
	if !p.keep {
		defer p.setPercent(before)
	}
	p.log.Debug("worker: pacing the garbage collector", "gc_percent", cur, "was", before)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.cycles:
		}
		if n := gcPercent(p.live(), p.idle(), p.limit); n != cur {
			p.setPercent(n)
			cur = n
		}
	}
}

// gcHolds counts the workers of this process whose pacing (GCPacing) set
// its collector's settings, and what the first of them found: the last
// to stop sets that back. Each worker's own undo is not enough when
// workers of one process overlap (tests run many): one that started while
// another paced found that one's settings, and set them back after it had
// stopped.
var gcHolds struct {
	sync.Mutex
	percents, limits int   // the workers holding each setting
	percent          int   // the GC percent the first of percents found
	limit            int64 // the soft memory limit the first of limits found
}

// paceGC starts what w.opts.GCPacing asks for, for w.eng, and returns
// what undoes it, to call once the engine is closed or no longer runs.
// The process's settings are as it found them once every worker that
// paced them stopped.
func (w *worker) paceGC() (stop func()) {
	g := w.opts.GCPacing
	var undo []func()
	if g.SoftLimit && w.opts.Engine.MemoryLimit > 0 {
		limit := int64(min(w.opts.Engine.MemoryLimit, math.MaxInt64))
		gcHolds.Lock()
		before := debug.SetMemoryLimit(limit)
		if gcHolds.limits == 0 {
			gcHolds.limit = before
		}
		gcHolds.limits++
		gcHolds.Unlock()
		undo = append(undo, func() {
			gcHolds.Lock()
			defer gcHolds.Unlock()
			if gcHolds.limits--; gcHolds.limits == 0 {
				debug.SetMemoryLimit(gcHolds.limit)
			}
		})
	}
	if g.Percent {
		gcHolds.Lock()
		if gcHolds.percents == 0 {
			gcHolds.percent = gcPercentNow()
		}
		gcHolds.percents++
		gcHolds.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		p := newGCPacer(func() uint64 { _, b := w.eng.IdleRuntimes(); return b }, w.opts.Engine.MemoryLimit, w.opts.Logger)
		p.keep = true
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			p.run(ctx)
		}()
		undo = append(undo, func() {
			cancel()
			<-ended
			gcHolds.Lock()
			defer gcHolds.Unlock()
			if gcHolds.percents--; gcHolds.percents == 0 {
				debug.SetGCPercent(gcHolds.percent)
			}
		})
	}
	return func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
}

// gcPercentNow returns the process's GC percent, without changing it.
func gcPercentNow() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		// Not a metric of this runtime: read it by setting it back.
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	return int(s[0].Value.Uint64())
}
