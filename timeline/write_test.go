package timeline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

func TestPack(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ivs   []interval
		lanes []int
		n     int
	}{
		{"none", nil, []int{}, 0},
		{"one after another", []interval{{0, 10}, {10, 20}, {20, 30}}, []int{0, 0, 0}, 1},
		{"overlapping", []interval{{0, 10}, {5, 15}, {6, 7}}, []int{0, 1, 2}, 3},
		{"a freed lane is taken again, lowest first", []interval{{0, 10}, {1, 4}, {2, 20}, {5, 8}, {11, 12}}, []int{0, 1, 2, 1, 0}, 3},
		{"order of the input does not matter", []interval{{5, 8}, {0, 10}, {1, 4}}, []int{1, 0, 1}, 2},
		{"empty intervals", []interval{{3, 3}, {3, 3}}, []int{0, 0}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lanes, n := pack(tt.ivs)
			assert.Equal(t, tt.lanes, lanes)
			assert.Equal(t, tt.n, n)
		})
	}
}

// parsed is a trace file as a test reads it.
type parsed struct {
	TraceEvents     []event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
}

func key(b byte) workunit.Key { return workunit.Key{b, b, b} }

// names returns the names the metadata events give to processes (by pid)
// and threads (by pid and tid).
func (p *parsed) names() (procs map[int]string, threads map[[2]int]string) {
	procs, threads = map[int]string{}, map[[2]int]string{}
	for _, ev := range p.TraceEvents {
		switch ev.Name {
		case "process_name":
			procs[ev.Pid] = ev.Args["name"].(string)
		case "thread_name":
			threads[[2]int{ev.Pid, ev.Tid}] = ev.Args["name"].(string)
		}
	}
	return procs, threads
}

func (p *parsed) byCat(cat string) []event {
	var evs []event
	for _, ev := range p.TraceEvents {
		if ev.Cat == cat {
			evs = append(evs, ev)
		}
	}
	return evs
}

