package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

func TestNewResources_MissingDevice(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	for _, dev := range []int{4, 1, -1} {
		_, err := d.NewResources(context.Background(), dev)
		requireKind(t, err, gpu.OpDeviceResources, gpu.Logic)
		assert.EqualError(t, err, fmt.Sprintf("deviceResources: no device %d among 1", dev))
	}
	assert.Zero(t, f.counter(t, "ctx_refs0"), "a missing device starts nothing")
}

func TestResources_Basics(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	assert.Equal(t, 0, r.Device())
	assert.Equal(t, d, r.Driver())
	assert.Equal(t, "Fake Device 0", r.DeviceInfo().Name)
	assert.Equal(t, "gpu.Resources(device 0)", r.String())
	assert.EqualValues(t, 2, f.counter(t, "ctx_refs0"), "the device thread's and the resources' references")
	assert.EqualValues(t, 1, f.counter(t, "live_streams"))
	assert.Zero(t, f.counter(t, "blas_handles"), "handles come on first use")

	r2, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	assert.NotSame(t, r, r2, "each resources object owns its stream")
	assert.EqualValues(t, 2, f.counter(t, "live_streams"))

	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close is idempotent")
	require.NoError(t, r2.Close())
	assert.True(t, r.Closed())
	assert.Equal(t, "gpu.Resources(device 0, closed)", r.String())
	assert.Zero(t, f.counter(t, "live_streams"))
	assert.EqualValues(t, 1, f.counter(t, "ctx_refs0"), "only the device thread's reference is left")

	err = r.Sync(context.Background())
	requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.EqualError(t, err, "resourcesSync: resources closed")
}

func TestResources_Sync_Polls(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "not_ready", 5)
	r := f.resources(t)
	ctx := context.Background()
	require.NoError(t, r.Sync(ctx))
	before := f.counter(t, "stream_queries")
	assert.EqualValues(t, 1, before, "an idle stream is done at the first poll")

	_, err := gpu.NewArray(ctx, r, []float64{1, 2})
	require.NoError(t, err)
	require.NoError(t, r.Sync(ctx))
	assert.EqualValues(t, 6, f.counter(t, "stream_queries")-before, "five answers of not ready, then success")
}

func TestResources_Sync_Cancelled(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	f.setting(t, "not_ready", -1) // every queued operation leaves the stream busy for good
	_, err := r.Zeros(context.Background(), gpu.Float32, 4)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = r.Sync(ctx)
	requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Positive(t, f.counter(t, "stream_queries"), "it polled before giving up")

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	err = r.Sync(cctx)
	assert.ErrorIs(t, err, context.Canceled)

	require.NoError(t, r.Close(), "busy resources close all the same")
	assert.Zero(t, f.counter(t, "live_streams"))
}

