package table_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// packTable is a table with Config.PackBudget of a millisecond and four
// workers of one slot that prefetch 63 (a window of 64 each).
func packTable(t *testing.T, budget time.Duration) *table.Table {
	t.Helper()
	tab := table.New(table.Config{PackBudget: budget})
	for w := table.WorkerID(1); w <= 4; w++ {
		step(t, tab, table.WorkerJoin{Worker: w, Name: "w" + string(rune('0'+w)), Slots: 1, Prefetch: 63, Credit: 64})
	}
	drain(t, tab)
	return tab
}

// ownerSubmit is a submission of owner's.
func ownerSubmit(owner string, n int) table.Submit {
	s := submit(1, key(n))
	s.Owner = owner
	return s
}

// batch submits keys from..to-1 of owner in one batch (a frame) and
// returns how many each worker was given.
func batch(t *testing.T, tab *table.Table, owner string, from, to int) map[table.WorkerID]int {
	t.Helper()
	tab.BeginBatch()
	for i := from; i < to; i++ {
		step(t, tab, ownerSubmit(owner, i))
	}
	tab.EndBatch()
	given := map[table.WorkerID]int{}
	for _, a := range assigns(drain(t, tab)) {
		given[a.Worker]++
	}
	return given
}

// runAll answers every lease in held as run in d, with credit back.
func runAll(t *testing.T, tab *table.Table, held []table.Assign, d time.Duration) {
	t.Helper()
	for _, a := range held {
		step(t, tab,
			table.Complete{Worker: a.Worker, Key: a.Key, Token: a.Token, Result: []byte("r"), Elapsed: d},
			table.WorkerCredit{Worker: a.Worker, N: 1})
	}
}

// warmed is packTable after owner's first four workunits, one to each
// worker (their run time unknown), ran in d each.
func warmed(t *testing.T, budget time.Duration, owner string, d time.Duration) *table.Table {
	t.Helper()
	tab := packTable(t, budget)
	tab.BeginBatch()
	for i := range 4 {
		step(t, tab, ownerSubmit(owner, i))
	}
	tab.EndBatch()
	first := assigns(drain(t, tab))
	require.Len(t, first, 4)
	for i, a := range first {
		assert.Equal(t, table.WorkerID(i+1), a.Worker, "unknown run time: one each")
	}
	runAll(t, tab, first, d)
	drain(t, tab)
	return tab
}

// counts returns the workers' counts in worker order.
func counts(given map[table.WorkerID]int) []int {
	return []int{given[1], given[2], given[3], given[4]}
}

// A master's first workunits go one to each worker in turn: their run
// time is not known yet. Once they ran in microseconds, a batch of them
// goes to a worker MaxPack at a time; a slow master's, one at a time.
func TestTable_Dispatch_Pack(t *testing.T) {
	t.Parallel()
	tab := warmed(t, time.Millisecond, "fast", 10*time.Microsecond)

	assert.Equal(t, []int{16, 16, 8, 0}, counts(batch(t, tab, "fast", 100, 140)),
		"runs of 10 µs under a budget of 1 ms: packs of MaxPack (16)")

	// Another owner's workunits of a second each: one to each worker in
	// turn, whatever the first owner's are.
	tab2 := warmed(t, time.Millisecond, "slow", time.Second)
	assert.Equal(t, []int{2, 2, 2, 2}, counts(batch(t, tab2, "slow", 100, 108)))

	// Runs of 250 µs: packs of 4.
	tab3 := warmed(t, time.Millisecond, "mid", 250*time.Microsecond)
	assert.Equal(t, []int{4, 4, 4, 4}, counts(batch(t, tab3, "mid", 100, 116)))
}

// A pack stops at what the worker can take (its window and credit), and
// packing is off with no budget.
func TestTable_Dispatch_PackBounds(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{PackBudget: time.Millisecond})
	step(t, tab,
		table.WorkerJoin{Worker: 1, Name: "a", Slots: 1, Prefetch: 2, Credit: 3},
		table.WorkerJoin{Worker: 2, Name: "b", Slots: 1, Prefetch: 2, Credit: 3})
	drain(t, tab)
	step(t, tab, ownerSubmit("m", 0))
	runAll(t, tab, assigns(drain(t, tab)), time.Microsecond)
	drain(t, tab)
	given := map[table.WorkerID]int{}
	tab.BeginBatch()
	for i := 1; i <= 6; i++ {
		step(t, tab, ownerSubmit("m", i))
	}
	tab.EndBatch()
	for _, a := range assigns(drain(t, tab)) {
		given[a.Worker]++
	}
	assert.Equal(t, map[table.WorkerID]int{1: 3, 2: 3}, given, "each takes its window of 3, no more")

	off := warmed(t, 0, "fast", time.Microsecond)
	assert.Equal(t, []int{10, 10, 10, 10}, counts(batch(t, off, "fast", 100, 140)), "no budget: round the workers, one each")
}

// Outside a batch each Step hands out what it made possible at once, so
// a submission is assigned in the Ready that acknowledges it; inside one,
// nothing is handed out until EndBatch.
func TestTable_Batch_DefersDispatch(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{PackBudget: time.Millisecond})
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "a", Slots: 1, Credit: 1})
	drain(t, tab)
	tab.BeginBatch()
	step(t, tab, ownerSubmit("m", 0))
	assert.Equal(t, 1, tab.Stats().Waiting, "waiting until the batch ends")
	tab.EndBatch()
	assert.Equal(t, 1, tab.Stats().Running)
	a := assigns(drain(t, tab))
	require.Len(t, a, 1)
	assert.Equal(t, workunit.StatusRunning, mustLookup(t, tab, key(0)))
}

func mustLookup(t *testing.T, tab *table.Table, k workunit.Key) workunit.Status {
	t.Helper()
	o, ok := tab.Lookup(k)
	require.True(t, ok)
	return o.Status
}
