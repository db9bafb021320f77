package worker

import (
	"sync"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A workunit's console lines stream to the tracker while it runs
// (wire.Print), in batches: a batch goes streamDelay after its first line,
// or at once when it holds streamBytes. The lines a worker streamed are
// left out of the workunit's Done or Failed, whose console holds the rest:
// a workunit that ends before its first batch is due streams nothing, and
// its report is what it was without streaming. What streams is bounded by
// the engine's console bound (Options.Engine.MaxConsoleBytes, at most a
// quarter of the tracker's frame): the lines past it are dropped and the
// last line of the report says how many.
const (
	// streamDelay is how long a line waits for others to go with it.
	streamDelay = 100 * time.Millisecond
	// streamBytes is the text a batch holds before it goes at once.
	streamBytes = 32 << 10
)

// liveConsole batches the console lines of the workunit that runs in one
// slot and sends them (a client.Print per batch). The worker takes one
// from its pool for each workunit (startLive) and puts it back at the
// end (endLive): a workunit that prints nothing costs no allocation and
// sends nothing. It is safe for concurrent use: the workunit prints on
// its slot's goroutine, the timer sends on its own.
type liveConsole struct {
	printFn func(workunit.Level, string) // print, made once
	timer   *time.Timer

	mu    sync.Mutex
	send  func(wire.Lease, []wire.Line) // client.Print
	lease wire.Lease
	buf   []wire.Line
	bytes int
	sent  int  // lines sent for this lease
	armed bool // the timer is set for the lines in buf
	open  bool // between startLive and end
	delay time.Duration
	now   func() time.Time
}

// newLiveConsole returns a liveConsole whose batches wait delay.
func newLiveConsole(delay time.Duration) *liveConsole {
	s := &liveConsole{delay: delay, now: time.Now}
	s.printFn = s.print
	s.timer = time.AfterFunc(time.Hour, s.tick)
	s.timer.Stop()
	return s
}

// start makes s stream the lines of lease with send.
func (s *liveConsole) start(send func(wire.Lease, []wire.Line), lease wire.Lease) {
	s.mu.Lock()
	s.send, s.lease, s.sent, s.open = send, lease, 0, true
	s.mu.Unlock()
}

// livePool holds the worker's liveConsoles, one per slot at most in use.
type livePool struct{ p sync.Pool }

func (lp *livePool) get(send func(wire.Lease, []wire.Line), lease wire.Lease) *liveConsole {
	s, _ := lp.p.Get().(*liveConsole)
	if s == nil {
		s = newLiveConsole(streamDelay)
	}
	s.start(send, lease)
	return s
}

// put ends s, if its workunit did not (one handed back unfinished), and
// keeps it for the next.
func (lp *livePool) put(s *liveConsole) {
	s.end(nil)
	lp.p.Put(s)
}

// print is the engine's Request.Print: it adds a line to the batch, and
// sends the batch when it is full, else sets the timer for it.
func (s *liveConsole) print(level workunit.Level, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return
	}
	s.buf = append(s.buf, wire.Line{Level: level, Text: text, Time: s.now()})
	s.bytes += len(text)
	if s.bytes >= streamBytes {
		s.flushLocked()
		return
	}
	if !s.armed {
		s.armed = true
		s.timer.Reset(s.delay)
	}
}

// tick sends the batch the timer was set for. A tick late from an earlier
// workunit sends the current batch early, which does no harm.
func (s *liveConsole) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open && len(s.buf) > 0 {
		s.flushLocked()
	}
}

func (s *liveConsole) flushLocked() {
	if s.armed {
		s.armed = false
		s.timer.Stop()
	}
	if len(s.buf) == 0 {
		return
	}
	s.send(s.lease, s.buf)
	s.sent += len(s.buf)
	s.buf, s.bytes = nil, 0 // the message holds the lines now
}

// end stops streaming and returns the console the workunit's report
// carries: all of it when nothing streamed, else the lines after those
// sent (those still in the batch, and the engine's last line about
// dropped output, if any).
func (s *liveConsole) end(console workunit.Console) workunit.Console {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = false
	if s.armed {
		s.armed = false
		s.timer.Stop()
	}
	clear(s.buf)
	s.buf, s.bytes, s.send = s.buf[:0], 0, nil
	if s.sent == 0 {
		return console
	}
	lines, err := console.Lines()
	if err != nil || s.sent >= len(lines) {
		return nil
	}
	return workunit.EncodeConsole(lines[s.sent:])
}

// startLive returns the liveConsole of a workunit about to run.
func (w *worker) startLive(a *client.Assignment) *liveConsole {
	return w.live.get(w.c.Print, a.Lease())
}
