package tracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValueCache: the least recently used results go first past the
// bound; one larger than the bound is not kept; drop forgets.
func TestValueCache(t *testing.T) {
	c := newValueCache(4 + 2*cachedBytes)
	c.put(1, []byte("ab"))
	c.put(2, []byte("cd"))
	_, ok := c.get(1) // 1 is now the most recent
	assert.True(t, ok)
	c.put(3, []byte("ef"))
	_, ok = c.get(2)
	assert.False(t, ok, "2 was the least recently used")
	v, ok := c.get(1)
	assert.True(t, ok)
	assert.Equal(t, "ab", string(v))
	c.put(4, make([]byte, 2*cachedBytes)) // too large
	_, ok = c.get(4)
	assert.False(t, ok)
	c.put(1, []byte("x")) // replaced
	c.drop(3)
	size, n, hits, misses := c.stats()
	assert.Equal(t, 1+cachedBytes, size)
	assert.Equal(t, 1, n)
	assert.Equal(t, uint64(2), hits)
	assert.Equal(t, uint64(2), misses)
}

// TestValueCache_SmallResults: the bound holds for results of a few bytes,
// whose bookkeeping is most of what the cache holds for them. Before, a
// bound of 64 KiB kept 65,536 one-byte results (over 8 MB).
func TestValueCache_SmallResults(t *testing.T) {
	const limit = 64 << 10
	c := newValueCache(limit)
	for id := range uint64(100_000) {
		c.put(id+1, []byte{byte(id)})
	}
	size, n, _, _ := c.stats()
	assert.LessOrEqual(t, size, limit)
	assert.LessOrEqual(t, n, limit/cachedBytes)
	assert.Greater(t, n, limit/(2*cachedBytes), "it still keeps what fits")
	_, ok := c.get(100_000)
	assert.True(t, ok, "the most recent is kept")
}
