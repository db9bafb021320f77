package timeline

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/riot-go/riot/workunit"
)

// The master's process and threads in the trace; workers' processes
// follow (workerPid), their lanes are threads 1, 2, ...
const (
	masterPid      = 1
	memoryTid      = 1 // outcomes answered from memory
	noRunTid       = 2 // outcomes no worker ran: canceled, workers lost, refused
	queueTidOffset = 10
	firstWorkerPid = 2
)

// event is one trace event (the trace-event format's fields).
type event struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat,omitempty"`
	Ph    string         `json:"ph"`
	Ts    int64          `json:"ts"`
	Dur   *int64         `json:"dur,omitempty"`
	Pid   int            `json:"pid"`
	Tid   int            `json:"tid"`
	ID    int            `json:"id,omitempty"`
	Scope string         `json:"s,omitempty"`
	Bp    string         `json:"bp,omitempty"`
	Args  map[string]any `json:"args,omitempty"`
}

// run is a workunit's run on a worker, merged over the submissions that
// got its outcome; times are microseconds from base.
type run struct {
	key         workunit.Key
	out         *workunit.Outcome
	submitted   int64 // the first submission
	start, end  int64
	submissions int
}

// interval is a span to pack onto lanes.
type interval struct{ start, end int64 }

// pack assigns each interval a lane, 0, 1, ...: the first lane free at
// its start (lanes filled in order of start), a new one when all are busy.
// An interval that ends when another starts leaves the lane free for it.
func pack(ivs []interval) (lanes []int, n int) {
	order := make([]int, len(ivs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ivs[a].start, ivs[b].start), cmp.Compare(ivs[a].end, ivs[b].end))
	})
	lanes = make([]int, len(ivs))
	var ends []int64
	for _, i := range order {
		lane := slices.IndexFunc(ends, func(e int64) bool { return e <= ivs[i].start })
		if lane < 0 {
			lane = len(ends)
			ends = append(ends, 0)
		}
		ends[lane] = ivs[i].end
		lanes[i] = lane
	}
	return lanes, len(ends)
}

// us is d in microseconds.
func us(d time.Duration) int64 { return d.Microseconds() }

// ms is a number of microseconds in milliseconds, for args.
func ms(n int64) float64 { return float64(n) / 1000 }

func dur(n int64) *int64 { return &n }

// WriteTo writes what the Recorder has now as a trace-event JSON object
// (see the package's documentation); workunits not finished yet are shown
// waiting up to now. It may be called more than once; later outcomes
// come in later writes.
func (r *Recorder) WriteTo(w io.Writer) (int64, error) {
	recs, now := r.snapshot()
	t := build(r.job, recs, now)
	cw := &countWriter{w: bufio.NewWriter(w)}
	err := t.write(cw)
	if err == nil {
		err = cw.w.(*bufio.Writer).Flush()
	}
	if err != nil {
		return cw.n, fmt.Errorf("timeline: writing the trace: %w", err)
	}
	return cw.n, nil
}

// countWriter counts what it writes to w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// trace is a built trace: its events and its otherData.
type trace struct {
	events []event
	other  map[string]any
}

