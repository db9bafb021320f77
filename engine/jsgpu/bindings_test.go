package jsgpu

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/workunit"
)

// fakeGPU is a copy of the FAKE CUDA driver and libraries that package
// gpu's tests use (gpu/testdata/fakecuda.c): a test double with the
// exported names and signatures of the CUDA entry points package gpu
// binds, host memory behind them. Each test builds its own copy into
// t.TempDir(), so each has its own state and counters.
type fakeGPU struct {
	path string
	get  func(key string) int64
	set  func(key string, value int64) int32
}

// newFakeGPU builds the fake with gcc, skipping the test when gcc is
// missing.
func newFakeGPU(t *testing.T) *fakeGPU {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the fake CUDA library")
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "gpu", "testdata", "fakecuda.c"))
	require.NoError(t, err)
	f := &fakeGPU{path: filepath.Join(t.TempDir(), "libfakecuda.so")}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O0", "-Wall", "-Wl,-Bsymbolic",
		"-o", f.path, src, "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake CUDA library: %s", out)
	h, err := purego.Dlopen(f.path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	purego.RegisterLibFunc(&f.get, h, "fakecuda_get")
	purego.RegisterLibFunc(&f.set, h, "fakecuda_set")
	return f
}

// setting changes one of the fake's settings (see fakecuda.c).
func (f *fakeGPU) setting(t *testing.T, key string, value int64) {
	t.Helper()
	require.Zero(t, f.set(key, value), "unknown fake setting %q", key)
}

// counter reads one of the fake's counters.
func (f *fakeGPU) counter(t *testing.T, key string) int64 {
	t.Helper()
	v := f.get(key)
	require.NotEqual(t, int64(-1), v, "unknown fake counter %q", key)
	return v
}

// open opens a Driver on the fake with the given number of devices; it is
// closed when the test ends, after the engines the test made.
func (f *fakeGPU) open(t *testing.T, devices int) *gpu.Driver {
	t.Helper()
	f.setting(t, "device_count", int64(devices))
	d, err := gpu.Open(
		gpu.WithDriverLibrary(f.path),
		gpu.WithLibrary(gpu.CUBLAS, f.path),
		gpu.WithLibrary(gpu.CUSOLVER, f.path),
		gpu.WithLibrary(gpu.CUSPARSE, f.path),
		gpu.WithLibrary(gpu.NVRTC, f.path),
		gpu.WithLogger(slog.New(slog.DiscardHandler)), // the collector's backstop warns
	)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// gpuEngine returns an engine of one slot on drv, closed when the test
// ends (before drv, since cleanups run last first).
func gpuEngine(t *testing.T, drv *gpu.Driver, opts engine.Options) *engine.Engine {
	t.Helper()
	opts.Bindings = append(opts.Bindings, Binding(drv))
	opts.GPUs = Ordinals(drv)
	if opts.Slots == 0 {
		opts.Slots = 1
	}
	e, err := engine.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// gpuRun runs src and returns its decoded value and console lines.
func gpuRun(t *testing.T, e *engine.Engine, req engine.Request) (any, []string) {
	t.Helper()
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	console, err := res.Console.Lines()
	require.NoError(t, err)
	var lines []string
	for _, l := range console {
		lines = append(lines, l.Text)
	}
	return v, lines
}

func gpuEval(t *testing.T, e *engine.Engine, src string) any {
	t.Helper()
	v, _ := gpuRun(t, e, gpuReq(src))
	return v
}

func gpuReq(src string) engine.Request {
	return engine.Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "gpu"}}
}

// gpuFail runs req, which must fail, and returns its error.
func gpuFail(t *testing.T, e *engine.Engine, req engine.Request) *workunit.Error {
	t.Helper()
	_, err := e.Run(context.Background(), req)
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr), "error %v (%T) is not a *workunit.Error", err, err)
	return werr
}

// seedPrelude is the seed's section 1.3 (seeds/device-resources.txt) in
// JavaScript: its definitions, one for one. A test's program is the
// prelude and a body that returns the test's value, in a function of its
// own, so that programs run one after another in one realm.
const seedPrelude = `
	const deviceForWorker = (i) => i % deviceCount();
	function processBatch(rows) {
		for (const row of rows) {
			if (row.length !== 2) throw new Error('processBatch: row ' + JSON.stringify(row) + ' has ' + row.length + ' columns');
		}
		return rows.length;
	}
	function timed(r, thunk) {
		const start = performance.now();
		const result = thunk();
		resourcesSync(r);
		return [result, performance.now() - start];
	}
	function runWorker(device, batches) {
		return withDeviceResources(deviceResources({device}), (r) =>
			batches.map((rows) => timed(r, () => processBatch(rows))));
	}
	// Each worker runs in its own job and sends back a thunk that returns
	// its result or rethrows.
	function runWorkers(worker, jobs) {
		const answers = jobs.map(([device, batches]) => new Promise((send) => {
			queueMicrotask(() => {
				try {
					const result = worker(device, batches);
					send(() => result);
				} catch (e) {
					send(() => { throw e; });
				}
			});
		}));
		return Promise.all(answers).then((thunks) => thunks.map((answer) => answer()));
	}
	function report(results) {
		results.forEach((batches, i) => {
			for (const [n, ms] of batches) console.log('worker ' + i + ': ' + n + ' rows');
		});
	}
	const allBatches = [
		[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]],
		[[[7.0, 8.0]]],
		[[[9.0, 10.0], [11.0, 12.0]]],
	];
	const jobs = allBatches.map((batches, i) => [deviceForWorker(i), batches]);
	const caught = (thunk) => {
		try {
			return ['returned', thunk()];
		} catch (e) {
			return [e.name, e instanceof RaftError ? e.kind : null, e.message];
		}
	};
`

