package table_test

import (
	"testing"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func owned(m table.MasterID, owner string, k workunit.Key) table.Submit {
	return table.Submit{Master: m, Owner: owner, Key: k, Spec: []byte("spec")}
}

// TestTable_MaxOpenPerOwner: an owner may have at most MaxOpenPerOwner
// workunits waiting or running; a finished one frees its place, joins and
// memoized answers are never refused, and other owners are not held up.
func TestTable_MaxOpenPerOwner(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{MaxOpenPerOwner: 2})
	step(t, tab, owned(1, "alice", key(1)), owned(1, "alice", key(2)))
	err := tab.Step(owned(1, "alice", key(3)))
	require.ErrorIs(t, err, table.ErrLimit)
	assert.Contains(t, err.Error(), "2 workunits of this master are waiting or running")
	_, ok := tab.Lookup(key(3))
	assert.False(t, ok, "a refused submission is not stored")

	// Joining a waiting workunit adds nothing to wait for; bob has room.
	step(t, tab, owned(2, "bob", key(1)), owned(2, "bob", key(3)))

	// Running still counts; a finished workunit frees its place.
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 1})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	require.ErrorIs(t, tab.Step(owned(1, "alice", key(4))), table.ErrLimit)
	step(t, tab, table.Complete{Worker: 1, Key: as[0].Key, Token: as[0].Token, Result: []byte("r")})
	step(t, tab, owned(1, "alice", key(4)))
	require.ErrorIs(t, tab.Step(owned(1, "alice", key(5))), table.ErrLimit)

	// A done workunit is answered from memory even at the limit.
	step(t, tab, owned(1, "alice", as[0].Key))
}

// TestTable_MaxOpenPerOwner_Restore: restored waiting workunits count for
// their owners.
func TestTable_MaxOpenPerOwner_Restore(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{MaxOpenPerOwner: 1})
	step(t, tab, owned(1, "alice", key(1)))
	rd := drain(t, tab)
	again := table.New(table.Config{MaxOpenPerOwner: 1})
	require.NoError(t, again.Restore(rd.Persist))
	require.ErrorIs(t, again.Step(owned(1, "alice", key(2))), table.ErrLimit)
	step(t, again, owned(1, "bob", key(2)))
}

// TestTable_Owner_ResetTakesOwner: a workunit that runs again (after an
// error, or with NoCache) runs as its new submitter's, in that realm; one
// that is joined keeps its owner.
func TestTable_Owner_ResetTakesOwner(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{MaxOpenPerOwner: 1})
	step(t, tab, owned(1, "alice", key(1)), table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 1})
	as := assigns(drain(t, tab))
	require.Len(t, as, 1)
	step(t, tab, table.Fail{Worker: 1, Key: key(1), Token: as[0].Token,
		Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "no"}})
	step(t, tab, owned(2, "bob", key(1)), table.WorkerCredit{Worker: 1, N: 1})
	as = assigns(drain(t, tab))
	require.Len(t, as, 1)
	assert.Equal(t, "bob", as[0].Owner)
	rec, _ := tab.Lookup(key(1))
	assert.Equal(t, "bob", rec.Owner)
	// It counts for bob now, not for alice.
	require.ErrorIs(t, tab.Step(owned(2, "bob", key(2))), table.ErrLimit)
	step(t, tab, owned(1, "alice", key(2)))

	// NoCache on a done workunit: the same.
	step(t, tab, table.Complete{Worker: 1, Key: key(1), Token: as[0].Token, Result: []byte("r")})
	s := owned(3, "carol", key(1))
	s.Options.NoCache = true
	step(t, tab, s)
	rec, _ = tab.Lookup(key(1))
	assert.Equal(t, "carol", rec.Owner)
	assert.Equal(t, workunit.StatusWaiting, rec.Status)
}
