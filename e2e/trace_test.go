package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// chromeTrace is a trace-event file, as a test reads it.
type chromeTrace struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   *int64         `json:"ts"`
		Dur  *int64         `json:"dur"`
		Pid  *int           `json:"pid"`
		Tid  *int           `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
}

func readTrace(t *testing.T, path string) chromeTrace {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, json.Valid(b), "%s", b)
	var ct chromeTrace
	require.NoError(t, json.Unmarshal(b, &ct))
	for _, ev := range ct.TraceEvents {
		require.NotEmpty(t, ev.Ph, "every event has a phase")
		require.NotNil(t, ev.Pid, "every event has a pid: %+v", ev)
		if ev.Ph != "M" {
			require.NotNil(t, ev.Ts, "every event has a ts: %+v", ev)
		}
	}
	return ct
}

// TestE2E_Trace: riot-worker eval --trace FILE, through a riotd and two
// riot-worker processes, writes trace-event JSON with a track per worker,
// named for it, and one complete event per workunit on the worker that
// ran it, with its key and at least its run's duration; an interrupted
// job's file shows its unfinished workunits.
func TestE2E_Trace(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	w1 := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "trace-a", Slots: 2})
	w2 := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "trace-b", Slots: 1})
	tr.WaitFor(t, workers(2))
	script := jobScript(t, "spin.js", `
const spin = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} return riot.worker.name; };
const ids = [60, 1, 2, 3, 4, 5].map((ms) => riot.doWork(spin, ms));
const ran = ids.map(riot.waitUntilDone);
console.log(JSON.stringify(ids.map((id, i) => [id, ran[i]])));
`)
	path := filepath.Join(t.TempDir(), "spin.trace.json")
	res := bins.RunEval(t, "--quiet", "--tracker", tr.Addr(), "--trace", path, script)
	require.Equal(t, 0, res.Code, res)
	var pairs [][2]string
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &pairs), res)
	require.Len(t, pairs, 6)

	ct := readTrace(t, path)
	assert.Equal(t, "ms", ct.DisplayTimeUnit)
	procs := map[int]string{}
	threads := map[[2]int]string{}
	for _, ev := range ct.TraceEvents {
		switch ev.Name {
		case "process_name":
			procs[*ev.Pid] = ev.Args["name"].(string)
		case "thread_name":
			threads[[2]int{*ev.Pid, *ev.Tid}] = ev.Args["name"].(string)
		}
	}
	runs := map[string]int{} // by key
	for _, ev := range ct.TraceEvents {
		if ev.Cat != "run" {
			continue
		}
		require.Equal(t, "X", ev.Ph)
		require.NotNil(t, ev.Dur)
		key := ev.Args["key"].(string)
		runs[key]++
		var worker string
		for i, p := range pairs {
			if p[0] == key {
				worker = p[1]
				if i == 0 {
					// Busy for 60 ms by Date.now(), whose milliseconds
					// are whole: at least 50 ms.
					assert.GreaterOrEqual(t, *ev.Dur, int64(50_000), "the 60 ms workunit's run")
				}
			}
		}
		require.NotEmpty(t, worker, "a run of a workunit the job did not submit: %s", key)
		assert.Equal(t, worker, procs[*ev.Pid], "the run of %s is on the track of the worker that ran it", key[:12])
		assert.Equal(t, worker, ev.Args["worker"])
		assert.Regexp(t, `^lane \d+$`, threads[[2]int{*ev.Pid, *ev.Tid}])
		assert.Equal(t, "done", ev.Args["status"])
	}
	for _, p := range pairs {
		assert.Equal(t, 1, runs[p[0]], "one run of %s", p[0][:12])
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		seen[p[1]] = true
	}
	for name := range seen {
		assert.Contains(t, []string{w1.Name(), w2.Name()}, name)
		assert.NotZero(t, pidOf(procs, name), "a track for %s", name)
	}
	assert.Equal(t, "spin.js", procs[1], "the master's process is named for the job")
	assert.EqualValues(t, 6, ct.OtherData["runs"])
	assert.EqualValues(t, 6, ct.OtherData["submissions"])

	// Interrupted, with no worker for its work: the trace is written, and
	// says what was left waiting.
	idle := bins.StartTracker(t, e2e.TrackerOptions{})
	waits := jobScript(t, "waits.js", `riot.forWork([1, 2], (n) => n);`)
	path2 := filepath.Join(t.TempDir(), "waits.trace.json")
	job := e2e.NewProcess("riot-worker eval --trace", bins.RiotWorker,
		[]string{"eval", "--quiet", "--tracker", idle.Addr(), "--trace", path2, waits}, nil, bins.Root)
	require.NoError(t, job.Start())
	t.Cleanup(func() { job.Close() })
	idle.WaitFor(t, func(st tracker.Status) bool { return st.Workunits.Waiting == 2 })
	require.NoError(t, job.Signal(syscall.SIGINT))
	code, err := job.Wait(e2e.Context(t, e2e.DefaultWait))
	require.NoError(t, err)
	assert.Equal(t, 130, code, job.Log())
	ct = readTrace(t, path2)
	var unfinished int
	for _, ev := range ct.TraceEvents {
		if ev.Cat == "unfinished" {
			unfinished++
		}
	}
	assert.Equal(t, 2, unfinished)
	assert.EqualValues(t, 2, ct.OtherData["unfinished"])
}

// pidOf returns the pid of the process named name in procs, 0 if none.
func pidOf(procs map[int]string, name string) int {
	for pid, n := range procs {
		if n == name {
			return pid
		}
	}
	return 0
}
