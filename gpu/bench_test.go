package gpu_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

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

// BenchmarkCopy measures host↔device bandwidth from ordinary (pageable) Go
// memory, each copy followed by a Sync.
func BenchmarkCopy(b *testing.B) {
	r := realResources(b)
	ctx := context.Background()
	mib := benchSize("RIOT_GPU_BENCH_MIB", 64)
	host := make([]float32, mib<<18)
	x, err := gpu.NewArray(ctx, r, host)
	require.NoError(b, err)
	b.Run(fmt.Sprintf("HtoD_%dMiB", mib), func(b *testing.B) {
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
	b.Run(fmt.Sprintf("DtoH_%dMiB", mib), func(b *testing.B) {
		b.SetBytes(int64(len(host) * 4))
		for b.Loop() {
			if err := gpu.CopyToHost(ctx, x, host); err != nil {
				b.Fatal(err)
			}
		}
	})
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
	for _, dtype := range []gpu.DType{gpu.Float32, gpu.Float64} {
		b.Run(fmt.Sprintf("%v_%d", dtype, n), func(b *testing.B) {
			a, err := r.Zeros(ctx, dtype, n, n)
			require.NoError(b, err)
			c, err := r.Zeros(ctx, dtype, n, n)
			require.NoError(b, err)
			defer func() { _, _ = a.Free(), c.Free() }()
			// One product first: cuBLAS picks and loads its kernels.
			require.NoError(b, r.Gemm(ctx, false, false, 1, a, a, 0, c))
			require.NoError(b, r.Sync(ctx))
			for b.Loop() {
				if err := r.Gemm(ctx, false, false, 1, a, a, 0, c); err != nil {
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