func seedProgram(body string) string {
	return "(function () {\n" + seedPrelude + "\n" + body + "\n})()"
}

// 1.3.1 Finding the GPU.
func TestGPU_Seed_FindingTheGPU(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedProgram(`
		let err;
		try { deviceResources({device: 4}); } catch (e) { err = e; }
		return [deviceCount(), [0, 1, 2, 3].map(deviceForWorker),
			[err instanceof RaftError, err instanceof Error, err.name, err.kind, err.message, String(err), err.op]];`))
	assert.Equal(t, []any{1.0, []any{0.0, 0.0, 0.0, 0.0},
		[]any{true, true, "RaftError", "logic", "deviceResources: no device 4 among 1",
			"RaftError: deviceResources: no device 4 among 1", "deviceResources"}}, got)

	// Uncaught, it fails the workunit with its name and message.
	werr := gpuFail(t, e, gpuReq(`deviceResources({device: 4})`))
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "RaftError", werr.Name)
	assert.Equal(t, "deviceResources: no device 4 among 1", werr.Message)
	assert.Zero(t, f.counter(t, "live_streams"))
}

// 1.3.2 Each worker's resources.
func TestGPU_Seed_Resources(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got, lines := gpuRun(t, e, gpuReq(seedProgram(`
		const r = deviceResources({device: deviceForWorker(0)});
		globalThis.kept = r;
		console.log(r);
		console.log('%s', String(r));
		return [resourcesDevice(r), r === currentDeviceResources(0), r.device, r instanceof DeviceResources,
			Object.prototype.toString.call(r), r.released];`)))
	assert.Equal(t, []any{0.0, false, 0.0, true, "[object DeviceResources]", false}, got)
	assert.Equal(t, []string{"DeviceResources { device: 0 }", "[DeviceResources device 0]"}, lines)
	assert.EqualValues(t, 2, f.counter(t, "live_streams"), "r and the default resources, each with its own stream")
}

// currentDeviceResources is per realm and device: the same object for
// every workunit of the realm, made again once released.
func TestGPU_CurrentDeviceResources(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 2), engine.Options{})
	assert.Equal(t, true, gpuEval(t, e, `globalThis.cur = currentDeviceResources(0);
		currentDeviceResources() === cur && currentDeviceResources(1) !== cur && resourcesDevice(currentDeviceResources(1)) === 1`))
	assert.Equal(t, true, gpuEval(t, e, `currentDeviceResources(0) === cur`))
	assert.Equal(t, []any{true, true, false}, gpuEval(t, e, `
		withDeviceResources(currentDeviceResources(0), () => 0);
		[cur.released, currentDeviceResources(0) !== cur, currentDeviceResources(0).released]`))
	// Another realm has its own.
	v, _ := gpuRun(t, e, engine.Request{Spec: gpuReq(`typeof cur`).Spec, Realm: "other"})
	assert.Equal(t, "undefined", v)
}

// 1.3.3 Timing a batch.
func TestGPU_Seed_TimingABatch(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedProgram(`
		const r = deviceResources({device: deviceForWorker(0)});
		const [rows, ms] = timed(r, () => processBatch([[1.0, 2.0], [3.0, 4.0]]));
		return [rows, typeof ms === 'number' && ms >= 0];`))
	assert.Equal(t, []any{2.0, true}, got)

	// resourcesSync waits for what is queued: the fake answers "not ready"
	// three times after each operation.
	f.setting(t, "not_ready", 3)
	before := f.counter(t, "stream_queries")
	got = gpuEval(t, e, `
		const r = deviceResources();
		deviceArray([1, 2, 3], {resources: r});
		resourcesSync(r);
		resourcesRelease(r);
		r.released`)
	assert.Equal(t, true, got)
	assert.EqualValues(t, 4, f.counter(t, "stream_queries")-before)
}

// 1.3.4 A worker: withDeviceResources releases on return and on throw.
func TestGPU_Seed_AWorker(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedProgram(`
		const first = (x) => x[0];
		const ns = runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first);

		let seen;
		const runWorkerSeen = (device, batches) => withDeviceResources(deviceResources({device}), (r) => {
			seen = r;
			return batches.map((rows) => timed(r, () => processBatch(rows)));
		});
		runWorkerSeen(0, [[[1.0, 2.0]]]);
		const releasedOnReturn = seen.released;
		seen = undefined;
		const thrown = caught(() => runWorkerSeen(0, [[[1.0, 2.0, 3.0]]]));
		return [ns, releasedOnReturn, thrown, seen.released, resourcesDevice(seen), caught(() => resourcesSync(seen)),
			String(seen)];`))
	assert.Equal(t, []any{
		[]any{2.0, 1.0},
		true,
		[]any{"Error", nil, "processBatch: row [1,2,3] has 3 columns"},
		true,
		0.0,
		[]any{"RaftError", "logic", "resourcesSync: resources closed"},
		"[DeviceResources device 0, released]",
	}, got)
	assert.Zero(t, f.counter(t, "live_streams"), "every worker's stream destroyed")
}

