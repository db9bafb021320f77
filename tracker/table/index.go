package table

import (
	"encoding/binary"
	"math/bits"

	"github.com/riot-go/riot/workunit"
)

// index maps keys to record indices: an open-addressing hash table with
// linear probing over one slice of uint64, 8 bytes a slot; a removal
// shifts the slots after it back, so there are no tombstones. A slot holds the top 32 bits of the key's
// hash (its tag) and the record index plus one; 0 is an empty slot. The
// tag both places a slot (its top bits are the home position) and filters
// probes, so growing never reads a record and a probe reads one only when
// the tags match.
//
// A Go map would do, at about five times the memory per entry and two
// probes (lookup, then insert) per new key.
type index struct {
	slots []uint64
	shift uint // 64 - log2(len(slots))
	n     int
	seed  [4]uint64
}

const minIndexBits = 10

func newIndex(seed uint64) index {
	x := index{}
	for i := range x.seed {
		seed += 0x9e3779b97f4a7c15
		x.seed[i] = mix64(seed)
	}
	x.slots = make([]uint64, 1<<minIndexBits)
	x.shift = 64 - minIndexBits
	return x
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// hash mixes all 32 bytes of the key and its memo scope (a name index)
// with the seed, so that keys chosen to collide must be chosen knowing the
// seed.
func (x *index) hash(k *workunit.Key, scope uint32) uint64 {
	a := binary.LittleEndian.Uint64(k[0:]) ^ x.seed[0] ^ uint64(scope)<<32
	b := binary.LittleEndian.Uint64(k[8:]) ^ x.seed[1]
	c := binary.LittleEndian.Uint64(k[16:]) ^ x.seed[2]
	d := binary.LittleEndian.Uint64(k[24:]) ^ x.seed[3]
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return mix64(h1 ^ l1 ^ bits.RotateLeft64(h2^l2, 29))
}

// find returns the record index of k in scope, or, when it is absent, the
// slot where it would go.
func (x *index) find(k *workunit.Key, scope uint32, recs *slab) (idx uint32, found bool, slot int, tag uint32) {
	h := x.hash(k, scope)
	tag = uint32(h >> 32)
	mask := len(x.slots) - 1
	for i := int(h >> x.shift); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return 0, false, i, tag
		}
		if uint32(s>>32) == tag {
			idx := uint32(s) - 1
			if r := recs.at(idx); r.key == *k && r.scope == scope {
				return idx, true, 0, tag
			}
		}
	}
}

func (x *index) get(k *workunit.Key, scope uint32, recs *slab) (uint32, bool) {
	idx, ok, _, _ := x.find(k, scope, recs)
	return idx, ok
}

// insert puts idx at slot (from a find that did not find the key).
func (x *index) insert(slot int, tag uint32, idx uint32) {
	x.slots[slot] = uint64(tag)<<32 | uint64(idx+1)
	x.n++
	if x.n > len(x.slots)/8*7 {
		x.grow()
	}
}

// remove deletes k of scope, which the index holds, by backward shift:
// each later slot of the probe run that may move into the hole does,
// until an empty slot ends the run.
func (x *index) remove(k *workunit.Key, scope uint32, recs *slab) {
	h := x.hash(k, scope)
	tag := uint32(h >> 32)
	mask := len(x.slots) - 1
	hole := int(h >> x.shift)
	for ; ; hole = (hole + 1) & mask {
		s := x.slots[hole]
		if s == 0 {
			return // not there
		}
		if r := recs.at(uint32(s) - 1); uint32(s>>32) == tag && r.key == *k && r.scope == scope {
			break
		}
	}
	for j := (hole + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		home := x.home(x.slots[j])
		// Slot j may fill the hole unless its home lies in (hole, j],
		// cyclically: then it would sit before its home.
		if (j-home)&mask >= (j-hole)&mask {
			x.slots[hole] = x.slots[j]
			hole = j
		}
	}
	x.slots[hole] = 0
	x.n--
}

// home returns the slot where the key of slot value s hashes to: the tag
// is the hash's top 32 bits, the home its top 64-shift bits (at most 32).
func (x *index) home(s uint64) int { return int(s >> 32 >> (x.shift - 32)) }

func (x *index) grow() {
	old := x.slots
	x.slots = make([]uint64, 2*len(old))
	x.shift--
	mask := len(x.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		for i := x.home(s); ; i = (i + 1) & mask {
			if x.slots[i] == 0 {
				x.slots[i] = s
				break
			}
		}
	}
}
