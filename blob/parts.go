package blob

import "crypto/sha256"

// Parts is a blob's bytes given as a list of slices, in order: the blob is
// their concatenation, and its Hash is that of the concatenation, the same
// Hash as Sum gives for the bytes in one slice. A master sends a large
// typed array this way, as a few header bytes, the array buffer's own
// bytes (by reference, not copied) and a few trailing bytes.
type Parts [][]byte

// Len returns the blob's size: the sum of the parts' lengths.
func (p Parts) Len() int {
	n := 0
	for _, b := range p {
		n += len(b)
	}
	return n
}

// Sum returns the Hash of the concatenation of the parts, without making
// it.
func (p Parts) Sum() Hash {
	if len(p) == 1 {
		return Sum(p[0])
	}
	d := sha256.New()
	for _, b := range p {
		d.Write(b)
	}
	var h Hash
	d.Sum(h[:0])
	return h
}

// Bytes returns the concatenation of the parts: the one part itself when
// there is one (not a copy), else a new slice.
func (p Parts) Bytes() []byte {
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0]
	}
	out := make([]byte, 0, p.Len())
	for _, b := range p {
		out = append(out, b...)
	}
	return out
}

// Slice returns the bytes from off to end of the concatenation: a slice
// of one part when the range lies within it (not a copy), else a new
// slice. It panics when the range is outside the blob.
func (p Parts) Slice(off, end int) []byte {
	if off < 0 || end < off {
		panic("blob: Parts.Slice: bad range")
	}
	start := 0
	var out []byte
	for _, b := range p {
		bEnd := start + len(b)
		if bEnd <= off || len(b) == 0 {
			start = bEnd
			continue
		}
		lo, hi := max(off, start)-start, min(end, bEnd)-start
		if out == nil && off >= start && end <= bEnd {
			return b[lo:hi:hi]
		}
		if out == nil {
			out = make([]byte, 0, end-off)
		}
		out = append(out, b[lo:hi]...)
		if end <= bEnd {
			return out
		}
		start = bEnd
	}
	if end > start {
		panic("blob: Parts.Slice: range past the end")
	}
	if out == nil {
		return []byte{}
	}
	return out
}
