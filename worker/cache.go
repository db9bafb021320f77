package worker

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/riot-go/riot/blob"
)

// Cache is a worker's blob cache: a blob.Source that serves blobs it holds
// and fetches the others (from the tracker), keeping the most recently used
// ones up to a number of bytes. It is safe for concurrent use.
type Cache struct {
	fetch func(ctx context.Context, h blob.Hash) ([]byte, error)

	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *entry, most recently used first
	items map[blob.Hash]*list.Element
	hits  uint64
	miss  uint64
}

type entry struct {
	hash blob.Hash
	data []byte
}

// NewCache returns a Cache of at most maxBytes bytes of blobs that calls
// fetch on a miss. A blob larger than maxBytes is fetched each time it is
// asked for and not kept.
func NewCache(maxBytes int64, fetch func(ctx context.Context, h blob.Hash) ([]byte, error)) *Cache {
	return &Cache{fetch: fetch, max: maxBytes, order: list.New(), items: make(map[blob.Hash]*list.Element)}
}

// Blob implements blob.Source: the blob h, from the cache or fetched.
func (c *Cache) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	if data, ok := c.get(h); ok {
		return data, nil
	}
	data, err := c.fetch(ctx, h)
	if err != nil {
		return nil, err
	}
	if blob.Sum(data) != h {
		return nil, fmt.Errorf("worker: blob %s: fetched data hashes to %s", h.Short(), blob.Sum(data).Short())
	}
	c.put(h, data)
	return data, nil
}

// Has reports whether the cache holds h.
func (c *Cache) Has(h blob.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[h]
	return ok
}

// Stats returns the bytes held, the number of blobs, and the hits and
// misses so far.
func (c *Cache) Stats() (bytes int64, blobs int, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size, len(c.items), c.hits, c.miss
}

func (c *Cache) get(h blob.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[h]
	if !ok {
		c.miss++
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*entry).data, true
}

func (c *Cache) put(h blob.Hash, data []byte) {
	n := int64(len(data))
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[h]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.items[h] = c.order.PushFront(&entry{hash: h, data: data})
	c.size += n
	for c.size > c.max {
		el := c.order.Back()
		e := el.Value.(*entry)
		c.order.Remove(el)
		delete(c.items, e.hash)
		c.size -= int64(len(e.data))
	}
}
