package table_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

func ackOf(t *testing.T, rd table.Ready) table.Ack {
	t.Helper()
	for _, m := range rd.Send {
		if a, ok := m.(*table.Ack); ok {
			return *a
		}
	}
	t.Fatal("no ack")
	return table.Ack{}
}

// TestTable_ResultsInStore: with Config.ResultsInStore, a done record's
// result goes once the Ready that wrote it is advanced (not before), and
// every outcome of it then names the record to read it from (Stored);
// running it again brings a result of its own.
func TestTable_ResultsInStore(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{ResultsInStore: true})
	k := key(1)
	step(t, tab, submit(1, k), table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	step(t, tab, table.Complete{Worker: 1, Key: k, Token: as[0].Token, Result: []byte("r1")})
	rd := tab.Ready()
	require.Len(t, rd.Persist, 1)
	assert.Equal(t, "r1", string(rd.Persist[0].Result))
	assert.False(t, rd.Persist[0].Stored)
	// Before the write is advanced, the table still has the result.
	step(t, tab, table.GetInfo{Master: 2, Req: 1, Key: k})
	tab.Advance(rd)
	rec, ok := tab.Lookup(k)
	require.True(t, ok)
	assert.True(t, rec.Stored)
	assert.Nil(t, rec.Result)
	id := rec.ID

	rd = drain(t, tab)
	var info *table.InfoReply
	for _, m := range rd.Send {
		if i, ok := m.(*table.InfoReply); ok {
			info = i
		}
	}
	require.NotNil(t, info)
	assert.Equal(t, "r1", string(info.Result), "asked before the write was advanced: the result itself")
	assert.Zero(t, info.Stored)

	step(t, tab, table.Submit{Master: 3, Req: 2, Key: k, Spec: []byte("spec"), Watch: true})
	rd = drain(t, tab)
	ack := ackOf(t, rd)
	assert.Equal(t, workunit.StatusDone, ack.Status)
	assert.Nil(t, ack.Result)
	assert.Equal(t, id, ack.Stored)
	require.Len(t, rd.Notify, 1)
	assert.Equal(t, id, rd.Notify[0].Stored)
	assert.Nil(t, rd.Notify[0].Result)

	step(t, tab, table.GetInfo{Master: 2, Req: 3, Key: k})
	rd = drain(t, tab)
	require.Len(t, rd.Send, 1)
	assert.Equal(t, id, rd.Send[0].(*table.InfoReply).Stored)

	// Run again (NoCache): a result of its own, held until written.
	step(t, tab, table.Submit{Master: 3, Req: 4, Key: k, Spec: []byte("spec"), Options: workunit.Options{NoCache: true}})
	step(t, tab, table.WorkerCredit{Worker: 1, N: 1})
	as = assigns(drain(t, tab))
	require.Len(t, as, 1)
	step(t, tab, table.Complete{Worker: 1, Key: k, Token: as[0].Token, Result: []byte("r2")})
	rd = tab.Ready()
	require.Len(t, rd.Persist, 1)
	assert.Equal(t, "r2", string(rd.Persist[0].Result))
	assert.False(t, rd.Persist[0].Stored)
	tab.PersistFailed(rd) // not written: kept
	rec, _ = tab.Lookup(k)
	assert.Equal(t, "r2", string(rec.Result))
	assert.False(t, rec.Stored)
	drain(t, tab)
	rec, _ = tab.Lookup(k)
	assert.True(t, rec.Stored)
}

// TestTable_ResultsInStore_Restore: a restored done record keeps no
// result with ResultsInStore, or when it comes Stored; a record both
// Stored and with a Result is refused.
func TestTable_ResultsInStore_Restore(t *testing.T) {
	t.Parallel()
	done := table.Record{Key: key(1), ID: 1, Status: workunit.StatusDone, Result: []byte("r")}
	stored := table.Record{Key: key(2), ID: 2, Status: workunit.StatusDone, Stored: true}

	tab := table.New(table.Config{ResultsInStore: true})
	require.NoError(t, tab.Restore([]table.Record{done, stored}))
	for _, k := range []workunit.Key{key(1), key(2)} {
		rec, ok := tab.Lookup(k)
		require.True(t, ok)
		assert.True(t, rec.Stored)
		assert.Nil(t, rec.Result)
	}

	tab = table.New(table.Config{})
	require.NoError(t, tab.Restore([]table.Record{done, stored}))
	rec, _ := tab.Lookup(key(1))
	assert.Equal(t, "r", string(rec.Result), "without ResultsInStore the table keeps results")
	rec, _ = tab.Lookup(key(2))
	assert.True(t, rec.Stored)

	bad := stored
	bad.Result = []byte("r")
	err := table.New(table.Config{}).Restore([]table.Record{bad})
	assert.True(t, errors.Is(err, table.ErrInvalid), "%v", err)
}
