package engine

import "sync"

// RuntimeBytesEstimate is what the engine counts for an idle runtime
// against Options.IdleRuntimeBytes, besides the blob bytes it keeps: the
// heap an idle realm keeps once it ran a trivial workunit, as
// BenchmarkEngine_RealmMemory measured it (about 421,000 bytes; 362,000
// since the web globals are built on first use), rounded up, and kept so
// that the bounds hold as many runtimes as they did. The globals that workunits leave in a realm are not counted.
const RuntimeBytesEstimate = 448 << 10

// runtimePool keeps the engine's idle runtimes, of every realm, for any
// slot: a run takes one of its realm's (take), or makes a new one, and
// gives it back when it ends (put), unless it ran away. Past
// Options.IdleRuntimes runtimes or Options.IdleRuntimeBytes of them, the
// least recently given back are closed. Two realms never share a runtime:
// a runtime is taken by its realm's key only.
//
// The runtimes are on two lists threaded through them (realm.pool), so
// that taking and giving back allocate nothing: every idle runtime, most
// recently given back first, and its realm's idle runtimes.
type runtimePool struct {
	maxCount int
	maxBytes uint64

	mu     sync.Mutex
	closed bool
	// newest and oldest are the ends of the list of every idle runtime;
	// byKey the most recently given back of each realm's.
	newest, oldest *realm
	byKey          map[string]*realm
	count          int
	bytes          uint64
}

// poolLinks are an idle runtime's places in the pool's lists, and what it
// counts there.
type poolLinks struct {
	newer, older       *realm // every idle runtime
	keyNewer, keyOlder *realm // its realm's
	bytes              uint64
	// slot is the slot that ran the runtime last: a slot takes back its
	// own runtime of a realm first, whose memory its CPU may still cache.
	slot int
}

func newRuntimePool(maxCount int, maxBytes uint64) *runtimePool {
	return &runtimePool{maxCount: maxCount, maxBytes: maxBytes, byKey: make(map[string]*realm)}
}

// take returns an idle runtime of realm key, and removes it from the
// pool: the last one slot gave back, or else the last one given back;
// nil if the pool has none.
func (p *runtimePool) take(key string, slot int) *realm {
	p.mu.Lock()
	defer p.mu.Unlock()
	rl := p.byKey[key]
	if rl == nil {
		return nil
	}
	for o := rl; o != nil; o = o.pool.keyOlder {
		if o.pool.slot == slot {
			rl = o
			break
		}
	}
	p.remove(rl)
	return rl
}

// put gives back rl, idle now after a run on slot, and closes the least
// recently given back runtimes past the pool's bounds; it closes rl itself
// if it alone is past them, and after the pool was closed.
func (p *runtimePool) put(rl *realm, slot int) {
	bytes := rl.idleBytes()
	// A runtime past the bounds alone would close every other realm's
	// idle runtime before itself: it is closed at once instead.
	if p.maxCount <= 0 || bytes > p.maxBytes {
		rl.close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		rl.close()
		return
	}
	rl.pool = poolLinks{older: p.newest, keyOlder: p.byKey[rl.key], bytes: bytes, slot: slot}
	if p.newest != nil {
		p.newest.pool.newer = rl
	} else {
		p.oldest = rl
	}
	p.newest = rl
	if o := rl.pool.keyOlder; o != nil {
		o.pool.keyNewer = rl
	}
	p.byKey[rl.key] = rl
	p.count++
	p.bytes += bytes
	var drop []*realm
	for p.oldest != nil && (p.count > p.maxCount || p.bytes > p.maxBytes) {
		old := p.oldest
		p.remove(old)
		drop = append(drop, old)
	}
	p.mu.Unlock()
	// Closing runs the bindings' closers (GPU resources), outside the
	// lock.
	for _, old := range drop {
		old.close()
	}
}

// remove takes rl out of the pool's lists; p.mu is held.
func (p *runtimePool) remove(rl *realm) {
	l := &rl.pool
	if l.newer != nil {
		l.newer.pool.older = l.older
	} else {
		p.newest = l.older
	}
	if l.older != nil {
		l.older.pool.newer = l.newer
	} else {
		p.oldest = l.newer
	}
	if l.keyOlder != nil {
		l.keyOlder.pool.keyNewer = l.keyNewer
	}
	if l.keyNewer != nil {
		l.keyNewer.pool.keyOlder = l.keyOlder
	} else if l.keyOlder != nil {
		p.byKey[rl.key] = l.keyOlder
	} else {
		delete(p.byKey, rl.key)
	}
	p.count--
	p.bytes -= l.bytes
	rl.pool = poolLinks{}
}

// close closes every idle runtime, and those given back from now on.
func (p *runtimePool) close() {
	p.mu.Lock()
	p.closed = true
	var drop []*realm
	for p.oldest != nil {
		old := p.oldest
		p.remove(old)
		drop = append(drop, old)
	}
	p.mu.Unlock()
	for _, rl := range drop {
		rl.close()
	}
}

// stats returns the number of idle runtimes and their estimated bytes.
func (p *runtimePool) stats() (n int, bytes uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count, p.bytes
}

// idleBytes is what an idle runtime counts against
// Options.IdleRuntimeBytes: RuntimeBytesEstimate and the bytes of the
// blobs it keeps.
func (rl *realm) idleBytes() uint64 {
	n := uint64(RuntimeBytesEstimate)
	for el := rl.blobLRU.Front(); el != nil; el = el.Next() {
		n += uint64(len(el.Value.(*blobBytes).data))
	}
	return n
}
