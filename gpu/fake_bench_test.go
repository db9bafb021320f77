package gpu_test

import (
	"context"
	"testing"

	"github.com/riot-go/riot/gpu"
)

// BenchmarkFakeSync_Idle measures a Sync of an idle stream on the FAKE
// driver, whose cuStreamQuery costs next to nothing: what it measures is
// the binding's own overhead per Sync (the path to the driver call and
// back), which the real driver's figure includes.
func BenchmarkFakeSync_Idle(b *testing.B) {
	f := newFakeCUDA(b)
	r := f.resources(b)
	ctx := context.Background()
	f.setting(b, "not_ready", 0)
	for b.Loop() {
		if err := r.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFakeGemm_Small measures a 2×2 product and a Sync on the FAKE
// driver: the binding's overhead per cuBLAS call.
func BenchmarkFakeGemm_Small(b *testing.B) {
	f := newFakeCUDA(b)
	r := f.resources(b)
	ctx := context.Background()
	f.setting(b, "not_ready", 0)
	x, err := gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2)
	if err != nil {
		b.Fatal(err)
	}
	c, err := r.Zeros(ctx, gpu.Float32, 2, 2)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := r.Gemm(ctx, false, false, 1, x, x, 0, c); err != nil {
			b.Fatal(err)
		}
		if err := r.Sync(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
