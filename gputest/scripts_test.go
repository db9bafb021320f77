package gputest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/tracker/trackertest"
)

// scriptCase is one run of a gpu-*.js script and the stdout it must
// print: exactly want, or, for the benchmarks, lines matching wantRE.
type scriptCase struct {
	script string
	args   []string
	want   string
	wantRE []string
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func checkScript(t *testing.T, opts job.Options, tc scriptCase) {
	t.Helper()
	opts.Script, opts.Args = script(tc.script), tc.args
	stdout, stderr, err := runScript(t, opts)
	require.NoError(t, err, "%s: stdout:\n%s\nstderr:\n%s", tc.script, stdout, stderr)
	if tc.wantRE == nil {
		assert.Equal(t, tc.want, stdout, "%s (stderr: %s)", tc.script, stderr)
		return
	}
	got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, got, len(tc.wantRE), "%s: stdout:\n%s", tc.script, stdout)
	for i, re := range tc.wantRE {
		assert.Regexp(t, regexp.MustCompile("^"+re+"$"), got[i], "%s: line %d", tc.script, i+1)
	}
}

// The seed's outputs (seeds/device-resources.txt, section 1.3) on a
// worker with one device, as the doc comments of the scripts show them.
var oneGPUCases = []scriptCase{
	{script: "gpu-finding.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> deviceCount()",
		"1",
		"> [0, 1, 2, 3].map(deviceForWorker)",
		"[ 0, 0, 0, 0 ]",
		"> deviceResources({device: 4})",
		"RaftError: deviceResources: no device 4 among 1",
	)},
	{script: "gpu-resources.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> const r = deviceResources({device: deviceForWorker(0)})",
		"> String(r)",
		"[DeviceResources device 0]",
		"> resourcesDevice(r)",
		"0",
		"> r === currentDeviceResources(0)",
		"false",
		"> riot.worker.gpus",
		"[ 0 ]",
		"> resourcesDevice(deviceResources())",
		"0",
	)},
	{script: "gpu-timing.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> const r = deviceResources({device: deviceForWorker(0)})",
		"> const [rows, ms] = timed(r, () => processBatch([[1.0, 2.0], [3.0, 4.0]]))",
		"> [rows, typeof ms === 'number']",
		"[ 2, true ]",
	)},
	{script: "gpu-worker.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first)",
		"[ 2, 1 ]",
	)},
	{script: "gpu-fanning.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> report(runWorkers(runWorker, jobs))",
		"worker 0: 2 rows",
		"worker 0: 1 rows",
		"worker 1: 1 rows",
		"worker 2: 2 rows",
	)},
	{script: "gpu-failures.js", want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"> failures(runWorkers(runWorkerCaught, [[0, batches0], [4, batches1]]))",
		"[ [ 1, 'logic', 'deviceResources: no device 4 among 1' ] ]",
	)},
	{script: "gpu-gemm.js", args: []string{"64", "2"}, wantRE: []string{
		regexp.QuoteMeta("worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)"),
		regexp.QuoteMeta("matMul 64×64 on device 0 (Fake Device 0), best of 2:"),
		`float32: [0-9.e+-]+ TFLOP/s \([0-9.e+-]+ ms\), check ok`,
		`float64: [0-9.e+-]+ TFLOP/s \([0-9.e+-]+ ms\), check ok`,
	}},
	{script: "gpu-saxpy.js", args: []string{"5000"}, want: lines(
		"worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)",
		"saxpy on 5000 floats on device 0, compiled with NVRTC: max |y - host| = 0, ok",
	)},
	{script: "gpu-fanout.js", args: []string{"32", "2"}, wantRE: []string{
		regexp.QuoteMeta("worker local: 1 GPU device (0: Fake Device 0, 1.0 GiB)"),
		`fan-out on device 0, 2 batches of 16×8 · 8×8: one workunit [0-9.]+ ms, four at once [0-9.]+ ms, overlap [0-9.]+, check ok`,
	}},
}

// Every script against a tracker and a worker with one (fake) device.
func TestScripts_OneGPU(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), workerSpec{name: "local", gpu: fakeDriver(t, 1)})
	for _, tc := range oneGPUCases {
		checkScript(t, job.Options{Tracker: tr.Addr()}, tc)
	}
}

// The same on the embedded default (riot-worker eval SCRIPT.js without
// --tracker) when its worker is given the driver (job.Options.GPU).
func TestScripts_EmbeddedDefault(t *testing.T) {
	t.Parallel()
	drv := fakeDriver(t, 1)
	for _, tc := range oneGPUCases {
		if tc.script == "gpu-finding.js" || tc.script == "gpu-failures.js" {
			opts := job.Options{Workers: 2}
			opts.GPU = drv
			checkScript(t, opts, tc)
		}
	}
}

