package client

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idReq is a request that only names itself, for the table's tests.
type idReq struct{ id uint64 }

func (*idReq) fail(*Client, error) {}

// checkTable compares t with the map model, every way t can be read.
func checkTable(t *testing.T, tb *reqTable, model map[uint64]request, step int) {
	t.Helper()
	require.Equal(t, len(model), tb.len(), "step %d: len", step)
	want := append([]uint64{}, slices.Sorted(maps.Keys(model))...)
	require.Equal(t, want, append([]uint64{}, tb.reqs()...), "step %d: reqs", step)
	for req, r := range model {
		got, ok := tb.get(req)
		require.True(t, ok, "step %d: req %d", step, req)
		require.Same(t, r, got, "step %d: req %d", step, req)
	}
	if tb.n > 0 {
		require.LessOrEqual(t, tb.hi-tb.lo, uint64(len(tb.ring)), "step %d: the window fits the ring", step)
		_, ok := tb.get(tb.lo)
		require.True(t, ok, "step %d: the window starts at a request", step)
	}
}

// The table behaves as a map of reqs, whatever the order of answers: in
// order, out of order, some left far behind, reqs skipped.
func TestReqTable_IsAMap(t *testing.T) {
	t.Parallel()
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tb reqTable
		model := map[uint64]request{}
		next := uint64(1)
		var live []uint64
		for step := range 3000 {
			switch op := rng.IntN(10); {
			case op < 5: // a new request, sometimes after skipped reqs
				if rng.IntN(20) == 0 {
					next += uint64(rng.IntN(300))
				}
				r := &idReq{next}
				tb.put(next, r)
				model[next] = r
				live = append(live, next)
				next++
			case op < 8 && len(live) > 0: // an answer, mostly to the oldest
				i := 0
				if rng.IntN(4) == 0 {
					i = rng.IntN(len(live))
				}
				req := live[i]
				live = slices.Delete(live, i, i+1)
				r, ok := tb.take(req)
				require.True(t, ok, "step %d", step)
				require.Same(t, model[req], r)
				delete(model, req)
				_, ok = tb.take(req)
				require.False(t, ok, "taken twice")
			case op < 9: // an answer to nothing
				_, ok := tb.get(next + 5)
				require.False(t, ok)
				tb.delete(next + 5)
				tb.delete(0)
			default: // a request replaced in place
				if len(live) > 0 {
					req := live[rng.IntN(len(live))]
					r := &idReq{req}
					tb.put(req, r)
					model[req] = r
				}
			}
			require.Equal(t, len(model), tb.len(), "step %d: len", step)
			if step%16 == 0 {
				checkTable(t, &tb, model, step)
			}
		}
		checkTable(t, &tb, model, -1)
	}
}

// One request that waits while many thousands pass it leaves the window
// (to the map of old requests): the ring stays as small as the requests
// in flight need.
func TestReqTable_OneLeftBehind(t *testing.T) {
	t.Parallel()
	var tb reqTable
	stuck := &idReq{1}
	tb.put(1, stuck)
	for req := uint64(2); req < 100_000; req++ {
		tb.put(req, &idReq{req})
		if req > 10 {
			_, ok := tb.take(req - 8)
			require.True(t, ok)
		}
	}
	assert.LessOrEqual(t, len(tb.ring), 64, "ring for about 9 requests in flight")
	r, ok := tb.get(1)
	require.True(t, ok)
	assert.Same(t, stuck, r)
	assert.Equal(t, 10, tb.len())
	all := tb.takeAll()
	require.Len(t, all, 10)
	assert.Same(t, stuck, all[0], "in the order of reqs")
	assert.Zero(t, tb.len())
}

// A burst grows the ring, and the requests of the next burst find it
// grown: after the first burst no put makes a ring again.
func TestReqTable_BurstThenEmpty(t *testing.T) {
	t.Parallel()
	var tb reqTable
	const n = 100_000
	next := uint64(1)
	for range 3 {
		first := next
		for ; next < first+n; next++ {
			tb.put(next, &idReq{next})
		}
		assert.GreaterOrEqual(t, len(tb.ring), n)
		assert.Empty(t, tb.old, "a dense burst stays in the ring")
		for req := first; req < next; req++ {
			_, ok := tb.take(req)
			require.True(t, ok)
		}
		assert.Zero(t, tb.len())
	}
	ring := &tb.ring[0]
	for req := next; req < next+n; req++ {
		tb.put(req, &idReq{req})
	}
	assert.Same(t, ring, &tb.ring[0], "the ring kept")
}

// A put of an old req (below the window) and of a nil request, and a
// delete of an empty slot inside the window, keep the table a map.
func TestReqTable_Edges(t *testing.T) {
	t.Parallel()
	var tb reqTable
	for req := uint64(10); req < 20; req++ {
		tb.put(req, &idReq{req})
	}
	tb.delete(10)
	old := &idReq{3}
	tb.put(3, old)
	r, ok := tb.get(3)
	require.True(t, ok)
	assert.Same(t, old, r)
	tb.delete(15)
	tb.delete(15) // empty now
	tb.put(16, nil)
	assert.Equal(t, []uint64{3, 11, 12, 13, 14, 17, 18, 19}, tb.reqs())
	assert.Equal(t, 8, tb.len())
}
