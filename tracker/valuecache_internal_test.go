package tracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValueCache: the least recently used results go first past the
// bound; one larger than the bound is not kept; drop forgets.
func TestValueCache(t *testing.T) {
	c := newValueCache(4)
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
	c.put(4, []byte("too large"))
	_, ok = c.get(4)
	assert.False(t, ok)
	c.put(1, []byte("x")) // replaced
	c.drop(3)
	size, n, hits, misses := c.stats()
	assert.Equal(t, 1, size)
	assert.Equal(t, 1, n)
	assert.Equal(t, uint64(2), hits)
	assert.Equal(t, uint64(2), misses)
}
