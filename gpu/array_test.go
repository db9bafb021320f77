package gpu_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

func TestArray_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, pools := range []int64{1, 0} {
		f := newFakeCUDA(t)
		f.setting(t, "pools", pools)
		r := f.resources(t)
		ctx := context.Background()
		assert.Equal(t, pools == 1, r.DeviceInfo().MemoryPools)

		x, err := gpu.NewArray(ctx, r, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
		require.NoError(t, err)
		assert.Equal(t, gpu.Float32, x.DType())
		assert.Equal(t, []int{2, 3}, x.Shape())
		assert.Equal(t, 6, x.Len())
		assert.Same(t, r, x.Resources())
		assert.Equal(t, "gpu.Array(float32 [2 3] on device 0)", x.String())
		got := make([]float32, 6)
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, got)
		require.NoError(t, gpu.CopyFromHost(ctx, x, []float32{6, 5, 4, 3, 2, 1}))
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		assert.Equal(t, []float32{6, 5, 4, 3, 2, 1}, got)

		y, err := gpu.NewArray(ctx, r, []float64{-1.5, 1e300, 0})
		require.NoError(t, err)
		assert.Equal(t, []int{3}, y.Shape())
		got64 := make([]float64, 3)
		require.NoError(t, gpu.CopyToHost(ctx, y, got64))
		assert.Equal(t, []float64{-1.5, 1e300, 0}, got64)

		empty, err := gpu.NewArray(ctx, r, []float64{}, 0, 4)
		require.NoError(t, err)
		require.NoError(t, gpu.CopyToHost(ctx, empty, []float64{}))

		z, err := r.Zeros(ctx, gpu.Float64, 2, 2)
		require.NoError(t, err)
		zs := []float64{9, 9, 9, 9}
		require.NoError(t, gpu.CopyToHost(ctx, z, zs))
		assert.Equal(t, []float64{0, 0, 0, 0}, zs)

		assert.EqualValues(t, 3, f.counter(t, "live_allocs"), "the empty array has no memory")
		if pools == 1 {
			assert.EqualValues(t, 3, f.counter(t, "async_allocs"))
			assert.Zero(t, f.counter(t, "sync_allocs"))
		} else {
			assert.Zero(t, f.counter(t, "async_allocs"))
			assert.EqualValues(t, 3, f.counter(t, "sync_allocs"))
		}
		require.NoError(t, x.Free())
		require.NoError(t, x.Free(), "Free is idempotent")
		require.NoError(t, empty.Free())
		assert.EqualValues(t, 2, f.counter(t, "live_allocs"))
		require.NoError(t, r.Close())
		assert.Zero(t, f.counter(t, "live_allocs"), "the rest are freed with the resources")
		require.NoError(t, y.Free(), "an array of closed resources is already free")
	}
}

func TestArray_OutOfMemory(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "oom_bytes", 1024)
	r := f.resources(t)
	ctx := context.Background()
	_, err := gpu.NewArray(ctx, r, make([]float32, 1000))
	ge := requireKind(t, err, gpu.OpDeviceArray, gpu.OutOfMemory)
	assert.Equal(t, 2, ge.Code)
	assert.EqualError(t, err, "deviceArray: allocating 4000 bytes on device 0: "+
		"cuMemAllocAsync: CUDA_ERROR_OUT_OF_MEMORY (2): fake: out of memory")

	_, err = r.Zeros(ctx, gpu.Float64, 1000)
	requireKind(t, err, gpu.OpDeviceArray, gpu.OutOfMemory)

	x, err := gpu.NewArray(ctx, r, make([]float32, 256))
	require.NoError(t, err, "what fits still works")
	require.NoError(t, x.Free())
	assert.Zero(t, f.counter(t, "live_allocs"))
}

func TestArray_Errors(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	ctx := context.Background()
	r, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	other, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	x, err := gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2)
	require.NoError(t, err)
	y, err := gpu.NewArray(ctx, other, []float32{1, 2, 3, 4}, 2, 2)
	require.NoError(t, err)

	tests := []struct {
		name string
		op   string
		call func() error
		msg  string
	}{
		{"shape mismatch", gpu.OpDeviceArray, func() error {
			_, err := gpu.NewArray(ctx, r, []float32{1, 2, 3}, 2, 2)
			return err
		}, "deviceArray: shape [2 2] holds 4 elements, not 3"},
		{"negative dimension", gpu.OpDeviceArray, func() error {
			_, err := r.Zeros(ctx, gpu.Float32, 2, -1)
			return err
		}, "deviceArray: shape [2 -1] has a negative dimension"},
		{"no resources", gpu.OpDeviceArray, func() error {
			_, err := gpu.NewArray[float32](ctx, nil, nil)
			return err
		}, "deviceArray: no resources"},
		{"wrong element type", gpu.OpArrayToHost, func() error {
			return gpu.CopyToHost(ctx, x, make([]float64, 4))
		}, "arrayToHost: gpu.Array(float32 [2 2] on device 0) cannot be copied into float64 elements"},
		{"wrong length", gpu.OpArrayToHost, func() error {
			return gpu.CopyToHost(ctx, x, make([]float32, 3))
		}, "arrayToHost: gpu.Array(float32 [2 2] on device 0) has 4 elements, the destination 3"},
		{"fill from wrong element type", gpu.OpArrayFromHost, func() error {
			return gpu.CopyFromHost(ctx, x, make([]float64, 4))
		}, "arrayFromHost: gpu.Array(float32 [2 2] on device 0) cannot be filled from float64 elements"},
		{"fill from wrong length", gpu.OpArrayFromHost, func() error {
			return gpu.CopyFromHost(ctx, x, make([]float32, 5))
		}, "arrayFromHost: gpu.Array(float32 [2 2] on device 0) has 4 elements, the source 5"},
		{"other resources", gpu.OpMatMul, func() error {
			_, err := r.MatMul(ctx, x, y)
			return err
		}, "matMul: gpu.Array(float32 [2 2] on device 0) belongs to other resources"},
	}
	for _, tc := range tests {
		err := tc.call()
		requireKind(t, err, tc.op, gpu.Logic)
		assert.EqualError(t, err, tc.msg, tc.name)
	}

	require.NoError(t, x.Free())
	err = gpu.CopyToHost(ctx, x, make([]float32, 4))
	requireKind(t, err, gpu.OpArrayToHost, gpu.Logic)
	assert.EqualError(t, err, "arrayToHost: array freed")

	require.NoError(t, other.Close())
	err = gpu.CopyToHost(ctx, y, make([]float32, 4))
	requireKind(t, err, gpu.OpArrayToHost, gpu.Logic)
	assert.EqualError(t, err, "arrayToHost: resources closed")
	_, err = gpu.NewArray(ctx, other, []float32{1})
	assert.EqualError(t, err, "deviceArray: resources closed")
	require.NoError(t, r.Close())
}
