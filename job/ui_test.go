package job

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeWorkers is a fake of the tracker's status, for the UI's tests.
type fakeWorkers struct{ ws workerStats }

func (f *fakeWorkers) get() workerStats { return f.ws }

func TestUI_BarSaysWhenNoWorkerIsConnected(t *testing.T) {
	t.Parallel()
	f := &fakeWorkers{}
	u := &jobUI{width: 10, total: 4, workers: f.get}
	now := time.Now()
	assert.NotContains(t, u.lineLocked(now), "slots busy", "the tracker could not say")
	assert.NotContains(t, u.lineLocked(now), "no workers")
	f.ws.ok = true
	assert.Contains(t, u.lineLocked(now), "no workers connected")
	f.ws.busy, f.ws.slots = 1, 4
	assert.Contains(t, u.lineLocked(now), "1/4 slots busy")
}

// Without a bar, work that waits with no worker connected is said once,
// after hintAfter, and not while a worker is connected.
func TestUI_HintWhenNoWorkerIsConnected(t *testing.T) {
	t.Parallel()
	f := &fakeWorkers{workerStats{ok: true, slots: 2}}
	var out bytes.Buffer
	u := &jobUI{w: &out, hints: true, tracker: "tracker.example:2355", total: 3, done: 1, workers: f.get}
	t0 := time.Now()
	u.checkHints(t0)
	u.checkHints(t0.Add(time.Minute))
	assert.Empty(t, out.String(), "a worker is connected")

	f.ws.slots = 0
	u.checkHints(t0.Add(2 * time.Minute))
	u.checkHints(t0.Add(2*time.Minute + hintAfter - time.Millisecond))
	assert.Empty(t, out.String(), "not yet")
	u.checkHints(t0.Add(2*time.Minute + hintAfter))
	assert.Equal(t, "riot: 2 workunits wait and no worker is connected to the tracker; start one with: riot-worker tracker.example:2355 (with the tracker's worker token in $RIOT_TOKEN, if it has tokens)\n",
		out.String())
	u.checkHints(t0.Add(time.Hour))
	assert.Equal(t, 1, bytes.Count(out.Bytes(), []byte("riot:")), "said once")
}

func TestUI_NoHintWhenNothingWaits(t *testing.T) {
	t.Parallel()
	f := &fakeWorkers{workerStats{ok: true}}
	var out bytes.Buffer
	u := &jobUI{w: &out, hints: true, tracker: "tracker.example:2355", total: 3, done: 3, workers: f.get, state: &scriptState{}}
	t0 := time.Now()
	u.checkHints(t0)
	u.checkHints(t0.Add(time.Hour))
	assert.Empty(t, out.String())

	// Nor with hints off (--quiet).
	u = &jobUI{w: &out, tracker: "tracker.example:2355", total: 3, done: 1, workers: f.get}
	u.checkHints(t0)
	u.checkHints(t0.Add(time.Hour))
	assert.Empty(t, out.String())
}

// Work that needs GPUs and waits while the connected workers have none is
// said once, after hintAfter; not while a worker has a GPU, nor when no
// worker is connected at all (the no-workers hint says that).
func TestUI_HintWhenNoWorkerHasGPUs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tracker, want string
	}{
		{"tracker.example:2355", "riot: 2 workunits need GPUs and wait, and no worker connected to the tracker has any; " +
			"start one on a machine with a GPU and its CUDA driver: riot-worker tracker.example:2355\n"},
		{"", "riot: 2 workunits need GPUs and wait, and the local worker has none (no CUDA driver here, or --no-gpu); " +
			"run the job with --tracker HOST, and riot-worker HOST on machines with GPUs\n"},
	} {
		f := &fakeWorkers{workerStats{ok: true, slots: 4, gpus: 1, maxGPUs: 1}}
		st := &scriptState{}
		var out bytes.Buffer
		u := &jobUI{w: &out, hints: true, tracker: tt.tracker, total: 5, workers: f.get, state: st}
		st.addGPUWork(1, 1)
		st.addGPUWork(1, 1)
		t0 := time.Now()
		u.checkHints(t0)
		u.checkHints(t0.Add(time.Minute))
		assert.Empty(t, out.String(), "a worker has a GPU")

		f.ws.gpus, f.ws.maxGPUs, f.ws.slots = 0, 0, 0
		u.checkHints(t0.Add(2 * time.Minute))
		u.checkHints(t0.Add(3 * time.Minute))
		assert.NotContains(t, out.String(), "GPU", "no worker at all")

		f.ws.slots = 4
		u.checkHints(t0.Add(4 * time.Minute))
		u.checkHints(t0.Add(4*time.Minute + hintAfter - time.Millisecond))
		assert.NotContains(t, out.String(), "GPU", "not yet")
		u.checkHints(t0.Add(4*time.Minute + hintAfter))
		assert.Contains(t, out.String(), tt.want)
		u.checkHints(t0.Add(time.Hour))
		assert.Equal(t, 1, bytes.Count(out.Bytes(), []byte("need GPUs")), "said once: %q", out.String())

		// Nothing is said when the GPU work is finished.
		out.Reset()
		u = &jobUI{w: &out, hints: true, tracker: tt.tracker, total: 5, workers: f.get, state: st}
		st.addGPUWork(1, -1)
		st.addGPUWork(1, -1)
		u.checkHints(t0)
		u.checkHints(t0.Add(time.Hour))
		assert.Empty(t, out.String())
	}
}

