package replica

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// logCacheBytes bounds the bytes (the entries' Data) that logCache keeps
// in memory: blobs are entries of up to MaxBlobBytes, and a cache of
// logCacheEntries entries that kept them all would hold hundreds of
// megabytes (a job of many distinct 1 MiB arguments) or more; an entry
// larger than the whole bound is not kept.
const logCacheBytes = 64 << 20

// logCache is raft's log store with the recent small entries kept in
// memory, decoded: the leader reads back each entry it sends to a
// follower, and every replica each entry it applies, and raft-boltdb's
// read and decode of a large one costs more than its write. It bounds
// what it keeps by count and by bytes (logCacheEntries entries,
// maxBytes of their data: the oldest go first), unlike raft.LogCache,
// which keeps its count of entries whatever their size.
type logCache struct {
	raft.LogStore
	maxBytes int
	mu       sync.RWMutex
	ring     []*raft.Log // by index modulo its length
	bytes    int         // of the entries in ring
}

func newLogCache(entries, maxBytes int, store raft.LogStore) *logCache {
	return &logCache{LogStore: store, maxBytes: maxBytes, ring: make([]*raft.Log, entries)}
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

// StoreLogs implements raft.LogStore: the entries are stored, then kept,
// the oldest kept ones dropped past maxBytes.
func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return fmt.Errorf("replica: raft log: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(c.ring))
	for _, l := range logs {
		slot := &c.ring[l.Index%n]
		if *slot != nil {
			c.bytes -= len((*slot).Data)
		}
		*slot = nil
		if len(l.Data) > c.maxBytes {
			continue
		}
		*slot = l
		c.bytes += len(l.Data)
		// Drop the oldest entries (those before l in the ring's order)
		// until the bytes fit.
		for i := uint64(1); c.bytes > c.maxBytes && i < n; i++ {
			old := &c.ring[(l.Index+i)%n]
			if *old != nil {
				c.bytes -= len((*old).Data)
				*old = nil
			}
		}
	}
	return nil
}

// DeleteRange implements raft.LogStore: the cache is emptied (raft
// deletes the log's start after a snapshot, and its end when a new
// leader's log replaces it).
func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	clear(c.ring)
	c.bytes = 0
	c.mu.Unlock()
	return c.LogStore.DeleteRange(lo, hi)
}

// IsMonotonic implements raft.MonotonicLogStore as the store does.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
