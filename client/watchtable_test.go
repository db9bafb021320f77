package client

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// The watch table against a map, through random puts and removes that
// fill it to its limit, grow it and shrink it again: every key in the
// map is found, every other one is not.
func TestWatchTable_Model(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newWatchTable()
	model := map[workunit.Key]*Call{}
	var live []*Call
	key := func(i int) workunit.Key {
		var k workunit.Key
		k[0], k[1], k[31] = byte(i), byte(i>>8), byte(i>>16)
		return k
	}
	check := func() {
		t.Helper()
		require.Equal(t, len(model), tab.len())
		for k, w := range model {
			require.Same(t, w, tab.get(k))
		}
		require.Nil(t, tab.get(key(1<<20+rng.IntN(1000))))
		require.Len(t, tab.all(), len(model))
	}
	for round := range 4 {
		target := 3000 * (round + 1)
		for len(model) < target { // grow
			if rng.IntN(4) == 0 && len(live) > 0 {
				i := rng.IntN(len(live))
				w := live[i]
				require.True(t, tab.remove(w))
				require.False(t, tab.remove(w), "removed twice")
				delete(model, w.Key)
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				continue
			}
			w := &Call{Key: key(rng.IntN(1 << 18))}
			got := tab.getOrPut(w)
			if old := model[w.Key]; old != nil {
				require.Same(t, old, got, "a key has one watch")
				continue
			}
			require.Same(t, w, got)
			model[w.Key] = w
			live = append(live, w)
		}
		check()
		for len(model) > target/10 { // shrink
			i := rng.IntN(len(live))
			w := live[i]
			require.True(t, tab.remove(w))
			delete(model, w.Key)
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		}
		check()
		require.LessOrEqual(t, len(tab.slots), 8*max(minWatchSlots, 2*len(model)), "the table shrinks")
	}
	for _, w := range live {
		require.True(t, tab.remove(w))
	}
	require.Zero(t, tab.len())
	require.Nil(t, tab.get(key(1)))
}
