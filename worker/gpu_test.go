package worker

import (
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

func TestGPUPool_TakeRelease(t *testing.T) {
	t.Parallel()
	p := newGPUPool(3)
	none, rel0 := p.take(0)
	assert.Nil(t, none, "no GPUs asked: every device, as engine.Request says")
	a, relA := p.take(2)
	assert.Equal(t, []int{0, 1}, a)
	b, relB := p.take(1)
	assert.Equal(t, []int{2}, b)
	relA()
	c, relC := p.take(2)
	assert.ElementsMatch(t, []int{0, 1}, c)
	rel0()
	relB()
	relC()
	d, _ := p.take(3)
	assert.ElementsMatch(t, []int{0, 1, 2}, d)
}

// One device at a time, the pool goes round robin, as the seed's
// device-for-worker: (modulo i (device-count)).
func TestGPUPool_RoundRobin(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3} {
		p := newGPUPool(n)
		var got, want []int
		for i := range 7 {
			g, release := p.take(1)
			got = append(got, g...)
			want = append(want, i%n)
			release()
		}
		assert.Equal(t, want, got, "%d devices", n)
	}
}

// A busy device is skipped for the next free one.
func TestGPUPool_SkipsBusy(t *testing.T) {
	t.Parallel()
	p := newGPUPool(3)
	a, relA := p.take(1) // 0
	b, relB := p.take(1) // 1
	relA()
	c, relC := p.take(1) // 2, then 0 is the next free one
	d, relD := p.take(1)
	assert.Equal(t, []int{0, 1, 2, 0}, append(append(append(a, b...), c...), d...))
	relB()
	relC()
	relD()
}

// When the tracker and the worker disagree (a lease the tracker let expire
// still runs here), take shares the least busy devices instead of giving
// fewer than asked; more than the worker has is capped at what it has.
func TestGPUPool_Oversubscribed(t *testing.T) {
	t.Parallel()
	p := newGPUPool(2)
	a, relA := p.take(2)
	assert.Equal(t, []int{0, 1}, a)
	b, relB := p.take(1)
	assert.Len(t, b, 1, "shares a busy device rather than none")
	c, relC := p.take(5)
	assert.ElementsMatch(t, []int{0, 1}, c, "capped at the worker's devices, each once")
	relA()
	relB()
	relC()
	relC() // a second call gives nothing back twice
	d, _ := p.take(2)
	assert.ElementsMatch(t, []int{0, 1}, d)
	assert.Equal(t, []int{1, 1}, p.busy)
}

func TestGPUPool_NoDevices(t *testing.T) {
	t.Parallel()
	p := newGPUPool(0)
	g, release := p.take(1)
	assert.Empty(t, g)
	release()
}

func TestGPUPool_Concurrent(t *testing.T) {
	t.Parallel()
	p := newGPUPool(4)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				g, release := p.take(2)
				assert.Len(t, g, 2)
				assert.NotEqual(t, g[0], g[1])
				release()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, []int{0, 0, 0, 0}, p.busy)
}

// Without a driver, OpenGPU returns a Driver with no devices and logs why;
// the hello then lists none.
func TestOpenGPU_Unavailable(t *testing.T) {
	t.Parallel()
	var logs gpuLogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	drv := OpenGPU(logger, gpu.WithDriverLibrary(filepath.Join(t.TempDir(), "libmissing.so")))
	t.Cleanup(func() { assert.NoError(t, drv.Close()) })
	require.NotNil(t, drv)
	assert.Zero(t, drv.DeviceCount())
	assert.ErrorIs(t, drv.Err(), gpu.ErrUnavailable)
	assert.Contains(t, logs.String(), `msg="worker: no GPUs" why="gpu: cuda unavailable: cannot load the CUDA driver`)
	assert.Empty(t, helloGPUs(drv, logger))
	assert.Empty(t, helloGPUs(nil, logger))
}

// gpuLogBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type gpuLogBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *gpuLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *gpuLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