func TestWriteTo(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	done := func(k workunit.Key, worker string, elapsed time.Duration, change int) *workunit.Outcome {
		return &workunit.Outcome{Key: k, Status: workunit.StatusDone, Worker: worker, Elapsed: elapsed, LastChange: ms(change)}
	}
	a, b, c := done(key(1), "w1", 50*time.Millisecond, 60), done(key(2), "w1", 30*time.Millisecond+7*time.Microsecond, 45), done(key(3), "w2", 10*time.Millisecond, 90)
	failed := &workunit.Outcome{Key: key(4), Status: workunit.StatusError, Worker: "w2", Elapsed: 5 * time.Millisecond,
		Err: &workunit.Error{Name: "TypeError", Message: "x is not a function"}}
	canceled := &workunit.Outcome{Key: key(5), Status: workunit.StatusError, Err: &workunit.Error{Kind: workunit.Canceled, Name: "Canceled", Message: "canceled"}}
	memo := done(key(6), "w2", time.Millisecond, 1)
	r := New(Options{Job: "squares.js"})
	r.now = func() time.Time { return ms(200) }
	r.records = []*record{
		{key: key(1), submitted: ms(0), finished: ms(60), out: a},
		{key: key(2), submitted: ms(1), finished: ms(45), out: b},
		{key: key(1), submitted: ms(20), finished: ms(61), out: a}, // joined key(1)'s run
		{key: key(3), submitted: ms(2), finished: ms(90), out: c},
		{key: key(4), submitted: ms(3), finished: ms(100), out: failed},
		{key: key(5), submitted: ms(4), finished: ms(110), out: canceled},
		{key: key(6), submitted: ms(5), finished: ms(6), out: memo, fromMemory: true},
		{key: key(7), submitted: ms(150)}, // unfinished
		{key: key(8), submitted: ms(7), finished: ms(8), err: errors.New("refused: too large")},
	}
	var buf bytes.Buffer
	n, err := r.WriteTo(&buf)
	require.NoError(t, err)
	assert.EqualValues(t, buf.Len(), n)
	require.True(t, json.Valid(buf.Bytes()), buf.String())
	var p parsed
	require.NoError(t, json.Unmarshal(buf.Bytes(), &p))
	assert.Equal(t, "ms", p.DisplayTimeUnit)
	for _, ev := range p.TraceEvents {
		assert.Contains(t, []string{"M", "X", "i", "C", "s", "f"}, ev.Ph, "%+v", ev)
		if ev.Ph == "X" {
			require.NotNil(t, ev.Dur, "%+v", ev)
			assert.GreaterOrEqual(t, *ev.Dur, int64(0))
		}
		if ev.Ph != "M" {
			assert.GreaterOrEqual(t, ev.Ts, int64(0), "%+v", ev)
		}
	}

	procs, threads := p.names()
	assert.Equal(t, map[int]string{1: "squares.js", 2: "w1", 3: "w2"}, procs)
	assert.Equal(t, "lane 1", threads[[2]int{2, 1}])
	assert.Equal(t, "lane 2", threads[[2]int{2, 2}], "w1 ran two at once")
	assert.NotContains(t, threads, [2]int{2, 3})
	assert.Equal(t, "lane 1", threads[[2]int{3, 1}])
	assert.NotContains(t, threads, [2]int{3, 2}, "w2's runs did not overlap")
	assert.Equal(t, "from memory", threads[[2]int{1, memoryTid}])
	assert.Equal(t, "no run", threads[[2]int{1, noRunTid}])
	assert.Equal(t, "queue 1", threads[[2]int{1, queueTidOffset}])

	// One run per workunit a worker ran: a joined submission adds none.
	runs := append(p.byCat("run"), p.byCat("run,error")...)
	require.Len(t, runs, 4)
	byKey := map[string]event{}
	for _, ev := range runs {
		byKey[ev.Args["key"].(string)] = ev
	}
	for _, o := range []*workunit.Outcome{a, b, c, failed} {
		ev, ok := byKey[o.Key.String()]
		require.True(t, ok, "no run of %s", o.Key.Short())
		assert.Equal(t, o.Elapsed.Microseconds(), *ev.Dur, "the run of %s lasts its Elapsed", o.Key.Short())
		assert.Equal(t, o.Key.Short(), ev.Name)
		assert.Equal(t, o.Worker, procs[ev.Pid])
		assert.Equal(t, o.Status.String(), ev.Args["status"])
	}
	// Runs end when their outcome came (the base is the first submission).
	assert.Equal(t, int64(60_000-50_000), byKey[key(1).String()].Ts)
	assert.Equal(t, int64(45_000-30_007), byKey[key(2).String()].Ts)
	assert.EqualValues(t, 2, byKey[key(1).String()].Args["submissions"])
	assert.Equal(t, 10.0, byKey[key(1).String()].Args["wait_ms"])
	assert.Equal(t, "TypeError: x is not a function", byKey[key(4).String()].Args["error"])
	assert.Equal(t, "run,error", byKey[key(4).String()].Cat)

	waits := p.byCat("wait")
	assert.Len(t, waits, 4)
	for _, ev := range waits {
		assert.Equal(t, masterPid, ev.Pid)
		run := byKey[ev.Args["key"].(string)]
		assert.Equal(t, run.Ts, ev.Ts+*ev.Dur, "the wait of %s ends where its run starts", ev.Args["key"])
	}
	unf := p.byCat("unfinished")
	require.Len(t, unf, 1)
	assert.Equal(t, int64(150_000), unf[0].Ts)
	assert.Equal(t, int64(50_000), *unf[0].Dur, "up to the time of writing")

	instants := p.byCat("outcome")
	require.Len(t, instants, 3)
	byTid := map[int][]string{}
	for _, ev := range instants {
		byTid[ev.Tid] = append(byTid[ev.Tid], ev.Args["key"].(string))
	}
	assert.Equal(t, []string{key(6).String()}, byTid[memoryTid])
	assert.ElementsMatch(t, []string{key(5).String(), key(8).String()}, byTid[noRunTid])

	// Flows join each wait to its run.
	starts, ends := p.byCat("flow"), 0
	ids := map[int]int{}
	for _, ev := range starts {
		if ev.Ph == "s" {
			ids[ev.ID]++
		} else {
			ends++
			ids[ev.ID]--
		}
	}
	assert.Equal(t, 4, ends)
	for id, n := range ids {
		assert.Zero(t, n, "flow %d", id)
	}

	// The counter: at most two runs at once, none at the end, and the
	// unfinished workunit still waits.
	maxRunning := 0.0
	var last event
	for _, ev := range p.TraceEvents {
		if ev.Ph == "C" {
			maxRunning = max(maxRunning, ev.Args["running"].(float64))
			last = ev
		}
	}
	assert.Equal(t, 2.0, maxRunning)
	assert.Equal(t, 0.0, last.Args["running"])
	assert.Equal(t, 1.0, last.Args["waiting"])

	assert.Equal(t, map[string]any{"job": "squares.js", "submissions": 9.0, "runs": 4.0, "from_memory": 1.0, "no_run": 2.0,
		"unfinished": 1.0, "workers": 2.0, "written": "2026-12-02T04:00:00.2Z", "origin": "2026-12-02T04:00:00Z"}, p.OtherData)
}