// withDeviceResources with an async function releases when its promise
// settles, fulfilled or rejected.
func TestGPU_WithDeviceResources_Async(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, `
		const r1 = deviceResources(), r2 = deviceResources();
		let during;
		const ok = withDeviceResources(r1, async (r) => {
			await null;
			during = r.released;
			return 7;
		});
		const bad = withDeviceResources(r2, async () => {
			await null;
			throw new RangeError('late');
		});
		Promise.all([ok, bad.catch((e) => e.name + ': ' + e.message)])
			.then(([v, msg]) => [v, during, msg, r1.released, r2.released])`)
	assert.Equal(t, []any{7.0, false, "RangeError: late", true, true}, got)
	assert.Zero(t, f.counter(t, "live_streams"))
}

// 1.3.5 Fanning out.
func TestGPU_Seed_FanningOut(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	_, lines := gpuRun(t, e, gpuReq(seedProgram(`
		return runWorkers(runWorker, jobs).then(report);`)))
	assert.Equal(t, []string{"worker 0: 2 rows", "worker 0: 1 rows", "worker 1: 1 rows", "worker 2: 2 rows"}, lines)
	assert.Zero(t, f.counter(t, "live_streams"))
}

// 1.3.6 Reporting failed workers.
func TestGPU_Seed_ReportingFailedWorkers(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedProgram(`
		function runWorkerCaught(device, batches) {
			try {
				return runWorker(device, batches);
			} catch (e) {
				if (e instanceof RaftError) return e;
				throw e;
			}
		}
		const failures = (results) => results.flatMap((result, i) =>
			result instanceof RaftError ? [[i, result.kind, result.message]] : []);
		const [batches0, batches1] = allBatches;
		return runWorkers(runWorkerCaught, [[0, batches0], [4, batches1]]).then(failures);`))
	assert.Equal(t, []any{[]any{1.0, "logic", "deviceResources: no device 4 among 1"}}, got)
}

func TestGPU_OutOfMemory(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	f.setting(t, "oom_bytes", 1024)
	got := gpuEval(t, e, `
		const r = deviceResources();
		const info = (thunk) => { try { thunk(); } catch (e) { return [e instanceof RaftError, e.kind, e.code, e.message]; } };
		[info(() => deviceArray(new Float64Array(1000), {resources: r})),
		 info(() => deviceZeros([100, 10], {dtype: 'float32', resources: r})),
		 deviceArray(new Float64Array(10), {resources: r}).length]`)
	assert.Equal(t, []any{
		[]any{true, "out-of-memory", 2.0, "deviceArray: allocating 8000 bytes on device 0: cuMemAllocAsync: CUDA_ERROR_OUT_OF_MEMORY (2): fake: out of memory"},
		[]any{true, "out-of-memory", 2.0, "deviceZeros: allocating 4000 bytes on device 0: cuMemAllocAsync: CUDA_ERROR_OUT_OF_MEMORY (2): fake: out of memory"},
		10.0,
	}, got)
}

const (
	axpySource = `extern "C" __global__ void axpy_f32(float a, const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`
	scaleSource = `extern "C" __global__ void scale_f64(double a, double* x, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}`
	spinSource = `extern "C" __global__ void spin() { for (;;) {} }`
)

// resourcesSync waits with the workunit's context: its time limit ends
// the wait (the fake's spin kernel never finishes), a catch cannot keep
// the workunit going, and dropping the realm releases its resources.
func TestGPU_Sync_TimeLimit(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	req := gpuReq(`
		const r = deviceResources();
		const spin = compileKernel(` + "`" + spinSource + "`" + `, 'spin', {resources: r});
		launchKernel(spin, {grid: 1, block: 1, resources: r});
		try {
			resourcesSync(r);
		} catch (e) {
			'caught';
		}
		'went on';`)
	// The spin never ends: only the time limit can end this workunit, and
	// the catch cannot keep it going.
	req.Timeout = 100 * time.Millisecond
	werr := gpuFail(t, e, req)
	assert.Equal(t, workunit.TimeLimit, werr.Kind, "%v", werr)
	assert.Equal(t, "TimeoutError", werr.Name)
	assert.Zero(t, f.counter(t, "live_streams"), "the dropped realm released its resources")
	assert.Equal(t, 1.0, gpuEval(t, e, `deviceCount()`), "the engine goes on")
}

// An interrupt from the caller's context ends the wait too.
func TestGPU_Sync_Canceled(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := f.counter(t, "stream_queries")
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, gpuReq(`
			const r = currentDeviceResources(0);
			launchKernel(compileKernel(`+"`"+spinSource+"`"+`, 'spin'), {grid: 1, block: 1});
			resourcesSync(r);`))
		done <- err
	}()
	// Cancel once the workunit polls the spinning stream.
	require.Eventually(t, func() bool { return f.counter(t, "stream_queries")-before > 10 }, 10*time.Second, time.Millisecond)
	cancel()
	err := <-done
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Canceled, werr.Kind, "%v", werr)
}

