package table_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

func ownedSubmit(m table.MasterID, owner string, k workunit.Key) table.Submit {
	return table.Submit{Master: m, Owner: owner, Key: k, Spec: []byte("spec " + owner)}
}

// Counts by owner follow every change of status: submission, lease,
// result, error, a run again by another owner, and forgetting.
func TestTable_CountsOf(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	tab := table.New(table.Config{KeepFinished: time.Minute})
	step(t, tab, table.Tick{Now: now})
	for i := range 4 {
		step(t, tab, ownedSubmit(1, "a", key(i)))
	}
	step(t, tab, ownedSubmit(2, "b", key(10)))
	assert.Equal(t, table.OwnerCounts{Waiting: 4}, tab.CountsOf("a"))
	assert.Equal(t, table.OwnerCounts{Waiting: 1}, tab.CountsOf("b"))
	assert.Equal(t, table.OwnerCounts{}, tab.CountsOf("nobody"))

	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 3, Credit: 3})
	rd := drain(t, tab)
	as := assigns(rd)
	require.Len(t, as, 3)
	assert.Equal(t, table.OwnerCounts{Waiting: 1, Running: 3}, tab.CountsOf("a"))

	step(t, tab,
		table.Complete{Worker: 1, Key: as[0].Key, Token: as[0].Token, Result: []byte("r")},
		table.Fail{Worker: 1, Key: as[1].Key, Token: as[1].Token, Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "boom"}})
	drain(t, tab)
	assert.Equal(t, table.OwnerCounts{Waiting: 1, Running: 1, Done: 1, Error: 1}, tab.CountsOf("a"))

	// b runs a's failed workunit again: it is b's now.
	step(t, tab, ownedSubmit(2, "b", as[1].Key))
	drain(t, tab)
	assert.Equal(t, table.OwnerCounts{Waiting: 1, Running: 1, Done: 1}, tab.CountsOf("a"))
	assert.Equal(t, table.OwnerCounts{Waiting: 2}, tab.CountsOf("b"))

	// Canceled: an error, counted apart too; run again, it is not.
	step(t, tab, table.Cancel{Master: 1, Owner: "a", By: "test", Keys: []workunit.Key{key(3)}})
	drain(t, tab)
	assert.Equal(t, table.OwnerCounts{Running: 1, Done: 1, Error: 1, Canceled: 1}, tab.CountsOf("a"))
	step(t, tab, ownedSubmit(1, "a", key(3)))
	drain(t, tab)
	assert.Equal(t, table.OwnerCounts{Waiting: 1, Running: 1, Done: 1}, tab.CountsOf("a"))

	// Forgotten: the done one goes from the counts.
	step(t, tab, table.Tick{Now: now.Add(2 * time.Minute)})
	drain(t, tab)
	assert.Equal(t, table.OwnerCounts{Waiting: 1, Running: 1}, tab.CountsOf("a"))
	assert.ElementsMatch(t, []workunit.Key{key(3), as[2].Key}, tab.OpenKeysOf("a", 0))
	assert.Len(t, tab.OpenKeysOf("a", 1), 1)
	assert.Empty(t, tab.OpenKeysOf("nobody", 0))
}

// A list is newest first, filtered, and paged by its cursor; a scan that
// stops at its bound says so and where to go on.
func TestTable_List(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, table.Tick{Now: time.Unix(1000, 0)})
	for i := range 10 {
		owner := "a"
		if i%2 == 1 {
			owner = "b"
		}
		step(t, tab, ownedSubmit(1, owner, key(i)))
	}
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 2, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 2) // keys 0 and 1
	step(t, tab, table.Fail{Worker: 1, Key: as[0].Key, Token: as[0].Token,
		Err: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "x is not a function"}})
	drain(t, tab)

	keys := func(p table.ListPage) []workunit.Key {
		var ks []workunit.Key
		for _, s := range p.Records {
			ks = append(ks, s.Key)
		}
		return ks
	}
	all := tab.List(table.Query{})
	assert.Equal(t, []workunit.Key{key(9), key(8), key(7), key(6), key(5), key(4), key(3), key(2), key(1), key(0)}, keys(all))
	assert.Zero(t, all.Next)
	assert.False(t, all.Partial)

	p1 := tab.List(table.Query{Owner: "a", Limit: 3})
	assert.Equal(t, []workunit.Key{key(8), key(6), key(4)}, keys(p1))
	require.NotZero(t, p1.Next)
	p2 := tab.List(table.Query{Owner: "a", Limit: 3, Before: p1.Next})
	assert.Equal(t, []workunit.Key{key(2), key(0)}, keys(p2))
	assert.Zero(t, p2.Next)

	running := tab.List(table.Query{Statuses: []workunit.Status{workunit.StatusRunning}})
	assert.Equal(t, []workunit.Key{key(1)}, keys(running))
	assert.Equal(t, "w", running.Records[0].Worker)
	assert.Equal(t, 1, running.Records[0].Deliveries)

	failed := tab.List(table.Query{ErrorText: "NOT A FUNC"})
	require.Equal(t, []workunit.Key{key(0)}, keys(failed))
	assert.Equal(t, "TypeError", failed.Records[0].ErrName)
	assert.Empty(t, tab.List(table.Query{ErrorText: "nothing like it"}).Records)
	assert.Len(t, tab.List(table.Query{Worker: "w"}).Records, 2)
	assert.Empty(t, tab.List(table.Query{Worker: "stranger"}).Records)

	// A bounded scan: 4 records looked at, 2 of a's found, more to go.
	part := tab.List(table.Query{Owner: "a", MaxScan: 4})
	assert.Equal(t, []workunit.Key{key(8), key(6)}, keys(part))
	assert.True(t, part.Partial)
	rest := tab.List(table.Query{Owner: "a", Before: part.Next})
	assert.Equal(t, []workunit.Key{key(4), key(2), key(0)}, keys(rest))
}

