package job

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// jobUI shows a job script's work on stderr: each workunit's console lines
// (log, info and debug on stdout), as they stream while it runs and as
// they come with its outcome, prefixed with its worker's name and short
// key, and, when stderr is a terminal (or with
// --progress), a progress bar: done/total, rate, ETA and workers busy,
// fitted to the terminal's width, which ends with a one-line summary. It
// says when the connection to the tracker is lost, and when it is back. It
// implements master.ScriptEvents; it is safe for concurrent use.
type jobUI struct {
	mu sync.Mutex
	w  io.Writer
	// out is where workunits' log, info and debug lines go (the job's
	// stdout); warn and error go to w.
	out    io.Writer
	bar    bool
	width  int // the bar's width, at most
	total  int
	done   int
	failed int
	start  time.Time
	drawn  bool
	closed bool
	last   time.Time
	// cols returns the terminal's width in columns, 0 when unknown; nil
	// when there is no terminal.
	cols func() int
	// connected reports whether the connection to the tracker is up; nil
	// when it cannot go away (the embedded default). lost is when it was
	// found down, zero while it is up.
	connected func() bool
	lost      time.Time
	// workers reports what the tracker says of its workers; nil when
	// nothing can be known.
	workers func() workerStats
	// hints, when set, has the UI say once on w, each, when work cannot
	// go on: work waits and no worker is connected (without a bar: the bar
	// says so itself), work that needs GPUs waits and no connected worker
	// has that many, the script waits for work that workers took. tracker is the
	// address Options.Tracker names, "" for the embedded default; state
	// is what the connections say of the script.
	hints                     bool
	tracker                   string
	state                     *scriptState
	noWorkers, noGPU, ownWork hint
	stop                      chan struct{}
	wg                        sync.WaitGroup
}

// workerStats is what the tracker's status says of its workers: their
// busy slots, their slots and their GPUs, and the most GPUs one of them
// has; ok is false when it could not be read.
type workerStats struct {
	busy, slots, gpus, maxGPUs int
	ok                         bool
}

// hintAfter is how long a hint's condition holds (work waits with no
// worker connected, ...) before the UI says so.
const hintAfter = 5 * time.Second

// hint is one of the UI's hints: since when its condition holds, and
// whether it was said.
type hint struct {
	since time.Time
	said  bool
}

// due notes whether the hint's condition holds at now, and reports whether
// the hint is to be said now: it has held for hintAfter, and the hint was
// not said before.
func (h *hint) due(holds bool, now time.Time) bool {
	if h.said || !holds {
		h.since = time.Time{}
		return false
	}
	if h.since.IsZero() {
		h.since = now
		return false
	}
	if now.Sub(h.since) < hintAfter {
		return false
	}
	h.said = true
	return true
}

// uiOptions are newJobUI's: what jobUI's fields of the same names say.
type uiOptions struct {
	// stdout receives workunits' log, info and debug lines; nil: w.
	stdout     io.Writer
	bar, hints bool
	tracker    string
	workers    func() workerStats
	state      *scriptState
	cols       func() int
	connected  func() bool
}

func newJobUI(w io.Writer, o uiOptions) *jobUI {
	out := o.stdout
	if out == nil {
		out = w
	}
	u := &jobUI{w: w, out: out, bar: o.bar, width: 24, start: time.Now(), workers: o.workers,
		hints: o.hints, tracker: o.tracker, state: o.state, cols: o.cols, connected: o.connected, stop: make(chan struct{})}
	if u.bar || u.hints || u.connected != nil {
		u.wg.Add(1)
		go u.tick()
	}
	return u
}

// tick redraws the bar twice a second, so that the rate and ETA move while
// nothing finishes, and watches for work that cannot go on.
func (u *jobUI) tick() {
	defer u.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			u.checkConnection(now)
			u.mu.Lock()
			if u.total > 0 {
				u.drawLocked(true)
			}
			u.mu.Unlock()
			u.checkHints(now)
		case <-u.stop:
			return
		}
	}
}

