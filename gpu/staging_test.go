package gpu_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// The fake runs a copy from or to page-locked memory only when its event
// (or the stream) is seen done, or before the stream's next other
// operation: a staging buffer reused before its copy ran, or read before
// its copy ran, gives wrong data here.

func randomFloats(seed uint64, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	f := make([]float32, n)
	for i := range f {
		f[i] = rng.Float32()*2 - 1
	}
	return f
}

func TestStaging_ChunkedRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	// Two buffers of 64 KiB: 1 MiB goes in 16 chunks, each buffer reused 8 times.
	r := f.resources(t, gpu.WithPinnedStaging(64<<10, 128<<10))
	ctx := context.Background()
	data := randomFloats(1, 256<<10)
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, data))
	assert.EqualValues(t, 16, f.counter(t, "pinned_copies"))
	assert.Zero(t, f.counter(t, "pageable_copies"))
	n, bytes := r.StagingBuffers()
	assert.Equal(t, 2, n)
	assert.Equal(t, 128<<10, bytes)

	data2 := randomFloats(2, len(data))
	require.NoError(t, gpu.CopyFromHost(ctx, x, data2), "a second copy reuses the buffers")
	got := make([]float32, len(data))
	require.NoError(t, gpu.CopyToHost(ctx, x, got))
	require.True(t, slices.Equal(data2, got), "1 MiB came back changed")
	assert.EqualValues(t, 48, f.counter(t, "pinned_copies"))
	assert.EqualValues(t, 2, f.counter(t, "host_allocs"), "the buffers are made once")

	// A copy that ends mid-chunk, and one smaller than a chunk.
	odd := randomFloats(3, 40_000)
	y := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, odd))
	back := make([]float32, len(odd))
	require.NoError(t, gpu.CopyToHost(ctx, y, back))
	require.True(t, slices.Equal(odd, back))
	small := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, -2, 3}))
	b64 := make([]float64, 3)
	require.NoError(t, gpu.CopyToHost(ctx, small, b64))
	assert.Equal(t, []float64{1, -2, 3}, b64)
	assert.Zero(t, f.counter(t, "pageable_copies"))
}

func TestStaging_NewArrayThenKernel(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t, gpu.WithPinnedStaging(64<<10, 64<<10))
	ctx := context.Background()
	// The kernel is queued after the (deferred) upload: it must see the data.
	const n = 50_000
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), 1
	}
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, xs))
	y := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, ys))
	cfg := gpu.LaunchConfig{Grid: gpu.Dim3{X: (n + 255) / 256}, Block: gpu.Dim3{X: 256}}
	require.NoError(t, r.Launch(ctx, gpu.Kernel{Source: axpySource, Name: "axpy_f32"}, cfg, float32(2), x, y, int32(n)))
	got := make([]float32, n)
	require.NoError(t, gpu.CopyToHost(ctx, y, got))
	for i := range got {
		require.Equal(t, 2*float32(i)+1, got[i], "element %d", i)
	}
}

func TestStaging_ReleasedWithResources(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	d := f.open(t, gpu.WithPinnedStaging(64<<10, 128<<10))
	ctx := context.Background()
	data := randomFloats(4, 64<<10) // 256 KiB: both buffers
	use := func() {
		r, err := d.NewResources(ctx, 0)
		require.NoError(t, err)
		x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, data))
		got := make([]float32, len(data))
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		require.True(t, slices.Equal(data, got))
		require.NoError(t, r.Close())
		n, _ := r.StagingBuffers()
		assert.Zero(t, n, "closed resources hold no buffers")
	}
	use()
	assert.EqualValues(t, 2, f.counter(t, "live_host_allocs"), "kept by the device for its next resources")
	use()
	assert.EqualValues(t, 2, f.counter(t, "host_allocs"), "the next resources reuse them")

	// Three resources at once hold 6 buffers; once their copies are done,
	// the device keeps 4 of them.
	f.setting(t, "event_not_ready", 0)
	var rs []*gpu.Resources
	for range 3 {
		r, err := d.NewResources(ctx, 0)
		require.NoError(t, err)
		noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, data))
		rs = append(rs, r)
	}
	assert.EqualValues(t, 6, f.counter(t, "live_host_allocs"))
	for _, r := range rs {
		require.NoError(t, r.Close())
	}
	assert.EqualValues(t, 4, f.counter(t, "live_host_allocs"), "the device's bound: two resources' worth")
	assert.EqualValues(t, 4, f.counter(t, "live_events"))

	require.NoError(t, d.Close())
	assert.Zero(t, f.counter(t, "live_host_allocs"))
	assert.Zero(t, f.counter(t, "live_events"))
	assert.Zero(t, f.counter(t, "bad_host_frees"), "no buffer freed under its copy")
}

func TestStaging_Off(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t, gpu.WithPinnedStaging(0, 0))
	ctx := context.Background()
	data := randomFloats(5, 100_000)
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, data))
	got := make([]float32, len(data))
	require.NoError(t, gpu.CopyToHost(ctx, x, got))
	require.True(t, slices.Equal(data, got))
	assert.EqualValues(t, 2, f.counter(t, "pageable_copies"))
	assert.Zero(t, f.counter(t, "host_allocs"))
}

