package client

import "slices"

// reqTable holds the requests awaiting their answers (Client.pending), by
// Req. Reqs are handed out in increasing order and mostly answered in that
// order, so the table is a window over a range of reqs kept in a ring of
// slots rather than a map: a put writes the slot after the last one and an
// answer finds its request near the first, where a map of a few hundred
// thousand submissions missed the cache on both (a pipelining master puts
// and takes one request per call). A request left far behind the others
// (an rpc that waits while more submissions pass it than the ring holds)
// moves to a map of its own, so that it does not keep the window wide.
// Slots are 16 bytes, and the ring is at most twice as long as the most
// requests it held at once.
//
// The zero reqTable is empty and ready to use. It is not safe for
// concurrent use (the Client's mutex guards it).
type reqTable struct {
	// ring holds the requests with reqs in [lo, hi), req r at slot
	// r&(len(ring)-1); its length is 0 or a power of two at least
	// hi-lo, and every slot outside the window is nil.
	ring   []request
	lo, hi uint64
	n      int // requests in ring
	// old holds requests whose reqs are below lo.
	old map[uint64]request
}

// minReqRing is the ring's first length. The ring, like a map, keeps the
// length it grew to: a master that had that many requests in flight once
// will again, and a ring dropped whenever the table empties was made again
// at every burst.
const minReqRing = 64

// len returns how many requests the table holds.
func (t *reqTable) len() int { return t.n + len(t.old) }

// get returns the request of req.
func (t *reqTable) get(req uint64) (request, bool) {
	if req < t.lo {
		r, ok := t.old[req]
		return r, ok
	}
	if req >= t.hi {
		return nil, false
	}
	r := t.ring[req&uint64(len(t.ring)-1)]
	return r, r != nil
}

// put adds r as the request of req, replacing the one there was.
func (t *reqTable) put(req uint64, r request) {
	if r == nil {
		t.delete(req)
		return
	}
	if req < t.lo {
		if t.old == nil {
			t.old = make(map[uint64]request)
		}
		t.old[req] = r
		return
	}
	if req >= t.hi {
		t.extend(req)
	}
	slot := &t.ring[req&uint64(len(t.ring)-1)]
	if *slot == nil {
		t.n++
	}
	*slot = r
}

// extend makes the window reach req (req >= hi): it grows the ring while
// the requests fill at least half of it, and otherwise moves the requests
// at the window's start to old until req fits.
func (t *reqTable) extend(req uint64) {
	if t.n == 0 {
		if t.ring == nil {
			t.ring = make([]request, minReqRing)
		}
		t.lo, t.hi = req, req+1
		return
	}
	for req-t.lo >= uint64(len(t.ring)) {
		if t.n >= len(t.ring)/2 && req-t.lo < 2*uint64(len(t.ring)) {
			t.grow()
			continue
		}
		// Sparse, or req far past the rest: the first requests are left
		// behind.
		if r := t.ring[t.lo&uint64(len(t.ring)-1)]; r != nil {
			t.ring[t.lo&uint64(len(t.ring)-1)] = nil
			t.n--
			if t.old == nil {
				t.old = make(map[uint64]request)
			}
			t.old[t.lo] = r
		}
		t.lo++
		if t.n == 0 {
			t.lo = req
			break
		}
	}
	for t.n > 0 && t.ring[t.lo&uint64(len(t.ring)-1)] == nil {
		t.lo++ // the window starts at its first request
	}
	t.hi = req + 1
}

// grow doubles the ring, keeping every request at its req's slot.
func (t *reqTable) grow() {
	ring := make([]request, 2*len(t.ring))
	for req := t.lo; req < t.hi; req++ {
		if r := t.ring[req&uint64(len(t.ring)-1)]; r != nil {
			ring[req&uint64(len(ring)-1)] = r
		}
	}
	t.ring = ring
}

// take removes the request of req and returns it.
func (t *reqTable) take(req uint64) (request, bool) {
	r, ok := t.get(req)
	if ok {
		t.delete(req)
	}
	return r, ok
}

// delete removes the request of req, if there is one.
func (t *reqTable) delete(req uint64) {
	if req < t.lo {
		delete(t.old, req)
		return
	}
	if req >= t.hi {
		return
	}
	mask := uint64(len(t.ring) - 1)
	slot := &t.ring[req&mask]
	if *slot == nil {
		return
	}
	*slot = nil
	t.n--
	if t.n == 0 {
		// Empty: the window starts again at the next put.
		t.lo = t.hi
		return
	}
	if req == t.lo {
		for t.ring[t.lo&mask] == nil {
			t.lo++
		}
	}
}

// reqs returns the reqs of every request, in increasing order.
func (t *reqTable) reqs() []uint64 {
	out := make([]uint64, 0, t.len())
	for req := range t.old {
		out = append(out, req)
	}
	slices.Sort(out)
	if t.n > 0 {
		mask := uint64(len(t.ring) - 1)
		for req := t.lo; req < t.hi; req++ {
			if t.ring[req&mask] != nil {
				out = append(out, req)
			}
		}
	}
	return out
}

// takeAll removes every request and returns them, in the order of their
// reqs.
func (t *reqTable) takeAll() []request {
	reqs := t.reqs()
	out := make([]request, len(reqs))
	for i, req := range reqs {
		out[i], _ = t.take(req)
	}
	return out
}
