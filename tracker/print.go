package tracker

import (
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Console lines that stream while a workunit runs (wire.Print) go from
// the loop to the masters that watch the workunit's key at once, as
// wire.Printed, and are kept nowhere: the table counts what each lease
// printed, and a master's queue takes them only while it has room.
const (
	// maxPrintQueueBytes bounds a master's queue as far as console lines
	// go: past it (or past a quarter of --queue-bytes, whichever is
	// less), lines for that master are dropped and counted (Printed's
	// missed), and its connection stays.
	maxPrintQueueBytes = 16 << 20
	// lineBytes is what a line costs beside its text, in the bounds.
	lineBytes = 16
)

// printBytes is what lines cost in the bounds: their texts and levels,
// and lineBytes each.
func printBytes(lines []wire.Line) int {
	n := 0
	for i := range lines {
		n += len(lines[i].Text) + len(lines[i].Level) + lineBytes
	}
	return n
}

// maxLeasePrintBytes bounds what one lease streams in all, in
// printBytes: twice the most console a worker keeps of a workunit (a
// quarter of a frame, see worker), so that a worker that keeps to its
// bound is never cut; past it the tracker passes nothing more on.
func (l *loop) maxLeasePrintBytes() int { return l.s.opts.Limits.WithDefaults().MaxFrameBytes / 2 }

// print passes m's lines on to the masters that watch its key, when c
// holds the lease; lines of a lease c does not hold (it ended, it was
// taken back) are dropped.
func (l *loop) print(c *conn, wid table.WorkerID, m *wire.Print) {
	if len(m.Lines) == 0 {
		return
	}
	var ok bool
	l.printTo, ok = l.tab.PrintWatchers(wid, m.Key, table.Token(m.Token), printBytes(m.Lines), l.maxLeasePrintBytes(), l.printTo[:0])
	if !ok {
		return
	}
	l.keepPrinted(c, m)
	most := min(l.s.opts.QueueBytes/4, maxPrintQueueBytes)
	for _, id := range l.printTo {
		mc := l.conns[uint64(id)]
		if mc == nil {
			continue
		}
		p := &wire.Printed{Key: m.Key, Worker: c.name, Lines: m.Lines, Missed: mc.printMissed}
		if !mc.offer(p, most) {
			mc.printMissed += len(m.Lines)
			continue
		}
		mc.printMissed = 0
		if !mc.touched {
			mc.touched = true
			l.touched = append(l.touched, mc)
		}
	}
	clear(l.printTo)
}

// keepPrinted keeps m's lines with the lease they came for, up to
// maxRecentConsole, for the run's console on the status pages and in
// riot-worker logs (finishedRun): the worker's report holds only the lines
// it did not stream. What a worker keeps is bounded by its window.
func (l *loop) keepPrinted(c *conn, m *wire.Print) {
	b := c.printed[m.Token]
	if b == nil {
		if c.printed == nil {
			c.printed = make(map[uint64]*workunit.ConsoleBuilder)
		}
		b = new(workunit.ConsoleBuilder)
		c.printed[m.Token] = b
	}
	for i := range m.Lines {
		ln := &m.Lines[i]
		if b.Size()+len(ln.Text)+lineBytes > maxRecentConsole {
			return
		}
		b.Add(ln.Level, ln.Text)
	}
}

// runConsole returns the console of the run of lease token that c
// reports with console: the lines it streamed, then console's, when it
// streamed any; and forgets the streamed lines.
func (c *conn) runConsole(token uint64, console workunit.Console) workunit.Console {
	b := c.printed[token]
	if b == nil {
		return console
	}
	delete(c.printed, token)
	lines, err := console.Lines()
	if err != nil {
		return b.Console()
	}
	for _, ln := range lines {
		if b.Size()+len(ln.Text)+lineBytes > maxRecentConsole {
			break
		}
		b.Add(ln.Level, ln.Text)
	}
	return b.Console()
}
