package worker

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/wire"
)

// OpenGPU opens the CUDA driver for a worker, as riot-worker does at start:
// gpu.Open with opts (RIOT_CUDA_LIBRARY and the library variables apply
// unless opts say otherwise), logging through logger each device it found
// (ordinal, name, memory), or why there is none (the driver's reason, or
// that it reports no devices).
//
// It always returns a usable *gpu.Driver, with zero devices when the driver
// is unavailable: give it to the worker as Options.GPU either way,
// so that a workunit asking for a device there is told why there is none
// (deviceResources: no device 0 among 0: gpu: cuda unavailable: ...). The
// caller closes it after Run returns.
func OpenGPU(logger *slog.Logger, opts ...gpu.Option) *gpu.Driver {
	if logger == nil {
		logger = slog.Default()
	}
	drv, err := gpu.Open(append([]gpu.Option{gpu.WithLogger(logger)}, opts...)...)
	n := drv.DeviceCount()
	switch {
	case err != nil:
		logger.Info("worker: no GPUs", "why", err)
	case n == 0:
		logger.Info("worker: no GPUs", "why", "the CUDA driver reports no devices", "driver_version", drv.Version())
	default:
		for i := range n {
			d, err := drv.Device(i)
			if err != nil {
				logger.Warn("worker: GPU device unreadable", "device", i, "err", err)
				continue
			}
			logger.Info("worker: GPU", "device", i, "name", d.Name,
				"memory", fmt.Sprintf("%.1f GiB", float64(d.TotalMemory)/(1<<30)),
				"compute", fmt.Sprintf("%d.%d", d.Major, d.Minor), "driver_version", drv.Version())
		}
	}
	return drv
}

// helloGPUs lists drv's devices for the worker's hello, one per ordinal,
// so that the i-th entry is device i. A device whose details cannot be read
// is still listed (with its ordinal as its name), so that the ordinals the
// tracker counts are the driver's.
func helloGPUs(drv *gpu.Driver, logger *slog.Logger) []wire.GPU {
	if drv == nil {
		return nil
	}
	var gpus []wire.GPU
	for i := range drv.DeviceCount() {
		d, err := drv.Device(i)
		if err != nil {
			logger.Warn("worker: GPU device unreadable", "device", i, "err", err)
			gpus = append(gpus, wire.GPU{Name: fmt.Sprintf("device %d", i)})
			continue
		}
		gpus = append(gpus, wire.GPU{Name: d.Name, Memory: d.TotalMemory})
	}
	return gpus
}

// gpuPool hands the worker's GPU ordinals to the workunits that ask for
// devices, round robin, as the seed's device-for-worker does: taking one
// device at a time while all are free gives 0, 1, ..., n-1, 0, ...; a busy
// device is skipped for the next free one. It is safe for concurrent use.
//
// The tracker gives a workunit GPUs only while the worker has that many
// free, so take finds them free. Should the two disagree (a lease the
// tracker let expire while it still runs here), take shares the least busy
// devices rather than give fewer than asked: the workunit still gets its
// count, and devices can run several streams.
type gpuPool struct {
	mu   sync.Mutex
	busy []int // workunits on each device
	next int   // where the next search starts
}

func newGPUPool(n int) *gpuPool {
	return &gpuPool{busy: make([]int, n)}
}

// take returns n distinct ordinals (at most the worker's device count) and
// a function that gives them back, to call once. n 0 gives none: the
// workunit asked for no device (engine.Request.GPUs says what it sees).
func (p *gpuPool) take(n int) ([]int, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, len(p.busy))
	if n <= 0 {
		return nil, func() {}
	}
	got := make([]int, 0, n)
	taken := make([]bool, len(p.busy))
	for len(got) < n {
		// The least busy device not yet taken, first from p.next on.
		best := -1
		for k := range len(p.busy) {
			i := (p.next + k) % len(p.busy)
			if !taken[i] && (best < 0 || p.busy[i] < p.busy[best]) {
				best = i
			}
		}
		taken[best] = true
		p.busy[best]++
		got = append(got, best)
		p.next = (best + 1) % len(p.busy)
	}
	var once sync.Once
	return got, func() {
		once.Do(func() {
			p.mu.Lock()
			for _, i := range got {
				p.busy[i]--
			}
			p.mu.Unlock()
		})
	}
}
