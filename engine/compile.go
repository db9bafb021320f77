package engine

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"github.com/dop251/goja"
)

// compileCache holds compiled programs by a hash of their name and source,
// shared by every runtime of an engine: a goja.Program may run in many
// runtimes at once. It is safe for concurrent use.
type compileCache struct {
	mu  sync.Mutex
	max int
	m   map[[sha256.Size]byte]*list.Element
	lru list.List // of *compiled, most recent at the front
}

type compiled struct {
	key [sha256.Size]byte
	prg *goja.Program
	err error
}

func newCompileCache(max int) *compileCache {
	return &compileCache{max: max, m: make(map[[sha256.Size]byte]*list.Element)}
}

// compile returns the program for src, compiling it on the first call. A
// syntax error is cached as well: the same source fails the same way.
func (c *compileCache) compile(name, src string) (*goja.Program, error) {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(src))
	var key [sha256.Size]byte
	h.Sum(key[:0])

	c.mu.Lock()
	if el, ok := c.m[key]; ok {
		c.lru.MoveToFront(el)
		cp := el.Value.(*compiled)
		c.mu.Unlock()
		return cp.prg, cp.err
	}
	c.mu.Unlock()

	// Compile outside the lock; two runtimes may compile the same source
	// at once, and the second result is dropped.
	prg, err := compileGuarded(name, src)

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		cp := el.Value.(*compiled)
		return cp.prg, cp.err
	}
	c.m[key] = c.lru.PushFront(&compiled{key: key, prg: prg, err: err})
	for c.max > 0 && c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*compiled).key)
	}
	return prg, err
}

// len returns the number of programs held.
func (c *compileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