func TestWithResources_ReleasesOnError(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	boom := errors.New("process-batch: row has 3 columns")
	err = gpu.WithResources(r, func(r *gpu.Resources) error {
		_, err := gpu.NewArray(context.Background(), r, []float32{1, 2, 3})
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, boom, err, "fn's error comes back unchanged")
	assert.True(t, r.Closed())
	assert.Zero(t, f.counter(t, "live_streams"))
	assert.Zero(t, f.counter(t, "live_allocs"))
}

func TestWithResources_ReleasesOnReturn(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	var inside bool
	require.NoError(t, gpu.WithResources(r, func(r *gpu.Resources) error {
		inside = !r.Closed()
		return r.Sync(context.Background())
	}))
	assert.True(t, inside)
	assert.True(t, r.Closed())
	assert.Zero(t, f.counter(t, "live_streams"))

	err = gpu.WithResources(nil, func(*gpu.Resources) error { return nil })
	requireKind(t, err, gpu.OpWithDeviceResources, gpu.Logic)
}

func TestWithResources_ReleasesOnPanic(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	require.PanicsWithValue(t, "worker died", func() {
		_ = gpu.WithResources(r, func(*gpu.Resources) error { panic("worker died") })
	})
	assert.True(t, r.Closed(), "released before the panic went on")
	assert.Zero(t, f.counter(t, "live_streams"))
}

func TestResources_LibraryHandles(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	r, err := d.NewResources(context.Background(), 0)
	require.NoError(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		lib     gpu.Library
		counter string
	}{{gpu.CUBLAS, "blas_handles"}, {gpu.CUSOLVER, "solver_handles"}, {gpu.CUSPARSE, "sparse_handles"}} {
		h, err := r.LibraryHandle(ctx, c.lib)
		require.NoError(t, err, c.lib)
		assert.NotZero(t, h)
		h2, err := r.LibraryHandle(ctx, c.lib)
		require.NoError(t, err)
		assert.Equal(t, h, h2, "one handle per resources")
		assert.EqualValues(t, 1, f.counter(t, c.counter), c.lib)
		assert.Equal(t, f.path, d.LibraryPath(c.lib))
	}
	assert.EqualValues(t, 1, f.counter(t, "blas_stream_sets"), "bound to the stream once")

	_, err = r.LibraryHandle(ctx, gpu.NVRTC)
	requireKind(t, err, gpu.OpResourcesHandle, gpu.Logic)

	require.NoError(t, r.Close())
	_, err = r.LibraryHandle(ctx, gpu.CUBLAS)
	requireKind(t, err, gpu.OpResourcesHandle, gpu.Logic)

	// Closed resources leave their handles to the device's next ones:
	// destroying a cuBLAS handle would synchronize the whole device.
	r2, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	for _, c := range []struct {
		lib     gpu.Library
		counter string
	}{{gpu.CUBLAS, "blas_handles"}, {gpu.CUSOLVER, "solver_handles"}, {gpu.CUSPARSE, "sparse_handles"}} {
		_, err := r2.LibraryHandle(ctx, c.lib)
		require.NoError(t, err, c.lib)
		assert.EqualValues(t, 1, f.counter(t, c.counter), "%v: the idle handle, not a new one", c.lib)
	}
	assert.EqualValues(t, 2, f.counter(t, "blas_stream_sets"), "bound to the new stream")
	require.NoError(t, r2.Close())
	require.NoError(t, d.Close())
	for _, c := range []string{"blas_handles", "solver_handles", "sparse_handles"} {
		assert.Zero(t, f.counter(t, c), "%s released when the driver closes", c)
	}
}

func TestResources_MissingLibrary(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	missing := t.TempDir() + "/libcublas.so.13"
	r := f.resources(t, gpu.WithLibrary(gpu.CUBLAS, missing), gpu.WithLibrary(gpu.CUSPARSE, "libc.so.6"))
	ctx := context.Background()
	a, err := gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2)
	require.NoError(t, err)

	_, err = r.MatMul(ctx, a, a)
	requireKind(t, err, gpu.OpMatMul, gpu.Logic)
	assert.Contains(t, err.Error(), "matMul: cannot load cuBLAS: "+missing)
	assert.Contains(t, err.Error(), "set RIOT_CUBLAS_LIBRARY to its path")
	assert.Empty(t, r.Driver().LibraryPath(gpu.CUBLAS))

	_, err = r.LibraryHandle(ctx, gpu.CUSPARSE)
	requireKind(t, err, gpu.OpResourcesHandle, gpu.Logic)
	assert.Contains(t, err.Error(), "cuSPARSE (libc.so.6) has no symbol cusparseCreate")

	require.NoError(t, r.Sync(ctx), "a missing library leaves the resources usable")
}

func TestResources_LibraryOutOfMemory(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "blas_alloc_fail", 1)
	r := f.resources(t)
	_, err := r.LibraryHandle(context.Background(), gpu.CUBLAS)
	ge := requireKind(t, err, gpu.OpResourcesHandle, gpu.OutOfMemory)
	assert.Equal(t, 3, ge.Code)
	assert.Contains(t, err.Error(), "cublasCreate_v2: CUBLAS_STATUS_ALLOC_FAILED (3)")
}

func TestResources_Concurrent(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			r, err := d.NewResources(ctx, 0)
			if err != nil {
				errs <- err
				return
			}
			errs <- gpu.WithResources(r, func(r *gpu.Resources) error {
				for i := range 10 {
					data := []float64{float64(w), float64(i)}
					a, err := gpu.NewArray(ctx, r, data)
					if err != nil {
						return err
					}
					got := make([]float64, 2)
					if err := gpu.CopyToHost(ctx, a, got); err != nil {
						return err
					}
					if got[0] != data[0] || got[1] != data[1] {
						return fmt.Errorf("worker %d batch %d: got %v", w, i, got)
					}
					if i%2 == 0 {
						if err := a.Free(); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, f.counter(t, "live_streams"))
	assert.Zero(t, f.counter(t, "live_allocs"))
}

func TestResources_CollectedWhenUnreachable(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t, gpu.WithLogger(slog.New(slog.DiscardHandler)))
	func() {
		r, err := d.NewResources(context.Background(), 0)
		require.NoError(t, err)
		_, err = gpu.NewArray(context.Background(), r, []float32{1})
		require.NoError(t, err)
	}()
	// The cleanup runs after a collection finds the handle unreachable;
	// poll with a deadline, collecting each time.
	require.Eventually(t, func() bool {
		runtime.GC()
		return f.get("live_streams") == 0 && f.get("live_allocs") == 0
	}, 10*time.Second, time.Millisecond)
}