// checkHints says each hint once, when its condition has held for
// hintAfter:
//   - workunits are outstanding and no worker is connected (on a tracker,
//     without a bar);
//   - workunits that need GPUs are not finished, and workers are
//     connected but none has that many (the tracker accepts such work
//     and keeps it waiting for a worker that has: nothing else says so);
//   - the script waits in client.waitForWork, and workers ran all the
//     workunits it submitted (so none is left for it to take).
func (u *jobUI) checkHints(now time.Time) {
	if !u.hints {
		return
	}
	var ws workerStats
	if u.workers != nil {
		ws = u.workers()
	}
	var gpuWork, gpuNeed int
	var taking bool
	if u.state != nil {
		gpuWork, gpuNeed, taking = u.state.get(ws.maxGPUs)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	outstanding := u.total - u.done
	var lines []string
	if u.noWorkers.due(u.tracker != "" && !u.bar && outstanding > 0 && ws.ok && ws.slots == 0, now) {
		lines = append(lines, fmt.Sprintf("riot: %s wait and no worker is connected to the tracker; start one with: riot-worker %s "+
			"(with the tracker's worker token in $RIOT_TOKEN, if it has tokens)", Workunits(outstanding), u.tracker))
	}
	if u.noGPU.due(gpuWork > 0 && ws.ok && ws.slots > 0, now) {
		switch {
		case ws.maxGPUs > 0 && u.tracker != "":
			lines = append(lines, fmt.Sprintf("riot: %d workunits need up to %d GPUs and wait, and no worker connected to the tracker has that many "+
				"(the most one has is %d); they run when a worker with enough connects: riot-worker %s",
				gpuWork, gpuNeed, ws.maxGPUs, u.tracker))
		case ws.maxGPUs > 0:
			lines = append(lines, fmt.Sprintf("riot: %d workunits need up to %d GPUs and wait, and the local worker has %d; "+
				"run the job with --tracker HOST, and riot-worker HOST on machines with enough GPUs",
				gpuWork, gpuNeed, ws.maxGPUs))
		case u.tracker != "":
			lines = append(lines, fmt.Sprintf("riot: %d workunits need GPUs and wait, and no worker connected to the tracker has any; "+
				"start one on a machine with a GPU and its CUDA driver: riot-worker %s", gpuWork, u.tracker))
		default:
			lines = append(lines, fmt.Sprintf("riot: %d workunits need GPUs and wait, and the local worker has none "+
				"(no CUDA driver here, or --no-gpu); run the job with --tracker HOST, and riot-worker HOST on machines with GPUs", gpuWork))
		}
	}
	if u.ownWork.due(taking && u.total > 0 && outstanding <= 0, now) {
		lines = append(lines, fmt.Sprintf("riot: the script waits in client.waitForWork, but workers ran all %d workunits it submitted, "+
			"so none is left for it to take; a script that takes its own workunits needs a tracker without workers "+
			"(riot-worker eval --workers 0 for the embedded default)", u.total))
	}
	if len(lines) == 0 {
		return
	}
	u.clearLocked()
	for _, l := range lines {
		fmt.Fprintln(u.w, l)
	}
	u.drawLocked(true)
}

// checkConnection says, on a line of its own, when the connection to the
// tracker is found lost, and when it is back; while it is lost, the bar
// says so in place of the workers.
func (u *jobUI) checkConnection(now time.Time) {
	if u.connected == nil {
		return
	}
	up := u.connected()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	var line string
	switch {
	case !up && u.lost.IsZero():
		u.lost = now
		line = fmt.Sprintf("riot: lost the connection to the tracker at %s; reconnecting "+
			"(the work goes on there, and the job collects its results once the tracker is back)", u.tracker)
	case up && !u.lost.IsZero():
		line = fmt.Sprintf("riot: reconnected to the tracker at %s after %s", u.tracker, formatETA(now.Sub(u.lost)))
		u.lost = time.Time{}
	default:
		return
	}
	u.clearLocked()
	fmt.Fprintln(u.w, line)
	u.drawLocked(true)
}

// scriptState is what the job's connections tell the UI of the script,
// for its hints: how many of the workunits it submitted that need GPUs
// are not finished, by GPU count, and whether it waits in
// client.waitForWork. It is safe for concurrent use.
type scriptState struct {
	mu       sync.Mutex
	gpuWork  map[int]int // unfinished workunits by the GPUs they need
	takers   int         // calls waiting for work
	memoized int         // submissions the tracker answered with a result it had
}

// addMemoized counts one more submission answered from memory.
func (s *scriptState) addMemoized() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memoized++
}

