package engine

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// memGuardInterval is how often the guard reads the heap size while
// workunits run.
const memGuardInterval = 5 * time.Millisecond

// heapMetric is the bytes held by heap objects, live or not yet collected.
const heapMetric = "/memory/classes/heap/objects:bytes"

// liveMetric is the bytes of heap objects found live by the last
// collection.
const liveMetric = "/gc/heap/live:bytes"

// memGuard interrupts running workunits when the heap passes a limit. It
// reads the heap only while some workunit runs. It is safe for concurrent
// use.
//
// An episode is the time from the heap's passing the limit to its being
// back under it: the guard interrupts each run once (an interrupted run
// keeps its heap until it has unwound, which takes many of the guard's
// ticks) and logs one warning per episode.
type memGuard struct {
	limit uint64
	log   *slog.Logger

	mu          sync.Mutex
	running     map[*run]uint64   // each run with the number it was added as
	added       uint64            // runs added so far
	interrupted map[*run]struct{} // runs of running canceled already
	wake        chan struct{}
	over        bool // in an episode: the heap was over the limit at the last look
	// looked, when set, is called after each look that found the heap over
	// the limit (tests).
	looked func()
	// readHeap returns the heap's bytes and the bytes the last collection
	// found live; collect runs a collection. Tests replace both.
	readHeap func() (heap, live uint64)
	collect  func()
}

func newMemGuard(limit uint64, log *slog.Logger) *memGuard {
	sample := []metrics.Sample{{Name: heapMetric}, {Name: liveMetric}}
	return &memGuard{limit: limit, log: log, running: make(map[*run]uint64),
		interrupted: make(map[*run]struct{}), wake: make(chan struct{}, 1),
		readHeap: func() (uint64, uint64) {
			metrics.Read(sample)
			return sample[0].Value.Uint64(), sample[1].Value.Uint64()
		},
		collect: runtime.GC}
}

// waiting reports whether some running run is not interrupted yet.
func (g *memGuard) waiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running) > len(g.interrupted)
}

func (g *memGuard) add(r *run) {
	g.mu.Lock()
	g.added++
	g.running[r] = g.added
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *memGuard) remove(r *run) {
	g.mu.Lock()
	delete(g.running, r)
	delete(g.interrupted, r)
	g.mu.Unlock()
}

// mark returns the number of runs added so far: a look interrupts only
// runs that were running when it read the heap.
func (g *memGuard) mark() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.added
}

func (g *memGuard) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running) == 0
}

func (g *memGuard) loop(done <-chan struct{}) {
	tick := time.NewTicker(memGuardInterval)
	defer tick.Stop()
	var prev uint64 // the heap at the last look; 0: no look since idle
	for {
		if g.idle() {
			prev = 0
			select {
			case <-g.wake:
			case <-done:
				return
			}
		}
		select {
		case <-tick.C:
		case <-done:
			return
		}
		mark := g.mark()
		heap, live := g.readHeap()
		grew := uint64(0)
		if prev > 0 && heap > prev {
			grew = heap - prev
		}
		prev = heap
		if heap <= g.limit {
			g.setOver(false)
			continue
		}
		// Garbage counts until it is collected: collect, then look again.
		// But not after a leap: when what was allocated since the last
		// look, taken as live, passes the limit with the heap found live
		// at the last collection, or is a quarter of the limit in one
		// tick. That is one large allocation (s += s doubling a string of
		// hundreds of MiB), and the script's next one would start while
		// the collection waited for this one's copy to end. A live figure
		// over the limit is stale: it is from the collection of an earlier
		// look, whose runs may have ended since, so it is no reason to
		// skip the collection. Nor is there one to run when every running
		// workunit is interrupted already: nothing is left to save.
		leap := grew >= g.limit/4 || (grew > 0 && live <= g.limit && live+grew > g.limit)
		if !leap && g.waiting() {
			g.collect()
			heap, _ = g.readHeap()
			prev = heap
			if heap <= g.limit {
				g.setOver(false)
				continue
			}
		}
		if n, first := g.interrupt(&memoryLimitError{limit: g.limit, heap: heap}, mark); n > 0 && first {
			g.log.Warn("heap passed the memory limit; interrupting running workunits",
				"heap", formatBytes(heap), "limit", formatBytes(g.limit), "workunits", n)
		}
		if g.looked != nil {
			g.looked()
		}
	}
}

// setOver notes whether the heap is over the limit: false ends an episode.
func (g *memGuard) setOver(over bool) {
	g.mu.Lock()
	g.over = over
	g.mu.Unlock()
}

// interrupt cancels with err each running run not interrupted yet that
// was added by mark, and returns how many it canceled and whether this look
// starts an episode. A run added after mark started after the look read the
// heap, maybe after the garbage it saw was freed.
func (g *memGuard) interrupt(err error, mark uint64) (n int, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for r, seq := range g.running {
		if _, ok := g.interrupted[r]; ok || seq > mark {
			continue
		}
		g.interrupted[r] = struct{}{}
		r.cancel(err)
		n++
	}
	first = !g.over
	if n > 0 {
		// An episode starts with the first look that interrupts something.
		g.over = true
	}
	return n, first
}

// memoryLimitError is the cause of a run canceled by the memory guard.
type memoryLimitError struct{ limit, heap uint64 }

func (e *memoryLimitError) Error() string {
	return fmt.Sprintf("the worker's heap passed its limit of %s (%s in use)", formatBytes(e.limit), formatBytes(e.heap))
}

func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