// A run that started before the job submitted its key (the job joined
// another master's run) moves the origin back: no timestamp is negative.
func TestWriteTo_RunBeforeSubmission(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	r := New(Options{})
	r.now = func() time.Time { return t0.Add(time.Second) }
	out := &workunit.Outcome{Key: key(1), Status: workunit.StatusDone, Worker: "w", Elapsed: 500 * time.Millisecond}
	r.records = []*record{{key: key(1), submitted: t0, finished: t0.Add(100 * time.Millisecond), out: out}}
	var buf bytes.Buffer
	_, err := r.WriteTo(&buf)
	require.NoError(t, err)
	var p parsed
	require.NoError(t, json.Unmarshal(buf.Bytes(), &p))
	runs := p.byCat("run")
	require.Len(t, runs, 1)
	assert.Equal(t, int64(0), runs[0].Ts)
	assert.Equal(t, int64(500_000), *runs[0].Dur)
	assert.Empty(t, p.byCat("wait"))
	assert.Equal(t, 0.0, runs[0].Args["wait_ms"])
	assert.Equal(t, "riot master", p.OtherData["job"])
	assert.Equal(t, "2026-12-02T03:59:59.6Z", p.OtherData["origin"])
}

func TestWriteTo_Empty(t *testing.T) {
	var buf bytes.Buffer
	_, err := New(Options{}).WriteTo(&buf)
	require.NoError(t, err)
	var p parsed
	require.NoError(t, json.Unmarshal(buf.Bytes(), &p))
	assert.EqualValues(t, 0, p.OtherData["submissions"])
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTo_Error(t *testing.T) {
	_, err := New(Options{}).WriteTo(failWriter{})
	require.Error(t, err)
	assert.Equal(t, "timeline: writing the trace: disk full", err.Error())
}

// TestWriteTo_Nesting: whatever the records, the complete events of a
// thread never overlap (viewers drop slices that overlap without
// nesting), and each flow's ends lie in a slice of their thread.
func TestWriteTo_Nesting(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	r := New(Options{})
	r.now = func() time.Time { return t0.Add(10 * time.Second) }
	for i := range 500 {
		sub := t0.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		rec := &record{key: workunit.Key{byte(i), byte(i >> 8), 1}, submitted: sub}
		switch rng.IntN(10) {
		case 0: // unfinished
		case 1:
			rec.finished = sub.Add(time.Millisecond)
			rec.out = &workunit.Outcome{Key: rec.key, Status: workunit.StatusDone, Worker: "w", Elapsed: time.Millisecond}
			rec.fromMemory = true
		default:
			elapsed := time.Duration(rng.IntN(2000)) * time.Microsecond * time.Duration(1+rng.IntN(100))
			rec.finished = sub.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			rec.out = &workunit.Outcome{Key: rec.key, Status: workunit.StatusDone, Worker: fmt.Sprintf("w%d", rng.IntN(3)), Elapsed: elapsed}
		}
		r.records = append(r.records, rec)
	}
	var buf bytes.Buffer
	_, err := r.WriteTo(&buf)
	require.NoError(t, err)
	var p parsed
	require.NoError(t, json.Unmarshal(buf.Bytes(), &p))
	slicesOf := map[[2]int][]event{}
	for _, ev := range p.TraceEvents {
		if ev.Ph == "X" {
			slicesOf[[2]int{ev.Pid, ev.Tid}] = append(slicesOf[[2]int{ev.Pid, ev.Tid}], ev)
		}
	}
	for th, evs := range slicesOf {
		slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.Ts, b.Ts) })
		for i := 1; i < len(evs); i++ {
			require.LessOrEqual(t, evs[i-1].Ts+*evs[i-1].Dur, evs[i].Ts, "thread %v: %+v overlaps %+v", th, evs[i-1], evs[i])
		}
	}
	flows := 0
	for _, ev := range p.TraceEvents {
		if ev.Cat != "flow" {
			continue
		}
		flows++
		in := slices.ContainsFunc(slicesOf[[2]int{ev.Pid, ev.Tid}], func(s event) bool { return s.Ts <= ev.Ts && ev.Ts < s.Ts+*s.Dur })
		assert.True(t, in, "flow event %+v is in no slice of its thread", ev)
	}
	assert.Positive(t, flows)
}
