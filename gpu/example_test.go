package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/riot-go/riot/gpu"
)

// A worker makes its resources once, runs its batches on them in order,
// times each batch after a Sync, and releases them when it returns or
// fails. Workers are spread over the devices round robin.
func Example_worker() {
	drv, err := gpu.Open()
	if err != nil {
		slog.Info("running without a GPU", "reason", err)
		return
	}
	defer drv.Close()
	ctx := context.Background()
	batches := [][]float32{{1, 2, 3, 4}, {5, 6, 7, 8}}

	runWorker := func(worker int) error {
		r, err := drv.NewResources(ctx, worker%drv.DeviceCount())
		if err != nil {
			return err
		}
		return gpu.WithResources(r, func(r *gpu.Resources) error {
			for i, batch := range batches {
				a, err := gpu.NewArray(ctx, r, batch, 2, 2)
				if err != nil {
					return err
				}
				c, err := r.MatMul(ctx, a, a)
				if err != nil {
					return err
				}
				out := make([]float32, c.Len())
				if err := gpu.CopyToHost(ctx, c, out); err != nil { // syncs the stream
					return err
				}
				fmt.Printf("worker %d batch %d: %v\n", worker, i, out)
			}
			return nil
		})
	}

	if err := runWorker(0); err != nil {
		var ge *gpu.Error
		if errors.As(err, &ge) && ge.Kind == gpu.OutOfMemory {
			slog.Warn("GPU full; retry with smaller batches", "error", err)
		}
	}
}
