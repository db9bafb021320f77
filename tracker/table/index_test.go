package table

import (
	"math/rand/v2"
	"testing"

	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/require"
)

// TestIndex_Remove inserts and removes keys at random, in a small index
// where probe runs are long and wrap around its end, and checks every key
// against a map after each change.
func TestIndex_Remove(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		x := newIndex(seed)
		x.slots, x.shift = make([]uint64, 16), 64-4 // small: long runs that wrap; it grows
		var recs slab
		var free []uint32
		live := map[workunit.Key]uint32{}
		var k workunit.Key
		for step := range 3000 {
			k = workunit.Key{}
			k[0] = byte(rng.IntN(100))
			idx, found, slot, tag := x.find(&k, &recs)
			_, want := live[k]
			require.Equal(t, want, found, "seed %d step %d", seed, step)
			if found {
				require.Equal(t, live[k], idx)
				x.remove(&k, &recs)
				recs.at(idx).key = workunit.Key{}
				free = append(free, idx)
				delete(live, k)
			} else {
				if n := len(free); n > 0 {
					idx, free = free[n-1], free[:n-1]
				} else {
					idx = recs.add()
				}
				recs.at(idx).key = k
				x.insert(slot, tag, idx)
				live[k] = idx
			}
			require.Equal(t, len(live), x.n)
			for lk, li := range live {
				got, ok := x.get(&lk, &recs)
				require.True(t, ok, "seed %d step %d: lost %x", seed, step, lk[0])
				require.Equal(t, li, got)
			}
		}
	}
}
