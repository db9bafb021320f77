package table_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
)

// TestTable_MaxBytes_RefusesNewWork fills a table to its byte bound: the
// next new workunit is refused with a *FullError that says how much, and
// changes nothing; a join and a memoized answer are still served; a result
// of accepted work is taken past the bound; forgetting frees room.
func TestTable_MaxBytes_RefusesNewWork(t *testing.T) {
	t.Parallel()
	spec := make([]byte, 100)
	limit := 2*(table.RecordBytes+int64(len(spec))) + 10
	tab := table.New(table.Config{MaxBytes: limit, KeepFinished: time.Minute})
	step(t, tab, table.Tick{Now: time.Unix(100, 0)},
		table.Submit{Master: 1, Key: key(1), Spec: spec},
		table.Submit{Master: 1, Key: key(2), Spec: spec})
	drain(t, tab)
	held := tab.Stats().Bytes
	require.Equal(t, 2*(table.RecordBytes+int64(len(spec))), held)

	err := tab.Step(table.Submit{Master: 1, Req: 7, Key: key(3), Spec: spec})
	var full *table.FullError
	require.ErrorAs(t, err, &full)
	assert.True(t, errors.Is(err, table.ErrFull))
	assert.Equal(t, table.FullError{Key: key(3), Held: held, Need: table.RecordBytes + int64(len(spec)), Limit: limit, Records: 2}, *full)
	assert.Contains(t, err.Error(), "bound of")
	assert.False(t, tab.HasReady(), "a refusal changes nothing")
	_, known := tab.Lookup(key(3))
	assert.False(t, known)

	// Joining an open workunit takes no room: served.
	step(t, tab, table.Submit{Master: 2, Key: key(1), Spec: spec, Watch: true})
	drain(t, tab)

	// The result of accepted work is taken even past the bound.
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 2, Credit: 2})
	as := assigns(drain(t, tab))
	require.Len(t, as, 2)
	big := make([]byte, 1000)
	step(t, tab, table.Complete{Worker: 1, Key: as[0].Key, Token: as[0].Token, Result: big})
	drain(t, tab)
	assert.Greater(t, tab.Stats().Bytes, limit)
	// A memoized answer is served; a new workunit is refused.
	step(t, tab, table.Submit{Master: 2, Key: as[0].Key, Spec: spec})
	drain(t, tab)
	require.ErrorIs(t, tab.Step(table.Submit{Master: 1, Key: key(3), Spec: spec}), table.ErrFull)

	// Forgotten results free their room.
	step(t, tab, table.Complete{Worker: 1, Key: as[1].Key, Token: as[1].Token, Result: []byte("r")})
	drain(t, tab)
	step(t, tab, table.Tick{Now: time.Unix(100, 0).Add(2 * time.Minute)})
	drain(t, tab)
	assert.Zero(t, tab.Stats().Bytes)
	step(t, tab, table.Submit{Master: 1, Key: key(3), Spec: spec})
}

// TestTable_MaxBytes_ResultsInStore: with the results in the store, a
// result counts until its write is advanced, and the record alone after.
func TestTable_MaxBytes_ResultsInStore(t *testing.T) {
	t.Parallel()
	spec := make([]byte, 50)
	tab := table.New(table.Config{MaxBytes: 1 << 20, ResultsInStore: true})
	step(t, tab, table.Tick{Now: time.Unix(100, 0)},
		table.Submit{Master: 1, Key: key(1), Spec: spec},
		table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 1})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	assert.Equal(t, table.RecordBytes+int64(len(spec)), tab.Stats().Bytes)
	step(t, tab, table.Complete{Worker: 1, Key: key(1), Token: as[0].Token, Result: make([]byte, 500)})
	assert.Equal(t, table.RecordBytes+500, tab.Stats().Bytes, "until it is written")
	drain(t, tab)
	assert.Equal(t, table.RecordBytes, tab.Stats().Bytes, "once written, the store holds it")
}

// TestTable_MaxBytes_HeldElsewhere: what a submission says the tracker
// holds outside the table (a Memory store's blobs) counts with the
// table's bytes: a new workunit that fits the table alone is refused, the
// FullError says how much is held elsewhere, and the table keeps nothing
// of it (the next submission, holding nothing elsewhere, is accepted);
// a join is still served.
func TestTable_MaxBytes_HeldElsewhere(t *testing.T) {
	t.Parallel()
	spec := make([]byte, 100)
	one := table.RecordBytes + int64(len(spec))
	limit := 3 * one
	tab := table.New(table.Config{MaxBytes: limit})
	step(t, tab, table.Submit{Master: 1, Key: key(1), Spec: spec, HeldElsewhere: one})
	drain(t, tab)

	err := tab.Step(table.Submit{Master: 1, Key: key(2), Spec: spec, HeldElsewhere: one + 1})
	var full *table.FullError
	require.ErrorAs(t, err, &full)
	assert.Equal(t, table.FullError{Key: key(2), Held: one, Need: one, Limit: limit, Elsewhere: one + 1, Records: 1}, *full)
	assert.Contains(t, err.Error(), "(and 261 held elsewhere)")
	assert.False(t, tab.HasReady(), "a refusal changes nothing")
	assert.Equal(t, one, tab.HeldBytes(), "what is held elsewhere is not the table's")

	step(t, tab, table.Submit{Master: 2, Key: key(1), Spec: spec, HeldElsewhere: limit}) // a join
	step(t, tab, table.Submit{Master: 1, Key: key(2), Spec: spec, HeldElsewhere: one})
	drain(t, tab)
	assert.Equal(t, 2*one, tab.HeldBytes())
	assert.Equal(t, tab.Stats().Bytes, tab.HeldBytes())
}