// Work that needs more GPUs than any connected worker has waits (the
// tracker accepts it: a worker with enough may connect later) and is said
// once, after hintAfter; not while a worker has enough, nor for the work
// that a worker can take.
func TestUI_HintWhenNoWorkerHasEnoughGPUs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tracker, want string
	}{
		{"tracker.example:2355", "riot: 2 workunits need up to 4 GPUs and wait, and no worker connected to the tracker has that many " +
			"(the most one has is 2); they run when a worker with enough connects: riot-worker tracker.example:2355\n"},
		{"", "riot: 2 workunits need up to 4 GPUs and wait, and the local worker has 2; " +
			"run the job with --tracker HOST, and riot-worker HOST on machines with enough GPUs\n"},
	} {
		f := &fakeWorkers{workerStats{ok: true, slots: 4, gpus: 6, maxGPUs: 4}}
		st := &scriptState{}
		var out bytes.Buffer
		u := &jobUI{w: &out, hints: true, tracker: tt.tracker, total: 5, workers: f.get, state: st}
		st.addGPUWork(1, 1) // a worker can take this one
		st.addGPUWork(3, 1)
		st.addGPUWork(4, 1)
		t0 := time.Now()
		u.checkHints(t0)
		u.checkHints(t0.Add(time.Minute))
		assert.Empty(t, out.String(), "a worker has 4 GPUs")

		f.ws.gpus, f.ws.maxGPUs = 4, 2
		u.checkHints(t0.Add(2 * time.Minute))
		u.checkHints(t0.Add(2*time.Minute + hintAfter - time.Millisecond))
		assert.Empty(t, out.String(), "not yet")
		u.checkHints(t0.Add(2*time.Minute + hintAfter))
		assert.Equal(t, tt.want, out.String())
		u.checkHints(t0.Add(time.Hour))
		assert.Equal(t, 1, bytes.Count(out.Bytes(), []byte("riot:")), "said once: %q", out.String())
	}
}

// A script that waits for work when workers took all its own is told so,
// once; not while its own work is outstanding.
func TestUI_HintWhenWorkersTookTheScriptsWork(t *testing.T) {
	t.Parallel()
	st := &scriptState{}
	var out bytes.Buffer
	u := &jobUI{w: &out, hints: true, total: 1, state: st}
	st.addTaker(1)
	t0 := time.Now()
	u.checkHints(t0)
	u.checkHints(t0.Add(time.Minute))
	assert.Empty(t, out.String(), "its workunit is outstanding: it may take it")

	u.done = 1
	u.checkHints(t0.Add(2 * time.Minute))
	u.checkHints(t0.Add(2*time.Minute + hintAfter))
	assert.Equal(t, "riot: the script waits in client.waitForWork, but workers ran all 1 workunits it submitted, "+
		"so none is left for it to take; a script that takes its own workunits needs a tracker without workers "+
		"(riot-worker eval --workers 0 for the embedded default)\n", out.String())

	out.Reset()
	u = &jobUI{w: &out, hints: true, total: 1, done: 1, state: st}
	st.addTaker(-1)
	u.checkHints(t0)
	u.checkHints(t0.Add(time.Hour))
	assert.Empty(t, out.String(), "not waiting for work")
}

