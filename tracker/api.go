package tracker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// The HTTP API under the dashboard (docs/http.md). Each handler takes what
// it needs from the loop in one call, bounded in cost (see table.List),
// and renders outside it: decoding values and encoding JSON never hold
// the loop up.

// apiMaster is the table MasterID of the dashboard's cancellations: no
// connection has it (connection ids count up from 1).
const apiMaster = table.MasterID(math.MaxUint64)

// apiTimeout bounds how long a request waits for the loop.
const apiTimeout = 5 * time.Second

// ts formats a time for the API: RFC 3339 in UTC with milliseconds; ""
// for the zero time (omitted).
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func apiError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// inLoop runs f in the loop for a request, answering 503 when the loop
// does not take it in time.
func (s *Server) inLoop(w http.ResponseWriter, r *http.Request, f func(*loop)) bool {
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if err := s.do(ctx, f); err != nil {
		apiError(w, http.StatusServiceUnavailable, "riotd: busy or stopping: %v; try again", err)
		return false
	}
	return true
}

// Overview is GET /api/v1/overview.
type Overview struct {
	Tracker           string       `json:"tracker"`
	Protocol          int          `json:"protocol_version"`
	Started           string       `json:"started"`
	UptimeSeconds     float64      `json:"uptime_seconds"`
	Durable           bool         `json:"durable"`
	Workunits         StatusCounts `json:"workunits"`
	FinishedPerSecond float64      `json:"finished_per_second"`
	Throughput        []Throughput `json:"throughput"`
	Workers           struct {
		Count      int `json:"count"`
		Slots      int `json:"slots"`
		Running    int `json:"running"`
		Prefetched int `json:"prefetched"`
	} `json:"workers"`
	Jobs []JobInfo `json:"jobs"`
	// Changes counts the changes the tracker has seen; a client that
	// polls compares it with the last one.
	Changes uint64 `json:"changes"`
}

// StatusCounts counts workunits by status.
type StatusCounts struct {
	Waiting int `json:"waiting"`
	Running int `json:"running"`
	Done    int `json:"done"`
	Error   int `json:"error"`
}

// Throughput is one sample of the overview's chart.
type Throughput struct {
	T      string `json:"t"`
	Done   uint64 `json:"done"`
	Failed uint64 `json:"failed"`
}

// WorkerInfo is one worker of GET /api/v1/workers.
type WorkerInfo struct {
	Name       string `json:"name"`
	Remote     string `json:"remote"`
	Agent      string `json:"agent"`
	Since      string `json:"since"`
	Slots      int    `json:"slots"`
	Prefetch   int    `json:"prefetch"`
	Running    int    `json:"running"`
	Prefetched int    `json:"prefetched"`
	// Waiting counts the workunits it holds that wait for their children,
	// their slots given up.
	Waiting     int    `json:"waiting,omitempty"`
	Credit      int    `json:"credit"`
	GPUs        int    `json:"gpus"`
	MemoryLimit uint64 `json:"memory_limit,omitempty"`
	MemoryInUse uint64 `json:"memory_in_use,omitempty"`
	Done        uint64 `json:"done"`
	Failed      uint64 `json:"failed"`
}

// JobInfo is one job of GET /api/v1/jobs.
type JobInfo struct {
	ID                string   `json:"id"`
	Name              string   `json:"name"`
	Master            string   `json:"master"`
	State             string   `json:"state"`
	Started           string   `json:"started"`
	Ended             string   `json:"ended,omitempty"`
	Submitted         uint64   `json:"submitted"`
	FromMemory        uint64   `json:"from_memory"`
	Waiting           int      `json:"waiting"`
	Running           int      `json:"running"`
	Done              int      `json:"done"`
	Failed            int      `json:"failed"`
	Canceled          int      `json:"canceled"`
	FinishedPerSecond float64  `json:"finished_per_second"`
	ETASeconds        *float64 `json:"eta_seconds,omitempty"`
	// Failures are the job's failure groups (GET /api/v1/jobs/{id} only).
	Failures []FailureGroup `json:"failures,omitempty"`
}

