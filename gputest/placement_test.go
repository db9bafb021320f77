package gputest

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// writeScript writes files (name → source) into a new directory and
// returns the path of the first one named, the job script.
func writeScript(t *testing.T, main string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	return filepath.Join(dir, main)
}

func quietTracker(t *testing.T) *trackertest.Tracker {
	return trackertest.Start(t, trackertest.LogLevel(slog.LevelWarn))
}

// Work submitted with {gpus: 1}, by each of the ways a script submits
// work, goes only to the worker with a device, and gets that device; the
// worker without one (riot-worker --no-gpu) never sees it.
func TestPlacement_OnlyOnWorkersWithGPUs(t *testing.T) {
	t.Parallel()
	tr := quietTracker(t)
	var mu sync.Mutex
	ran := map[string]int{} // worker → GPU workunits started there
	count := func(name string) func(*client.Assignment) {
		return func(a *client.Assignment) {
			if a.GPUs > 0 {
				mu.Lock()
				ran[name]++
				mu.Unlock()
			}
		}
	}
	gpuName := startWorker(t, tr.Addr(), workerSpec{name: "gpu", gpu: fakeDriver(t, 1), started: count("gpu")})
	cpuName := startWorker(t, tr.Addr(), workerSpec{name: "cpu", started: count("cpu")})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 2 })

	path := writeScript(t, "job.js", map[string]string{
		"job.js": `
			const gpu = riot.with({gpus: 1});
			const where = () => [riot.worker.name, riot.worker.gpus, resourcesDevice(deviceResources())];
			const ids = [
				gpu.doWork(where),
				gpu.doWorkEval('[riot.worker.name, riot.worker.gpus, resourcesDevice(deviceResources())]'),
				gpu.doWorkCall('where.js', 'where'),
			];
			const all = ids.map(riot.waitUntilDone).concat(
				riot.forWork([1, 2, 3, 4, 5, 6, 7, 8], (i) => where(), {gpus: 1}));
			// Work without {gpus} may run anywhere: on the worker without a device too.
			riot.forWork([1, 2, 3, 4, 5, 6, 7, 8], (i) => deviceCount());
			console.log(JSON.stringify(all));`,
		"where.js": `exports.where = () => [riot.worker.name, riot.worker.gpus, resourcesDevice(deviceResources())];`,
	})
	stdout, stderr, err := runScript(t, job.Options{Tracker: tr.Addr(), Script: path})
	require.NoError(t, err, stderr)
	var got [][]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Len(t, got, 11)
	for i, g := range got {
		assert.Equal(t, []any{gpuName, []any{0.0}, 0.0}, g, "workunit %d", i)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{gpuName: 11}, ran, "no GPU work on %s", cpuName)
}

// A worker with one device and two slots runs GPU workunits one at a time:
// placement goes by free devices, not by free slots. While the first holds
// the device, the second waits at the tracker, and work without {gpus}
// still runs in the other slot.
func TestPlacement_OneDeviceTwoSlots(t *testing.T) {
	t.Parallel()
	tr := quietTracker(t)
	firstStarted := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var starts [][]int // the devices each GPU workunit was given, by start
	started := func(a *client.Assignment) {
		if a.GPUs == 0 {
			return
		}
		mu.Lock()
		starts = append(starts, nil)
		n := len(starts)
		mu.Unlock()
		if n == 1 {
			// Hold the first GPU workunit (and its device) until the
			// test has seen the second one wait.
			close(firstStarted)
			<-release
		}
	}
	startWorker(t, tr.Addr(), workerSpec{name: "gpu", slots: 2, gpu: fakeDriver(t, 1), started: started})

	path := writeScript(t, "job.js", map[string]string{"job.js": `
		console.log(JSON.stringify(riot.forWork([1, 2], (i) => [i, riot.worker.gpus], {gpus: 1})));`})
	type result struct {
		stdout, stderr string
		err            error
	}
	done := make(chan result, 1)
	go func() {
		// runScript's t.Helper and require run here only through
		// job.Run, which reports errors as values.
		stdout, stderr, err := runScript(t, job.Options{Tracker: tr.Addr(), Script: path})
		done <- result{stdout, stderr, err}
	}()
	select {
	case <-firstStarted:
	case r := <-done:
		t.Fatalf("the script ended before its first workunit started: %v\n%s", r.err, r.stderr)
	}
	// The first runs; the second waits at the tracker although a slot is
	// free, since the worker's one device is taken.
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Running == 1 && s.Waiting == 1 })
	assert.Equal(t, 1, st.Leases)

	// A workunit without {gpus} runs meanwhile, in the free slot.
	c, err := client.Dial(t.Context(), tr.Addr(), client.Options{Name: "master", Logger: testLogger(t)})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), trackertest.DefaultWait)
	defer cancel()
	out, err := c.Submit(&workunit.Spec{Kind: workunit.Eval, Source: "riot.worker.gpus.length", Name: "eval"},
		workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	v, err := value.Unmarshal(out.Result)
	require.NoError(t, err)
	assert.Equal(t, 1.0, v, "work without {gpus} sees every device")
	st = tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 })
	assert.Equal(t, 1, st.Waiting, "the second GPU workunit still waits")
	mu.Lock()
	assert.Len(t, starts, 1)
	mu.Unlock()

	close(release)
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the script did not end")
	}
	require.NoError(t, r.err, r.stderr)
	assert.Equal(t, "[[1,[0]],[2,[0]]]\n", r.stdout)
	mu.Lock()
	assert.Len(t, starts, 2)
	mu.Unlock()
}

// A {gpus: 1} workunit with no worker that has a device waits (it does not
// fail): the script sees it as 'waiting' (client.workunitInfo), the
// tracker's status counts it, and it runs as soon as a worker with a
// device joins.
func TestPlacement_NoGPUWorker_Waits(t *testing.T) {
	t.Parallel()
	tr := quietTracker(t)
	startWorker(t, tr.Addr(), workerSpec{name: "cpu"})
	path := writeScript(t, "job.js", map[string]string{"job.js": `
		const id = riot.with({gpus: 1}).doWork(() => riot.worker.name);
		const [status, worker] = riot.currentClient().workunitInfo(id);
		console.log(status, worker);
		console.log(id);`})
	stdout, stderr, err := runScript(t, job.Options{Tracker: tr.Addr(), Script: path})
	require.NoError(t, err, stderr)
	out := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, out, 2, stdout)
	assert.Equal(t, "waiting null", out[0])
	key, err := workunit.ParseKey(out[1])
	require.NoError(t, err)

	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 1 })
	assert.Zero(t, st.Running)
	status, err := tr.Server().Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, status.Workunits.Waiting)
	require.Len(t, status.Workers, 1)
	assert.Zero(t, status.Workers[0].GPUs)

	gpuName := startWorker(t, tr.Addr(), workerSpec{name: "gpu", gpu: fakeDriver(t, 1)})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 })
	rec, ok := tr.Lookup(t, key)
	require.True(t, ok)
	assert.Equal(t, gpuName, rec.Worker)
}
