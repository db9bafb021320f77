package gpu_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

func TestOpen_NoLibrary(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	d, err := gpu.Open(gpu.WithDriverLibrary(missing))
	require.Error(t, err)
	require.NotNil(t, d, "Open never returns a nil Driver")
	assert.ErrorIs(t, err, gpu.ErrUnavailable)
	assert.Contains(t, err.Error(), "gpu: cuda unavailable: cannot load the CUDA driver")
	assert.Contains(t, err.Error(), missing, "the error says which file")
	assert.Equal(t, err, d.Err())
	assert.Zero(t, d.DeviceCount())
	assert.Zero(t, d.Version())

	_, err = d.NewResources(context.Background(), 0)
	ge := requireKind(t, err, gpu.OpDeviceResources, gpu.Logic)
	assert.ErrorIs(t, ge, gpu.ErrUnavailable)
	assert.Contains(t, err.Error(), "deviceResources: no device 0 among 0: gpu: cuda unavailable")

	_, err = d.Device(0)
	requireKind(t, err, gpu.OpDeviceInfo, gpu.Logic)
	assert.NoError(t, d.Close())
}

func TestOpen_LibraryWithoutDriverSymbols(t *testing.T) {
	t.Parallel()
	d, err := gpu.Open(gpu.WithDriverLibrary("libc.so.6"))
	require.ErrorIs(t, err, gpu.ErrUnavailable)
	if strings.Contains(err.Error(), "cannot load") {
		t.Skipf("no glibc here: %v", err)
	}
	assert.Contains(t, err.Error(), "has no symbol cuInit")
	assert.Zero(t, d.DeviceCount())
}

func TestOpen_NoDevice(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "device_count", 0)
	d, err := gpu.Open(f.options()...)
	require.ErrorIs(t, err, gpu.ErrUnavailable)
	assert.Contains(t, err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE (100)")
	assert.Zero(t, d.DeviceCount())
}

// The fake reads its device count from FAKECUDA_DEVICE_COUNT at the first
// cuInit, so this test sets the environment and cannot run in parallel.
func TestOpen_DeviceCountFromEnvironment(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICE_COUNT", "3")
	f := newFakeCUDA(t)
	d := f.open(t)
	require.Equal(t, 3, d.DeviceCount())
	assert.Equal(t, 13000, d.Version())
	for i := range 3 {
		info, err := d.Device(i)
		require.NoError(t, err)
		assert.Equal(t, gpu.DeviceInfo{
			Ordinal: i, Name: "Fake Device " + string(rune('0'+i)),
			TotalMemory: 1 << 30, Major: 9, Minor: 0, MemoryPools: true,
		}, info)
	}
	_, err := d.Device(3)
	requireKind(t, err, gpu.OpDeviceInfo, gpu.Logic)
	assert.EqualError(t, err, "deviceInfo: no device 3 among 3")

	// Resources on several devices each get that device's thread and
	// context.
	ctx := context.Background()
	for i := range 3 {
		r, err := d.NewResources(ctx, i)
		require.NoError(t, err)
		assert.Equal(t, i, r.Device())
		require.NoError(t, r.Sync(ctx))
		require.NoError(t, r.Close())
	}
	assert.EqualValues(t, 1, f.counter(t, "ctx_refs2"), "the device thread keeps its reference")
}

func TestDriver_Close(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d, err := gpu.Open(f.options()...)
	require.NoError(t, err)
	ctx := context.Background()
	r1, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	r2, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	_, err = gpu.NewArray(ctx, r1, []float32{1, 2, 3})
	require.NoError(t, err)
	assert.EqualValues(t, 3, f.counter(t, "ctx_refs0"), "the thread's and each resources' reference")
	assert.EqualValues(t, 2, f.counter(t, "live_streams"))

	require.NoError(t, d.Close())
	assert.True(t, r1.Closed())
	assert.True(t, r2.Closed())
	assert.Zero(t, f.counter(t, "ctx_refs0"))
	assert.Zero(t, f.counter(t, "live_streams"))
	assert.Zero(t, f.counter(t, "live_allocs"))
	require.NoError(t, d.Close(), "Close is idempotent")
	require.NoError(t, r1.Close())

	_, err = d.NewResources(ctx, 0)
	requireKind(t, err, gpu.OpDeviceResources, gpu.Logic)
	assert.EqualError(t, err, "deviceResources: driver closed")
}

func TestOpen_ConcurrentDrivers(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d1 := f.open(t)
	d2 := f.open(t)
	ctx := context.Background()
	r1, err := d1.NewResources(ctx, 0)
	require.NoError(t, err)
	r2, err := d2.NewResources(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, r1.Close())
	require.NoError(t, r2.Sync(ctx), "closing one driver's resources leaves the other's")
	require.NoError(t, r2.Close())
}

func TestError_Format(t *testing.T) {
	t.Parallel()
	inner := errors.New("no device 4 among 1")
	err := error(&gpu.Error{Op: gpu.OpDeviceResources, Kind: gpu.Logic, Err: inner})
	assert.EqualError(t, err, "deviceResources: no device 4 among 1")
	assert.ErrorIs(t, err, inner)
	var ge *gpu.Error
	require.ErrorAs(t, errors.Join(errors.New("other"), err), &ge)
	assert.Equal(t, gpu.Logic, ge.Kind)
	assert.Equal(t, "logic", gpu.Logic.String())
	assert.Equal(t, "out-of-memory", gpu.OutOfMemory.String())
	assert.Equal(t, "cuBLAS", gpu.CUBLAS.String())
	assert.Equal(t, "float64", gpu.Float64.String())
}
