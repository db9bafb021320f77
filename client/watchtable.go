package client

import (
	"hash/maphash"

	"github.com/riot-go/riot/workunit"
)

// watchTable is the Client's table of watches by key: an open-addressed
// hash table with linear probing, each slot a hash and a watch. A master
// with many calls outstanding looks a key up in it at each submission and
// at each result, in a table larger than the processor's caches: a slot
// that holds the key's hash beside its watch costs one cache miss a
// lookup, where a map[workunit.Key]*Call costs two or three (its control
// word, the slot, the key), and 16 bytes where such a map's slot is 40.
type watchTable struct {
	seed  maphash.Seed
	slots []watchSlot // a power of two of them, or none
	n     int         // slots in use
}

// watchSlot is a slot of a watchTable; w is nil when the slot is empty.
type watchSlot struct {
	h uint64
	w *Call
}

// minWatchSlots is the smallest table, and the size it shrinks no lower
// than.
const minWatchSlots = 64

func newWatchTable() watchTable { return watchTable{seed: maphash.MakeSeed()} }

func (t *watchTable) hash(key workunit.Key) uint64 { return maphash.Comparable(t.seed, key) }

// len returns the number of watches in the table.
func (t *watchTable) len() int { return t.n }

// get returns key's watch, nil when none.
func (t *watchTable) get(key workunit.Key) *Call {
	if t.n == 0 {
		return nil
	}
	h := t.hash(key)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.w == nil {
			return nil
		}
		if s.h == h && s.w.Key == key {
			return s.w
		}
	}
}

// getOrPut returns the watch of w's key, putting w in the table as that
// watch when there is none.
func (t *watchTable) getOrPut(w *Call) *Call {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minWatchSlots, 2*len(t.slots)))
	}
	h := t.hash(w.Key)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.w == nil {
			*s = watchSlot{h: h, w: w}
			t.n++
			return w
		}
		if s.h == h && s.w.Key == w.Key {
			return s.w
		}
	}
}

// remove takes w out of the table, and reports whether it was there.
func (t *watchTable) remove(w *Call) bool {
	if t.n == 0 {
		return false
	}
	h := t.hash(w.Key)
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for ; t.slots[i].w != w; i = (i + 1) & mask {
		if t.slots[i].w == nil {
			return false
		}
	}
	// Backward shift: move up each later slot of the run that may live
	// at i (its home is not in (i, j]), so that no lookup meets a hole
	// before the watch it looks for.
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.w == nil {
			break
		}
		home := s.h & mask
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = watchSlot{}
	t.n--
	if len(t.slots) > minWatchSlots && t.n*8 < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
	return true
}

// resize moves the watches into a table of size slots (a power of two),
// by their hashes: it reads no watch.
func (t *watchTable) resize(size int) {
	old := t.slots
	t.slots = make([]watchSlot, size)
	mask := uint64(size - 1)
	for _, s := range old {
		if s.w == nil {
			continue
		}
		i := s.h & mask
		for t.slots[i].w != nil {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// all returns every watch in the table.
func (t *watchTable) all() []*Call {
	ws := make([]*Call, 0, t.n)
	for _, s := range t.slots {
		if s.w != nil {
			ws = append(ws, s.w)
		}
	}
	return ws
}
