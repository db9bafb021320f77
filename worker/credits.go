package worker

import (
	"sync"
	"time"
)

// credits sizes the work a worker asks for: its window, the workunits it
// lets itself hold (running and queued), is its slots plus a prefetch
// between min and max. With a fixed prefetch, min is max and each finished
// workunit gives back one credit. Otherwise the prefetch covers what
// arrives while credit is on its way: the worker measures the
// credit-to-work latency (from a grant of credit to the last of the
// workunits it buys), and holds twice that latency's worth of workunits
// per slot, from their average duration (prefetchFor). Short workunits
// behind a slow tracker need a deep queue to keep the slots busy; long
// ones need almost none, whatever the latency. It is safe for concurrent
// use by the slots and the dispatcher.
type credits struct {
	slots    int
	min, max int

	mu     sync.Mutex
	window int
	avg    time.Duration // moving average of workunit durations; 0 before the first
	lat    time.Duration // moving average of the credit-to-work latency (nextLatency)
	// owed is the credit granted and not yet filled by an assignment, as
	// far as the worker knows (a tracker may drop credit past its own
	// bound on the window: the probe's timeout resets it).
	owed int
	// held is the workunits assigned and not yet finished, as the
	// dispatcher and the slots tell (assigned, done, released).
	held int
	// One grant is timed at a time: sent at probeAt (zero: none), filled
	// once probeOwed more assignments have come.
	probeAt   time.Time
	probeOwed int
}

func newCredits(o Options) *credits {
	c := &credits{slots: o.Slots, min: o.Prefetch, max: o.Prefetch, lat: PrefetchLatency}
	if o.adaptive {
		c.min = min(DefaultPrefetchPerSlot*o.Slots, o.Prefetch)
	}
	c.window = o.Slots + c.min
	return c
}

// maxAdaptivePrefetch is the most a worker of slots slots that sizes its
// prefetch holds queued: MaxPrefetchPerSlot a slot, the window at most
// MaxWindow, and never less than DefaultPrefetchPerSlot a slot.
func maxAdaptivePrefetch(slots int) int {
	return max(min(MaxPrefetchPerSlot*slots, MaxWindow-slots), DefaultPrefetchPerSlot*slots)
}

// prefetchFor returns the prefetch that keeps slots slots busy with
// workunits of average duration avg while credit takes lat to come back
// as work, between lo and hi: twice lat's worth of workunits per slot
// (lat clamped to MinPrefetchLatency..MaxPrefetchLatency), one lat's
// worth for the work on its way, one to run meanwhile, as work comes in
// bursts (a tracker sends what a store write let through at once).
func prefetchFor(slots int, lat, avg time.Duration, lo, hi int) int {
	lat = min(max(lat, MinPrefetchLatency), MaxPrefetchLatency)
	avg = max(avg, time.Microsecond)
	perSlot := (2*lat + avg - 1) / avg // at most 10^5
	return int(min(max(int64(slots)*int64(perSlot), int64(lo)), int64(hi)))
}

// nextLatency returns the moving average of the credit-to-work latency
// est after a new sample: a sample is taken at most eight times est (a
// grant filled only when new work came to a tracker that had none is not
// latency: one such raises est by less than twice), and est moves an
// eighth of the way to it, within MinPrefetchLatency..MaxPrefetchLatency.
func nextLatency(est, sample time.Duration) time.Duration {
	sample = min(sample, 8*est)
	est += (sample - est) / 8
	return min(max(est, MinPrefetchLatency), MaxPrefetchLatency)
}

// done returns the credit to grant after a workunit that took d: one to
// replace it, plus or minus the change of the window.
func (c *credits) done(d time.Duration) int {
	if c.min == c.max {
		return 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d = max(d, time.Microsecond)
	if c.avg == 0 {
		c.avg = d
	} else {
		c.avg += (d - c.avg) / 8
	}
	c.held = max(c.held-1, 0)
	target := c.slots + prefetchFor(c.slots, c.lat, c.avg, c.min, c.max)
	grant := max(1+target-c.window, 0)
	if grant == 0 && c.held < c.slots {
		// A slot is idle: the window shrinks only while the worker holds
		// work for every slot. The rest of the window is credit at the
		// tracker, which it may have dropped (past its --max-worker-window):
		// granted none, a worker counting on it would hold nothing and get
		// nothing, and so never grant credit again.
		grant = 1
	}
	c.window += grant - 1
	return grant
}

// released records a workunit finished without done (reported with one
// credit to replace it: the window does not change).
func (c *credits) released() {
	if c.min == c.max {
		return
	}
	c.mu.Lock()
	c.held = max(c.held-1, 0)
	c.mu.Unlock()
}

// sent records n credits granted to the tracker at now (with a report, or
// alone); with no grant timed yet, it times this one.
func (c *credits) sent(n int, now time.Time) {
	if n <= 0 || c.min == c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.probeAt.IsZero() && now.Sub(c.probeAt) > MaxPrefetchLatency {
		c.timedOut()
	}
	c.owed += n
	if c.probeAt.IsZero() {
		c.probeAt, c.probeOwed = now, c.owed
	}
}

// assigned records an assignment received at now: one credit filled. The
// one that fills the timed grant is a sample of the latency.
func (c *credits) assigned(now time.Time) {
	if c.min == c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.owed = max(c.owed-1, 0)
	c.held++
	if c.probeAt.IsZero() {
		return
	}
	c.probeOwed--
	switch {
	case c.probeOwed <= 0:
		c.lat = nextLatency(c.lat, now.Sub(c.probeAt))
		c.probeAt = time.Time{}
	case now.Sub(c.probeAt) > MaxPrefetchLatency:
		c.timedOut()
	}
}

// timedOut ends a timed grant not filled within MaxPrefetchLatency: a
// sample of that much, and the credit owed forgotten (a tracker drops
// credit past its bound on the window, which would leave every later
// grant waiting for fills that never come).
func (c *credits) timedOut() {
	c.lat = nextLatency(c.lat, MaxPrefetchLatency)
	c.probeAt = time.Time{}
	c.owed = 0
}

// state returns the window and the measured credit-to-work latency (0
// with a fixed prefetch, which measures none).
func (c *credits) state() (window int, lat time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.min == c.max {
		return c.window, 0
	}
	return c.window, c.lat
}
