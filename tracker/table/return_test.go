package table_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// TestTable_Return_NoLossCounted: returning work never counts as a loss,
// so even with MaxLost 1 a workunit returned many times runs in the end.
func TestTable_Return_NoLossCounted(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{MaxLost: 1})
	const m = table.MasterID(1)
	k := key(1)
	step(t, tab, submit(m, k))
	drain(t, tab)
	for i := range 5 {
		w := table.WorkerID(i + 1)
		step(t, tab, table.WorkerJoin{Worker: w, Name: "w", Slots: 1, Credit: 1})
		as := assigns(drain(t, tab))
		require.Len(t, as, 1, "round %d", i)
		step(t, tab, table.Return{Worker: w, Leases: []table.LeaseRef{{Key: k, Token: as[0].Token}}})
		rd := drain(t, tab)
		require.Len(t, rd.Persist, 1)
		assert.Equal(t, workunit.StatusWaiting, rd.Persist[0].Status)
		assert.Empty(t, rd.Persist[0].LostFrom)
		assert.Equal(t, i+1, rd.Persist[0].Deliveries)
		step(t, tab, table.WorkerLost{Worker: w}) // holds nothing: loses nothing
	}
	rec, ok := tab.Lookup(k)
	require.True(t, ok)
	assert.Equal(t, workunit.StatusWaiting, rec.Status)
	assert.Empty(t, rec.LostFrom)
}

// TestTable_Return_Stale: a Return of a lease the worker does not hold is
// stale, every time, and changes nothing but the Discards.
func TestTable_Return_Stale(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	k := key(1)
	step(t, tab, submit(1, k), table.WorkerJoin{Worker: 1, Name: "w1", Slots: 1, Credit: 1},
		table.WorkerJoin{Worker: 2, Name: "w2", Slots: 1, Credit: 1})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	other := table.WorkerID(3 - as[0].Worker)
	for _, ev := range []table.Return{
		{Worker: other, Leases: []table.LeaseRef{{Key: k, Token: as[0].Token}}},
		{Worker: as[0].Worker, Leases: []table.LeaseRef{{Key: key(2), Token: as[0].Token}}},
		{Worker: 99, Leases: []table.LeaseRef{{Key: k, Token: as[0].Token}}},
	} {
		err := tab.Step(ev)
		require.Error(t, err)
		assert.True(t, errors.Is(err, table.ErrStale), "%v", err)
		rd := drain(t, tab)
		assert.Empty(t, rd.Persist)
		assert.Len(t, rd.Discarded, 1)
	}
	rec, _ := tab.Lookup(k)
	assert.Equal(t, workunit.StatusRunning, rec.Status)
	assert.Equal(t, uint64(3), tab.Stats().Discarded)
}

func TestTable_Unwatch_ThenMasterLost(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, submit(1, key(1)), submit(1, key(2)),
		table.Watch{Master: 1, Req: 1, Key: key(1)}, table.Watch{Master: 1, Req: 2, Key: key(2)},
		table.Watch{Master: 2, Req: 3, Key: key(1)})
	drain(t, tab)
	step(t, tab, table.Unwatch{Master: 1, Key: key(1)})
	assert.Equal(t, 2, tab.Stats().Watches)
	step(t, tab, table.MasterLost{Master: 1})
	assert.Equal(t, 1, tab.Stats().Watches)
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 2, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 2)
	for _, a := range as {
		step(t, tab, table.Complete{Worker: 1, Key: a.Key, Token: a.Token, Result: []byte("r")})
	}
	rd := drain(t, tab)
	require.Len(t, rd.Notify, 1, "only master 2's watch is left")
	assert.Equal(t, table.MasterID(2), rd.Notify[0].Master)
	assert.Equal(t, uint64(3), rd.Notify[0].Req)
}

func TestTable_Worker(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	_, ok := tab.Worker(1)
	assert.False(t, ok)
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "alfred", Slots: 2, Prefetch: 1, GPUs: 2, Credit: 3},
		table.Submit{Master: 1, Key: key(1), Spec: []byte("s"), Options: workunit.Options{GPUs: 1}})
	drain(t, tab)
	got, ok := tab.Worker(1)
	require.True(t, ok)
	assert.Equal(t, table.WorkerInfo{Name: "alfred", Window: 3, Credit: 2, Leases: 1, GPUs: 2, GPUsUsed: 1}, got)
	step(t, tab, table.WorkerLost{Worker: 1})
	_, ok = tab.Worker(1)
	assert.False(t, ok)
}

func TestTable_Assign_Owner(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, table.Submit{Master: 1, Owner: "alice", Key: key(1), Spec: []byte("s")},
		table.Submit{Master: 2, Owner: "bob", Key: key(1), Spec: []byte("s")}, // joins alice's
		table.Submit{Master: 2, Owner: "bob", Key: key(2), Spec: []byte("s")},
		table.WorkerJoin{Worker: 1, Name: "w", Slots: 2, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 2)
	assert.Equal(t, "alice", as[0].Owner)
	assert.Equal(t, "bob", as[1].Owner)
}
