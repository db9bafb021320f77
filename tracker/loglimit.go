package tracker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Lines about connections are bounded: a flood of hellos (70,000 in 40 s
// once) must not become a flood of log lines.
const (
	// logInterval is the interval over which lines of one kind are
	// counted.
	logInterval = 10 * time.Second
	// logBurst is how many lines of one kind are logged one by one in an
	// interval; the rest are logged at debug level only, and counted in
	// one summary line at the end of the interval.
	logBurst = 10
)

// logLimiter logs at most burst lines of each kind (message) per
// interval at their level. Past that, lines of the kind go to the debug
// level, and one summary line at the kind's level says how many there
// were (at the first line of the kind after the interval, or at the first
// flush after it, which the loop calls on each tick). Safe for concurrent
// use.
type logLimiter struct {
	log      *slog.Logger
	interval time.Duration
	burst    int

	mu    sync.Mutex
	kinds map[string]*logKind
}

// logKind counts the lines of one message in the current interval.
type logKind struct {
	level      slog.Level
	start      time.Time // the interval's start
	logged     int       // lines logged one by one in it
	suppressed int       // lines only at debug level in it
}

func newLogLimiter(log *slog.Logger, interval time.Duration, burst int) *logLimiter {
	return &logLimiter{log: log, interval: interval, burst: burst, kinds: make(map[string]*logKind)}
}

// logAt logs msg with attrs at level, as of now, unless the kind has had
// its burst in the current interval.
func (l *logLimiter) logAt(now time.Time, level slog.Level, msg string, attrs ...any) {
	l.mu.Lock()
	k := l.kinds[msg]
	if k == nil {
		k = &logKind{start: now}
		l.kinds[msg] = k
	}
	k.level = level
	var summary func()
	if now.Sub(k.start) >= l.interval {
		summary = l.endLocked(msg, k, now)
	}
	quiet := k.logged >= l.burst
	if quiet {
		k.suppressed++
	} else {
		k.logged++
	}
	l.mu.Unlock()
	if summary != nil {
		summary()
	}
	if quiet {
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, msg, attrs...)
}

// flush ends the intervals that have passed by now, logging their
// summaries.
func (l *logLimiter) flush(now time.Time) {
	var out []func()
	l.mu.Lock()
	for msg, k := range l.kinds {
		if now.Sub(k.start) < l.interval {
			continue
		}
		if f := l.endLocked(msg, k, now); f != nil {
			out = append(out, f)
		}
		if k.logged == 0 {
			delete(l.kinds, msg) // quiet: forget it
		}
	}
	l.mu.Unlock()
	for _, f := range out {
		f()
	}
}

// endLocked starts a new interval for kind k at now, and returns the
// summary to log for the one that ended, if lines were held back in it.
func (l *logLimiter) endLocked(msg string, k *logKind, now time.Time) func() {
	n, level, since := k.suppressed, k.level, now.Sub(k.start)
	k.start, k.logged, k.suppressed = now, 0, 0
	if n == 0 {
		return nil
	}
	return func() {
		l.log.Log(context.Background(), level, msg+": more, not logged one by one (--log-level debug logs each)",
			"more", n, "in", since.Round(time.Millisecond))
	}
}
