package store

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkBolt_Restart loads a store of a million done records (64-byte
// results) into a new table, as riotd does at start: with every result
// (Load, the table keeping them) and without (LoadStored, a table with
// ResultsInStore). heapMiB is the heap in use after, with the table live.
func BenchmarkBolt_Restart(b *testing.B) {
	const n, per = 1_000_000, 10_000
	ctx := context.Background()
	dir := b.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	res := make([]byte, 64)
	batch := make([]table.Record, per)
	for i := 0; i < n; i += per {
		for j := range batch {
			id := uint64(i + j + 1)
			var k workunit.Key
			binary.BigEndian.PutUint64(k[:], id)
			batch[j] = table.Record{Key: k, ID: id, Status: workunit.StatusDone, Owner: "m", Worker: "w",
				Result: res, LastChange: time.Unix(1000, 0)}
		}
		if err := s.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	for _, stored := range []bool{false, true} {
		name := "results"
		if stored {
			name = "stored"
		}
		b.Run(name, func(b *testing.B) {
			var tab *table.Table
			for range b.N {
				tab = nil
				runtime.GC()
				load := s.Load
				if stored {
					load = s.LoadStored
				}
				recs, err := load(ctx)
				if err != nil {
					b.Fatal(err)
				}
				tab = table.New(table.Config{ResultsInStore: stored})
				if err := tab.Restore(recs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heapMiB")
			runtime.KeepAlive(tab)
		})
	}
}
