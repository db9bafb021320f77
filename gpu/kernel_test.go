package gpu_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// The fake driver runs a kernel by its name; these sources are what NVRTC
// would compile, and the real-driver tests launch the same ones.
const (
	axpySource = `extern "C" __global__ void axpy_f32(float a, const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`
	scaleSource = `extern "C" __global__ void scale_f64(double a, double* x, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}`
)

func TestLaunch_Axpy(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	arr := noErr[*gpu.Array](t)
	const n = 1000
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), 1
	}
	x, y := arr(gpu.NewArray(ctx, r, xs)), arr(gpu.NewArray(ctx, r, ys))
	k := gpu.Kernel{Source: axpySource, Name: "axpy_f32"}
	cfg := gpu.LaunchConfig{Grid: gpu.Dim3{X: (n + 255) / 256}, Block: gpu.Dim3{X: 256}}
	for range 2 {
		require.NoError(t, r.Launch(ctx, k, cfg, float32(2), x, y, int32(n)))
	}
	got := make([]float32, n)
	require.NoError(t, gpu.CopyToHost(ctx, y, got))
	for i := range got {
		require.Equal(t, 4*float32(i)+1, got[i], "element %d", i)
	}
	assert.EqualValues(t, 1, f.counter(t, "compiles"), "compiled once")
	assert.EqualValues(t, 1, f.counter(t, "module_loads"), "loaded once")
	assert.EqualValues(t, 2, f.counter(t, "launches"))
	assert.Equal(t, 1, r.Driver().CompiledKernels())
}

func TestLaunch_CacheKeyedBySourceAndOptions(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, 2, 3}))
	cfg := gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 32}}
	kernels := []gpu.Kernel{
		{Source: scaleSource, Name: "scale_f64"},
		{Source: scaleSource, Name: "scale_f64", Options: []string{"--use_fast_math"}},
		{Source: scaleSource + "\n", Name: "scale_f64"},
		{Source: scaleSource, Name: "scale_f64"},
	}
	for _, k := range kernels {
		require.NoError(t, r.Launch(ctx, k, cfg, float64(2), x, int64(3)))
	}
	got := make([]float64, 3)
	require.NoError(t, gpu.CopyToHost(ctx, x, got))
	assert.Equal(t, []float64{16, 32, 48}, got)
	assert.EqualValues(t, 3, f.counter(t, "compiles"))
	assert.EqualValues(t, 3, f.counter(t, "module_loads"))

	// Another Driver has its own cache and device thread: it compiles and
	// loads again.
	other := f.resources(t)
	y := noErr[*gpu.Array](t)(gpu.NewArray(ctx, other, []float64{1}))
	require.NoError(t, other.Launch(ctx, kernels[0], cfg, float64(2), y, int64(1)))
	assert.EqualValues(t, 4, f.counter(t, "compiles"))
	assert.EqualValues(t, 4, f.counter(t, "module_loads"))
	require.NoError(t, other.Sync(ctx))
}

func TestLoadKernel_CompileError(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	bad := gpu.Kernel{Source: "#error no\n" + axpySource, Name: "axpy_f32"}
	err := r.LoadKernel(ctx, bad)
	ge := requireKind(t, err, gpu.OpCompileKernel, gpu.Logic)
	assert.Equal(t, 6, ge.Code)
	assert.Contains(t, err.Error(), "compileKernel: compiling kernel axpy_f32: nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)")
	assert.Contains(t, err.Error(), "axpy_f32.cu(1): error: #error directive", "the message carries NVRTC's log")

	err = r.Launch(ctx, bad, gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}})
	requireKind(t, err, gpu.OpLaunchKernel, gpu.Logic)
	assert.EqualValues(t, 2, f.counter(t, "compiles"), "failures are not cached")

	err = r.LoadKernel(ctx, gpu.Kernel{Source: axpySource, Name: "axpy_f32", Options: []string{"--bogus"}})
	requireKind(t, err, gpu.OpCompileKernel, gpu.Logic)
	assert.Contains(t, err.Error(), "NVRTC_ERROR_INVALID_OPTION (5)")

	err = r.LoadKernel(ctx, gpu.Kernel{Source: axpySource, Name: "missing"})
	requireKind(t, err, gpu.OpCompileKernel, gpu.Logic)
	assert.Contains(t, err.Error(), "kernel missing: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500)")

	require.NoError(t, r.LoadKernel(ctx, gpu.Kernel{Source: axpySource, Name: "axpy_f32"}))
}

