package table

// ring is a FIFO of record indices with pushes at both ends, backed by one
// slice whose length is a power of two. The zero ring is empty.
type ring struct {
	buf  []uint32
	head int // index of the first element
	n    int
}

func (q *ring) len() int { return q.n }

func (q *ring) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 64
	}
	buf := make([]uint32, size)
	// Copy in order: head..end, then start..tail.
	k := copy(buf, q.buf[q.head:])
	copy(buf[k:], q.buf[:q.head])
	q.buf = buf
	q.head = 0
}

func (q *ring) pushBack(v uint32) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

func (q *ring) pushFront(v uint32) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = v
	q.n++
}

// front returns the first element; the ring must not be empty.
func (q *ring) front() uint32 { return q.buf[q.head] }

// popFront removes and returns the first element; the ring must not be
// empty. An emptied ring keeps its buffer unless it is large, so that a
// drained queue of millions gives its memory back.
func (q *ring) popFront() uint32 {
	v := q.buf[q.head]
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
		if len(q.buf) > 1<<16 {
			q.buf = nil
		}
	}
	return v
}

// removeIf removes the elements for which drop is true, keeping the
// others in order, and returns how many it removed. It takes time in the
// ring's length.
func (q *ring) removeIf(drop func(uint32) bool) int {
	kept := 0
	for i := range q.n {
		v := q.buf[(q.head+i)&(len(q.buf)-1)]
		if !drop(v) {
			q.buf[(q.head+kept)&(len(q.buf)-1)] = v
			kept++
		}
	}
	removed := q.n - kept
	q.n = kept
	if q.n == 0 {
		q.head = 0
	}
	return removed
}

// gpuQueue is the waiting queue of the workunits that need gpus GPUs.
type gpuQueue struct {
	gpus uint8
	q    ring
}
