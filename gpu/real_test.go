package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// The tests and benchmarks in this file need the real CUDA driver and a
// device. They open the driver as a program would (gpu.Open with no
// options, so RIOT_CUDA_LIBRARY and the library variables apply) and skip
// when it is unavailable, unless RIOT_GPU_REAL=1, which makes that a
// failure: scripts/gpu-check.sh sets it.

// realDriver opens the real driver for t, or skips t.
func realDriver(t testing.TB) *gpu.Driver {
	t.Helper()
	d, err := gpu.Open()
	if err == nil && d.DeviceCount() == 0 {
		err = errors.New("the driver reports no devices")
	}
	if err != nil {
		if os.Getenv("RIOT_GPU_REAL") == "1" {
			t.Fatalf("RIOT_GPU_REAL=1, but the CUDA driver is unusable: %v", err)
		}
		t.Skipf("needs the CUDA driver and a device (RIOT_GPU_REAL=1 makes this a failure): %v", err)
	}
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return d
}

// realResources makes resources on device 0 of the real driver, or skips.
func realResources(t testing.TB) *gpu.Resources {
	t.Helper()
	d := realDriver(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// skipWithoutLibrary skips t when err says that a CUDA library could not
// be loaded: the libraries are optional at run time. With RIOT_GPU_REAL=1
// (the GPU check) a missing library is a failure, so that a check that ran
// no cuBLAS or NVRTC cannot pass.
func skipWithoutLibrary(t testing.TB, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "cannot load") {
		if os.Getenv("RIOT_GPU_REAL") == "1" {
			t.Fatalf("RIOT_GPU_REAL=1, but a CUDA library is missing: %v", err)
		}
		t.Skipf("library not installed: %v", err)
	}
}

func TestReal_Devices(t *testing.T) {
	d := realDriver(t)
	n := d.DeviceCount()
	for i := range n {
		info, err := d.Device(i)
		require.NoError(t, err)
		t.Logf("device %d: %s, %.1f GiB, compute %d.%d, memory pools %v; driver %d",
			i, info.Name, float64(info.TotalMemory)/(1<<30), info.Major, info.Minor, info.MemoryPools, d.Version())
		assert.NotEmpty(t, info.Name)
		assert.NotZero(t, info.TotalMemory)
		assert.GreaterOrEqual(t, info.Major, 5)
	}
	_, err := d.NewResources(context.Background(), n)
	requireKind(t, err, gpu.OpDeviceResources, gpu.Logic)
	assert.EqualError(t, err, fmt.Sprintf("deviceResources: no device %d among %d", n, n))
}

func TestReal_ResourcesLifecycle(t *testing.T) {
	d := realDriver(t)
	ctx := context.Background()
	r, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, r.Sync(ctx))
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	requireKind(t, r.Sync(ctx), gpu.OpResourcesSync, gpu.Logic)

	r2, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	require.Panics(t, func() {
		_ = gpu.WithResources(r2, func(r *gpu.Resources) error {
			_, err := r.Zeros(ctx, gpu.Float32, 1024)
			require.NoError(t, err)
			panic("worker died")
		})
	})
	assert.True(t, r2.Closed())
}

func TestReal_ArrayRoundTrip(t *testing.T) {
	r := realResources(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	big := make([]float32, 16<<20) // 64 MiB
	for i := range big {
		big[i] = rng.Float32()
	}
	x, err := gpu.NewArray(ctx, r, big, 4096, 4096)
	require.NoError(t, err)
	got := make([]float32, len(big))
	require.NoError(t, gpu.CopyToHost(ctx, x, got))
	require.True(t, slices.Equal(big, got), "64 MiB came back changed")
	require.NoError(t, x.Free())

	small := []float64{1, -2, 3.5}
	y, err := gpu.NewArray(ctx, r, small)
	require.NoError(t, err)
	back := make([]float64, 3)
	require.NoError(t, gpu.CopyToHost(ctx, y, back))
	assert.Equal(t, small, back)

	z, err := r.Zeros(ctx, gpu.Float64, 3)
	require.NoError(t, err)
	require.NoError(t, gpu.CopyToHost(ctx, z, back))
	assert.Equal(t, []float64{0, 0, 0}, back)
}

func TestReal_OutOfMemory(t *testing.T) {
	r := realResources(t)
	_, err := r.Zeros(context.Background(), gpu.Float32, 1<<40) // 4 TiB
	ge := requireKind(t, err, gpu.OpDeviceArray, gpu.OutOfMemory)
	assert.Equal(t, 2, ge.Code)
	assert.Contains(t, err.Error(), "CUDA_ERROR_OUT_OF_MEMORY")
	require.NoError(t, r.Sync(context.Background()), "the resources stay usable")
}

func TestReal_Gemm(t *testing.T) {
	r := realResources(t)
	_, err := r.LibraryHandle(context.Background(), gpu.CUBLAS)
	skipWithoutLibrary(t, err)
	require.NoError(t, err)
	t.Logf("cuBLAS: %s", r.Driver().LibraryPath(gpu.CUBLAS))
	checkGemm(t, r)
}

func TestReal_LibraryHandles(t *testing.T) {
	r := realResources(t)
	for _, lib := range []gpu.Library{gpu.CUBLAS, gpu.CUSOLVER, gpu.CUSPARSE} {
		t.Run(lib.String(), func(t *testing.T) {
			h, err := r.LibraryHandle(context.Background(), lib)
			skipWithoutLibrary(t, err)
			require.NoError(t, err)
			assert.NotZero(t, h)
			t.Logf("%v: %s", lib, r.Driver().LibraryPath(lib))
		})
	}
}

func TestReal_Kernels(t *testing.T) {
	r := realResources(t)
	ctx := context.Background()
	err := r.LoadKernel(ctx, gpu.Kernel{Source: axpySource, Name: "axpy_f32"})
	skipWithoutLibrary(t, err)
	require.NoError(t, err)
	t.Logf("NVRTC: %s", r.Driver().LibraryPath(gpu.NVRTC))

	const n = 100_000
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i%1000), 1
	}
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, xs))
	y := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, ys))
	cfg := gpu.LaunchConfig{Grid: gpu.Dim3{X: (n + 255) / 256}, Block: gpu.Dim3{X: 256}}
	require.NoError(t, r.Launch(ctx, gpu.Kernel{Source: axpySource, Name: "axpy_f32"}, cfg, float32(2), x, y, int32(n)))
	got := make([]float32, n)
	require.NoError(t, gpu.CopyToHost(ctx, y, got))
	for i := range got {
		require.Equal(t, 2*float32(i%1000)+1, got[i], "element %d", i)
	}

	z := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, 2, 3}))
	require.NoError(t, r.Launch(ctx, gpu.Kernel{Source: scaleSource, Name: "scale_f64"},
		gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 32}}, float64(-0.5), z, int64(3)))
	back := make([]float64, 3)
	require.NoError(t, gpu.CopyToHost(ctx, z, back))
	assert.Equal(t, []float64{-0.5, -1, -1.5}, back)

	err = r.LoadKernel(ctx, gpu.Kernel{Source: axpySource + "\nthis is not C", Name: "axpy_f32"})
	requireKind(t, err, gpu.OpCompileKernel, gpu.Logic)
	assert.Contains(t, err.Error(), "NVRTC_ERROR_COMPILATION")
	t.Logf("a compile error reads: %v", err)
}

