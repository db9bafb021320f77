// Package timeline records a master's workunits and writes them as a
// Chrome trace-event file (the JSON Object Format, with "traceEvents"),
// which Perfetto (https://ui.perfetto.dev) and chrome://tracing open: what
// riot-worker eval --trace FILE writes, and what a Go master gets with a
// Recorder.
//
// A master knows, of each workunit it submitted, when it submitted it,
// when the outcome came, the worker that finished it, how long the run
// took there (Outcome.Elapsed), its status and its key; it does not know
// which of the worker's slots ran it, nor the worker's clock. So:
//
//   - each worker is a process of the trace (named for the worker), and
//     its runs are complete events ("ph":"X") of exactly Elapsed, ending
//     when the outcome came to the master, on lanes (threads "lane N")
//     packed greedily: a run goes on the worker's first lane that is free
//     at its start, and on a new lane when all of them are busy. Lanes
//     stand for slots: a worker shows no more lanes than it ran workunits
//     at once, as the master saw it, and the outcome's travel shifts each
//     run a little later than it was;
//   - the master is a process of its own ("riot master"): each
//     workunit's queue wait, from its submission to the start of its run,
//     is a complete event "wait KEY" on the master's queue lanes (packed
//     the same way), joined to its run by a flow arrow; a counter track
//     "workunits" says how many wait and how many run at each moment;
//     outcomes that no run of this job made (answered from memory, or
//     failed with no worker: canceled, workers lost, refused) are instant
//     events on the master's threads "from memory" and "no run"; and
//     workunits still unfinished when the trace was written are waits up
//     to that moment, named "unfinished KEY";
//   - every event's args carry the workunit's key, status, worker, error,
//     wait and run time, and the trace's "otherData" the counts.
//
// Timestamps are microseconds since the earliest event; displayTimeUnit
// is "ms".
package timeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/workunit"
)

// Options configures a Recorder.
type Options struct {
	// Job is the job's name, shown on the master's process and in the
	// trace's otherData. Empty: "riot master".
	Job string
}

// Recorder collects the workunits a master submits, and their outcomes,
// for WriteTo. It is safe for concurrent use.
//
// Track each Call as it is submitted; the outcome is recorded when the
// Call finishes (Call.OnFinished), or earlier when Finished or Wait is
// told of it. Outcomes reach a Call's callbacks on the client's callback
// goroutine, a moment after Call.Wait can return them: wait through
// Recorder.Wait, or tell Finished, so that what was waited for is in the
// trace when it is written right after.
type Recorder struct {
	job string
	now func() time.Time

	mu      sync.Mutex
	records []*record
	byCall  map[*client.Call]*record
}

// record is what a Recorder knows of one submission.
type record struct {
	key        workunit.Key
	submitted  time.Time
	finished   time.Time // zero: not yet
	out        *workunit.Outcome
	err        error // the outcome is not known: the submission failed, or the client ended
	fromMemory bool
}

// New returns an empty Recorder.
func New(opts Options) *Recorder {
	return &Recorder{job: opts.Job, now: time.Now, byCall: make(map[*client.Call]*record)}
}

// Track notes that k was submitted now, and records its outcome when it
// finishes. Track a Call once, right after Client.Submit (or DoWork and
// its like); a Call tracked again is ignored.
func (r *Recorder) Track(k *client.Call) {
	if k == nil {
		return
	}
	r.mu.Lock()
	if _, ok := r.byCall[k]; ok {
		r.mu.Unlock()
		return
	}
	rec := &record{key: k.Key, submitted: r.now()}
	r.byCall[k] = rec
	r.records = append(r.records, rec)
	r.mu.Unlock()
	k.OnFinished(func(out *workunit.Outcome, err error) { r.Finished(k, out, err) })
}

// Finished records the outcome of k, a tracked Call, as Call.Wait or
// Call.OnDone gave it (a failed workunit's *workunit.Error as err is an
// outcome, not an unknown one), at the time of the call. The first outcome
// recorded for a Call stands; an untracked Call is ignored.
func (r *Recorder) Finished(k *client.Call, out *workunit.Outcome, err error) {
	now := r.now()
	var werr *workunit.Error
	if out != nil && errors.As(err, &werr) {
		err = nil
		if out.Err == nil {
			o := *out
			o.Err = werr
			out = &o
		}
	}
	if out != nil && !out.Finished() {
		return // not an outcome yet
	}
	if out == nil && (err == nil || errors.Is(err, client.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return // the client or the wait ended first: still unfinished, as far as is known
	}
	fromMemory := k.FromMemory()
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.byCall[k]
	if rec == nil || !rec.finished.IsZero() {
		return
	}
	rec.finished, rec.out, rec.err, rec.fromMemory = now, out, err, fromMemory
}

// Wait is k.Wait(ctx), which it records (Finished) before it returns.
// An error of ctx's, or the client's end, records nothing: the workunit
// is not known finished.
func (r *Recorder) Wait(ctx context.Context, k *client.Call) (*workunit.Outcome, error) {
	out, err := k.Wait(ctx)
	r.Finished(k, out, err)
	return out, err
}

// snapshot copies the records, as of now.
func (r *Recorder) snapshot() ([]record, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := make([]record, len(r.records))
	for i, rec := range r.records {
		recs[i] = *rec
	}
	return recs, r.now()
}
