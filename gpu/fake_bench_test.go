package gpu_test

import (
	"context"
	"testing"
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
