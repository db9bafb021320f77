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

// memGuard interrupts running workunits when the heap passes a limit. It
// reads the heap only while some workunit runs. It is safe for concurrent
// use.
type memGuard struct {
	limit uint64
	log   *slog.Logger

	mu      sync.Mutex
	running map[*run]struct{}
	wake    chan struct{}
}

func newMemGuard(limit uint64, log *slog.Logger) *memGuard {
	return &memGuard{limit: limit, log: log, running: make(map[*run]struct{}), wake: make(chan struct{}, 1)}
}

func (g *memGuard) add(r *run) {
	g.mu.Lock()
	g.running[r] = struct{}{}
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *memGuard) remove(r *run) {
	g.mu.Lock()
	delete(g.running, r)
	g.mu.Unlock()
}

func (g *memGuard) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running) == 0
}

func (g *memGuard) loop(done <-chan struct{}) {
	sample := []metrics.Sample{{Name: heapMetric}}
	tick := time.NewTicker(memGuardInterval)
	defer tick.Stop()
	for {
		if g.idle() {
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
		metrics.Read(sample)
		if sample[0].Value.Uint64() <= g.limit {
			continue
		}
		// Garbage counts until it is collected: collect, then look again.
		runtime.GC()
		metrics.Read(sample)
		heap := sample[0].Value.Uint64()
		if heap <= g.limit {
			continue
		}
		err := &memoryLimitError{limit: g.limit, heap: heap}
		g.mu.Lock()
		n := len(g.running)
		for r := range g.running {
			r.cancel(err)
		}
		g.mu.Unlock()
		if n == 0 {
			continue
		}
		g.log.Warn("heap passed the memory limit; interrupting running workunits",
			"heap", formatBytes(heap), "limit", formatBytes(g.limit), "workunits", n)
	}
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
