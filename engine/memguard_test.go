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