func TestGPU_Arrays(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got, lines := gpuRun(t, e, gpuReq(`
		const a = deviceArray(new Float32Array([1.5, 2.5, 3.5]));
		const b = deviceArray([[1, 2, 3], [4, 5, 6]]);
		const c = deviceArray([1, 2, 3, 4], {shape: [2, 2], dtype: 'float32'});
		const d = deviceArray(new Float64Array([0.1, 0.2]), {dtype: 'float32'});
		const i = deviceArray(new Int32Array([7, -8]));
		const rows = deviceArray([new Float32Array([1, 2]), new Float32Array([3, 4])]);
		const sub = deviceArray(new Float64Array([9, 1, 2, 9]).subarray(1, 3));
		const empty = deviceArray([]);
		const z = deviceZeros([2, 3], {dtype: 'float32'});
		const z0 = Array.from(z.toHost());
		z.fromHost([[1, 2, 3], [4, 5, 6]]);
		arrayFromHost(c, new Float32Array([5, 6, 7, 8]));
		console.log(b);
		console.log('%s', String(b));
		[
			[a.dtype, a.shape, Array.from(a.toHost()), a.toHost() instanceof Float32Array, a.length, a.device],
			[b.dtype, b.shape, Array.from(arrayToHost(b)), b.toHost() instanceof Float64Array, Object.isFrozen(b.shape)],
			[c.dtype, c.shape, Array.from(c.toHost())],
			[d.dtype, Array.from(d.toHost()).map((x) => x === Math.fround(0.1) || x === Math.fround(0.2))],
			[i.dtype, Array.from(i.toHost())],
			[rows.dtype, rows.shape],
			Array.from(sub.toHost()),
			[empty.shape, empty.toHost().length],
			[z.shape, z0, Array.from(z.toHost())],
			[b.resources === currentDeviceResources(0), b instanceof DeviceArray, b.freed],
		]`))
	assert.Equal(t, []any{
		[]any{"float32", []any{3.0}, []any{1.5, 2.5, 3.5}, true, 3.0, 0.0},
		[]any{"float64", []any{2.0, 3.0}, []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, true, true},
		[]any{"float32", []any{2.0, 2.0}, []any{5.0, 6.0, 7.0, 8.0}},
		[]any{"float32", []any{true, true}},
		[]any{"float64", []any{7.0, -8.0}},
		[]any{"float32", []any{2.0, 2.0}},
		[]any{1.0, 2.0},
		[]any{[]any{0.0}, 0.0},
		[]any{[]any{2.0, 3.0}, []any{0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, []any{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}},
		[]any{true, true, false},
	}, got)
	assert.Equal(t, []string{"DeviceArray { shape: [ 2, 3 ], dtype: 'float64' }", "[DeviceArray float64 [2, 3] on device 0]"}, lines)
}

// Arrays are freed explicitly or with their resources.
func TestGPU_Arrays_Free(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedPrelude+`
		const a = deviceArray([1, 2]);
		const live = [];
		a.free();
		arrayFree(a); // again: nothing to do
		const r = deviceResources();
		const b = deviceArray([1, 2], {resources: r});
		const c = deviceZeros(4, {resources: r});
		const before = b.freed;
		resourcesRelease(r);
		[a.freed, caught(() => a.toHost()), before, b.freed, c.freed, caught(() => b.toHost()), caught(() => deviceArray([1], {resources: r}))]`)
	assert.Equal(t, []any{
		true, []any{"RaftError", "logic", "arrayToHost: array freed"},
		false, true, true, []any{"RaftError", "logic", "arrayToHost: resources closed"},
		[]any{"RaftError", "logic", "deviceArray: resources closed"},
	}, got)
	assert.Zero(t, f.counter(t, "live_allocs"))
}

func TestGPU_MatMul(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got := gpuEval(t, e, seedPrelude+`
		const hostMul = (A, B) => A.map((row) => B[0].map((_, j) => row.reduce((s, x, k) => s + x * B[k][j], 0)));
		const transpose = (A) => A[0].map((_, j) => A.map((row) => row[j]));
		const A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]];
		const out = [];
		for (const dtype of ['float64', 'float32']) {
			const r = deviceResources();
			const a = deviceArray(A, {dtype, resources: r}), b = deviceArray(B, {dtype, resources: r});
			const c = matMul(a, b);
			const ata = gemm(a, a, deviceZeros([3, 3], {dtype, resources: r}), {transA: true});
			const scaled = gemm(a, b, deviceArray([[1, 1], [1, 1]], {dtype, resources: r}), {alpha: 2, beta: 1});
			out.push([c.dtype, c.shape, c.resources === r,
				JSON.stringify(Array.from(c.toHost())) === JSON.stringify(hostMul(A, B).flat()),
				JSON.stringify(Array.from(ata.toHost())) === JSON.stringify(hostMul(transpose(A), A).flat()),
				JSON.stringify(Array.from(scaled.toHost())) === JSON.stringify(hostMul(A, B).flat().map((x) => 2 * x + 1))]);
		}
		const a = deviceArray(A), other = deviceArray(B, {resources: deviceResources()});
		out.push(caught(() => matMul(a, a)));
		out.push(caught(() => matMul(a, other)).slice(0, 2));
		out;`)
	assert.Equal(t, []any{
		[]any{"float64", []any{2.0, 2.0}, true, true, true, true},
		[]any{"float32", []any{2.0, 2.0}, true, true, true, true},
		[]any{"RaftError", "logic", "matMul: shapes do not match: op(A) is 2×3, op(B) 2×3, C [2 3]"},
		[]any{"RaftError", "logic"},
	}, got)
	assert.EqualValues(t, 6, f.counter(t, "gemms"), "three per dtype; the bad calls fail before cuBLAS")
}

