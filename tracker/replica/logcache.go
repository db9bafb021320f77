package replica

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// maxCachedEntry is the largest log entry (its Data) that logCache keeps
// in memory: blobs are entries of up to MaxBlobBytes, and a cache of
// logCacheEntries entries that kept them would hold hundreds of
// megabytes (a job of many distinct 1 MiB arguments) or more.
const maxCachedEntry = 64 << 10

// logCache is raft's log store with the recent small entries kept in
// memory, decoded: the leader reads back each entry it sends to a
// follower, and bbolt's read and decode of every one would cost more than
// the write. It bounds what it keeps by count and by size (at most
// logCacheEntries entries of at most maxCachedEntry bytes each), unlike
// raft.LogCache, which keeps any entry whatever its size.
type logCache struct {
	raft.LogStore
	mu   sync.RWMutex
	ring []*raft.Log // by index modulo its length
}

func newLogCache(entries int, store raft.LogStore) *logCache {
	return &logCache{LogStore: store, ring: make([]*raft.Log, entries)}
}

// GetLog implements raft.LogStore.
func (c *logCache) GetLog(index uint64, out *raft.Log) error {
	c.mu.RLock()
	l := c.ring[index%uint64(len(c.ring))]
	c.mu.RUnlock()
	if l != nil && l.Index == index {
		*out = *l
		return nil
	}
	return c.LogStore.GetLog(index, out)
}

// StoreLog implements raft.LogStore.
func (c *logCache) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: the entries are stored, then the
// small ones kept; a large one takes its slot from whatever was there.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return fmt.Errorf("replica: raft log: %w", err)
	}
	c.mu.Lock()
	for _, l := range logs {
		slot := &c.ring[l.Index%uint64(len(c.ring))]
		if len(l.Data) <= maxCachedEntry {
			*slot = l
		} else {
			*slot = nil
		}
	}
	c.mu.Unlock()
	return nil
}

// DeleteRange implements raft.LogStore: the cache is emptied (raft
// deletes the log's start after a snapshot, and its end when a new
// leader's log replaces it).
func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	clear(c.ring)
	c.mu.Unlock()
	return c.LogStore.DeleteRange(lo, hi)
}

// IsMonotonic implements raft.MonotonicLogStore as the store does.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