// FailureGroup is one group of GET /api/v1/failures.
type FailureGroup struct {
	Name    string   `json:"name"`
	Message string   `json:"message"`
	Count   int      `json:"count"`
	Latest  string   `json:"latest"`
	Keys    []string `json:"keys"`
	// Job is the job of the group's newest workunit, when it is known.
	Job string `json:"job,omitempty"`
}

// WorkunitSummary is one workunit of GET /api/v1/workunits.
type WorkunitSummary struct {
	Key      string    `json:"key"`
	Short    string    `json:"short"`
	Status   string    `json:"status"`
	Job      string    `json:"job,omitempty"`
	Worker   string    `json:"worker,omitempty"`
	Changed  string    `json:"changed,omitempty"`
	Attempts int       `json:"attempts"`
	Error    *ErrorDoc `json:"error,omitempty"`
}

// ErrorDoc is a workunit's error.
type ErrorDoc struct {
	Kind    string   `json:"kind,omitempty"`
	Name    string   `json:"name"`
	Message string   `json:"message"`
	Stack   string   `json:"stack,omitempty"`
	Worker  string   `json:"worker,omitempty"`
	Value   *Preview `json:"value,omitempty"`
	// Attempts are the failed attempts of a workunit run with retries,
	// the last one included.
	Attempts []AttemptDoc `json:"attempts,omitempty"`
}

