package replica

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/internal/cputime"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// benchBatchRecords is the size of BenchmarkStore_ApplyBatches's
// batches: even ones submit 200 new workunits (waiting, with a spec), odd
// ones finish the same 200 (done, with a result), as a tracker's writes
// alternate submissions and results.
const benchBatchRecords = 200

// benchBatchOf returns the first ID and the status of the i-th batch.
func benchBatchOf(i int) (uint64, workunit.Status) {
	if i%2 == 1 {
		return uint64(i/2*benchBatchRecords + 1), workunit.StatusDone
	}
	return uint64(i/2*benchBatchRecords + 1), workunit.StatusWaiting
}

// BenchmarkStore_ApplyBatches writes batches of 200 records through three
// replicas in one process (raft's in-memory transport, each replica's
// real raft-boltdb log and local store), as a busy tracker does: its CPU
// (user time of the whole run, three replicas' raft and FSMs) is what
// docs/benchmarks.md compares.
func BenchmarkStore_ApplyBatches(b *testing.B) {
	ctx := context.Background()
	c := newInmemCluster(b, 3, Timing{})
	l := c.leader(ctx)
	st := c.store(l)
	b.ResetTimer()
	cpu := startCPU(b)
	for i := range b.N {
		from, status := benchBatchOf(i)
		if err := st.Apply(ctx, batchOf(from, from+benchBatchRecords-1, status)); err != nil {
			b.Fatal(err)
		}
	}
	index := c.barrier(l)
	for j := range c.nodes {
		c.waitApplied(ctx, j, index)
	}
	cpu.report()
}

// BenchmarkFSM_ApplyBatches applies batches as above to one replica's
// FSM directly, without raft: the local store's share of a replica's CPU,
// with batches of 200 records and of 1,700 (what a busy tracker's
// batches through three replicas hold: riot-bench's "store commits"),
// each half submissions and half results of earlier submissions.
func BenchmarkFSM_ApplyBatches(b *testing.B) {
	for _, n := range []uint64{200, 1700} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			f, err := openFSM(context.Background(), b.TempDir()+"/state", slog.New(slog.DiscardHandler), func(err error) { b.Error(err) })
			if err != nil {
				b.Fatal(err)
			}
			defer f.close()
			cmds := make([][]byte, b.N)
			for i := range cmds {
				// Batch i submits n/2 workunits and finishes the n/2
				// that batch i-2 submitted.
				half := n / 2
				sub := batchOf(uint64(i)*half+1, uint64(i+1)*half, workunit.StatusWaiting)
				if i >= 2 {
					sub = append(sub, batchOf(uint64(i-2)*half+1, uint64(i-1)*half, workunit.StatusDone)...)
				}
				cmds[i] = append([]byte{cmdRecords}, store.EncodeBatch(sub)...)
			}
			b.ResetTimer()
			cpu := startCPU(b)
			for i, cmd := range cmds {
				if r := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: cmd}); r != nil {
					b.Fatal(r)
				}
			}
			cpu.report()
		})
	}
}

// cpuMeter reports the CPU time (user and system, of the whole process:
// every replica's goroutines and the garbage collector's) that a
// benchmark's loop took, as cpu-ns/op: on a shared machine the wall time
// a loop takes says more about the other processes than about it.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuMeter { return cpuMeter{b: b, start: cputime.Of(b)} }

func (m cpuMeter) report() {
	m.b.ReportMetric(float64(cputime.Of(m.b)-m.start)/float64(m.b.N), "cpu-ns/op")
}