func TestLaunch_BadCalls(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	ctx := context.Background()
	r, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	other, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, other, []float32{1}))
	k := gpu.Kernel{Source: axpySource, Name: "axpy_f32"}
	one := gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}
	tests := []struct {
		name string
		k    gpu.Kernel
		cfg  gpu.LaunchConfig
		args []any
		msg  string
	}{
		{"int argument", k, one, []any{float32(1), x, x, 1},
			"launchKernel: argument 4 is a int; want *gpu.Array, float32, float64, int32 or int64"},
		{"empty grid", k, gpu.LaunchConfig{Block: gpu.Dim3{X: 1}}, nil,
			"launchKernel: grid {0 0 0} and block {1 0 0} must have a positive X"},
		{"no name", gpu.Kernel{Source: axpySource}, one, nil, "launchKernel: kernel has no name"},
		{"other resources' array", k, one, []any{float32(1), x, x, int32(1)},
			"launchKernel: argument 2: gpu.Array(float32 [1] on device 0) belongs to other resources"},
	}
	for _, tc := range tests {
		err := r.Launch(ctx, tc.k, tc.cfg, tc.args...)
		requireKind(t, err, gpu.OpLaunchKernel, gpu.Logic)
		assert.EqualError(t, err, tc.msg, tc.name)
	}
	require.NoError(t, x.Free())
	err = other.Launch(ctx, k, one, float32(1), x, x, int32(1))
	assert.EqualError(t, err, "launchKernel: argument 2: array freed")
	assert.Zero(t, f.counter(t, "launches"))
	require.NoError(t, r.Close())
	require.NoError(t, other.Close())
}

func TestLaunch_FailureReportedBySync(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float32{1}))
	poke := gpu.Kernel{Source: `extern "C" __global__ void poke(float* x) { x[1 << 30] = 1; }`, Name: "poke"}
	require.NoError(t, r.Launch(ctx, poke, gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}, x),
		"a launch returns once queued")
	err := r.Sync(ctx)
	ge := requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.Equal(t, 700, ge.Code)
	assert.EqualError(t, err, "resourcesSync: cuStreamQuery: CUDA_ERROR_ILLEGAL_ADDRESS (700): "+
		"fake: an illegal memory access was encountered")
}

func TestLaunch_SpinCancelledSync(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	spin := gpu.Kernel{Source: `extern "C" __global__ void spin() { for (;;) {} }`, Name: "spin"}
	require.NoError(t, r.Launch(context.Background(), spin, gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := r.Sync(ctx)
	requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestLaunch_NVRTCOutOfMemory(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "nvrtc_oom", 1)
	r := f.resources(t)
	err := r.LoadKernel(context.Background(), gpu.Kernel{Source: axpySource, Name: "axpy_f32"})
	ge := requireKind(t, err, gpu.OpCompileKernel, gpu.OutOfMemory)
	assert.Equal(t, 1, ge.Code)
	assert.Contains(t, err.Error(), "NVRTC_ERROR_OUT_OF_MEMORY (1)")
}

func TestLaunch_MissingNVRTC(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	missing := t.TempDir() + "/libnvrtc.so.13"
	r := f.resources(t, gpu.WithLibrary(gpu.NVRTC, missing))
	err := r.Launch(context.Background(), gpu.Kernel{Source: axpySource, Name: "axpy_f32"},
		gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}})
	requireKind(t, err, gpu.OpLaunchKernel, gpu.Logic)
	assert.Contains(t, err.Error(), "launchKernel: compiling kernel axpy_f32: cannot load NVRTC: "+missing)
	assert.Contains(t, err.Error(), "RIOT_NVRTC_LIBRARY")
}

// A kernel is loaded as machine code (a cubin) for the device's own
// architecture, so that a driver older than NVRTC loads it; PTX is the
// fallback when NVRTC does not know the device, or gives no cubin.
func TestLaunch_CubinOrPTX(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		maxSM, cubin     int64
		compiles, cubins int64
	}{
		{"cubin", 1000, 1, 1, 1},
		{"NVRTC older than the device", 80, 1, 2, 0},
		{"no cubin", 1000, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeCUDA(t)
			f.setting(t, "nvrtc_max_sm", tc.maxSM)
			f.setting(t, "nvrtc_cubin", tc.cubin)
			r := f.resources(t)
			ctx := context.Background()
			x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, 2, 3}))
			k := gpu.Kernel{Source: scaleSource, Name: "scale_f64"}
			require.NoError(t, r.Launch(ctx, k, gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 32}}, 2.0, x, int64(3)))
			got := make([]float64, 3)
			require.NoError(t, gpu.CopyToHost(ctx, x, got))
			assert.Equal(t, []float64{2, 4, 6}, got)
			assert.Equal(t, tc.compiles, f.counter(t, "compiles"))
			assert.Equal(t, tc.cubins, f.counter(t, "cubin_loads"))
			assert.EqualValues(t, 1, f.counter(t, "module_loads"))
		})
	}
}
