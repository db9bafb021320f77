package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCredits_Fixed(t *testing.T) {
	t.Parallel()
	c := newCredits(Options{Slots: 2, Prefetch: 3})
	assert.Equal(t, 5, c.window)
	t0 := time.Now()
	c.sent(5, t0)
	for _, d := range []time.Duration{time.Microsecond, time.Second} {
		c.assigned(t0.Add(time.Second))
		assert.Equal(t, 1, c.done(d))
	}
	window, lat := c.state()
	assert.Equal(t, 5, window)
	assert.Zero(t, lat, "a fixed prefetch measures no latency")
}

func TestCredits_Adaptive(t *testing.T) {
	t.Parallel()
	o := Options{Slots: 2, adaptive: true, Prefetch: maxAdaptivePrefetch(2)}
	c := newCredits(o)
	assert.Equal(t, 2+2*DefaultPrefetchPerSlot, c.window, "it starts small")

	// Workunits of microseconds: the window grows to its most, and each
	// workunit then gives back exactly one credit.
	granted := 0
	for range 2000 {
		granted += c.done(5 * time.Microsecond)
	}
	assert.Equal(t, MaxWindow, c.window)
	assert.Equal(t, 2000+c.window-(2+2*DefaultPrefetchPerSlot), granted, "the credit granted is the window's growth plus one per workunit")
	assert.Equal(t, 1, c.done(5*time.Microsecond))

	// Workunits of seconds: it shrinks back, one workunit at a time
	// (credit granted cannot be taken back), granting nothing until it has
	// (while it holds work for every slot: the whole window here).
	for range c.window {
		c.assigned(time.Now())
	}
	for range 2000 {
		c.done(3 * time.Second)
	}
	assert.Equal(t, 2+2*DefaultPrefetchPerSlot, c.window)
	assert.Equal(t, 1, c.done(3*time.Second))

	// Half a millisecond, before any latency is measured: twice
	// PrefetchLatency over 0.5 ms = 8 per slot.
	for range 200 {
		c.done(500 * time.Microsecond)
	}
	assert.Equal(t, 2+2*8, c.window)
}

func TestMaxAdaptivePrefetch(t *testing.T) {
	t.Parallel()
	for slots, want := range map[int]int{
		1:    MaxPrefetchPerSlot,
		2:    MaxWindow - 2, // the window is at most MaxWindow
		16:   MaxWindow - 16,
		1000: DefaultPrefetchPerSlot * 1000, // never less than the least
	} {
		assert.Equal(t, want, maxAdaptivePrefetch(slots), "%d slots", slots)
	}
}

// TestPrefetchFor: the prefetch covers twice the credit-to-work latency
// with workunits, per slot; slow workunits get the least whatever the
// latency.
func TestPrefetchFor(t *testing.T) {
	t.Parallel()
	const lo, hi = 4, 1000 // 2 slots
	for _, c := range []struct {
		name     string
		lat, avg time.Duration
		want     int
	}{
		{"trivial workunits: the most", 2 * time.Millisecond, 5 * time.Microsecond, hi},
		{"1 ms workunits behind a Raft commit of 8 ms: 16 a slot", 8 * time.Millisecond, time.Millisecond, 32},
		{"the same on loopback (0.5 ms): the least", 500 * time.Microsecond, time.Millisecond, lo},
		{"a latency under the clamp counts as 0.5 ms", 10 * time.Microsecond, 100 * time.Microsecond, 2 * 10},
		{"a latency over the clamp counts as 50 ms", time.Second, 10 * time.Millisecond, 2 * 10},
		{"rounded up", 8 * time.Millisecond, 3 * time.Millisecond, 2 * 6},
		{"no duration yet counts as 1 µs", 2 * time.Millisecond, 0, hi},
	} {
		assert.Equal(t, c.want, prefetchFor(2, c.lat, c.avg, lo, hi), c.name)
	}
	// Workunits of 100 ms or more: the least, whatever the latency.
	for _, lat := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, time.Hour} {
		for _, avg := range []time.Duration{100 * time.Millisecond, time.Second, time.Hour} {
			assert.Equal(t, lo, prefetchFor(2, lat, avg, lo, hi), "latency %v, workunits of %v", lat, avg)
		}
	}
}