// spinSource spins one thread for a number of clock cycles.
const spinSource = `extern "C" __global__ void spin_for(long long cycles) {
	long long start = clock64();
	while (clock64() - start < cycles) {}
}`

func TestReal_SyncCancelled(t *testing.T) {
	r := realResources(t)
	ctx := context.Background()
	err := r.Launch(ctx, gpu.Kernel{Source: spinSource, Name: "spin_for"},
		gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}, int64(1_000_000_000)) // about half a second
	skipWithoutLibrary(t, err)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	err = r.Sync(short)
	requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, r.Sync(ctx), "the kernel finishes all the same")
}

func TestReal_StagedCopies(t *testing.T) {
	d := realDriver(t)
	ctx := context.Background()
	// Small buffers, so that a 10 MiB copy reuses each several times.
	other, err := gpu.Open(gpu.WithPinnedStaging(256<<10, 512<<10))
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Close()) }()
	for _, drv := range []*gpu.Driver{d, other} {
		r, err := drv.NewResources(ctx, 0)
		require.NoError(t, err)
		data := make([]float32, 10<<18+12345)
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range data {
			data[i] = rng.Float32()
		}
		x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, data))
		got := make([]float32, len(data))
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		require.True(t, slices.Equal(data, got), "staged copies came back changed")
		n, bytes := r.StagingBuffers()
		t.Logf("staging: %d buffers, %d KiB", n, bytes>>10)
		assert.NotZero(t, n)
		require.NoError(t, r.Close())
	}
}

func TestReal_HalfConversions(t *testing.T) {
	r := realResources(t)
	ctx := context.Background()
	in := conversionInputs()
	for _, dtype := range []gpu.DType{gpu.BFloat16, gpu.Float16} {
		x, err := gpu.NewArrayOf(ctx, r, dtype, in)
		skipWithoutLibrary(t, err)
		require.NoError(t, err)
		got := make([]float32, len(in))
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		checkConverted(t, dtype, in, got)
	}
}

func TestReal_HalfMatMul(t *testing.T) {
	r := realResources(t)
	ctx := context.Background()
	_, err := r.LibraryHandle(ctx, gpu.CUBLAS)
	skipWithoutLibrary(t, err)
	const m, k, n = 64, 96, 48
	a, b := randomFloats(30, m*k), randomFloats(31, k*n)
	for _, dtype := range []gpu.DType{gpu.BFloat16, gpu.Float16, gpu.Float32} {
		ref := map[gpu.DType]func(float32) float32{gpu.BFloat16: refBF16, gpu.Float16: refF16,
			gpu.Float32: func(x float32) float32 { return x }}[dtype]
		x := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, dtype, a, m, k))
		y := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, dtype, b, k, n))
		c, err := r.MatMulWith(ctx, gpu.ProductOptions{TF32: true}, x, y)
		require.NoError(t, err)
		got := make([]float32, m*n)
		require.NoError(t, gpu.CopyToHost(ctx, c, got))
		// TF32 rounds float32 inputs to 10 mantissa bits; 16-bit outputs
		// are rounded to 7 (bf16) or 10 (f16) bits.
		rel := map[gpu.DType]float64{gpu.BFloat16: 0x1p-7, gpu.Float16: 0x1p-9, gpu.Float32: 0x1p-8}[dtype]
		for i := range m {
			for j := range n {
				var sum, abs float64
				for l := range k {
					p := float64(ref(a[i*k+l])) * float64(ref(b[l*n+j]))
					sum, abs = sum+p, abs+math.Abs(p)
				}
				require.InDelta(t, sum, got[i*n+j], rel*abs+1e-4, "%v C[%d][%d]", dtype, i, j)
			}
		}
	}
}