// On a worker with more devices, the counts are the machine's, and the
// missing device of the seed's examples is the first one past them when
// there are more than four.
func TestScripts_SixGPUs(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), workerSpec{name: "local", gpu: fakeDriver(t, 6)})
	devices := "0: Fake Device 0, 1.0 GiB; 1: Fake Device 1, 1.0 GiB; 2: Fake Device 2, 1.0 GiB; " +
		"3: Fake Device 3, 1.0 GiB; 4: Fake Device 4, 1.0 GiB; 5: Fake Device 5, 1.0 GiB"
	for _, tc := range []scriptCase{
		{script: "gpu-finding.js", want: lines(
			"worker local: 6 GPU devices ("+devices+")",
			"> deviceCount()",
			"6",
			"> [0, 1, 2, 3].map(deviceForWorker)",
			"[ 0, 1, 2, 3 ]",
			"> deviceResources({device: 6})",
			"RaftError: deviceResources: no device 6 among 6",
		)},
		{script: "gpu-failures.js", want: lines(
			"worker local: 6 GPU devices ("+devices+")",
			"> failures(runWorkers(runWorkerCaught, [[0, batches0], [6, batches1]]))",
			"[ [ 1, 'logic', 'deviceResources: no device 6 among 6' ] ]",
		)},
		{script: "gpu-fanning.js", want: lines(
			"worker local: 6 GPU devices ("+devices+")",
			"> report(runWorkers(runWorker, jobs))",
			"worker 0: 2 rows",
			"worker 0: 1 rows",
			"worker 1: 1 rows",
			"worker 2: 2 rows",
		)},
	} {
		checkScript(t, job.Options{Tracker: tr.Addr()}, tc)
	}
}

// Without a GPU (a worker without a driver, as riot-worker --no-gpu or the
// embedded default today), every script says so plainly and shows what
// can be shown: the seed's examples fail with the logic error of a
// missing device; the benchmarks stop.
func TestScripts_NoGPU(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), workerSpec{name: "local"})
	const (
		noGPU  = "No GPU: worker local has no GPU devices."
		anyway = "The examples run there anyway, without {gpus: 1}, to show what a workunit sees without a device."
		one    = "The example runs there anyway, without {gpus: 1}, to show what a workunit sees without a device."
		jobs   = "The jobs run there anyway, without {gpus: 1}, to show what a workunit sees without a device."
	)
	for _, tc := range []scriptCase{
		{script: "gpu-finding.js", want: lines(noGPU, anyway,
			"> deviceCount()",
			"0",
			"> [0, 1, 2, 3].map(deviceForWorker)",
			"[ 0, 0, 0, 0 ]",
			"> deviceResources({device: 4})",
			"RaftError: deviceResources: no device 4 among 0",
		)},
		{script: "gpu-resources.js", want: lines(noGPU, one,
			"> const r = deviceResources({device: deviceForWorker(0)})",
			"RaftError: deviceResources: no device 0 among 0",
		)},
		{script: "gpu-timing.js", want: lines(noGPU, one,
			"> const r = deviceResources({device: deviceForWorker(0)})",
			"RaftError: deviceResources: no device 0 among 0",
		)},
		{script: "gpu-worker.js", want: lines(noGPU, one,
			"> runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first)",
			"RaftError: deviceResources: no device 0 among 0",
		)},
		{script: "gpu-fanning.js", want: lines(noGPU, jobs,
			"> report(runWorkers(runWorker, jobs))",
			"RaftError: deviceResources: no device 0 among 0",
		)},
		{script: "gpu-failures.js", want: lines(noGPU, jobs,
			"> failures(runWorkers(runWorkerCaught, [[0, batches0], [4, batches1]]))",
			"[",
			"  [ 0, 'logic', 'deviceResources: no device 0 among 0' ],",
			"  [ 1, 'logic', 'deviceResources: no device 4 among 0' ]",
			"]",
		)},
		{script: "gpu-gemm.js", want: lines(noGPU,
			"The benchmark needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).")},
		{script: "gpu-saxpy.js", want: lines(noGPU,
			"The kernel needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).")},
		{script: "gpu-fanout.js", want: lines(noGPU,
			"The benchmark needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).")},
	} {
		checkScript(t, job.Options{Tracker: tr.Addr()}, tc)
	}
}

// A worker whose driver could not be loaded: the probe gives the driver's
// reason, and so do the errors of the workunits that ask for a device.
func TestScripts_DriverUnavailable(t *testing.T) {
	t.Parallel()
	drv, err := gpu.Open(gpu.WithDriverLibrary(filepath.Join(t.TempDir(), "libmissing.so")))
	require.ErrorIs(t, err, gpu.ErrUnavailable)
	t.Cleanup(func() { require.NoError(t, drv.Close()) })
	tr := trackertest.Start(t)
	startWorker(t, tr.Addr(), workerSpec{name: "local", gpu: drv})
	stdout, stderr, err := runScript(t, job.Options{Tracker: tr.Addr(), Script: script("gpu-finding.js")})
	require.NoError(t, err, stderr)
	why := drv.Err().Error()
	assert.Contains(t, why, "gpu: cuda unavailable: cannot load the CUDA driver")
	assert.Equal(t, lines(
		"No GPU: worker local has no GPU devices ("+why+").",
		"The examples run there anyway, without {gpus: 1}, to show what a workunit sees without a device.",
		"> deviceCount()",
		"0",
		"> [0, 1, 2, 3].map(deviceForWorker)",
		"[ 0, 0, 0, 0 ]",
		"> deviceResources({device: 4})",
		"RaftError: deviceResources: no device 4 among 0: "+why,
	), stdout)
}
