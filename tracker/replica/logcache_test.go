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

// TestLogCache_KeepsSmallEntriesOnly: small entries are read back from
// memory, entries past maxCachedEntry (blobs) from the store, and a large
// entry takes its slot from the small one that was there; after a
// DeleteRange everything is read from the store.
func TestLogCache_KeepsSmallEntriesOnly(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(4, store)
	small := bytes.Repeat([]byte{1}, maxCachedEntry)
	large := bytes.Repeat([]byte{2}, maxCachedEntry+1)
	var logs []*raft.Log
	for i := uint64(1); i <= 4; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Data: small})
	}
	logs[1].Data = large
	if err := c.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	read := func(index uint64, want []byte) {
		t.Helper()
		var l raft.Log
		if err := c.GetLog(index, &l); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(l.Data, want) {
			t.Fatalf("entry %d: %d bytes, want %d", index, len(l.Data), len(want))
		}
	}
	read(1, small)
	read(3, small)
	if store.reads != 0 {
		t.Fatalf("small entries read from the store %d times", store.reads)
	}
	read(2, large)
	if store.reads != 1 {
		t.Fatalf("a large entry: %d reads of the store, want 1 (not cached)", store.reads)
	}
	// Entry 5 (large) takes the slot of entry 1 (small).
	if err := c.StoreLog(&raft.Log{Index: 5, Term: 1, Data: large}); err != nil {
		t.Fatal(err)
	}
	for _, l := range c.ring {
		if l != nil && len(l.Data) > maxCachedEntry {
			t.Fatalf("entry %d of %d bytes is cached", l.Index, len(l.Data))
		}
	}
	store.reads = 0
	read(1, small)
	read(5, large)
	if store.reads != 2 {
		t.Fatalf("%d reads of the store, want 2", store.reads)
	}
	if err := c.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	store.reads = 0
	read(3, small)
	if store.reads != 1 {
		t.Fatalf("after DeleteRange: %d reads of the store, want 1", store.reads)
	}
}
