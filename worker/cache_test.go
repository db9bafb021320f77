package worker

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

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
