package worker

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// sink records what a liveConsole sends, and signals each batch.
type sink struct {
	mu      sync.Mutex
	batches [][]wire.Line
	leases  []wire.Lease
	sig     chan struct{}
}

func newSink() *sink { return &sink{sig: make(chan struct{}, 16)} }

func (k *sink) send(l wire.Lease, lines []wire.Line) {
	k.mu.Lock()
	k.batches = append(k.batches, lines)
	k.leases = append(k.leases, l)
	k.mu.Unlock()
	k.sig <- struct{}{}
}

func (k *sink) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.batches)
}

func consoleOf(lines ...workunit.ConsoleLine) workunit.Console { return workunit.EncodeConsole(lines) }

// A workunit that prints nothing sends nothing, and its report's console
// is the engine's, as it was.
func TestLiveConsole_Silent(t *testing.T) {
	k := newSink()
	s := newLiveConsole(time.Hour)
	s.start(k.send, wire.Lease{Token: 1})
	assert.Nil(t, s.end(nil))
	assert.Zero(t, k.count())
}

// Lines of a workunit that ends before its batch is due all go with its
// report: nothing streams.
func TestLiveConsole_EndsBeforeTheBatch(t *testing.T) {
	k := newSink()
	s := newLiveConsole(time.Hour)
	s.start(k.send, wire.Lease{Token: 1})
	s.print(workunit.LevelLog, "a")
	s.print(workunit.LevelError, "b")
	c := consoleOf(workunit.ConsoleLine{Level: workunit.LevelLog, Text: "a"}, workunit.ConsoleLine{Level: workunit.LevelError, Text: "b"})
	assert.Equal(t, c, s.end(c))
	assert.Zero(t, k.count())
}

// A batch goes once its delay has passed, with each line's level and
// time; the report then holds only the lines after it.
func TestLiveConsole_BatchAfterDelay(t *testing.T) {
	k := newSink()
	s := newLiveConsole(time.Millisecond)
	at := time.UnixMilli(1767225600123)
	s.now = func() time.Time { return at }
	lease := wire.Lease{Key: workunit.Key{1}, Token: 7}
	s.start(k.send, lease)
	s.print(workunit.LevelLog, "first")
	s.print(workunit.LevelWarn, "second")
	select {
	case <-k.sig:
	case <-time.After(10 * time.Second):
		t.Fatal("no batch was sent")
	}
	require.Equal(t, 1, k.count())
	assert.Equal(t, lease, k.leases[0])
	assert.Equal(t, []wire.Line{{Level: workunit.LevelLog, Text: "first", Time: at}, {Level: workunit.LevelWarn, Text: "second", Time: at}}, k.batches[0])

	s.print(workunit.LevelLog, "third") // its batch not due yet, or sent: either way, never twice
	all := consoleOf(
		workunit.ConsoleLine{Level: workunit.LevelLog, Text: "first"},
		workunit.ConsoleLine{Level: workunit.LevelWarn, Text: "second"},
		workunit.ConsoleLine{Level: workunit.LevelLog, Text: "third"},
		workunit.ConsoleLine{Level: workunit.LevelWarn, Text: "[riot: 2 lines (20 bytes) of console output dropped past the limit of 100 bytes]"},
	)
	rest, err := s.end(all).Lines()
	require.NoError(t, err)
	streamed := 0
	for _, b := range k.batches {
		streamed += len(b)
	}
	want, _ := all.Lines()
	assert.Equal(t, want[streamed:], rest, "the report holds every line not streamed, the note about dropped lines last")
}

// A batch that holds streamBytes goes at once, without waiting.
func TestLiveConsole_BatchBySize(t *testing.T) {
	k := newSink()
	s := newLiveConsole(time.Hour)
	s.start(k.send, wire.Lease{Token: 1})
	line := strings.Repeat("x", 1000)
	n := 0
	for k.count() == 0 {
		s.print(workunit.LevelLog, line)
		n++
		require.LessOrEqual(t, n, streamBytes/1000+1)
	}
	assert.Equal(t, (streamBytes+999)/1000, n)
	assert.Len(t, k.batches[0], n)
	// After end, nothing more is sent, and a late print is dropped.
	s.end(nil)
	s.print(workunit.LevelLog, "late")
	s.tick()
	assert.Equal(t, 1, k.count())
}

// The pool hands a liveConsole over clean: a workunit handed back
// unfinished (put without end) leaves nothing for the next one.
func TestLivePool_Reuse(t *testing.T) {
	k := newSink()
	var lp livePool
	s := lp.get(k.send, wire.Lease{Token: 1})
	s.print(workunit.LevelLog, "unfinished")
	lp.put(s)
	s = lp.get(k.send, wire.Lease{Token: 2})
	c := consoleOf(workunit.ConsoleLine{Level: workunit.LevelLog, Text: "mine"})
	s.print(workunit.LevelLog, "mine")
	assert.Equal(t, c, s.end(c))
	lp.put(s)
	assert.Zero(t, k.count())
}

// The trivial path costs no allocation: a workunit that prints nothing
// takes a liveConsole from the pool and puts it back, and that is all.
func TestLivePool_SilentAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	var lp livePool
	send := func(wire.Lease, []wire.Line) { t.Error("sent for a silent workunit") }
	lp.put(lp.get(send, wire.Lease{}))
	allocs := testing.AllocsPerRun(1000, func() {
		s := lp.get(send, wire.Lease{Token: 1})
		_ = s.end(nil)
		lp.put(s)
	})
	assert.LessOrEqual(t, allocs, 0.01)
}
