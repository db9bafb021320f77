package worker

import (
	"context"
	"runtime/metrics"
	"time"
)

// statsInterval is how often a worker tells the tracker its heap in use
// and how many workunits it runs (wire.Stats), for status pages.
const statsInterval = 5 * time.Second

// reportStats sends the worker's stats now and every statsInterval until
// ctx ends.
func (w *worker) reportStats(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(statsInterval)
	defer t.Stop()
	for {
		metrics.Read(sample)
		w.mu.Lock()
		running := len(w.running)
		w.mu.Unlock()
		w.c.SendStats(sample[0].Value.Uint64(), running)
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}