// build makes the trace of recs as of now.
func build(job string, recs []record, now time.Time) *trace {
	if job == "" {
		job = "riot master"
	}
	var base time.Time
	for _, rec := range recs {
		if base.IsZero() || rec.submitted.Before(base) {
			base = rec.submitted
		}
	}
	at := func(t time.Time) int64 { return us(t.Sub(base)) }

	// Runs, merged over submissions that got the same outcome (a key
	// submitted again while it ran joins the run); the other outcomes.
	type runID struct {
		key        workunit.Key
		worker     string
		elapsed    time.Duration
		lastChange time.Time
	}
	var runs []*run
	byID := map[runID]*run{}
	type instant struct {
		rec *record
		ts  int64
		tid int
	}
	var instants []instant
	var unfinished []*record
	for i := range recs {
		rec := &recs[i]
		switch {
		case rec.finished.IsZero():
			unfinished = append(unfinished, rec)
		case rec.out != nil && rec.fromMemory:
			instants = append(instants, instant{rec, at(rec.finished), memoryTid})
		case rec.out == nil || rec.out.Worker == "":
			instants = append(instants, instant{rec, at(rec.finished), noRunTid})
		default:
			id := runID{rec.key, rec.out.Worker, rec.out.Elapsed, rec.out.LastChange}
			end, sub := at(rec.finished), at(rec.submitted)
			if x := byID[id]; x != nil {
				x.submissions++
				x.submitted = min(x.submitted, sub)
				if end < x.end {
					x.start, x.end = end-us(rec.out.Elapsed), end
				}
				continue
			}
			x := &run{key: rec.key, out: rec.out, submitted: sub, start: end - us(rec.out.Elapsed), end: end, submissions: 1}
			byID[id] = x
			runs = append(runs, x)
		}
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return cmp.Compare(a.start, b.start) })

	// Waits: a run's from its first submission to its start (none when
	// it started first: it joined a run under way); an unfinished
	// workunit's up to now.
	type wait struct {
		key        workunit.Key
		iv         interval
		run        *run // nil: unfinished
		lane, flow int
	}
	var waits []*wait
	for _, x := range runs {
		if x.start > x.submitted {
			waits = append(waits, &wait{key: x.key, iv: interval{x.submitted, x.start}, run: x})
		}
	}
	end := at(now)
	for _, rec := range unfinished {
		s := at(rec.submitted)
		waits = append(waits, &wait{key: rec.key, iv: interval{s, max(s, end)}})
	}

	origin := int64(0)
	for _, x := range runs {
		origin = min(origin, x.start)
	}

	var evs []event
	meta := func(name string, pid, tid int, args map[string]any) {
		evs = append(evs, event{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: args})
	}
	meta("process_name", masterPid, 0, map[string]any{"name": job})
	meta("process_sort_index", masterPid, 0, map[string]any{"sort_index": 0})
	if len(instants) > 0 {
		meta("thread_name", masterPid, memoryTid, map[string]any{"name": "from memory"})
		meta("thread_sort_index", masterPid, memoryTid, map[string]any{"sort_index": memoryTid})
		meta("thread_name", masterPid, noRunTid, map[string]any{"name": "no run"})
		meta("thread_sort_index", masterPid, noRunTid, map[string]any{"sort_index": noRunTid})
	}

	// The queue's lanes.
	ivs := make([]interval, len(waits))
	for i, w := range waits {
		ivs[i] = w.iv
	}
	lanes, nq := pack(ivs)
	for l := range nq {
		meta("thread_name", masterPid, queueTidOffset+l, map[string]any{"name": fmt.Sprintf("queue %d", l+1)})
		meta("thread_sort_index", masterPid, queueTidOffset+l, map[string]any{"sort_index": queueTidOffset + l})
	}
	flows := 0
	for i, w := range waits {
		w.lane = lanes[i]
		tid := queueTidOffset + w.lane
		d := w.iv.end - w.iv.start
		args := map[string]any{"key": w.key.String(), "wait_ms": ms(d)}
		if w.run == nil {
			args["status"] = "unfinished"
			evs = append(evs, event{Name: "unfinished " + w.key.Short(), Cat: "unfinished", Ph: "X", Ts: w.iv.start - origin, Dur: dur(d), Pid: masterPid, Tid: tid, Args: args})
			continue
		}
		args["worker"] = w.run.out.Worker
		evs = append(evs, event{Name: "wait " + w.key.Short(), Cat: "wait", Ph: "X", Ts: w.iv.start - origin, Dur: dur(d), Pid: masterPid, Tid: tid, Args: args})
		if d >= 2 && w.run.end > w.run.start { // both ends of the arrow inside their slices
			flows++
			w.flow = flows
		}
	}

	// The workers' lanes.
	workers := map[string][]*run{}
	for _, x := range runs {
		workers[x.out.Worker] = append(workers[x.out.Worker], x)
	}
	names := make([]string, 0, len(workers))
	for name := range workers {
		names = append(names, name)
	}
	slices.Sort(names)
	flowOf := map[*run]int{}
	for _, w := range waits {
		if w.flow > 0 {
			flowOf[w.run] = w.flow
			tid := queueTidOffset + w.lane
			evs = append(evs, event{Name: "queued", Cat: "flow", Ph: "s", Ts: w.iv.end - 1 - origin, Pid: masterPid, Tid: tid, ID: w.flow})
		}
	}
	for i, name := range names {
		pid := firstWorkerPid + i
		meta("process_name", pid, 0, map[string]any{"name": name})
		meta("process_sort_index", pid, 0, map[string]any{"sort_index": i + 1})
		rs := workers[name]
		ivs := make([]interval, len(rs))
		for j, x := range rs {
			ivs[j] = interval{x.start, x.end}
		}
		lanes, n := pack(ivs)
		for l := range n {
			meta("thread_name", pid, l+1, map[string]any{"name": fmt.Sprintf("lane %d", l+1)})
			meta("thread_sort_index", pid, l+1, map[string]any{"sort_index": l + 1})
		}
		for j, x := range rs {
			d := x.end - x.start
			args := map[string]any{"key": x.key.String(), "status": x.out.Status.String(), "worker": name,
				"run_ms": ms(d), "wait_ms": ms(max(0, x.start-x.submitted))}
			if x.submissions > 1 {
				args["submissions"] = x.submissions
			}
			cat := "run"
			if x.out.Status == workunit.StatusError {
				cat = "run,error"
				args["error"] = errorText(x.out.Err)
			}
			evs = append(evs, event{Name: x.key.Short(), Cat: cat, Ph: "X", Ts: x.start - origin, Dur: dur(d), Pid: pid, Tid: lanes[j] + 1, Args: args})
			if f := flowOf[x]; f > 0 {
				ts := x.start
				if d >= 2 {
					ts++
				}
				evs = append(evs, event{Name: "queued", Cat: "flow", Ph: "f", Bp: "e", Ts: ts - origin, Pid: pid, Tid: lanes[j] + 1, ID: f})
			}
		}
	}

	// Outcomes no run of this job made.
	var fromMemory, noRun int
	for _, in := range instants {
		rec := in.rec
		args := map[string]any{"key": rec.key.String()}
		name := "from memory " + rec.key.Short()
		if in.tid == memoryTid {
			fromMemory++
			args["status"] = rec.out.Status.String()
			if rec.out.Worker != "" {
				args["worker"] = rec.out.Worker
			}
		} else {
			noRun++
			name = "no run " + rec.key.Short()
			switch {
			case rec.out != nil:
				args["status"] = rec.out.Status.String()
				args["error"] = errorText(rec.out.Err)
			default:
				args["status"] = "unknown"
				args["error"] = rec.err.Error()
			}
		}
		args["wait_ms"] = ms(in.ts - at(rec.submitted))
		evs = append(evs, event{Name: name, Cat: "outcome", Ph: "i", Scope: "t", Ts: in.ts - origin, Pid: masterPid, Tid: in.tid, Args: args})
	}

	// How many wait and how many run, at each change.
	type change struct {
		ts               int64
		waiting, running int
	}
	var changes []change
	for _, w := range waits {
		changes = append(changes, change{w.iv.start, 1, 0})
		if w.run != nil { // an unfinished workunit still waits
			changes = append(changes, change{w.iv.end, -1, 0})
		}
	}
	for _, x := range runs {
		changes = append(changes, change{x.start, 0, 1}, change{x.end, 0, -1})
	}
	slices.SortStableFunc(changes, func(a, b change) int { return cmp.Compare(a.ts, b.ts) })
	waiting, running := 0, 0
	for i, c := range changes {
		waiting += c.waiting
		running += c.running
		if i+1 < len(changes) && changes[i+1].ts == c.ts {
			continue
		}
		evs = append(evs, event{Name: "workunits", Ph: "C", Ts: c.ts - origin, Pid: masterPid, Args: map[string]any{"waiting": waiting, "running": running}})
	}

	slices.SortStableFunc(evs, func(a, b event) int {
		if (a.Ph == "M") != (b.Ph == "M") {
			if a.Ph == "M" {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Ts, b.Ts)
	})
	other := map[string]any{
		"job":         job,
		"submissions": len(recs),
		"runs":        len(runs),
		"from_memory": fromMemory,
		"no_run":      noRun,
		"unfinished":  len(unfinished),
		"workers":     len(names),
		"written":     now.UTC().Format(time.RFC3339Nano),
	}
	if !base.IsZero() {
		other["origin"] = base.Add(time.Duration(origin) * time.Microsecond).UTC().Format(time.RFC3339Nano)
	}
	return &trace{events: evs, other: other}
}

// errorText is a workunit error's "Name: message".
func errorText(e *workunit.Error) string {
	switch {
	case e == nil:
		return ""
	case e.Name == "":
		return e.Message
	case e.Message == "":
		return e.Name
	}
	return e.Name + ": " + e.Message
}

// write writes t as a JSON object: its events one a line.
func (t *trace) write(w io.Writer) error {
	if _, err := io.WriteString(w, `{"traceEvents":[`); err != nil {
		return err
	}
	for i, ev := range t.events {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		sep := ",\n"
		if i == 0 {
			sep = "\n"
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	other, err := json.Marshal(t.other)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":%s}\n", other)
	return err
}