// bf16 and f16 arrays are made from float32 data on the device, read back
// as Float32Array, and multiplied on the tensor cores; tf32 is an option of
// float32 products.
func TestGPU_HalfPrecision(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got, lines := gpuRun(t, e, gpuReq(seedPrelude+`
		const out = [];
		for (const dtype of ['bf16', 'f16']) {
			const a = deviceArray([[1, 2], [3, 4]], {dtype});
			const third = deviceArray([1 / 3, 65504, 1e6, -0.1], {dtype});
			const c = matMul(a, a);
			const c32 = gemm(a, a, deviceZeros([2, 2], {dtype: 'float32'}));
			const z = deviceZeros(3, {dtype});
			z.fromHost([0.5, 1.5, 2.5]);
			out.push([a.dtype, a.toHost() instanceof Float32Array, Array.from(third.toHost()),
				c.dtype, Array.from(c.toHost()), c32.dtype, Array.from(c32.toHost()), Array.from(z.toHost())]);
		}
		const x = deviceArray(new Float32Array([1, 2, 3, 4]), {shape: [2, 2]});
		out.push(Array.from(matMul(x, x, {tf32: true}).toHost()));
		out.push(Array.from(gemm(x, x, deviceZeros([2, 2], {dtype: 'float32'}), {tf32: true, alpha: 2}).toHost()));
		out.push(caught(() => matMul(deviceArray([[1]], {dtype: 'bf16'}), deviceArray([[1]], {dtype: 'f16'}))).slice(0, 2));
		console.log(deviceArray([1, 2], {dtype: 'bf16'}));
		out;`))
	assert.Equal(t, []any{
		[]any{"bf16", true, []any{0.333984375, 65536.0, 999424.0, -0.10009765625},
			"bf16", []any{7.0, 10.0, 15.0, 22.0}, "float32", []any{7.0, 10.0, 15.0, 22.0}, []any{0.5, 1.5, 2.5}},
		[]any{"f16", true, []any{0.333251953125, 65504.0, math.Inf(1), -0.0999755859375},
			"f16", []any{7.0, 10.0, 15.0, 22.0}, "float32", []any{7.0, 10.0, 15.0, 22.0}, []any{0.5, 1.5, 2.5}},
		[]any{7.0, 10.0, 15.0, 22.0},
		[]any{14.0, 20.0, 30.0, 44.0},
		[]any{"RaftError", "logic"},
	}, got)
	assert.Equal(t, []string{"DeviceArray { shape: [ 2 ], dtype: 'bf16' }"}, lines)
	assert.EqualValues(t, 6, f.counter(t, "gemm_ex"), "two 16-bit products a type, two tf32")
	assert.EqualValues(t, 77, f.counter(t, "gemm_ex_compute"), "the last: CUBLAS_COMPUTE_32F_FAST_TF32")
}

func TestGPU_Kernels(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	got, lines := gpuRun(t, e, gpuReq(seedProgram(`
		const axpy = compileKernel(`+"`"+axpySource+"`"+`, 'axpy_f32');
		const n = 1000;
		const x = deviceArray(Float32Array.from({length: n}, (_, i) => i));
		const y = deviceArray(new Float32Array(n).fill(1));
		launchKernel(axpy, {grid: Math.ceil(n / 256), block: 256}, {f32: 2}, x, y, {i32: n});
		const ys = y.toHost();
		const scale = compileKernel(`+"`"+scaleSource+"`"+`, 'scale_f64', {options: ['--use_fast_math']});
		const z = deviceArray([1, 2, 3]);
		launchKernel(scale, {grid: [1], block: {x: 32}}, {f64: 2}, z, 3n);
		launchKernel(scale, {grid: [1, 1, 1], block: [32], shared: 0}, {f64: 0.5}, z, {i64: 3});
		console.log(axpy);
		return [ys.every((v, i) => v === 2 * i + 1), Array.from(z.toHost()), axpy.name, scale.options, axpy instanceof DeviceKernel,
			String(scale),
			caught(() => compileKernel('#error nope', 'bad')),
			caught(() => launchKernel(axpy, {grid: 1, block: 1}, 2, x, y, {i32: n})),
			caught(() => launchKernel(axpy, {grid: 1, block: 1}, {f32: 2}, x, y, {i32: 2 ** 40})),
			caught(() => launchKernel(axpy, {grid: 0, block: 1})),
			caught(() => launchKernel(axpy, {grid: 1}))];`)))
	assert.Equal(t, []any{
		true, []any{1.0, 2.0, 3.0}, "axpy_f32", []any{"--use_fast_math"}, true, "[DeviceKernel scale_f64]",
		[]any{"RaftError", "logic", "compileKernel: compiling kernel bad: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)\nbad.cu(1): error: #error directive (fake nvrtc)"},
		[]any{"TypeError", nil, "launchKernel: kernel argument 1 is a plain number (2); give its C type: {f32: 2}, {f64: 2}, {i32: 2} or {i64: 2}"},
		[]any{"RangeError", nil, "launchKernel: kernel argument 4.i32 is out of the range of an int32: 1099511627776"},
		[]any{"RangeError", nil, "launchKernel: config.grid must be a positive integer below 2^32, not 0"},
		[]any{"TypeError", nil, "launchKernel: config.block must be a number, [x, y, z] or {x, y, z}, not undefined"},
	}, got)
	assert.Equal(t, []string{"DeviceKernel { name: 'axpy_f32' }"}, lines)
	assert.EqualValues(t, 3, f.counter(t, "launches"))
	assert.EqualValues(t, 3, f.counter(t, "compiles"), "axpy, scale and the bad one, each once")
}

