package table

import (
	"math/rand/v2"
	"testing"

	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/require"
)

// TestIndex_Remove inserts and removes keys at random, in a small index
// where probe runs are long and wrap around its end, and checks every key
// against a map after each change. Keys come in three memo scopes, so
// that the same key is several entries.
func TestIndex_Remove(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		x := newIndex(seed)
		x.slots, x.shift = make([]uint64, 16), 64-4 // small: long runs that wrap; it grows
		var recs slab
		var free []uint32
		type scoped struct {
			k     workunit.Key
			scope uint32
		}
		live := map[scoped]uint32{}
		for step := range 3000 {
			var sk scoped
			sk.k[0] = byte(rng.IntN(100))
			sk.scope = uint32(rng.IntN(3))
			k := sk.k
			idx, found, slot, tag := x.find(&k, sk.scope, &recs)
			_, want := live[sk]
			require.Equal(t, want, found, "seed %d step %d", seed, step)
			if found {
				require.Equal(t, live[sk], idx)
				x.remove(&k, sk.scope, &recs)
				*recs.at(idx) = record{}
				free = append(free, idx)
				delete(live, sk)
			} else {
				if n := len(free); n > 0 {
					idx, free = free[n-1], free[:n-1]
				} else {
					idx = recs.add()
				}
				recs.at(idx).key, recs.at(idx).scope = k, sk.scope
				x.insert(slot, tag, idx)
				live[sk] = idx
			}
			require.Equal(t, len(live), x.n)
			for lk, li := range live {
				got, ok := x.get(&lk.k, lk.scope, &recs)
				require.True(t, ok, "seed %d step %d: lost %x in scope %d", seed, step, lk.k[0], lk.scope)
				require.Equal(t, li, got)
			}
		}
	}
}
