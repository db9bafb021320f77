package gpu_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// The benchmarks need the real driver (see realDriver) and skip without
// it. RIOT_GPU_BENCH_N sets the gemm size (default 4096) and
// RIOT_GPU_BENCH_MIB the copy size (default 64).

func benchSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkSync measures a Sync of an idle stream, and a launch of an
// empty kernel followed by a Sync: the overhead of the device thread and
// of polling.
func BenchmarkSync(b *testing.B) {
	r := realResources(b)
	ctx := context.Background()
	b.Run("idle", func(b *testing.B) {
		for b.Loop() {
			if err := r.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("empty_kernel", func(b *testing.B) {
		k := gpu.Kernel{Source: `extern "C" __global__ void empty() {}`, Name: "empty"}
		err := r.LoadKernel(ctx, k)
		skipWithoutLibrary(b, err)
		require.NoError(b, err)
		cfg := gpu.LaunchConfig{Grid: gpu.Dim3{X: 1}, Block: gpu.Dim3{X: 32}}
		for b.Loop() {
			if err := r.Launch(ctx, k, cfg); err != nil {
				b.Fatal(err)
			}
			if err := r.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCopy measures host↔device bandwidth of ordinary Go memory,
// each copy followed by a Sync: staged through the resources' page-locked
// buffers (the default), and pageable (staging off), as the driver stages
// it.
func BenchmarkCopy(b *testing.B) {
	realDriver(b)
	ctx := context.Background()
	mib := benchSize("RIOT_GPU_BENCH_MIB", 64)
	host := make([]float32, mib<<18)
	for _, mode := range []struct {
		name string
		opts []gpu.Option
	}{{"staged", nil}, {"pageable", []gpu.Option{gpu.WithPinnedStaging(0, 0)}}} {
		d, err := gpu.Open(mode.opts...)
		require.NoError(b, err)
		r, err := d.NewResources(ctx, 0)
		require.NoError(b, err)
		x, err := gpu.NewArray(ctx, r, host)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("HtoD_%dMiB_%s", mib, mode.name), func(b *testing.B) {
			b.SetBytes(int64(len(host) * 4))
			for b.Loop() {
				if err := gpu.CopyFromHost(ctx, x, host); err != nil {
					b.Fatal(err)
				}
				if err := r.Sync(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("DtoH_%dMiB_%s", mib, mode.name), func(b *testing.B) {
			b.SetBytes(int64(len(host) * 4))
			for b.Loop() {
				if err := gpu.CopyToHost(ctx, x, host); err != nil {
					b.Fatal(err)
				}
			}
		})
		require.NoError(b, d.Close())
	}
}

// BenchmarkGemm measures n×n matrix products through the binding (cuBLAS
// on the resources' stream, a Sync after each) and reports TFLOP/s.
func BenchmarkGemm(b *testing.B) {
	r := realResources(b)
	ctx := context.Background()
	_, err := r.LibraryHandle(ctx, gpu.CUBLAS)
	skipWithoutLibrary(b, err)
	require.NoError(b, err)
	n := benchSize("RIOT_GPU_BENCH_N", 4096)
	for _, p := range []struct {
		dtype gpu.DType
		tf32  bool
	}{{gpu.Float32, false}, {gpu.Float64, false}, {gpu.Float32, true}, {gpu.BFloat16, false}, {gpu.Float16, false}} {
		name := fmt.Sprintf("%v_%d", p.dtype, n)
		if p.tf32 {
			name = fmt.Sprintf("tf32_%d", n)
		}
		b.Run(name, func(b *testing.B) {
			a, err := r.Zeros(ctx, p.dtype, n, n)
			require.NoError(b, err)
			c, err := r.Zeros(ctx, p.dtype, n, n)
			require.NoError(b, err)
			defer func() { _, _ = a.Free(), c.Free() }()
			opt := gpu.ProductOptions{TF32: p.tf32}
			// One product first: cuBLAS picks and loads its kernels.
			require.NoError(b, r.GemmWith(ctx, opt, false, false, 1, a, a, 0, c))
			require.NoError(b, r.Sync(ctx))
			for b.Loop() {
				if err := r.GemmWith(ctx, opt, false, false, 1, a, a, 0, c); err != nil {
					b.Fatal(err)
				}
				if err := r.Sync(ctx); err != nil {
					b.Fatal(err)
				}
			}
			flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// BenchmarkFanOut is the seed's "fanning out" with real work: a batch is
// an upload of a 2048×1024 float32 matrix, its product with a 1024×1024
// one and the download of the 2048×1024 result, 4 batches a worker (the
// sizes are n/2×n/4 and n/4×n/4 for RIOT_GPU_BENCH_N=n, 4096 by default). Each
// iteration times one worker alone, then four workers at once, each on
// its own Resources (stream) of device 0, as four workunits on one GPU
// are. It reports both times and overlap = 4·one/four: 1 when the streams
// run one after another, more when they overlap (copies in both
// directions and products of different streams run at once).
func BenchmarkFanOut(b *testing.B) {
	d := realDriver(b)
	ctx := context.Background()
	n := benchSize("RIOT_GPU_BENCH_N", 4096)
	rows, cols, batches := max(n/2, 1), max(n/4, 1), 4
	host := make([]float32, rows*cols)
	for i := range host {
		host[i] = float32(i%7) / 7
	}
	type worker struct {
		r   *gpu.Resources
		w   *gpu.Array
		out []float32
	}
	workers := make([]*worker, 4)
	for i := range workers {
		r, err := d.NewResources(ctx, 0)
		require.NoError(b, err)
		w, err := gpu.NewArray(ctx, r, host[:cols*cols], cols, cols)
		require.NoError(b, err)
		workers[i] = &worker{r: r, w: w, out: make([]float32, rows*cols)}
	}
	run := func(wk *worker) error {
		for range batches {
			x, err := gpu.NewArray(ctx, wk.r, host, rows, cols)
			if err != nil {
				return err
			}
			y, err := wk.r.MatMul(ctx, x, wk.w)
			if err != nil {
				return err
			}
			if err := gpu.CopyToHost(ctx, y, wk.out); err != nil {
				return err
			}
			_, _ = x.Free(), y.Free()
		}
		return nil
	}
	require.NoError(b, run(workers[0])) // cuBLAS, staging buffers, pools warm
	var one, four time.Duration
	for b.Loop() {
		start := time.Now()
		if err := run(workers[0]); err != nil {
			b.Fatal(err)
		}
		one += time.Since(start)
		start = time.Now()
		errs := make(chan error, len(workers))
		for _, wk := range workers {
			go func() { errs <- run(wk) }()
		}
		for range workers {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		four += time.Since(start)
	}
	b.ReportMetric(float64(one.Microseconds())/1e3/float64(b.N), "one_ms")
	b.ReportMetric(float64(four.Microseconds())/1e3/float64(b.N), "four_ms")
	b.ReportMetric(4*one.Seconds()/four.Seconds(), "overlap")
	for _, wk := range workers {
		require.NoError(b, wk.r.Close())
	}
}