// The resources a realm made are released when the realm is dropped: on
// Close, and when a slot replaces its least recently used runtime.
func TestGPU_ReleasedWithTheRealm(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	drv := f.open(t, 1)
	e, err := engine.New(engine.Options{Bindings: []engine.Binding{Binding(drv)}, GPUs: Ordinals(drv), Slots: 1, RealmsPerSlot: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()

	keep := `globalThis.kept = [currentDeviceResources(0), deviceResources(), deviceArray([1, 2, 3])]; 0`
	gpuRun(t, e, engine.Request{Spec: gpuReq(keep).Spec, Realm: "a"})
	assert.EqualValues(t, 2, f.counter(t, "live_streams"))
	assert.EqualValues(t, 1, f.counter(t, "live_allocs"))
	gpuRun(t, e, engine.Request{Spec: gpuReq(`deviceCount()`).Spec, Realm: "b"})
	assert.Zero(t, f.counter(t, "live_streams"), "realm a was replaced")
	assert.Zero(t, f.counter(t, "live_allocs"))

	gpuRun(t, e, engine.Request{Spec: gpuReq(keep).Spec, Realm: "b"})
	assert.EqualValues(t, 2, f.counter(t, "live_streams"))
	require.NoError(t, e.Close())
	assert.Zero(t, f.counter(t, "live_streams"), "Close released realm b")
	assert.Zero(t, f.counter(t, "live_allocs"))
}

// riot.worker.gpus is the request's GPUs, or every device.
func TestGPU_WorkerGPUs(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 2), engine.Options{})
	src := `(() => {
		const g = riot.worker.gpus;
		return [g, Object.isFrozen(g), g === riot.worker.gpus, resourcesDevice(deviceResources({device: g[g.length - 1]}))];
	})()`
	assert.Equal(t, []any{[]any{0.0, 1.0}, true, true, 1.0}, gpuEval(t, e, src))
	req := gpuReq(src)
	req.GPUs = []int{1}
	v, _ := gpuRun(t, e, req)
	assert.Equal(t, []any{[]any{1.0}, true, true, 1.0}, v)
	assert.Equal(t, []any{0.0, 1.0}, gpuEval(t, e, `riot.worker.gpus`), "per workunit, not per realm")
}

// A workunit given devices (Request.GPUs) uses the first of them wherever
// it names none: deviceResources, currentDeviceResources, deviceInfo, the
// array constructors and kernels. A device it names is used as named.
func TestGPU_DefaultDevice(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 3), engine.Options{})
	src := `(() => {
		const k = compileKernel(` + "`" + axpySource + "`" + `, 'axpy_f32');
		const x = deviceArray(new Float32Array(4).fill(1));
		launchKernel(k, {grid: 1, block: 4}, {f32: 2}, x, x, {i32: 4});
		return [riot.worker.gpus, resourcesDevice(deviceResources()), resourcesDevice(deviceResources({})),
			currentDeviceResources().device, deviceInfo().device, x.device, deviceZeros(2).device,
			resourcesDevice(deviceResources({device: 0})), Array.from(x.toHost())];
	})()`
	for _, tt := range []struct {
		gpus []int
		want []any
	}{
		{nil, []any{[]any{0.0, 1.0, 2.0}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, []any{3.0, 3.0, 3.0, 3.0}}},
		{[]int{2}, []any{[]any{2.0}, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, []any{3.0, 3.0, 3.0, 3.0}}},
		{[]int{1, 2}, []any{[]any{1.0, 2.0}, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, []any{3.0, 3.0, 3.0, 3.0}}},
	} {
		req := gpuReq(src)
		req.GPUs = tt.gpus
		got, _ := gpuRun(t, e, req)
		assert.Equal(t, tt.want, got, "GPUs %v", tt.gpus)
	}
	// The seed's failure still names the device asked for.
	req := gpuReq(seedProgram(`return caught(() => deviceResources({device: 4}));`))
	req.GPUs = []int{1}
	got, _ := gpuRun(t, e, req)
	assert.Equal(t, []any{"RaftError", "logic", "deviceResources: no device 4 among 3"}, got)
}

// Without a driver, everything says there are no devices.
func TestGPU_NoDriver(t *testing.T) {
	t.Parallel()
	e := gpuEngine(t, nil, engine.Options{})
	got := gpuEval(t, e, seedPrelude+`
		[deviceCount(), riot.worker.gpus, Object.isFrozen(riot.worker.gpus),
		 caught(() => deviceResources()), caught(() => currentDeviceResources(0)),
		 caught(() => deviceArray([1])), caught(() => deviceInfo(0)), caught(() => resourcesDevice(null))]`)
	assert.Equal(t, []any{0.0, []any{}, true,
		[]any{"RaftError", "logic", "deviceResources: no device 0 among 0"},
		[]any{"RaftError", "logic", "currentDeviceResources: no device 0 among 0"},
		[]any{"RaftError", "logic", "deviceArray: no device 0 among 0"},
		[]any{"RaftError", "logic", "deviceInfo: no device 0 among 0"},
		[]any{"TypeError", nil, "resourcesDevice: the argument must be a DeviceResources (from deviceResources or currentDeviceResources), not null"},
	}, got)
}

