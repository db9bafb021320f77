package tracker

import (
	"context"
	"log/slog"
	"time"

	"github.com/riot-go/riot/tracker/store"
)

// Jobs are written to the store (when it keeps them: store.JobStore) so
// that the status pages show them after a restart. They change rarely (a
// job starts, ends, or is forgotten), and nothing depends on them: the
// loop hands what changed to a goroutine of its own, one write at a time,
// at its next tick, and never waits for it, but at the end (drainJobs).

// jobsWrite is one write of jobs, and how it went.
type jobsWrite struct {
	jobs   []store.Job
	forget []string
	err    error
}

// jobWriteTimeout bounds one write of jobs.
const jobWriteTimeout = 10 * time.Second

// saveJobs starts the write of the jobs that changed, unless one is under
// way or the store keeps none.
func (l *loop) saveJobs() {
	js, ok := l.s.st.(store.JobStore)
	if !ok || l.savingJobs || (len(l.act.dirty) == 0 && len(l.act.forget) == 0) {
		return
	}
	w := jobsWrite{}
	w.jobs, w.forget = l.act.takeDirty()
	l.savingJobs = true
	go func() {
		ctx, cancel := context.WithTimeout(l.s.baseCtx, jobWriteTimeout)
		defer cancel()
		w.err = js.PutJobs(ctx, w.jobs, w.forget)
		l.jobsDone <- w
	}()
}

// jobsSaved takes the outcome of a write: a failed one is tried again at
// a later tick, with what changed since.
func (l *loop) jobsSaved(w jobsWrite) {
	l.savingJobs = false
	if w.err == nil {
		return
	}
	if l.s.fencedBy(w.err) {
		return // another tracker writes the store now: this one stops
	}
	l.s.connLog.logAt(time.Now(), slog.LevelWarn, "could not write the jobs to the store; trying again", "err", w.err)
	for _, j := range w.jobs {
		if _, ok := l.act.jobs[j.Realm]; ok {
			l.act.dirty[j.Realm] = true
		}
	}
	l.act.forget = append(l.act.forget, w.forget...)
}

// drainJobs waits for the write under way and writes what is left, as the
// loop ends.
func (l *loop) drainJobs() {
	if l.savingJobs {
		l.jobsSaved(<-l.jobsDone)
	}
	l.saveJobs()
	if l.savingJobs {
		l.jobsSaved(<-l.jobsDone)
	}
}
