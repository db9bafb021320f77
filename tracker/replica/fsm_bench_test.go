package replica

import (
	"context"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/workunit"
)

// benchBatch is the i-th batch of the tracker-like writes of the
// benchmarks below: even batches submit 200 new workunits (waiting, with
// a spec), odd ones finish the same 200 (done, with a result), as a
// tracker's writes alternate submissions and results.
func benchBatch(i int) []byte {
	from, status := benchBatchOf(i)
	return recordsCmd(from, from+benchBatchRecords-1, status)
}

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
	for i := range b.N {
		from, status := benchBatchOf(i)
		if err := st.Apply(ctx, batchOf(from, from+benchBatchRecords-1, status)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	index := c.barrier(l)
	for j := range c.nodes {
		c.waitApplied(ctx, j, index)
	}
}

// BenchmarkFSM_ApplyBatches applies the same batches to one replica's FSM
// directly, without raft: the local store's share of a replica's CPU.
func BenchmarkFSM_ApplyBatches(b *testing.B) {
	f, err := openFSM(context.Background(), b.TempDir()+"/state", slog.New(slog.DiscardHandler), func(err error) { b.Error(err) })
	if err != nil {
		b.Fatal(err)
	}
	defer f.close()
	b.ResetTimer()
	for i := range b.N {
		if r := f.Apply(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: benchBatch(i)}); r != nil {
			b.Fatal(r)
		}
	}
}