// The bar's line fits the terminal, less its last column: a line that
// wraps leaves a stale copy behind on every redraw. What matters most (the
// counts, a lost tracker) stays; the rate, the workers and the ETA go
// first.
func TestUI_BarFitsTheTerminal(t *testing.T) {
	t.Parallel()
	f := &fakeWorkers{workerStats{ok: true, busy: 2, slots: 2}}
	t0 := time.Now()
	for _, cols := range []int{200, 80, 60, 40, 30, 20, 8} {
		u := &jobUI{width: 24, total: 10, done: 3, failed: 1, start: t0, workers: f.get, cols: func() int { return cols }}
		line := u.lineLocked(t0.Add(6 * time.Second))
		assert.LessOrEqual(t, len(line), cols-1, "%d columns: %q", cols, line)
		if cols >= 20 {
			assert.Contains(t, line, "3/10", "%d columns: %q", cols, line)
		}
		if cols >= 80 {
			assert.Contains(t, line, "[=======>                ] 3/10 (1 failed)  0.50/s  ETA 14s  2/2 slots busy")
		}
		if cols == 40 {
			assert.Equal(t, "[===>        ] 3/10 (1 failed)  ETA 14s", line)
		}
	}
	u := &jobUI{width: 24, total: 10, done: 3, start: t0, workers: f.get, cols: func() int { return 40 }, lost: t0}
	assert.Equal(t, "3/10  tracker lost for 6s; reconnecting", u.lineLocked(t0.Add(6*time.Second)),
		"the lost tracker stays, before the bar")
	u = &jobUI{width: 24, total: 10, done: 3, start: t0, workers: f.get}
	assert.Len(t, u.lineLocked(t0.Add(6*time.Second)), len("[=======>                ] 3/10  0.50/s  ETA 14s  2/2 slots busy"),
		"no terminal: no limit")
}

// The bar ends with a line that says what became of the work, and how
// much of it came from memory.
func TestUI_Summary(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	st := &scriptState{}
	u := &jobUI{total: 4, done: 4, failed: 1, start: t0, state: st}
	assert.Equal(t, "riot: 4 workunits finished in 4.2s, 1 failed", u.summaryLocked(t0.Add(4200*time.Millisecond)))
	st.addMemoized()
	st.addMemoized()
	assert.Equal(t, "riot: 4 workunits finished in 4.2s, 1 failed, 2 from memory (the tracker had their results)", u.summaryLocked(t0.Add(4200*time.Millisecond)))
	st.addMemoized()
	st.addMemoized()
	u.failed = 0
	assert.Equal(t, "riot: 4 workunits finished in 850ms, all from memory (the tracker had their results; nothing ran)", u.summaryLocked(t0.Add(850*time.Millisecond)))
	u = &jobUI{total: 4, done: 1, start: t0}
	assert.Equal(t, "riot: 1 of 4 workunits finished in 3m07s", u.summaryLocked(t0.Add(187*time.Second)))
}

// A lost tracker is said on a line of its own, once, and so is its
// coming back; meanwhile the bar says so instead of the workers it can no
// longer know.
func TestUI_SaysWhenTheTrackerIsLostAndBack(t *testing.T) {
	t.Parallel()
	up := true
	var out bytes.Buffer
	f := &fakeWorkers{workerStats{ok: true, busy: 2, slots: 2}}
	u := &jobUI{w: &out, tracker: "alfred:2355", total: 3, workers: f.get, connected: func() bool { return up }}
	t0 := time.Now()
	u.checkConnection(t0)
	assert.Empty(t, out.String())
	up = false
	u.checkConnection(t0.Add(time.Second))
	u.checkConnection(t0.Add(2 * time.Second))
	assert.Equal(t, "riot: lost the connection to the tracker at alfred:2355; reconnecting "+
		"(the work goes on there, and the job collects its results once the tracker is back)\n", out.String())
	assert.Contains(t, u.lineLocked(t0.Add(3*time.Second)), "tracker lost for 2s; reconnecting")
	assert.NotContains(t, u.lineLocked(t0.Add(3*time.Second)), "slots busy")
	out.Reset()
	up = true
	u.checkConnection(t0.Add(13 * time.Second))
	u.checkConnection(t0.Add(14 * time.Second))
	assert.Equal(t, "riot: reconnected to the tracker at alfred:2355 after 12s\n", out.String())
	assert.Contains(t, u.lineLocked(t0.Add(14*time.Second)), "2/2 slots busy")
}
