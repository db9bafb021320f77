package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

func benchWorkers(b *testing.B, addr string, n int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, n)
	for range n {
		ready := make(chan struct{})
		go func() {
			done <- worker.Run(ctx, worker.Options{Tracker: addr, Slots: 1, Logger: slog.New(slog.DiscardHandler),
				Ready: func(string) { close(ready) }})
		}()
		<-ready
	}
	b.Cleanup(func() {
		cancel()
		for range n {
			<-done
		}
	})
}

// BenchmarkEndToEnd: trivial workunits through one tracker and two
// workers on loopback (the target, docs/benchmarks.md: 150,000 per
// second on 2 cores).
// Each op is one workunit, submitted pipelined and waited for.
func BenchmarkEndToEnd(b *testing.B) {
	tr := trackertest.Start(b, trackertest.LogLevel(slog.LevelWarn))
	benchWorkers(b, tr.Addr(), 2)
	tr.WaitFor(b, func(s tracker.Stats) bool { return s.Workers == 2 })
	ctx := context.Background()
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	fn := &value.Function{Source: "(x) => x + 1"}
	b.ResetTimer()
	calls := make([]*client.Call, b.N)
	for i := range calls {
		// One function, many arguments: the engine compiles it once.
		k, err := m.DoWork(fn, i, b.N)
		if err != nil {
			b.Fatal(err)
		}
		calls[i] = k
	}
	for _, k := range calls {
		if _, err := k.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workunits/s")
}

// BenchmarkRoundTrip: one workunit at a time, submitted and waited for,
// with one worker: the latency of a workunit on loopback.
func BenchmarkRoundTrip(b *testing.B) {
	tr := trackertest.Start(b, trackertest.LogLevel(slog.LevelWarn))
	benchWorkers(b, tr.Addr(), 1)
	ctx := context.Background()
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := m.Submit(eval(fmt.Sprintf("%d // %d", i, b.N)), workunit.Options{}).Wait(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