// AttemptDoc is one failed attempt of a workunit run with retries.
type AttemptDoc struct {
	Worker  string `json:"worker"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

// ConsoleLine is one line of a workunit's console.
type ConsoleLine struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// WorkunitDetail is GET /api/v1/workunits/{key}.
type WorkunitDetail struct {
	WorkunitSummary
	specPreview
	SpecError    string        `json:"spec_error,omitempty"`
	Result       *Preview      `json:"result,omitempty"`
	Console      []ConsoleLine `json:"console,omitempty"`
	Submitted    string        `json:"submitted,omitempty"`
	Assigned     string        `json:"assigned,omitempty"`
	Started      string        `json:"started,omitempty"`
	Finished     string        `json:"finished,omitempty"`
	QueueSeconds *float64      `json:"queue_seconds,omitempty"`
	RunSeconds   *float64      `json:"run_seconds,omitempty"`
	LostFrom     []string      `json:"lost_from"`
	Options      struct {
		NoCache        bool     `json:"no_cache"`
		GPUs           int      `json:"gpus"`
		TimeoutSeconds float64  `json:"timeout_seconds"`
		Retries        int      `json:"retries"`
		RetryOn        []string `json:"retry_on,omitempty"`
	} `json:"options"`
	// FailedAttempts are the attempts a waiting or running workunit with
	// retries has failed so far.
	FailedAttempts []AttemptDoc `json:"failed_attempts,omitempty"`
}

// Task is one bar of GET /api/v1/stream.
type Task struct {
	Key    string `json:"key"`
	Worker string `json:"worker"`
	Status string `json:"status"`
	Start  string `json:"start"`
	End    string `json:"end,omitempty"`
}

// overview builds the overview as rd may see it; the loop calls it.
func (l *loop) overview(rd reader) Overview {
	ts0 := l.tab.Stats()
	var o Overview
	o.Tracker = l.s.name
	o.Protocol = wire.ProtocolVersion
	o.Started = ts(l.s.started)
	o.UptimeSeconds = time.Since(l.s.started).Seconds()
	o.Durable = l.s.durable
	o.Workunits = StatusCounts{ts0.Waiting, ts0.Running, ts0.Done, ts0.Error}
	o.FinishedPerSecond = l.rate.perSecond()
	o.Throughput = make([]Throughput, 0, len(l.act.through))
	for _, s := range l.act.through {
		o.Throughput = append(o.Throughput, Throughput{T: ts(s.t), Done: s.done, Failed: s.failed})
	}
	for _, wk := range l.workers() {
		o.Workers.Count++
		o.Workers.Slots += wk.Slots
		o.Workers.Running += wk.Running
		o.Workers.Prefetched += wk.Prefetched
	}
	o.Jobs = []JobInfo{}
	for _, j := range l.jobInfos(rd) {
		if j.State == "running" {
			o.Jobs = append(o.Jobs, j)
		}
	}
	o.Changes = l.changeCount()
	return o
}

// workers lists the connected workers, by name.
func (l *loop) workers() []WorkerInfo {
	out := []WorkerInfo{}
	for _, c := range l.conns {
		wi, ok := l.tab.Worker(table.WorkerID(c.id))
		if !ok {
			continue
		}
		running := c.runningOf(wi.Leases - wi.Waiting)
		w := WorkerInfo{Name: c.name, Remote: c.remote, Agent: c.agent, Since: ts(c.since),
			Slots: c.slots, Prefetch: c.prefetch, Running: running, Prefetched: wi.Leases - wi.Waiting - running, Waiting: wi.Waiting,
			Credit: wi.Credit, GPUs: wi.GPUs, MemoryLimit: c.memLimit, Done: c.nDone, Failed: c.nFailed}
		if c.statsSeen {
			w.MemoryInUse = c.heap
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// runningOf returns how many of a worker's leases it runs: as many as
// fill its slots (a worker starts what it holds as soon as a slot is
// free; its stats, every few seconds, would be late), the rest wait in
// its queue.
func (c *conn) runningOf(leases int) int { return min(leases, c.slots) }

// jobScope returns the memo scope of job j's workunits.
func (l *loop) jobScope(j *job) string { return scopeOf(j.credential, l.s.opts.SharedCache) }

// mayRealm reports whether rd may see the work of the job of realm: not
// when the job is not known (its scope is not).
func (l *loop) mayRealm(rd reader, realm string) bool {
	if rd.all {
		return true
	}
	j := l.act.jobs[realm]
	return j != nil && rd.may(l.jobScope(j))
}

// jobInfos lists the jobs that rd may see, running ones first, newest
// first.
func (l *loop) jobInfos(rd reader) []JobInfo {
	out := make([]JobInfo, 0, len(l.act.jobs))
	for _, j := range l.act.jobs {
		if rd.may(l.jobScope(j)) {
			out = append(out, l.jobInfo(j))
		}
	}
	slices.SortFunc(out, func(a, b JobInfo) int {
		if a.State != b.State {
			return cmp.Compare(b.State, a.State) // running before ended
		}
		return cmp.Compare(b.Started, a.Started)
	})
	return out
}

func (l *loop) jobInfo(j *job) JobInfo {
	c := l.tab.CountsOf(j.realm)
	ji := JobInfo{ID: j.id, Name: j.name, Master: j.master, State: "running", Started: ts(j.started), Ended: ts(j.ended),
		Submitted: j.submitted, FromMemory: j.fromMemory,
		Waiting: c.Waiting, Running: c.Running, Done: c.Done, Failed: c.Error - c.Canceled, Canceled: c.Canceled}
	if j.conns == 0 {
		ji.State = "ended"
	}
	if j.conns > 0 {
		ji.FinishedPerSecond = j.rate.perSecond()
		if left := c.Waiting + c.Running; ji.FinishedPerSecond > 0 {
			eta := float64(left) / ji.FinishedPerSecond
			ji.ETASeconds = &eta
		} else if left == 0 {
			zero := 0.0
			ji.ETASeconds = &zero
		}
	}
	return ji
}

// failureGroups lists the failure groups that rd may see, newest first;
// of one job's realm only when realm is not "". A group is counted, and
// its workunits listed, for the jobs rd may see.
func (l *loop) failureGroups(realm string, rd reader) []FailureGroup {
	out := []FailureGroup{}
	gs := make([]*failureGroup, 0, len(l.act.failures))
	counts := make(map[*failureGroup]int)
	for _, g := range l.act.failures {
		n := 0
		for owner, c := range g.byOwner {
			if (realm == "" || owner == realm) && l.mayRealm(rd, owner) {
				n += c
			}
		}
		if n > 0 {
			gs = append(gs, g)
			counts[g] = n
		}
	}
	slices.SortFunc(gs, func(a, b *failureGroup) int { return b.latest.Compare(a.latest) })
	for _, g := range gs {
		fg := FailureGroup{Name: g.name, Message: g.message, Count: counts[g], Latest: ts(g.latest)}
		for _, k := range g.keys {
			if slices.Contains(fg.Keys, k.key.String()) {
				continue // failed again (in another job): listed once
			}
			if (realm == "" || k.owner == realm) && l.mayRealm(rd, k.owner) {
				if fg.Keys == nil {
					fg.Job = l.jobOf(k.owner) // the newest's
				}
				fg.Keys = append(fg.Keys, k.key.String())
			}
		}
		out = append(out, fg)
	}
	return out
}

// jobOf returns the id of the job of realm, "" when it is not known.
func (l *loop) jobOf(realm string) string {
	if j := l.act.jobs[realm]; j != nil {
		return j.id
	}
	return ""
}

func (l *loop) summary(s *table.Summary) WorkunitSummary {
	ws := WorkunitSummary{Key: s.Key.String(), Short: s.Key.Short(), Status: s.Status.String(), Job: l.jobOf(s.Owner),
		Worker: s.Worker, Changed: ts(s.LastChange), Attempts: s.Deliveries}
	if s.Status == workunit.StatusError {
		ws.Error = &ErrorDoc{Name: s.ErrName, Message: s.ErrMessage}
	}
	return ws
}

// finishedRun notes a worker's report that the table took, for the
// status pages and the metrics: the worker c ran key (its lease li) to
// status.
func (l *loop) finishedRun(c *conn, key workunit.Key, li table.LeaseInfo, status workunit.Status, console workunit.Console, elapsed time.Duration) {
	now := time.Now()
	l.act.finished(recentRun{key: key, owner: li.Owner, worker: c.name, status: status, end: now, elapsed: elapsed},
		li.Spec, console)
	if status == workunit.StatusError {
		l.s.hist.runError.Observe(elapsed.Seconds())
	} else {
		l.s.hist.runDone.Observe(elapsed.Seconds())
	}
	if !li.Submitted.IsZero() {
		// The wait is from the submission to the run's start on the
		// worker; Submitted has the table's tick's resolution.
		l.s.hist.wait.Observe(max(now.Add(-elapsed).Sub(li.Submitted), 0).Seconds())
	}
}

type cancelResult struct {
	n   int
	err error
}

// apiCanceled answers a dashboard cancellation once the store has it.
func (l *loop) apiCanceled(m *table.CancelReply, perr error) {
	ch, ok := l.cancels[m.Req]
	if !ok {
		return
	}
	delete(l.cancels, m.Req)
	if perr == nil {
		l.canceled += uint64(len(m.Keys))
	}
	ch <- cancelResult{n: len(m.Keys), err: perr}
}

// cancelKeys cancels keys of owner, in memo scope scope, for the
// dashboard, in the loop, and returns the channel its answer comes on.
func (l *loop) cancelKeys(owner, scope, by string, keys []workunit.Key) chan cancelResult {
	ch := make(chan cancelResult, 1)
	if len(keys) == 0 {
		ch <- cancelResult{}
		return ch
	}
	l.nextCancel++
	l.cancels[l.nextCancel] = ch
	_ = l.tab.Step(table.Cancel{Master: apiMaster, Req: l.nextCancel, Owner: owner, By: by, Scope: scope, Keys: keys})
	return ch
}

func (s *Server) apiOverview(w http.ResponseWriter, r *http.Request, rd reader) {
	var o Overview
	if s.inLoop(w, r, func(l *loop) { o = l.overview(rd) }) {
		writeJSON(w, http.StatusOK, o)
	}
}

func (s *Server) apiWorkers(w http.ResponseWriter, r *http.Request, _ reader) {
	var ws []WorkerInfo
	if s.inLoop(w, r, func(l *loop) { ws = l.workers() }) {
		writeJSON(w, http.StatusOK, map[string]any{"workers": ws})
	}
}

func (s *Server) apiJobs(w http.ResponseWriter, r *http.Request, rd reader) {
	var js []JobInfo
	if s.inLoop(w, r, func(l *loop) { js = l.jobInfos(rd) }) {
		writeJSON(w, http.StatusOK, map[string]any{"jobs": js})
	}
}

func (s *Server) apiJob(w http.ResponseWriter, r *http.Request, rd reader) {
	id := r.PathValue("id")
	var ji JobInfo
	found := false
	if !s.inLoop(w, r, func(l *loop) {
		j := l.act.jobIDs[id]
		if j == nil || !rd.may(l.jobScope(j)) {
			return
		}
		found = true
		ji = l.jobInfo(j)
		ji.Failures = l.failureGroups(j.realm, rd)
	}) {
		return
	}
	if !found {
		apiError(w, http.StatusNotFound, "riotd: no job %q (GET /api/v1/jobs lists them; ended jobs are kept for an hour)", id)
		return
	}
	writeJSON(w, http.StatusOK, ji)
}

// cancelChunk is how many workunits one step of a job's cancellation
// cancels: a job of millions is canceled in many bounded steps of the
// loop, each durable before the next.
const cancelChunk = 10_000

func (s *Server) apiJobCancel(w http.ResponseWriter, r *http.Request, by canceler) {
	id := r.PathValue("id")
	total := 0
	for {
		var ch chan cancelResult
		found, left := false, false
		if !s.inLoop(w, r, func(l *loop) {
			j := l.act.jobIDs[id]
			if j == nil {
				return
			}
			scope := scopeOf(j.credential, l.s.opts.SharedCache)
			if !by.may(scope) {
				return // another credential's: not found, as for reads
			}
			found = true
			keys := l.tab.OpenKeysOf(j.realm, cancelChunk)
			left = len(keys) == cancelChunk
			ch = l.cancelKeys(j.realm, scope, by.who, keys)
		}) {
			return
		}
		if !found {
			apiError(w, http.StatusNotFound, "riotd: no job %q of this credential (GET /api/v1/jobs lists them; a master's token cancels its own credential's work only, unless riotd --shared-cache)", id)
			return
		}
		res, ok := s.waitCancel(w, r, ch)
		if !ok {
			return
		}
		total += res.n
		if !left || res.n == 0 {
			writeJSON(w, http.StatusOK, map[string]int{"canceled": total})
			return
		}
	}
}

// waitCancel waits for a cancellation's answer; it answers the request
// itself and returns false when it cannot be had.
func (s *Server) waitCancel(w http.ResponseWriter, r *http.Request, ch chan cancelResult) (cancelResult, bool) {
	select {
	case res := <-ch:
		if res.err != nil {
			apiError(w, http.StatusServiceUnavailable, "riotd: the cancellation could not be stored: %v; try again", res.err)
			return res, false
		}
		return res, true
	case <-r.Context().Done():
	case <-s.quit:
		apiError(w, http.StatusServiceUnavailable, "riotd: shutting down")
	}
	return cancelResult{}, false
}

func (s *Server) answerCancel(w http.ResponseWriter, r *http.Request, ch chan cancelResult) {
	select {
	case res := <-ch:
		if res.err != nil {
			apiError(w, http.StatusServiceUnavailable, "riotd: the cancellation could not be stored: %v; try again", res.err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"canceled": res.n})
	case <-r.Context().Done():
	case <-s.quit:
		apiError(w, http.StatusServiceUnavailable, "riotd: shutting down")
	}
}

// parseStatuses parses the status filter: names separated by commas.
func parseStatuses(v string) ([]workunit.Status, error) {
	if v == "" {
		return nil, nil
	}
	var out []workunit.Status
	for _, name := range strings.Split(v, ",") {
		switch strings.TrimSpace(name) {
		case "waiting":
			out = append(out, workunit.StatusWaiting)
		case "running":
			out = append(out, workunit.StatusRunning)
		case "done":
			out = append(out, workunit.StatusDone)
		case "error":
			out = append(out, workunit.StatusError)
		default:
			return nil, fmt.Errorf("status %q: want waiting, running, done or error (several separated by commas)", name)
		}
	}
	return out, nil
}

func (s *Server) apiWorkunits(w http.ResponseWriter, r *http.Request, rd reader) {
	q := r.URL.Query()
	statuses, err := parseStatuses(q.Get("status"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "riotd: %v", err)
		return
	}
	query := table.Query{Statuses: statuses, Worker: q.Get("worker"), ErrorText: q.Get("error"), InScope: !rd.all, Scope: rd.own}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			apiError(w, http.StatusBadRequest, "riotd: limit %q: want a number from 1 to %d", v, table.MaxListLimit)
			return
		}
		query.Limit = min(n, table.MaxListLimit)
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			apiError(w, http.StatusBadRequest, "riotd: cursor %q: give the next of the page before", v)
			return
		}
		query.Before = uint32(n)
	}
	jobID := q.Get("job")
	var page table.ListPage
	var out []WorkunitSummary
	unknownJob := false
	if !s.inLoop(w, r, func(l *loop) {
		if jobID != "" {
			j := l.act.jobIDs[jobID]
			if j == nil || !rd.may(l.jobScope(j)) {
				unknownJob = true
				return
			}
			query.Owner = j.realm
		}
		page = l.tab.List(query)
		out = make([]WorkunitSummary, 0, len(page.Records))
		for i := range page.Records {
			out = append(out, l.summary(&page.Records[i]))
		}
	}) {
		return
	}
	if unknownJob {
		apiError(w, http.StatusNotFound, "riotd: no job %q (GET /api/v1/jobs lists them)", jobID)
		return
	}
	next := ""
	if page.Next != 0 {
		next = strconv.FormatUint(uint64(page.Next), 10)
	}
	writeJSON(w, http.StatusOK, map[string]any{"workunits": out, "next": next, "partial": page.Partial})
}

// errAmbiguous and errNoKey are lookupKey's failures.
var (
	errNoKey     = errors.New("no such workunit")
	errOthers    = errors.New("another credential's workunit")
	errAmbiguous = errors.New("the prefix names more than one recent workunit")
)

// lookupKey finds the key that s names: 64 hex digits, or a prefix of at
// least 12 of one of the recent runs or failures that rd may see. The
// loop calls it.
func (l *loop) lookupKey(s string, rd reader) (workunit.Key, error) {
	if len(s) == 64 {
		k, err := workunit.ParseKey(s)
		if err != nil {
			return k, fmt.Errorf("key %q: %w", s, err)
		}
		return k, nil
	}
	if len(s) < 12 {
		return workunit.Key{}, fmt.Errorf("key %q: give the 64 hex digits, or at least the first 12", s)
	}
	s = strings.ToLower(s)
	var found []workunit.Key
	add := func(k workunit.Key) {
		if strings.HasPrefix(k.String(), s) && !slices.Contains(found, k) {
			found = append(found, k)
		}
	}
	for _, r := range l.act.recentRuns(0, func(r *recentRun) bool { return l.mayRealm(rd, r.owner) }) {
		add(r.key)
	}
	for _, g := range l.act.failures {
		for _, k := range g.keys {
			if l.mayRealm(rd, k.owner) {
				add(k.key)
			}
		}
	}
	for _, rec := range l.tab.List(table.Query{Limit: table.MaxListLimit, InScope: !rd.all, Scope: rd.own}).Records {
		add(rec.Key)
	}
	switch len(found) {
	case 0:
		return workunit.Key{}, errNoKey
	case 1:
		return found[0], nil
	}
	return workunit.Key{}, errAmbiguous
}

func (s *Server) apiWorkunit(w http.ResponseWriter, r *http.Request, rd reader) {
	name := r.PathValue("key")
	var (
		key     workunit.Key
		keyErr  error
		rec     table.Record
		found   bool
		spec    []byte
		specLen int
		run     *recentRun
		det     WorkunitDetail
	)
	if !s.inLoop(w, r, func(l *loop) {
		key, keyErr = l.lookupKey(name, rd)
		if keyErr != nil {
			return
		}
		// The reader's own workunit of the key first: another scope may
		// have one too.
		rec, found = l.tab.LookupIn(rd.own, key)
		if !found && rd.all {
			rec, found = l.tab.Lookup(key)
		}
		if !found {
			return
		}
		det.Job = l.jobOf(rec.Owner)
		spec = rec.Spec
		if runs := l.act.recentRuns(1, func(r *recentRun) bool { return r.key == key && l.mayRealm(rd, r.owner) }); len(runs) > 0 {
			// The ring's buffers are reused by later runs: copy them
			// here, in the loop.
			cp := *runs[0]
			cp.console = bytes.Clone(cp.console)
			if cp.spec != nil {
				cp.spec = bytes.Clone(cp.spec)
			}
			run = &cp
			if spec == nil {
				spec, specLen = run.spec, run.specSize
			}
		}
	}) {
		return
	}
	switch {
	case errors.Is(keyErr, errNoKey) || keyErr == nil && !found:
		apiError(w, http.StatusNotFound, "riotd: no workunit %s (it may have been forgotten: see riotd --keep-results)", name)
		return
	case keyErr != nil:
		apiError(w, http.StatusBadRequest, "riotd: %v", keyErr)
		return
	}
	ctx := r.Context()
	det.Key, det.Short, det.Status = rec.Key.String(), rec.Key.Short(), rec.Status.String()
	det.Worker, det.Changed, det.Attempts = rec.Worker, ts(rec.LastChange), rec.Deliveries
	det.LostFrom = rec.LostFrom
	if det.LostFrom == nil {
		det.LostFrom = []string{}
	}
	det.Options.NoCache, det.Options.GPUs, det.Options.TimeoutSeconds = rec.Options.NoCache, rec.Options.GPUs, rec.Options.Timeout.Seconds()
	det.Options.Retries, det.Options.RetryOn = rec.Options.Retries, rec.Options.RetryOn
	det.FailedAttempts = attemptDocs(rec.Attempts)
	det.Submitted, det.Assigned = ts(rec.Submitted), ts(rec.Assigned)
	if !rec.Submitted.IsZero() && !rec.Assigned.IsZero() && !rec.Assigned.Before(rec.Submitted) {
		q := rec.Assigned.Sub(rec.Submitted).Seconds()
		det.QueueSeconds = &q
	}
	if rec.Status.Finished() {
		det.Finished = ts(rec.LastChange)
	}
	if spec != nil {
		sp, err := previewSpec(ctx, spec)
		if err != nil {
			det.SpecError = "the spec does not decode: " + err.Error()
		}
		det.specPreview = sp
	} else if specLen > 0 {
		det.SpecError = fmt.Sprintf("the spec (%d bytes) is too large to keep once finished", specLen)
	}
	if rec.Stored {
		res, err := s.storedResult(ctx, rec.ID)
		if err != nil {
			apiError(w, http.StatusServiceUnavailable, "riotd: the result of %s could not be read from the store: %v", rec.Key.Short(), err)
			return
		}
		rec.Result = res
	}
	if rec.Result != nil {
		p := previewDoc(ctx, rec.Result)
		det.Result = &p
	}
	if e := rec.Err; e != nil {
		det.Error = &ErrorDoc{Kind: e.Kind.String(), Name: e.Name, Message: e.Message, Stack: e.Stack, Worker: e.Worker, Attempts: attemptDocs(e.Attempts)}
		if len(e.Value) > 0 {
			p := previewDoc(ctx, e.Value)
			det.Error.Value = &p
		}
	}
	if run != nil && rec.Status.Finished() {
		if lines, err := run.console.Lines(); err == nil {
			for _, ln := range lines {
				det.Console = append(det.Console, ConsoleLine{Level: string(ln.Level), Text: ln.Text})
			}
		}
		// The run's times are the tracker's clock as the report came; the
		// table's (submitted, assigned) are its tick's, up to a tick
		// earlier: the start is never shown before the assignment.
		started := run.end.Add(-run.elapsed)
		if !rec.Assigned.IsZero() && started.Before(rec.Assigned) {
			started = rec.Assigned
		}
		det.Started, det.Finished = ts(started), ts(run.end)
		rs := run.elapsed.Seconds()
		det.RunSeconds = &rs
	}
	writeJSON(w, http.StatusOK, det)
}

func (s *Server) apiWorkunitCancel(w http.ResponseWriter, r *http.Request, by canceler) {
	name := r.PathValue("key")
	var ch chan cancelResult
	var keyErr error
	if !s.inLoop(w, r, func(l *loop) {
		var key workunit.Key
		key, keyErr = l.lookupKey(name, reader{own: by.own, all: by.all})
		if keyErr != nil {
			return
		}
		// The canceler's own workunit of the key first: another scope
		// may have one too.
		rec, ok := l.tab.LookupIn(by.own, key)
		if !ok {
			rec, ok = l.tab.Lookup(key)
		}
		if !ok {
			keyErr = errNoKey
			return
		}
		if !by.may(rec.Scope) {
			keyErr = errOthers
			return
		}
		ch = l.cancelKeys(rec.Owner, rec.Scope, by.who, []workunit.Key{key})
	}) {
		return
	}
	switch {
	case errors.Is(keyErr, errNoKey):
		apiError(w, http.StatusNotFound, "riotd: no workunit %s", name)
		return
	case errors.Is(keyErr, errOthers):
		// As for reads: another credential's work is not found.
		apiError(w, http.StatusNotFound, "riotd: no workunit %s of this credential", name)
		return
	case keyErr != nil:
		apiError(w, http.StatusBadRequest, "riotd: %v", keyErr)
		return
	}
	s.answerCancel(w, r, ch)
}

func (s *Server) apiFailures(w http.ResponseWriter, r *http.Request, rd reader) {
	var gs []FailureGroup
	if s.inLoop(w, r, func(l *loop) { gs = l.failureGroups("", rd) }) {
		writeJSON(w, http.StatusOK, map[string]any{"failures": gs})
	}
}

func (s *Server) apiStream(w http.ResponseWriter, r *http.Request, rd reader) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			apiError(w, http.StatusBadRequest, "riotd: since %q: want an RFC 3339 time such as 2026-12-02T10:00:00Z", v)
			return
		}
		since = t
	}
	tasks := []Task{}
	var now time.Time
	if !s.inLoop(w, r, func(l *loop) {
		now = time.Now()
		for _, run := range l.act.recentRuns(0, func(r *recentRun) bool {
			return (since.IsZero() || !r.end.Before(since)) && l.mayRealm(rd, r.owner)
		}) {
			tasks = append(tasks, Task{Key: run.key.String(), Worker: run.worker, Status: run.status.String(),
				Start: ts(run.end.Add(-run.elapsed)), End: ts(run.end)})
		}
		running := table.Query{Statuses: []workunit.Status{workunit.StatusRunning}, Limit: table.MaxListLimit, MaxScan: 20_000,
			InScope: !rd.all, Scope: rd.own}
		for _, rec := range l.tab.List(running).Records {
			if full, ok := l.tab.LookupIn(rec.Scope, rec.Key); ok {
				tasks = append(tasks, Task{Key: rec.Key.String(), Worker: rec.Worker, Status: "running", Start: ts(full.Assigned)})
			}
		}
	}) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"now": ts(now), "tasks": tasks})
}

func attemptDocs(as []workunit.Attempt) []AttemptDoc {
	if len(as) == 0 {
		return nil
	}
	docs := make([]AttemptDoc, len(as))
	for i, a := range as {
		docs[i] = AttemptDoc{Worker: a.Worker, Name: a.Name, Message: a.Message}
	}
	return docs
}