func TestNextLatency(t *testing.T) {
	t.Parallel()
	// Steady samples: the average goes to them.
	est := PrefetchLatency
	for range 100 {
		est = nextLatency(est, 8*time.Millisecond)
	}
	assert.InDelta(t, float64(8*time.Millisecond), float64(est), float64(50*time.Microsecond))

	// One grant filled only after a long idle moment raises it by less
	// than twice.
	est = time.Millisecond
	est = nextLatency(est, time.Minute)
	assert.Less(t, est, 2*time.Millisecond)
	assert.Greater(t, est, time.Millisecond)

	// A latency that grows tenfold at once is followed within tens of
	// samples.
	est = time.Millisecond
	n := 0
	for ; est < 9*time.Millisecond; n++ {
		est = nextLatency(est, 10*time.Millisecond)
	}
	assert.Less(t, n, 30)

	// Clamped.
	est = MinPrefetchLatency
	for range 100 {
		est = nextLatency(est, 0)
	}
	assert.Equal(t, MinPrefetchLatency, est)
	est = MaxPrefetchLatency
	for range 100 {
		est = nextLatency(est, time.Hour)
	}
	assert.Equal(t, MaxPrefetchLatency, est)
}

// TestCredits_MeasuresLatency: a grant is timed until the last of the
// credit granted up to it is filled; the window follows.
func TestCredits_MeasuresLatency(t *testing.T) {
	t.Parallel()
	c := newCredits(Options{Slots: 2, adaptive: true, Prefetch: maxAdaptivePrefetch(2)})
	now := time.Now()
	c.sent(c.window, now)
	// Workunits of 1 ms whose credit comes back as work 8 ms later, as
	// through a replicated tracker: each round grants credit, and the
	// work it buys comes 8 ms on.
	for range 200 {
		var grant int
		for range 2 {
			grant += c.done(time.Millisecond)
		}
		now = now.Add(time.Millisecond)
		c.sent(grant, now)
		at := now.Add(8 * time.Millisecond)
		for range c.owed {
			c.assigned(at)
		}
	}
	window, lat := c.state()
	assert.InDelta(t, float64(8*time.Millisecond), float64(lat), float64(200*time.Microsecond))
	assert.Equal(t, 2+2*16, window, "twice 8 ms of 1 ms workunits a slot")
}

// TestCredits_ProbeTimesOut: a timed grant whose work does not come
// within MaxPrefetchLatency (a tracker that dropped credit past its bound
// on the window, or had no work) is a sample of that much, and the credit
// owed is forgotten, so that the next grant is timed on its own.
func TestCredits_ProbeTimesOut(t *testing.T) {
	t.Parallel()
	c := newCredits(Options{Slots: 1, adaptive: true, Prefetch: maxAdaptivePrefetch(1)})
	t0 := time.Now()
	c.sent(10, t0)
	for range 5 { // half of it never comes
		c.assigned(t0.Add(time.Millisecond))
	}
	c.sent(1, t0.Add(time.Second))
	_, lat := c.state()
	assert.Greater(t, lat, PrefetchLatency, "the timed-out grant is a long sample")
	assert.Less(t, lat, 2*PrefetchLatency, "taken at most eight times the estimate")
	assert.Equal(t, 1, c.owed, "what was owed before is forgotten")
	c.assigned(t0.Add(time.Second + time.Millisecond))
	assert.True(t, c.probeAt.IsZero(), "the next grant is filled by the next assignment")
	_, lat2 := c.state()
	assert.Less(t, lat2, lat)
}

// TestCredits_SmallerTrackerWindow: against a tracker whose
// --max-worker-window is below the window the worker grows to, credit
// past the tracker's bound is dropped there. When the workunits then slow
// down and the window shrinks (no credit granted for a while), the
// worker must not count on the dropped credit: it would wait, all its
// slots idle, for work the tracker never sends (nothing more finishes,
// so it never grants credit again).
func TestCredits_SmallerTrackerWindow(t *testing.T) {
	t.Parallel()
	const slots, trackerWindow = 2, 8
	c := newCredits(Options{Slots: slots, adaptive: true, Prefetch: maxAdaptivePrefetch(slots)})
	// The tracker as table.Table keeps it: credit and leases each bounded
	// by its window, credit past it not kept.
	credit, leases := min(c.window, trackerWindow), 0
	now := time.Now()
	c.sent(c.window, now)
	finished := 0
	run := func(d time.Duration, n int) {
		for range n {
			for credit > 0 && leases < trackerWindow {
				credit--
				leases++
				c.assigned(now)
			}
			if leases == 0 {
				return // the worker holds nothing and the tracker sends nothing
			}
			now = now.Add(d / slots)
			leases--
			finished++
			grant := c.done(d)
			credit = min(credit+grant, trackerWindow)
			c.sent(grant, now)
		}
	}
	run(5*time.Microsecond, 5000) // the window grows past the tracker's
	require.Greater(t, c.window, trackerWindow)
	finished = 0
	run(10*time.Millisecond, 2000) // and shrinks
	assert.Equal(t, 2000, finished, "the worker starved")
}
