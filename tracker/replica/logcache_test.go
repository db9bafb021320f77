package replica

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore is raft's in-memory log store (a fake of raft-boltdb)
// that counts the reads that reach it.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(index uint64, out *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(index, out)
}

// TestLogCache_BoundedByBytes: recent entries are read back from memory
// while their bytes fit the bound; past it the oldest are dropped (and
// read from the store), an entry larger than the bound is never kept, and
// after a DeleteRange everything is read from the store.
func TestLogCache_BoundedByBytes(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(8, 100, store)
	entry := func(i uint64, size int) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Data: bytes.Repeat([]byte{byte(i)}, size)}
	}
	read := func(index uint64, size int, fromStore bool) {
		t.Helper()
		before := store.reads
		var l raft.Log
		if err := c.GetLog(index, &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Data) != size || (size > 0 && l.Data[0] != byte(index)) {
			t.Fatalf("entry %d: %d bytes, want %d of %d", index, len(l.Data), size, index)
		}
		if got := store.reads > before; got != fromStore {
			t.Fatalf("entry %d read from the store: %v, want %v", index, got, fromStore)
		}
	}
	// 1..4 of 20 bytes: 80, all kept.
	if err := c.StoreLogs([]*raft.Log{entry(1, 20), entry(2, 20), entry(3, 20), entry(4, 20)}); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 4; i++ {
		read(i, 20, false)
	}
	// 5 of 50: 1 and 2 go (130 → 90).
	if err := c.StoreLog(entry(5, 50)); err != nil {
		t.Fatal(err)
	}
	read(1, 20, true)
	read(2, 20, true)
	read(3, 20, false)
	read(5, 50, false)
	// 6, larger than the bound: not kept, and nothing else dropped for it.
	if err := c.StoreLog(entry(6, 101)); err != nil {
		t.Fatal(err)
	}
	read(6, 101, true)
	read(3, 20, false)
	if c.bytes != 90 {
		t.Fatalf("%d bytes kept, want 90", c.bytes)
	}
	// 7..14 wrap the ring (8 slots): each replaces an old slot's entry.
	for i := uint64(7); i <= 14; i++ {
		if err := c.StoreLog(entry(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if c.bytes != 80 {
		t.Fatalf("%d bytes kept after the ring wrapped, want 80", c.bytes)
	}
	read(14, 10, false)
	read(5, 50, true)
	if err := c.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	read(14, 10, true)
	if c.bytes != 0 {
		t.Fatalf("%d bytes kept after DeleteRange", c.bytes)
	}
}
