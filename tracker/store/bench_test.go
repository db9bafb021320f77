package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/internal/cputime"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

func benchRecord(n uint64) table.Record {
	k := workunit.Key(blob.Sum(binary.BigEndian.AppendUint64(nil, n)))
	return table.Record{Key: k, ID: n, Seq: int64(n), Status: workunit.StatusWaiting, Owner: "alice",
		Spec: []byte("a small workunit spec, about as long as a trivial one"), LastChange: time.Unix(1_700_000_000, 0)}
}

// benchCommits are the two ways a Bolt store commits an Apply: through
// the write-ahead log (riotd's), and a bbolt transaction each (before the
// log), benchmarked side by side.
var benchCommits = []struct {
	name string
	opts BoltOptions
}{
	{"commit=log", BoltOptions{}},
	{"commit=direct", BoltOptions{DirectCommits: true}},
}

// BenchmarkBolt_Apply writes batches of new waiting records, each Apply
// durable when it returns, and reports records per second.
func BenchmarkBolt_Apply(b *testing.B) {
	for _, c := range benchCommits {
		for _, size := range []int{1, 64, 1024} {
			b.Run(fmt.Sprintf("%s/batch=%d", c.name, size), func(b *testing.B) {
				benchApply(b, c.opts, size)
			})
		}
	}
}

func benchApply(b *testing.B, opts BoltOptions, size int) {
	s, err := OpenBolt(context.Background(), b.TempDir(), opts)
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
}

// BenchmarkBolt_Apply_Lifecycle writes what a busy table persists: each
// commit holds 1024 new workunits (running already: the table folds the
// waiting and running writes of one Ready into one) and the results of the
// 1024 of the commit before. Reports workunits per second.
func BenchmarkBolt_Apply_Lifecycle(b *testing.B) {
	for _, c := range benchCommits {
		b.Run(c.name, func(b *testing.B) { benchLifecycle(b, c.opts) })
	}
}

func benchLifecycle(b *testing.B, opts BoltOptions) {
	s, err := OpenBolt(context.Background(), b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const size = 1024
	var prev []table.Record
	var n uint64
	result := []byte("a small result")
	b.ResetTimer()
	cpu0 := cputime.Of(b)
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
	// The checkpoints (commit=log) run beside Apply: their CPU counts,
	// the last one's too (Close writes what is left).
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "workunits/s")
	b.ReportMetric(float64(cputime.Of(b)-cpu0)/float64(b.N*size), "cpu-ns/workunit")
}

// BenchmarkBolt_OpenCheck opens a store of about 256 MB (finished records
// with 2 KB results): checkFile alone (the check riotd makes before bbolt
// opens the file), and OpenBolt whole (the check, bbolt's open with its
// walk of the tree, the format check). It reports MB/s of the check.
func BenchmarkBolt_OpenCheck(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	result := make([]byte, 2048)
	const batches, per = 128, 1000
	for i := range batches {
		batch := make([]table.Record, per)
		for j := range batch {
			r := benchRecord(uint64(i*per + j + 1))
			r.Status, r.Spec, r.Result = workunit.StatusDone, nil, result
			batch[j] = r
		}
		if err := s.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("checkFile", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, _, err := checkFile(filepath.Join(dir, FileName)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("OpenBolt", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			s, err := OpenBolt(ctx, dir, BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
