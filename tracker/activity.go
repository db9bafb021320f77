package tracker

import (
	"strings"
	"time"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// activity is what the tracker remembers for its status pages beyond the
// table: the jobs, the recent finished workunits (for the task stream and
// their consoles), failures grouped by message, and throughput over the
// last minutes. The loop owns it; every part is bounded.
type activity struct {
	jobs                 map[string]*job // by realm
	jobIDs               map[string]*job // by id
	recent               []recentRun     // a ring of the last maxRecent finished runs
	next                 int             // where the ring writes next
	failures             map[string]*failureGroup
	through              []throughSample // the last throughSamples samples, oldest first
	lastDone, lastFailed uint64
	lastSample           time.Time
	// changes counts what the pages show changing, so that the event
	// stream sends an update only when there is one.
	changes uint64
	// dirty holds the realms of the jobs to write to the store, forget
	// those to delete from it (see loop.saveJobs).
	dirty  map[string]bool
	forget []string
	// keepsJobs: the store keeps jobs (store.JobStore); without it,
	// nothing is noted for it.
	keepsJobs bool
}

// Bounds of the activity.
const (
	maxRecent        = 4096
	maxRecentSpec    = 64 << 10 // a recent run keeps its spec up to this size
	maxRecentConsole = 8 << 10  // and its console up to this size
	maxEndedJobs     = 1000
	keepEndedJobs    = time.Hour
	maxFailureGroups = 1000
	failureKeys      = 10
	throughEvery     = 5 * time.Second
	throughSamples   = 120 // 10 minutes
)

// job is a master's session: what one job script run or one Go program's
// client submits. Its workunits are the table's records of its realm.
type job struct {
	id, realm, name string
	master          string // the name of its last connection
	credential      string
	started, ended  time.Time
	conns           int // its live connections
	submitted       uint64
	fromMemory      uint64
	canceled        uint64
	rate            rateMeter
}

// recentRun is one finished run of a workunit, as its worker reported it.
type recentRun struct {
	key      workunit.Key
	owner    string
	worker   string
	status   workunit.Status
	end      time.Time
	elapsed  time.Duration
	console  workunit.Console
	spec     []byte // nil when larger than maxRecentSpec
	specSize int
}

// failureGroup is the failed workunits of one error name and message.
type failureGroup struct {
	name, message string
	count         int
	latest        time.Time
	keys          []failKey // newest first, at most failureKeys
	byOwner       map[string]int
}

// failKey is a failed workunit of a group, and its owner (the realm of
// its job).
type failKey struct {
	key   workunit.Key
	owner string
}

// throughSample counts the results and errors of one throughEvery.
type throughSample struct {
	t            time.Time
	done, failed uint64
}

func newActivity() *activity {
	return &activity{jobs: map[string]*job{}, jobIDs: map[string]*job{}, failures: map[string]*failureGroup{},
		dirty: map[string]bool{}}
}

// jobID returns the id of the job of realm: "j" and 12 hex digits of it.
func jobID(realm string) string {
	r := strings.TrimPrefix(realm, "r")
	if len(r) > 12 {
		r = r[:12]
	}
	return "j" + r
}

// connJob notes that connection c, past its hello, belongs to its job:
// masters' connections make their job when they come; others when they
// first submit.
func (a *activity) connJob(c *conn, now time.Time) *job {
	j := a.jobs[c.realm]
	if j == nil {
		j = &job{id: jobID(c.realm), realm: c.realm, credential: c.principal, started: now}
		a.jobs[c.realm] = j
		a.jobIDs[j.id] = j
		a.evictEnded(now)
	}
	if !c.inJob {
		c.inJob = true
		j.conns++
		j.ended = time.Time{}
	}
	j.name, j.master = c.job, c.name
	if j.name == "" {
		j.name = c.name
	}
	a.changes++
	a.markDirty(j.realm)
	return j
}

// connGone notes that c, which belonged to a job, is gone.
func (a *activity) connGone(c *conn, now time.Time) {
	if !c.inJob {
		return
	}
	c.inJob = false
	if j := a.jobs[c.realm]; j != nil {
		j.conns--
		if j.conns == 0 {
			j.ended = now
			a.markDirty(j.realm)
		}
		a.changes++
	}
}

// evictEnded forgets ended jobs older than keepEndedJobs, and the oldest
// ended ones past maxEndedJobs.
func (a *activity) evictEnded(now time.Time) {
	var ended []*job
	for _, j := range a.jobs {
		if j.conns == 0 && !j.ended.IsZero() {
			if now.Sub(j.ended) > keepEndedJobs {
				a.dropJob(j)
				continue
			}
			ended = append(ended, j)
		}
	}
	for len(ended) > maxEndedJobs {
		oldest := 0
		for i, j := range ended {
			if j.ended.Before(ended[oldest].ended) {
				oldest = i
			}
		}
		a.dropJob(ended[oldest])
		ended = append(ended[:oldest], ended[oldest+1:]...)
	}
}

func (a *activity) dropJob(j *job) {
	delete(a.jobs, j.realm)
	if a.jobIDs[j.id] == j {
		delete(a.jobIDs, j.id)
	}
	delete(a.dirty, j.realm)
	if a.keepsJobs {
		a.forget = append(a.forget, j.realm)
	}
	for _, g := range a.failures {
		delete(g.byOwner, j.realm) // its failures are counted no more
	}
}

// markDirty notes that the job of realm is to be written to the store.
func (a *activity) markDirty(realm string) {
	if a.keepsJobs {
		a.dirty[realm] = true
	}
}

// restoreJobs brings back the jobs of an earlier run, as ended: one that
// was running when that run stopped ended then, at the latest (now).
func (a *activity) restoreJobs(jobs []store.Job, now time.Time) {
	for _, sj := range jobs {
		j := &job{id: sj.ID, realm: sj.Realm, name: sj.Name, master: sj.Master, credential: sj.Credential,
			started: sj.Started, ended: sj.Ended, submitted: sj.Submitted, fromMemory: sj.FromMemory}
		if j.id == "" {
			j.id = jobID(j.realm)
		}
		if j.ended.IsZero() {
			j.ended = now
			a.markDirty(j.realm)
		}
		a.jobs[j.realm] = j
		a.jobIDs[j.id] = j
	}
	a.evictEnded(now)
}

// takeDirty returns the jobs to write and the realms to delete, and
// clears both lists.
func (a *activity) takeDirty() ([]store.Job, []string) {
	var out []store.Job
	for realm := range a.dirty {
		if j := a.jobs[realm]; j != nil {
			out = append(out, store.Job{Realm: j.realm, ID: j.id, Name: j.name, Master: j.master, Credential: j.credential,
				Started: j.started, Ended: j.ended, Submitted: j.submitted, FromMemory: j.fromMemory})
		}
	}
	clear(a.dirty)
	forget := a.forget
	a.forget = nil
	return out, forget
}

// finished notes a run that a worker reported and the table took. Its spec
// (when no larger than maxRecentSpec) and console (up to
// maxRecentConsole) are copied into the ring's slot, whose buffers are
// reused once the ring is full: a finished run costs no allocation in the
// steady state. What recentRuns returns therefore changes with the next
// runs: a reader that keeps a run's spec or console past the loop's turn
// copies it.
func (a *activity) finished(run recentRun, spec []byte, console workunit.Console) {
	var slot *recentRun
	if len(a.recent) < maxRecent {
		a.recent = append(a.recent, recentRun{})
		slot = &a.recent[len(a.recent)-1]
	} else {
		slot = &a.recent[a.next]
	}
	specBuf, consoleBuf := slot.spec[:0], slot.console[:0]
	*slot = run
	slot.specSize = len(spec)
	slot.spec = nil // nil: larger than maxRecentSpec
	if len(spec) <= maxRecentSpec {
		// The table's spec may alias the frame it came in, much larger
		// than itself: keep a copy, not the frame.
		slot.spec = append(specBuf, spec...)
	}
	slot.console = consoleBuf
	if n := len(console); n > 0 && n <= maxRecentConsole {
		// The console aliases the frame it came in, which the reader
		// reuses: keep a copy.
		slot.console = append(consoleBuf, console...)
	}
	a.next = (a.next + 1) % maxRecent
	a.changes++
}

// recentRuns returns the recent runs, newest first, that keep returns
// true for, at most n (all when n <= 0).
func (a *activity) recentRuns(n int, keep func(*recentRun) bool) []*recentRun {
	var out []*recentRun
	n0 := len(a.recent)
	for i := range n0 {
		// Until the ring is full, next is its length: either way the
		// newest is just before next.
		r := &a.recent[(a.next-1-i+2*n0)%n0]
		if keep == nil || keep(r) {
			out = append(out, r)
			if n > 0 && len(out) == n {
				break
			}
		}
	}
	return out
}

// failed notes a workunit in error, as the store has it.
func (a *activity) failed(rec *table.Record) {
	if rec.Err == nil {
		return
	}
	msg := truncateUTF8(rec.Err.Message, 300)
	k := rec.Err.Name + "\x00" + msg
	g := a.failures[k]
	if g == nil {
		if len(a.failures) >= maxFailureGroups {
			var oldest *failureGroup
			var ok string
			for gk, fg := range a.failures {
				if oldest == nil || fg.latest.Before(oldest.latest) {
					oldest, ok = fg, gk
				}
			}
			delete(a.failures, ok)
		}
		g = &failureGroup{name: rec.Err.Name, message: msg, byOwner: map[string]int{}}
		a.failures[k] = g
	}
	g.count++
	g.latest = rec.LastChange
	g.byOwner[rec.Owner]++
	g.keys = append([]failKey{{key: rec.Key, owner: rec.Owner}}, g.keys...)
	if len(g.keys) > failureKeys {
		g.keys = g.keys[:failureKeys]
	}
	a.changes++
}

// sample adds a throughput sample when throughEvery has passed, and
// samples each running job's progress.
func (a *activity) sample(now time.Time, done, failed uint64, counts func(realm string) table.OwnerCounts) {
	if a.lastSample.IsZero() {
		a.lastSample, a.lastDone, a.lastFailed = now, done, failed
		return
	}
	for _, j := range a.jobs {
		if j.conns > 0 {
			c := counts(j.realm)
			j.rate.sample(now, uint64(c.Done+c.Error)+j.fromMemory)
		}
	}
	if now.Sub(a.lastSample) < throughEvery {
		return
	}
	a.through = append(a.through, throughSample{t: now, done: done - a.lastDone, failed: failed - a.lastFailed})
	if len(a.through) > throughSamples {
		a.through = a.through[len(a.through)-throughSamples:]
	}
	a.lastSample, a.lastDone, a.lastFailed = now, done, failed
	a.changes++
	a.evictEnded(now) // also when no job comes to make room
}