func TestStaging_WaitEndsWithContext(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	// The upload's events are done at their first query, so that the
	// download queues its copies into both buffers, behind the kernel,
	// before the time limit can end its wait.
	f.setting(t, "event_not_ready", 0)
	d := f.open(t, gpu.WithPinnedStaging(64<<10, 128<<10))
	ctx := context.Background()
	r, err := d.NewResources(ctx, 0)
	require.NoError(t, err)
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, randomFloats(6, 64<<10)))
	require.NoError(t, r.Launch(ctx, gpu.Kernel{Source: spinKernel, Name: "spin"},
		gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}))
	short, cancel := context.WithTimeout(ctx, 2e6) // 2 ms
	defer cancel()
	err = gpu.CopyToHost(short, x, make([]float32, x.Len()))
	requireKind(t, err, gpu.OpArrayToHost, gpu.Logic)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "arrayToHost: staging buffer's copy on device 0 still busy")

	// The copies are queued behind a kernel that never ends: closing keeps
	// their buffers, and the driver's Close leaves them to the process's
	// exit rather than free them under a DMA.
	require.NoError(t, r.Close())
	assert.EqualValues(t, 2, f.counter(t, "live_host_allocs"))
	require.NoError(t, d.Close())
	assert.EqualValues(t, 2, f.counter(t, "live_host_allocs"))
	assert.Zero(t, f.counter(t, "bad_host_frees"), "none freed under its copy")
}

func TestStaging_PinnedMemoryExhausted(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	f.setting(t, "host_oom_bytes", 100<<10)
	r := f.resources(t, gpu.WithPinnedStaging(64<<10, 128<<10))
	_, err := gpu.NewArray(context.Background(), r, randomFloats(7, 64<<10))
	ge := requireKind(t, err, gpu.OpDeviceArray, gpu.OutOfMemory)
	assert.Equal(t, 2, ge.Code)
	assert.Contains(t, err.Error(), "allocating 65536 bytes of page-locked host memory: cuMemHostAlloc: CUDA_ERROR_OUT_OF_MEMORY")
	assert.Zero(t, f.counter(t, "live_allocs"), "the array is freed again")
}

func TestStaging_ConcurrentCopies(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t, gpu.WithPinnedStaging(64<<10, 128<<10))
	ctx := context.Background()
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			data := randomFloats(uint64(10+g), 100_000)
			x, err := gpu.NewArray(ctx, r, data)
			if err != nil {
				done <- err
				return
			}
			got := make([]float32, len(data))
			if err := gpu.CopyToHost(ctx, x, got); err != nil {
				done <- err
				return
			}
			if !slices.Equal(data, got) {
				done <- assert.AnError
				return
			}
			done <- x.Free()
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
}

func TestSync_PollsOnTheCallersThread(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	f.setting(t, "not_ready", 5)
	noErr[*gpu.Array](t)(r.Zeros(ctx, gpu.Float32, 4))
	before := f.counter(t, "stream_queries")
	require.NoError(t, r.Sync(ctx))
	assert.EqualValues(t, 6, f.counter(t, "stream_queries")-before, "5 answers not ready, then done")
	before = f.counter(t, "stream_queries")
	require.NoError(t, r.Sync(ctx))
	assert.EqualValues(t, 1, f.counter(t, "stream_queries")-before, "an idle stream answers at once")
}

func TestSync_BrokenByCancel(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	require.NoError(t, r.Launch(ctx, gpu.Kernel{Source: spinKernel, Name: "spin"},
		gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 1}}))
	cctx, cancel := context.WithCancel(ctx)
	// Cancel once the wait is past its spinning phase: many queries in.
	go func() {
		for f.get("stream_queries") < 100 {
		}
		cancel()
	}()
	err := r.Sync(cctx)
	requireKind(t, err, gpu.OpResourcesSync, gpu.Logic)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "resourcesSync: stream on device 0 still busy")
}

// spinKernel never ends; the fake's "spin" makes its stream busy forever.
const spinKernel = `extern "C" __global__ void spin() { for (;;) {} }`

// Products from several goroutines on one Resources use its cuBLAS handle
// one at a time, on their own threads, while others copy.
func TestGemm_ConcurrentOnOneResources(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2))
	done := make(chan error, 4)
	for range 4 {
		go func() {
			for range 20 {
				c, err := r.MatMul(ctx, x, x)
				if err != nil {
					done <- err
					return
				}
				got := make([]float32, 4)
				if err := gpu.CopyToHost(ctx, c, got); err != nil {
					done <- err
					return
				}
				if !slices.Equal(got, []float32{7, 10, 15, 22}) {
					done <- assert.AnError
					return
				}
				if err := c.Free(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-done)
	}
	assert.EqualValues(t, 80, f.counter(t, "gemms"))
	assert.EqualValues(t, 1, f.counter(t, "blas_handles"), "one handle, made once")
}

// An array whose handle is not used after a copy starts stays allocated
// until the copy ends: its cleanup must not free it between two chunks.
func TestStaging_ArrayKeptAliveDuringCopy(t *testing.T) {
	t.Parallel()
	for _, down := range []bool{false, true} {
		f := newFakeCUDA(t)
		var once sync.Once
		hook := func() {
			once.Do(func() {
				before := f.get("live_allocs")
				runtime.GC()
				// Give a wrongly queued cleanup time to free the array;
				// with the handle alive, nothing is freed and this waits
				// it out.
				for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
					if f.get("live_allocs") < before {
						return
					}
					runtime.Gosched()
				}
			})
		}
		r := f.resources(t, gpu.WithPinnedStaging(64<<10, 64<<10), gpu.WithChunkHook(hook))
		ctx := context.Background()
		data := randomFloats(40, 64<<10)
		x := noErr[*gpu.Array](t)(r.Zeros(ctx, gpu.Float32, len(data)))
		if down {
			require.NoError(t, gpu.CopyToHost(ctx, x, data), "the array was freed under its download")
		} else {
			require.NoError(t, gpu.CopyFromHost(ctx, x, data), "the array was freed under its upload")
		}
	}
}
