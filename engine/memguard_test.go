package engine

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The guard interrupts each run once, however many looks it takes the run
// to unwind, and warns once for the episode, also when a run starts while
// the heap is still over the limit. A regression test: it canceled every
// run and warned again on every look, 5 ms apart.
func TestMemGuard_OneWarningPerEpisode(t *testing.T) {
	t.Parallel()
	var logs countingHandler
	g := newMemGuard(1, slog.New(&logs)) // 1 byte: every look is over the limit
	looks := make(chan struct{})
	g.looked = func() { looks <- struct{}{} }
	done := make(chan struct{})
	defer close(done)
	go g.loop(done)

	var canceled [2]atomic.Int32
	runs := [2]*run{
		{cancel: func(error) { canceled[0].Add(1) }},
		{cancel: func(error) { canceled[1].Add(1) }},
	}
	g.add(runs[0]) // a run that takes its time to unwind
	for range 20 {
		<-looks
	}
	g.add(runs[1])
	for range 20 {
		<-looks
	}
	g.remove(runs[0])
	g.remove(runs[1])
	assert.Equal(t, int32(1), canceled[0].Load(), "interrupted once")
	assert.Equal(t, int32(1), canceled[1].Load(), "interrupted once")
	assert.Equal(t, 1, logs.count("heap passed the memory limit; interrupting running workunits"), "one warning for the episode")
}

// A run that starts after an episode, while the heap still holds the
// garbage of the runs interrupted in it, is not interrupted: the live
// figure from the episode's collection is stale, so the guard collects
// before it judges. A regression test: it took the stale figure as a leap
// and interrupted the new run without collecting (CI, under -race).
func TestMemGuard_StaleLiveFigure(t *testing.T) {
	t.Parallel()
	const limit = 256 << 20
	g := newMemGuard(limit, slog.New(&countingHandler{}))
	var collected atomic.Bool
	looks := make(chan struct{}, 1)
	g.readHeap = func() (uint64, uint64) {
		if collected.Load() {
			select {
			case looks <- struct{}{}:
			default:
			}
			return 100 << 20, 100 << 20 // the garbage is gone
		}
		return 270 << 20, 300 << 20 // garbage; live as the episode found it
	}
	g.collect = func() { collected.Store(true) }
	done := make(chan struct{})
	defer close(done)
	go g.loop(done)

	interrupted := make(chan struct{})
	r := &run{cancel: func(error) { close(interrupted) }}
	g.add(r)
	defer g.remove(r)
	for range 2 { // a second look after the collection: the first one's verdict was kept
		select {
		case <-looks:
		case <-interrupted:
			t.Fatalf("the new run was interrupted (collected first: %v)", collected.Load())
		}
	}
	assert.True(t, collected.Load(), "collected before judging")
}

// A look interrupts only the runs that were running when it read the heap:
// one that started later may have started after what the look saw was
// freed, and is judged by the next look.
func TestMemGuard_LateRunJudgedByNextLook(t *testing.T) {
	t.Parallel()
	g := newMemGuard(1, slog.New(&countingHandler{})) // 1 byte: every look is over the limit
	var canceled [2]atomic.Int32
	runs := [2]*run{
		{cancel: func(error) { canceled[0].Add(1) }},
		{cancel: func(error) { canceled[1].Add(1) }},
	}
	var reads atomic.Int32
	g.readHeap = func() (uint64, uint64) {
		if reads.Add(1) == 1 {
			g.add(runs[1]) // starts while the first look reads the heap
		}
		return 2, 2
	}
	g.collect = func() {}
	// After each look the guard waits for the test to read what it did
	// (else the next look, at once since the heap stays over the limit,
	// could interrupt the late run before the first assertion reads it).
	looks, resume := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	defer close(done)
	g.looked = func() {
		select {
		case looks <- struct{}{}:
			select {
			case <-resume:
			case <-done:
			}
		case <-done:
		}
	}
	g.add(runs[0])
	go g.loop(done)

	<-looks
	assert.Equal(t, int32(1), canceled[0].Load(), "the run the look saw is interrupted")
	assert.Equal(t, int32(0), canceled[1].Load(), "the late run is left to the next look")
	resume <- struct{}{}
	<-looks
	assert.Equal(t, int32(1), canceled[1].Load(), "the next look interrupts it")
	g.remove(runs[0])
	g.remove(runs[1])
}
