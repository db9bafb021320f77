package tracker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A worker's print goes at once to every master that watches the key,
// with the worker's name, and to no other; a print for a lease the worker
// does not hold goes nowhere. The Done after it carries only the lines
// not streamed, and the masters get them in the Finished, after the
// printed ones.
func TestServer_Print_ToWatchers(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m1 := master(t, tr, "m1")
	m2 := master(t, tr, "m2")
	other := master(t, tr, "other")
	key, _ := m1.submit("sleep(1)")
	m2.send(&wire.Watch{Req: 5, Keys: []workunit.Key{key}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 2 })
	w := worker(t, tr, "alfred", 1)
	a := recv[*wire.Assign](w)

	at := time.UnixMilli(1767225600123).UTC()
	w.send(&wire.Print{Key: a.Key, Token: a.Token + 1, Lines: []wire.Line{{Level: workunit.LevelLog, Text: "not my lease", Time: at}}})
	w.send(&wire.Print{Key: key, Token: a.Token, Lines: []wire.Line{
		{Level: workunit.LevelLog, Text: "epoch 1", Time: at},
		{Level: workunit.LevelError, Text: "careful", Time: at.Add(time.Millisecond)},
	}})
	for _, m := range []*wsClient{m1, m2} {
		p := recv[*wire.Printed](m)
		assert.Equal(t, key, p.Key)
		assert.Equal(t, "alfred", p.Worker)
		assert.Zero(t, p.Missed)
		assert.Equal(t, []wire.Line{
			{Level: workunit.LevelLog, Text: "epoch 1", Time: at},
			{Level: workunit.LevelError, Text: "careful", Time: at.Add(time.Millisecond)},
		}, p.Lines)
	}
	assert.Empty(t, other.barrier(), "a master that does not watch the key hears nothing")

	tail := workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "done"}})
	w.send(&wire.Done{Key: key, Token: a.Token, Result: result(1), Console: tail})
	for _, m := range []*wsClient{m1, m2} {
		f := recv[*wire.Finished](m)
		assert.Equal(t, tail, f.Console)
	}
	// After the lease: its prints go nowhere.
	w.send(&wire.Print{Key: key, Token: a.Token, Lines: []wire.Line{{Level: workunit.LevelLog, Text: "late", Time: at}}})
	_ = w.barrier()
	assert.Empty(t, m1.barrier())
}

// A lease that streams more than the tracker's bound (half a frame) is
// cut: the prints past it are not passed on.
func TestServer_Print_BoundPerLease(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.Limits.MaxFrameBytes = 64 << 10 }))
	m := master(t, tr, "m")
	m.submit("1")
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	big := string(make([]byte, 10<<10))
	for range 5 { // 50 KiB in all: past the bound of 32 KiB
		w.send(&wire.Print{Key: a.Key, Token: a.Token, Lines: []wire.Line{{Level: workunit.LevelLog, Text: big}}})
	}
	_ = w.barrier()
	got := 0
	for _, msg := range m.barrier() {
		if _, ok := msg.(*wire.Printed); ok {
			got++
		}
	}
	assert.Equal(t, 3, got, "10 KiB prints under a bound of 32 KiB: three pass")
}