// fromMemory returns how many submissions the tracker answered with a
// result it had.
func (s *scriptState) fromMemory() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memoized
}

// addGPUWork counts d more unfinished workunits that need gpus GPUs (d <
// 0: fewer).
func (s *scriptState) addGPUWork(gpus, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gpuWork == nil {
		s.gpuWork = make(map[int]int)
	}
	if s.gpuWork[gpus] += d; s.gpuWork[gpus] <= 0 {
		delete(s.gpuWork, gpus)
	}
}

// addTaker counts d more calls of the script waiting for work (d < 0:
// fewer).
func (s *scriptState) addTaker(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takers += d
}

// get returns how many unfinished workunits need more GPUs than most (and
// the most any of them needs), and whether the script waits for work.
func (s *scriptState) get(most int) (gpuWork, need int, taking bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for g, n := range s.gpuWork {
		if g > most {
			gpuWork += n
			need = max(need, g)
		}
	}
	return gpuWork, need, s.takers > 0
}

// Submitted implements master.ScriptEvents.
func (u *jobUI) Submitted(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total += n
	u.drawLocked(false)
}

// Finished implements master.ScriptEvents: the workunit's console lines,
// then the bar. After Close (the script has ended) it shows nothing: a
// workunit the script did not wait for has nobody to show it to.
func (u *jobUI) Finished(o *workunit.Outcome) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.done++
	if o.Status == workunit.StatusError {
		u.failed++
	}
	if len(o.Console) > 0 {
		u.clearLocked()
		printConsole(u.out, u.w, consolePrefix(o.Worker, o.Key), o.Console)
	}
	u.drawLocked(len(o.Console) > 0)
}

// Printed shows console lines of a running workunit as they stream
// (client.Options.OnPrint), as Finished shows those of its outcome. After
// Close it shows nothing.
func (u *jobUI) Printed(p *wire.Printed) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.clearLocked()
	printPrinted(u.out, u.w, p)
	u.drawLocked(true)
}

// counts returns how many workunits the script handed out (total) and
// how many of their results it has taken (done).
func (u *jobUI) counts() (done, total int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.done, u.total
}

// Writer wraps w, the script's own stdout or stderr, so that what it
// writes does not run into the bar.
func (u *jobUI) Writer(w io.Writer) io.Writer {
	if !u.bar {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.clearLocked()
		n, err := w.Write(p)
		u.drawLocked(true)
		return n, err
	})
}

// Close removes the bar, stops redrawing and, when there was a bar and
// work, says in one line what became of the work (summaryLocked).
func (u *jobUI) Close() {
	close(u.stop)
	u.wg.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.clearLocked()
	if u.bar && u.total > 0 {
		fmt.Fprintln(u.w, u.summaryLocked(time.Now()))
	}
	u.bar = false
	u.closed = true
}

// summaryLocked is the line that ends the bar: how many workunits
// finished, in how long, how many failed, and how many results the
// tracker had already (memoized: nothing ran for them).
func (u *jobUI) summaryLocked(now time.Time) string {
	var b strings.Builder
	b.WriteString("riot: ")
	if u.done < u.total {
		fmt.Fprintf(&b, "%d of ", u.done)
	}
	fmt.Fprintf(&b, "%s finished in %s", Workunits(u.total), formatElapsed(now.Sub(u.start)))
	if u.failed > 0 {
		fmt.Fprintf(&b, ", %d failed", u.failed)
	}
	if u.state != nil {
		switch n := u.state.fromMemory(); {
		case n > 0 && n == u.total:
			b.WriteString(", all from memory (the tracker had their results; nothing ran)")
		case n > 0:
			fmt.Fprintf(&b, ", %d from memory (the tracker had their results)", n)
		}
	}
	return b.String()
}