// A driver that could not be loaded gives its reason.
func TestGPU_UnavailableDriver(t *testing.T) {
	t.Parallel()
	drv, err := gpu.Open(gpu.WithDriverLibrary(filepath.Join(t.TempDir(), "libmissing.so")))
	require.ErrorIs(t, err, gpu.ErrUnavailable)
	e := gpuEngine(t, drv, engine.Options{})
	got := gpuEval(t, e, seedPrelude+`[deviceCount(), caught(() => deviceResources({device: 0}))]`)
	list := got.([]any)
	assert.Equal(t, 0.0, list[0])
	res := list[1].([]any)
	assert.Equal(t, []any{"RaftError", "logic"}, res[:2])
	assert.Equal(t, "deviceResources: no device 0 among 0: "+drv.Err().Error(), res[2])
	assert.Contains(t, res[2], "deviceResources: no device 0 among 0: gpu: cuda unavailable: cannot load the CUDA driver")
}

func TestGPU_DeviceInfo(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 2), engine.Options{})
	got := gpuEval(t, e, `const i = deviceInfo(1);
		[i.device, typeof i.name, i.totalMemory > 0, typeof i.major, typeof i.memoryPools]`)
	assert.Equal(t, []any{1.0, "string", true, "number", "boolean"}, got)
}

// Bad arguments are TypeErrors and RangeErrors that name the function and
// the argument.
func TestGPU_BadArguments(t *testing.T) {
	t.Parallel()
	f := newFakeGPU(t)
	e := gpuEngine(t, f.open(t, 1), engine.Options{})
	tests := []struct {
		src, name, msg string
	}{
		{`resourcesDevice({})`, "TypeError", "resourcesDevice: the argument must be a DeviceResources (from deviceResources or currentDeviceResources), not an object"},
		{`resourcesDevice(deviceArray([1]))`, "TypeError", "resourcesDevice: the argument must be a DeviceResources (from deviceResources or currentDeviceResources), not a DeviceArray"},
		{`resourcesSync()`, "TypeError", "resourcesSync: the argument must be a DeviceResources (from deviceResources or currentDeviceResources), not undefined"},
		{`deviceResources(0)`, "TypeError", "deviceResources: options must be an object, not a number"},
		{`deviceResources({device: 1.5})`, "TypeError", "deviceResources: options.device must be an integer, not 1.5"},
		{`deviceResources({device: '0'})`, "TypeError", "deviceResources: options.device must be an integer, not a string"},
		{`deviceResources({device: -1})`, "RaftError", "deviceResources: no device -1 among 1"},
		{`currentDeviceResources(3)`, "RaftError", "currentDeviceResources: no device 3 among 1"},
		{`withDeviceResources(deviceResources(), 5)`, "TypeError", "withDeviceResources: the second argument must be a function, not a number"},
		{`withDeviceResources(5, () => 1)`, "TypeError", "withDeviceResources: the first argument must be a DeviceResources (from deviceResources or currentDeviceResources), not a number"},
		{`deviceArray('abc')`, "TypeError", "deviceArray: data must be an array or a typed array of numbers, not a string"},
		{`deviceArray([[1, 2], [3]])`, "TypeError", "deviceArray: data[1] has 1 items, not 2 (the data is not rectangular)"},
		{`deviceArray([[1, 2], 3])`, "TypeError", "deviceArray: data[1] is a number, not an array of 2 items (the data is not rectangular)"},
		{`deviceArray([1, 'x'])`, "TypeError", "deviceArray: data[1] is a string, not a number"},
		{`deviceArray(new BigInt64Array(2))`, "TypeError", "deviceArray: data holds a BigInt64Array; give numbers, not bigints"},
		{`deviceArray([1, 2, 3], {shape: [2, 2]})`, "RangeError", "deviceArray: options.shape [2, 2] holds 4 elements, the data 3"},
		{`deviceArray([1], {dtype: 'int8'})`, "TypeError", "deviceArray: options.dtype must be 'float32', 'float64', 'bf16' or 'f16', not 'int8'"},
		{`matMul(deviceArray([[1]]), deviceArray([[1]]), {tf32: 1})`, "TypeError", "matMul: options.tf32 must be a boolean, not a number"},
		{`deviceArray([1], {device: 0, resources: 1})`, "TypeError", "deviceArray: options.resources must be a DeviceResources (from deviceResources or currentDeviceResources), not a number"},
		{`deviceArray([1], {device: 2, resources: currentDeviceResources(0)})`, "RangeError", "deviceArray: options.resources are on device 0, options.device is 2"},
		{`deviceZeros(-1)`, "RangeError", "deviceZeros: shape must be ≥ 0, not -1"},
		{`deviceZeros([])`, "RangeError", "deviceZeros: shape must have at least one dimension"},
		{`deviceZeros([2, 'x'])`, "TypeError", "deviceZeros: shape[1] must be an integer, not a string"},
		{`deviceArray([1, 2]).fromHost([1])`, "RangeError", "arrayFromHost: the array holds 2 elements, the data 1"},
		{`matMul(1, 2)`, "TypeError", "matMul: a must be a DeviceArray (from deviceArray, deviceZeros or matMul), not a number"},
		{`gemm(deviceZeros([1, 1]), deviceZeros([1, 1]), deviceZeros([1, 1]), {alpha: '2'})`, "TypeError", "gemm: options.alpha must be a number, not a string"},
		{`gemm(deviceZeros([1, 1]), deviceZeros([1, 1]), deviceZeros([1, 1]), {transA: 1})`, "TypeError", "gemm: options.transA must be a boolean, not a number"},
		{`compileKernel(1, 'k')`, "TypeError", "compileKernel: source must be a string, not a number"},
		{`compileKernel('', 'k', {options: '-O3'})`, "TypeError", "compileKernel: options.options must be an array of strings, not a string"},
		{`launchKernel({}, {grid: 1, block: 1})`, "TypeError", "launchKernel: the first argument must be a DeviceKernel (from compileKernel), not an object"},
		{`DeviceArray.prototype.toHost.call({})`, "TypeError", "DeviceArray.prototype.toHost: this must be a DeviceArray (from deviceArray, deviceZeros or matMul), not an object"},
		{`new DeviceResources()`, "TypeError", "DeviceResources objects are made by deviceResources({device}) and currentDeviceResources(device), not by a constructor"},
		{`new RaftError('x', {kind: 'bad'})`, "TypeError", "RaftError: kind must be 'logic' or 'out-of-memory', not bad"},
	}
	for _, tt := range tests {
		got := gpuEval(t, e, seedProgram(`return caught(() => `+tt.src+`);`))
		want := []any{tt.name, nil, tt.msg}
		if tt.name == "RaftError" {
			want[1] = "logic"
		}
		assert.Equal(t, want, got, "source %s", tt.src)
	}
}

