package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCredits_Fixed(t *testing.T) {
	t.Parallel()
	c := newCredits(Options{Slots: 2, Prefetch: 3})
	assert.Equal(t, 5, c.window)
	for _, d := range []time.Duration{time.Microsecond, time.Second} {
		assert.Equal(t, 1, c.done(d))
	}
	assert.Equal(t, 5, c.window)
}

func TestCredits_Adaptive(t *testing.T) {
	t.Parallel()
	o := Options{Slots: 2, adaptive: true, Prefetch: MaxPrefetchPerSlot * 2}
	c := newCredits(o)
	assert.Equal(t, 2+2*DefaultPrefetchPerSlot, c.window, "it starts small")

	// Workunits of microseconds: the window grows to its most, and each
	// workunit then gives back exactly one credit.
	granted := 0
	for range 100 {
		granted += c.done(5 * time.Microsecond)
	}
	assert.Equal(t, 2+2*MaxPrefetchPerSlot, c.window)
	assert.Equal(t, 100+c.window-(2+2*DefaultPrefetchPerSlot), granted, "the credit granted is the window's growth plus one per workunit")
	assert.Equal(t, 1, c.done(5*time.Microsecond))

	// Workunits of seconds: it shrinks back, one workunit at a time
	// (credit granted cannot be taken back), granting nothing until it has.
	for range 200 {
		c.done(3 * time.Second)
	}
	assert.Equal(t, 2+2*DefaultPrefetchPerSlot, c.window)
	assert.Equal(t, 1, c.done(3*time.Second))

	// Half a millisecond: about PrefetchLatency/0.5ms = 4 per slot.
	for range 200 {
		c.done(500 * time.Microsecond)
	}
	assert.Equal(t, 2+2*4, c.window)
}