// formatElapsed is d rounded for a person: 850ms, 4.2s, 3m07s.
func formatElapsed(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return formatETA(d)
}

func (u *jobUI) clearLocked() {
	if u.drawn {
		fmt.Fprint(u.w, "\r\x1b[2K")
		u.drawn = false
	}
}

// drawLocked draws the bar, at most ten times a second unless forced.
func (u *jobUI) drawLocked(force bool) {
	if !u.bar {
		return
	}
	if u.done >= u.total {
		// Nothing outstanding: no bar.
		u.clearLocked()
		return
	}
	now := time.Now()
	if !force && u.drawn && now.Sub(u.last) < 100*time.Millisecond && u.done < u.total {
		return
	}
	u.last = now
	fmt.Fprint(u.w, "\r\x1b[2K"+u.lineLocked(now))
	u.drawn = true
}

// barPart is a piece of the bar's line after the bar itself; drop ranks
// which go first when the line is too wide for the terminal (highest
// first; 0: never).
type barPart struct {
	text string
	drop int
}

// minBar is the narrowest bar drawn: below it, the line goes without.
const minBar = 5

// lineLocked is the bar's line: the bar, done/total, failures, rate, ETA,
// and the workers (or a lost tracker), fitted to the terminal's width.
// The last column stays empty: writing it makes some terminals wrap, and
// the next redraw would then leave the line behind.
func (u *jobUI) lineLocked(now time.Time) string {
	parts := []barPart{{text: fmt.Sprintf("%d/%d", u.done, u.total)}}
	if u.failed > 0 {
		parts = append(parts, barPart{fmt.Sprintf(" (%d failed)", u.failed), 1})
	}
	if elapsed := now.Sub(u.start).Seconds(); elapsed > 0 && u.done > 0 {
		rate := float64(u.done) / elapsed
		parts = append(parts, barPart{fmt.Sprintf("  %s/s", formatRate(rate)), 4})
		if u.done < u.total {
			eta := time.Duration(float64(u.total-u.done) / rate * float64(time.Second))
			parts = append(parts, barPart{"  ETA " + formatETA(eta), 2})
		}
	}
	switch {
	case !u.lost.IsZero():
		parts = append(parts, barPart{fmt.Sprintf("  tracker lost for %s; reconnecting", formatETA(now.Sub(u.lost))), 0})
	case u.workers != nil:
		switch ws := u.workers(); {
		case ws.ok && ws.slots == 0:
			parts = append(parts, barPart{"  no workers connected", 3})
		case ws.ok:
			parts = append(parts, barPart{fmt.Sprintf("  %d/%d slots busy", ws.busy, ws.slots), 3})
		}
	}
	limit := 0 // no limit
	if u.cols != nil {
		if c := u.cols(); c > 1 {
			limit = c - 1
		}
	}
	tailLen := func() int {
		n := 0
		for _, p := range parts {
			n += len(p.text)
		}
		return n
	}
	// Drop parts, least needed first, until the tail leaves room for the
	// narrowest bar; then give the bar what is left, up to its width.
	for limit > 0 && tailLen()+minBar+3 > limit {
		worst := -1
		for i, p := range parts {
			if p.drop > 0 && (worst < 0 || p.drop > parts[worst].drop) {
				worst = i
			}
		}
		if worst < 0 {
			break
		}
		parts = slices.Delete(parts, worst, worst+1)
	}
	width := u.width
	if limit > 0 {
		width = min(width, limit-tailLen()-3)
	}
	var b strings.Builder
	if width >= minBar {
		frac := 0.0
		if u.total > 0 {
			frac = float64(u.done) / float64(u.total)
		}
		fill := int(frac * float64(width))
		b.WriteString("[" + strings.Repeat("=", fill))
		if fill < width {
			b.WriteString(">" + strings.Repeat(" ", width-fill-1))
		}
		b.WriteString("] ")
	}
	for _, p := range parts {
		b.WriteString(p.text)
	}
	line := b.String()
	if limit > 0 && len(line) > limit {
		line = line[:limit]
	}
	return line
}

func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

func formatETA(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// writerFunc adapts a function to io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
