package worker

import (
	"container/list"
	"context"
	"errors"
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
	// loading holds the fetches in flight, so that callers asking for a
	// blob being fetched wait for that fetch instead of starting another.
	loading map[blob.Hash]*load
	hits    uint64
	miss    uint64
}

// load is a fetch in flight; done is closed when data and err are set.
type load struct {
	done chan struct{}
	data []byte
	err  error
	// receivers counts the callers given its data: the one that started
	// it (unless a Prefetch) and those that waited for it. When the cache
	// does not keep the data (kept) and one caller receives it, the bytes
	// are that caller's own (Take). Both are guarded by Cache.mu.
	receivers int
	kept      bool
}

type entry struct {
	hash blob.Hash
	data []byte
}

// NewCache returns a Cache of at most maxBytes bytes of blobs that calls
// fetch on a miss; fetch must return the bytes of the hash asked for
// (client.FetchBlob checks them). A blob larger than maxBytes is fetched each time it is
// asked for and not kept.
func NewCache(maxBytes int64, fetch func(ctx context.Context, h blob.Hash) ([]byte, error)) *Cache {
	return &Cache{fetch: fetch, max: maxBytes, order: list.New(), items: make(map[blob.Hash]*list.Element),
		loading: make(map[blob.Hash]*load)}
}

// Blob implements blob.Source: the blob h, from the cache or fetched. Of
// concurrent callers missing the same blob, one fetches it and the others
// wait for that fetch (or for their own context).
func (c *Cache) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	data, _, err := c.Take(ctx, h)
	return data, err
}

// Take implements blob.Taker: as Blob, and the bytes are the caller's own
// when the cache did not keep them (a blob larger than the cache) and no
// other caller waited for the same fetch.
func (c *Cache) Take(ctx context.Context, h blob.Hash) ([]byte, bool, error) {
	return c.get(ctx, h, true)
}

// Prefetch fetches blob h unless the cache holds it or is fetching it, so
// that it is there when asked for; a blob too large to keep goes to the
// one caller that waits for this fetch (Take), if only one does.
func (c *Cache) Prefetch(ctx context.Context, h blob.Hash) error {
	_, _, err := c.get(ctx, h, false)
	return err
}

// get returns blob h, from the cache or fetched; want says the caller
// receives the bytes (a Prefetch does not), own that they are its alone.
func (c *Cache) get(ctx context.Context, h blob.Hash, want bool) ([]byte, bool, error) {
	for {
		c.mu.Lock()
		if el, ok := c.items[h]; ok {
			c.hits++
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return el.Value.(*entry).data, false, nil
		}
		l, waiting := c.loading[h]
		if !waiting {
			c.miss++
			l = &load{done: make(chan struct{})}
			if want {
				l.receivers++
			}
			c.loading[h] = l
			c.mu.Unlock()
			c.load(ctx, h, l)
			c.mu.Lock()
			own := want && l.err == nil && !l.kept && l.receivers == 1
			c.mu.Unlock()
			return l.data, own, l.err
		}
		if !want {
			c.mu.Unlock()
			return nil, false, nil // a prefetch of a blob being fetched
		}
		l.receivers++
		c.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			c.mu.Lock()
			l.receivers--
			c.mu.Unlock()
			return nil, false, ctx.Err()
		}
		// The fetch we waited for failed because its own caller gave up:
		// try again, with this caller's context.
		if l.err != nil && (errors.Is(l.err, context.Canceled) || errors.Is(l.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue
		}
		c.mu.Lock()
		own := l.err == nil && !l.kept && l.receivers == 1
		c.mu.Unlock()
		return l.data, own, l.err
	}
}

// load fetches h for l, keeps it, and wakes l's waiters.
func (c *Cache) load(ctx context.Context, h blob.Hash, l *load) {
	// fetch checks the hash (client.FetchBlob does), and so does the
	// engine with what it is given: no third pass over a large blob here.
	data, err := c.fetch(ctx, h)
	l.data, l.err = data, err
	kept := err == nil && c.put(h, data)
	c.mu.Lock()
	l.kept = kept
	delete(c.loading, h)
	c.mu.Unlock()
	close(l.done)
}

// BlobsChecked implements blob.Checked: fetch checks each blob's hash
// (client.FetchBlob does), so the engine need not hash it again.
func (c *Cache) BlobsChecked() {}

var (
	_ blob.Checked = (*Cache)(nil)
	_ blob.Taker   = (*Cache)(nil)
)

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

// put keeps data as blob h, unless it is larger than the cache, and
// reports whether the cache holds it.
func (c *Cache) put(h blob.Hash, data []byte) bool {
	n := int64(len(data))
	if n > c.max {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[h]; ok {
		c.order.MoveToFront(el)
		return true
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
	return true
}
