package tracker

import (
	"container/list"
	"sync"
)

// DefaultValueCache is the default bound of the results a tracker with a
// durable store keeps in memory (Options.ValueCache): the rest are read
// from the store when asked for.
const DefaultValueCache = 256 << 20

// valueCache keeps the most recently used results of done records, by
// record ID, within a bound on their bytes. The store has every one of
// them: the cache only saves reads. Safe for concurrent use (the loop and
// the HTTP handlers).
type valueCache struct {
	mu    sync.Mutex
	limit int
	size  int
	lru   *list.List // of *cached, most recent first
	byID  map[uint64]*list.Element
	hits  uint64
	miss  uint64
}

type cached struct {
	id  uint64
	val []byte
}

// cachedBytes is what the cache holds for a result besides its bytes: its
// list element, its cached and its entry in byID. Counted with the bytes,
// so that the bound holds for results of a few bytes too (a million
// trivial results hold over 100 MB of these).
const cachedBytes = 128

func newValueCache(limit int) *valueCache {
	return &valueCache{limit: limit, lru: list.New(), byID: map[uint64]*list.Element{}}
}

// get returns the cached result of record id.
func (c *valueCache) get(id uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		c.miss++
		return nil, false
	}
	c.hits++
	c.lru.MoveToFront(e)
	return e.Value.(*cached).val, true
}

// put caches val as record id's result, evicting the least recently used
// ones past the bound. A value larger than the whole bound is not kept.
func (c *valueCache) put(id uint64, val []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
	if len(val)+cachedBytes > c.limit {
		return
	}
	c.byID[id] = c.lru.PushFront(&cached{id: id, val: val})
	c.size += len(val) + cachedBytes
	for c.size > c.limit {
		c.removeLocked(c.lru.Back().Value.(*cached).id)
	}
}

// drop forgets record id's result (a forgotten record).
func (c *valueCache) drop(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
}

// removeLocked forgets record id's result if it is cached; c.mu is held.
func (c *valueCache) removeLocked(id uint64) {
	if e, ok := c.byID[id]; ok {
		c.size -= len(e.Value.(*cached).val) + cachedBytes
		c.lru.Remove(e)
		delete(c.byID, id)
	}
}

// stats returns the bytes and values cached, and the hits and misses so
// far.
func (c *valueCache) stats() (bytes, n int, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, len(c.byID), c.hits, c.miss
}
