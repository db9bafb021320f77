package worker

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
)

func TestCache_OneFetchForConcurrentMisses(t *testing.T) {
	t.Parallel()
	data := []byte("a blob that many workunits need")
	h := blob.Sum(data)
	var fetches atomic.Int32
	release := make(chan struct{})
	c := NewCache(1<<20, func(ctx context.Context, got blob.Hash) ([]byte, error) {
		fetches.Add(1)
		<-release
		return data, nil
	})
	var wg sync.WaitGroup
	results := make([][]byte, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.Blob(context.Background(), h)
		}()
	}
	// Wait until every caller is either fetching or waiting on the fetch.
	for {
		c.mu.Lock()
		l := c.loading[h]
		c.mu.Unlock()
		if l != nil && fetches.Load() == 1 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), fetches.Load())
	for _, r := range results {
		assert.Equal(t, data, r)
	}
}

// Take gives a blob away only when the cache does not keep it and one
// caller receives it: the fetcher, or the one caller that waited for a
// Prefetch.
func TestCache_TakeOwnsOnlyWhatItAloneReceives(t *testing.T) {
	t.Parallel()
	small := []byte("kept")
	large := []byte("larger than the cache can keep")
	release := make(chan struct{})
	c := NewCache(int64(len(small)), func(ctx context.Context, h blob.Hash) ([]byte, error) {
		if h == blob.Sum(large) {
			<-release
			return append([]byte(nil), large...), nil
		}
		return append([]byte(nil), small...), nil
	})
	ctx := context.Background()
	close(release)
	_, own, err := c.Take(ctx, blob.Sum(small))
	require.NoError(t, err)
	assert.False(t, own, "a blob the cache keeps is shared")
	got, own, err := c.Take(ctx, blob.Sum(large))
	require.NoError(t, err)
	assert.True(t, own, "a blob too large to keep is its fetcher's")
	assert.Equal(t, large, got)

	// A prefetch in flight and one caller waiting for it: that caller's.
	c2gate := make(chan struct{})
	fetched := make(chan struct{})
	c2 := NewCache(1, func(ctx context.Context, h blob.Hash) ([]byte, error) {
		close(fetched)
		<-c2gate
		return append([]byte(nil), large...), nil
	})
	h := blob.Sum(large)
	prefetched := make(chan error, 1)
	go func() { prefetched <- c2.Prefetch(ctx, h) }()
	<-fetched
	takes := make(chan bool, 2)
	take := func() {
		_, own, err := c2.Take(ctx, h)
		assert.NoError(t, err)
		takes <- own
	}
	go take()
	waitReceivers(t, c2, h, 1)
	close(c2gate)
	require.NoError(t, <-prefetched)
	assert.True(t, <-takes, "the one caller that waited for a prefetch owns the bytes")

	// Two callers of one fetch: neither owns them.
	c3gate := make(chan struct{})
	c3 := NewCache(1, func(ctx context.Context, h blob.Hash) ([]byte, error) {
		<-c3gate
		return append([]byte(nil), large...), nil
	})
	go func() {
		_, own, err := c3.Take(ctx, h)
		assert.NoError(t, err)
		takes <- own
	}()
	waitReceivers(t, c3, h, 1)
	go func() {
		_, own, err := c3.Take(ctx, h)
		assert.NoError(t, err)
		takes <- own
	}()
	waitReceivers(t, c3, h, 2)
	close(c3gate)
	assert.False(t, <-takes)
	assert.False(t, <-takes)
}

// waitReceivers waits until n callers receive the fetch of h in flight.
func waitReceivers(t *testing.T, c *Cache, h blob.Hash, n int) {
	t.Helper()
	for {
		c.mu.Lock()
		l := c.loading[h]
		ok := l != nil && l.receivers == n
		c.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}
