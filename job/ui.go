package job

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/engine"
)

// jobUI shows a job script's work on stderr: each workunit's console lines,
// prefixed with its worker's name, and, when stderr is a terminal (or with
// --progress), a progress bar: done/total, rate, ETA and workers busy. It
// implements engine.ScriptEvents; it is safe for concurrent use.
type jobUI struct {
	mu     sync.Mutex
	w      io.Writer
	bar    bool
	width  int
	total  int
	done   int
	failed int
	start  time.Time
	drawn  bool
	closed bool
	last   time.Time
	// busy reports how many slots are busy and how many the connected
	// workers have, when the tracker can say (ok).
	busy func() (busy, slots int, ok bool)
	// hint is the tracker's address when, without a bar, the UI is to say
	// once on w that work waits and no worker is connected (idleSince:
	// since when, as seen by tick); "" for never.
	hint      string
	hinted    bool
	idleSince time.Time
	stop      chan struct{}
	wg        sync.WaitGroup
}

// noWorkersHintAfter is how long work waits with no worker connected
// before a job without a bar says so.
const noWorkersHintAfter = 5 * time.Second

func newJobUI(w io.Writer, bar bool, hint string, busy func() (int, int, bool)) *jobUI {
	u := &jobUI{w: w, bar: bar, width: 24, start: time.Now(), busy: busy, stop: make(chan struct{})}
	if !bar && busy != nil {
		u.hint = hint
	}
	if u.bar || u.hint != "" {
		u.wg.Add(1)
		go u.tick()
	}
	return u
}

// tick redraws the bar twice a second, so that the rate and ETA move while
// nothing finishes, or, without a bar, watches for work that no worker
// can take.
func (u *jobUI) tick() {
	defer u.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			u.mu.Lock()
			if u.total > 0 {
				u.drawLocked(true)
			}
			u.mu.Unlock()
			u.checkIdle(now)
		case <-u.stop:
			return
		}
	}
}

// checkIdle prints the no-workers hint once, when workunits have been
// outstanding with no worker connected for noWorkersHintAfter.
func (u *jobUI) checkIdle(now time.Time) {
	if u.hint == "" {
		return
	}
	_, slots, ok := u.busy()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.hinted || u.closed || u.done >= u.total || !ok || slots > 0 {
		u.idleSince = time.Time{}
		return
	}
	if u.idleSince.IsZero() {
		u.idleSince = now
		return
	}
	if now.Sub(u.idleSince) >= noWorkersHintAfter {
		u.hinted = true
		fmt.Fprintf(u.w, "riot: %d workunits wait and no worker is connected to the tracker; start one with: riot-worker %s\n",
			u.total-u.done, u.hint)
	}
}

// Submitted implements engine.ScriptEvents.
func (u *jobUI) Submitted(n int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total += n
	u.drawLocked(false)
}

// Finished implements engine.ScriptEvents: the workunit's console lines,
// then the bar. After Close (the script has ended) it shows nothing: a
// workunit the script did not wait for has nobody to show it to.
func (u *jobUI) Finished(o *engine.Outcome) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.done++
	if o.Status == "error" {
		u.failed++
	}
	if len(o.Console) > 0 {
		u.clearLocked()
		worker := o.Worker
		if worker == "" {
			worker = "?"
		}
		for _, l := range o.Console {
			for _, line := range strings.Split(l.Text, "\n") {
				fmt.Fprintf(u.w, "[%s] %s\n", worker, line)
			}
		}
	}
	u.drawLocked(len(o.Console) > 0)
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

// Close removes the bar and stops redrawing.
func (u *jobUI) Close() {
	close(u.stop)
	u.wg.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.clearLocked()
	u.bar = false
	u.closed = true
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

func (u *jobUI) lineLocked(now time.Time) string {
	frac := 0.0
	if u.total > 0 {
		frac = float64(u.done) / float64(u.total)
	}
	fill := int(frac * float64(u.width))
	bar := strings.Repeat("=", fill)
	if fill < u.width {
		bar += ">" + strings.Repeat(" ", u.width-fill-1)
	}
	elapsed := now.Sub(u.start).Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %d/%d", bar, u.done, u.total)
	if u.failed > 0 {
		fmt.Fprintf(&b, " (%d failed)", u.failed)
	}
	if elapsed > 0 && u.done > 0 {
		rate := float64(u.done) / elapsed
		fmt.Fprintf(&b, "  %s/s", formatRate(rate))
		if u.done < u.total {
			eta := time.Duration(float64(u.total-u.done) / rate * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", formatETA(eta))
		}
	}
	if u.busy != nil {
		switch busy, slots, ok := u.busy(); {
		case ok && slots == 0:
			b.WriteString("  no workers connected")
		case ok:
			fmt.Fprintf(&b, "  %d/%d slots busy", busy, slots)
		}
	}
	return b.String()
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