// A script can make its own RaftErrors, as the seed's exn:fail:raft.
func TestGPU_RaftErrorClass(t *testing.T) {
	t.Parallel()
	e := gpuEngine(t, nil, engine.Options{})
	got := gpuEval(t, e, `const e = new RaftError('boom', {kind: 'out-of-memory'});
		const d = new RaftError('plain');
		[e instanceof RaftError, e instanceof Error, e.name, e.kind, e.message, d.kind, d.code, String(d)]`)
	assert.Equal(t, []any{true, true, "RaftError", "out-of-memory", "boom", "logic", 0.0, "RaftError: plain"}, got)
}

// TestGPUReal_Bindings runs the bindings on the real driver, as a program
// opens it (gpu.Open, honouring RIOT_CUDA_LIBRARY and the others). It
// skips on a host without one; with RIOT_GPU_REAL=1 that is a failure.
func TestGPUReal_Bindings(t *testing.T) {
	drv, err := gpu.Open()
	if err != nil {
		if os.Getenv("RIOT_GPU_REAL") == "1" {
			t.Fatalf("RIOT_GPU_REAL=1 but no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, drv.Close()) })
	e := gpuEngine(t, drv, engine.Options{})
	got := gpuEval(t, e, seedProgram(`
		const n = deviceCount();
		const checks = {};
		checks.missing = caught(() => deviceResources({device: n}))[2] === 'deviceResources: no device ' + n + ' among ' + n;
		checks.worker = runWorker(deviceForWorker(0), allBatches[0]).map((x) => x[0]).join() === '2,1';
		const big = Float64Array.from({length: 1 << 20}, (_, i) => i * 0.5);
		const back = deviceArray(big).toHost();
		checks.roundTrip = back.length === big.length && back.every((v, i) => v === big[i]);
		const m = 64, k = 48, p = 32;
		const A = Array.from({length: m}, (_, i) => Array.from({length: k}, (_, j) => (i * k + j) % 7 - 3));
		const B = Array.from({length: k}, (_, i) => Array.from({length: p}, (_, j) => (i + 2 * j) % 5 - 2));
		const host = A.map((row) => B[0].map((_, j) => row.reduce((s, x, q) => s + x * B[q][j], 0))).flat();
		for (const dtype of ['float32', 'float64', 'bf16', 'f16']) {
			// Small integers: exact in every type; their sums (up to 288)
			// need a float32 C for the 16-bit types.
			const a = deviceArray(A, {dtype}), b = deviceArray(B, {dtype});
			const c = (dtype.endsWith('16') ? gemm(a, b, deviceZeros([m, p], {dtype: 'float32'})) : matMul(a, b)).toHost();
			checks['matMul_' + dtype] = c.every((v, i) => v === host[i]);
		}
		const c32 = matMul(deviceArray(A, {dtype: 'float32'}), deviceArray(B, {dtype: 'float32'}), {tf32: true}).toHost();
		checks.matMul_tf32 = c32.every((v, i) => v === host[i]);
		checks.bf16 = Array.from(deviceArray([1 / 3, 1e6], {dtype: 'bf16'}).toHost()).join() === '0.333984375,999424';
		const axpy = compileKernel(`+"`"+axpySource+"`"+`, 'axpy_f32');
		const len = 100000;
		const x = deviceArray(Float32Array.from({length: len}, (_, i) => i % 100));
		const y = deviceArray(new Float32Array(len).fill(1));
		launchKernel(axpy, {grid: Math.ceil(len / 256), block: 256}, {f32: 2}, x, y, {i32: len});
		checks.axpy = y.toHost().every((v, i) => v === 2 * (i % 100) + 1);
		const scale = compileKernel(`+"`"+scaleSource+"`"+`, 'scale_f64');
		const z = deviceArray([1, 2, 3]);
		launchKernel(scale, {grid: 1, block: 32}, {f64: 2}, z, 3n);
		checks.scale = Array.from(z.toHost()).join() === '2,4,6';
		const r = deviceResources();
		resourcesSync(r);
		resourcesRelease(r);
		checks.released = r.released;
		return checks;`))
	for name, ok := range got.(map[string]any) {
		assert.Equal(t, true, ok, "check %s", name)
	}
}
