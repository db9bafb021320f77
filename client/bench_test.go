package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkSubmit: pipelined submissions to a tracker in memory, each op
// one workunit submitted and acknowledged.
func BenchmarkSubmit(b *testing.B) {
	benchSubmit(b, trackertest.LogLevel(slog.LevelWarn))
}

// BenchmarkSubmit_Durable: the same with the tracker's bbolt store (group
// commit).
func BenchmarkSubmit_Durable(b *testing.B) {
	benchSubmit(b, trackertest.Durable(), trackertest.LogLevel(slog.LevelWarn))
}

func benchSubmit(b *testing.B, opts ...trackertest.Option) {
	tr := trackertest.Start(b, opts...)
	ctx := context.Background()
	c, err := client.Dial(ctx, tr.Addr(), client.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	calls := make([]*client.Call, b.N)
	b.ResetTimer()
	for i := range calls {
		calls[i] = c.Submit(eval(fmt.Sprintf("%d // %d", i, b.N)), workunit.Options{})
	}
	for _, k := range calls {
		if _, err := k.Accepted(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
}