// SpecOf gives the spec of open work only; a record's times say when it
// was submitted and assigned.
func TestTable_SpecOfAndTimes(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tab := table.New(table.Config{})
	step(t, tab, table.Tick{Now: t0}, ownedSubmit(1, "a", key(1)))
	spec, owner, ok := tab.SpecOf(key(1))
	assert.True(t, ok)
	assert.Equal(t, "spec a", string(spec))
	assert.Equal(t, "a", owner)

	step(t, tab, table.Tick{Now: t0.Add(time.Second)}, table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 1})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	step(t, tab, table.Tick{Now: t0.Add(3 * time.Second)}, table.Complete{Worker: 1, Key: key(1), Token: as[0].Token, Result: []byte("r")})
	rd := drain(t, tab)
	require.Len(t, rd.Persist, 1)
	rec := rd.Persist[0]
	assert.Equal(t, t0, rec.Submitted)
	assert.Equal(t, t0.Add(time.Second), rec.Assigned)
	assert.Equal(t, t0.Add(3*time.Second), rec.LastChange)
	_, _, ok = tab.SpecOf(key(1))
	assert.False(t, ok, "no spec once done")
	_, _, ok = tab.SpecOf(key(2))
	assert.False(t, ok)

	// Restored, the times come back.
	tab2 := table.New(table.Config{})
	require.NoError(t, tab2.Restore([]table.Record{rec}))
	got, ok := tab2.Lookup(key(1))
	require.True(t, ok)
	assert.Equal(t, t0, got.Submitted)
	assert.Equal(t, t0.Add(time.Second), got.Assigned)
	assert.Equal(t, table.OwnerCounts{Done: 1}, tab2.CountsOf("a"))
}

// PrintWatchers finds the masters that watch a running lease's key, only
// for the worker that holds the lease, and stops at the lease's bound.
func TestTable_PrintWatchers(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, table.Tick{Now: time.Unix(1000, 0)})
	step(t, tab, table.Submit{Master: 1, Req: 1, Key: key(1), Spec: []byte("s"), Watch: true})
	step(t, tab, table.Watch{Master: 2, Req: 1, Key: key(1)})
	step(t, tab, table.Submit{Master: 3, Req: 1, Key: key(2), Spec: []byte("other"), Watch: true})
	step(t, tab, table.WorkerJoin{Worker: 7, Name: "w", Slots: 2, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 2)
	a := as[0]
	if a.Key != key(1) {
		a = as[1]
	}

	ms, ok := tab.PrintWatchers(7, a.Key, a.Token, 10, 100, nil)
	assert.True(t, ok)
	assert.ElementsMatch(t, []table.MasterID{1, 2}, ms)

	// Another worker, another token, another key: nothing.
	_, ok = tab.PrintWatchers(8, a.Key, a.Token, 10, 100, nil)
	assert.False(t, ok)
	_, ok = tab.PrintWatchers(7, a.Key, a.Token+1000, 10, 100, nil)
	assert.False(t, ok)
	_, ok = tab.PrintWatchers(7, key(2), a.Token, 10, 100, nil)
	assert.False(t, ok)

	// Up to the bound, and no further.
	ms, ok = tab.PrintWatchers(7, a.Key, a.Token, 90, 100, ms[:0])
	assert.True(t, ok)
	assert.Len(t, ms, 2)
	_, ok = tab.PrintWatchers(7, a.Key, a.Token, 1, 100, nil)
	assert.False(t, ok)

	// Once the lease ends, nothing.
	step(t, tab, table.Complete{Worker: 7, Key: a.Key, Token: a.Token, Result: []byte("r")})
	drain(t, tab)
	_, ok = tab.PrintWatchers(7, a.Key, a.Token, 1, 0, nil)
	assert.False(t, ok)
}
