package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

func benchRecord(n uint64) table.Record {
	k := workunit.Key(blob.Sum(binary.BigEndian.AppendUint64(nil, n)))
	return table.Record{Key: k, ID: n, Seq: int64(n), Status: workunit.StatusWaiting, Owner: "alice",
		Spec: []byte("a small workunit spec, about as long as a trivial one"), LastChange: time.Unix(1_700_000_000, 0)}
}

// BenchmarkBolt_Apply writes batches of new waiting records, one fsync'd
// commit per batch, and reports records per second.
func BenchmarkBolt_Apply(b *testing.B) {
	for _, size := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, err := OpenBolt(context.Background(), b.TempDir(), BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := make([]table.Record, size)
			var n uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range batch {
					n++
					batch[j] = benchRecord(n)
				}
				if err := s.Apply(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkBolt_Apply_Lifecycle writes what a busy table persists: each
// commit holds 1024 new workunits (running already: the table folds the
// waiting and running writes of one Ready into one) and the results of the
// 1024 of the commit before. Reports workunits per second.
func BenchmarkBolt_Apply_Lifecycle(b *testing.B) {
	s, err := OpenBolt(context.Background(), b.TempDir(), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const size = 1024
	var prev []table.Record
	var n uint64
	result := []byte("a small result")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := make([]table.Record, 0, 2*size)
		for _, r := range prev {
			r.Status, r.Spec, r.Result, r.Worker = workunit.StatusDone, nil, result, "w1"
			batch = append(batch, r)
		}
		prev = prev[:0]
		for j := 0; j < size; j++ {
			n++
			r := benchRecord(n)
			r.Status, r.Worker, r.Deliveries = workunit.StatusRunning, "w1", 1
			batch = append(batch, r)
			prev = append(prev, r)
		}
		if err := s.Apply(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "workunits/s")
}
