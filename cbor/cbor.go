package cbor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"unicode/utf8"
)

// CBOR major types.
const (
	MajorUint   = 0
	MajorNeg    = 1
	MajorBytes  = 2
	MajorText   = 3
	MajorArray  = 4
	MajorMap    = 5
	MajorTag    = 6
	MajorSimple = 7
)

// CBOR simple values used by the codec.
const (
	SimpleFalse     = 20
	SimpleTrue      = 21
	SimpleNull      = 22
	SimpleUndefined = 23
)

// Standard tags (RFC 8949) that Writer and Reader helpers use.
const (
	TagPosBignum = 2 // unsigned bignum: big-endian magnitude
	TagNegBignum = 3 // negative bignum: big-endian magnitude of -1-n
)

// maxSafeInteger is 2^53, past which a float64 no longer holds every integer.
const maxSafeInteger = 1 << 53

// Writer appends CBOR data items to a byte slice. The zero Writer is ready to
// use. A Writer is not safe for concurrent use.
//
// Writer writes heads and leaves; callers write the items of an array or map
// after its head. It writes the preferred (shortest) form of every head.
type Writer struct {
	buf []byte
}

// NewWriter returns a Writer that writes into buf[:0], growing it when it
// must.
func NewWriter(buf []byte) *Writer { return &Writer{buf: buf[:0]} }

// AppendWriter returns a Writer that appends to dst, after its contents.
func AppendWriter(dst []byte) *Writer { return &Writer{buf: dst} }

// Grow makes room for n more bytes, so that the next n bytes written do
// not reallocate.
func (w *Writer) Grow(n int) { w.buf = slices.Grow(w.buf, n) }

// Extend appends n bytes for the caller to fill and returns them: the
// payload of a string whose head was just written, filled in place.
func (w *Writer) Extend(n int) []byte {
	w.buf = slices.Grow(w.buf, n)
	w.buf = w.buf[:len(w.buf)+n]
	return w.buf[len(w.buf)-n:]
}

// Bytes returns the bytes written so far. They alias the Writer's buffer.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written so far.
func (w *Writer) Len() int { return len(w.buf) }

// Reset empties the Writer, keeping its buffer.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Truncate drops what was written after the first n bytes; n must be at
// most Len().
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// Head writes a head of the given major type and argument.
func (w *Writer) Head(major byte, n uint64) {
	m := major << 5
	switch {
	case n < 24:
		w.buf = append(w.buf, m|byte(n))
	case n <= math.MaxUint8:
		w.buf = append(w.buf, m|24, byte(n))
	case n <= math.MaxUint16:
		w.buf = append(w.buf, m|25, byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		w.buf = append(w.buf, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	default:
		w.buf = append(w.buf, m|27)
		w.buf = binary.BigEndian.AppendUint64(w.buf, n)
	}
}

// Tag writes a tag head; the tagged item follows.
func (w *Writer) Tag(tag uint64) { w.Head(MajorTag, tag) }

// ArrayHeader writes the head of an array of n items.
func (w *Writer) ArrayHeader(n int) { w.Head(MajorArray, uint64(n)) }

// MapHeader writes the head of a map of n pairs.
func (w *Writer) MapHeader(n int) { w.Head(MajorMap, uint64(n)) }

// Simple writes a simple value such as SimpleNull.
func (w *Writer) Simple(v byte) { w.buf = append(w.buf, MajorSimple<<5|v) }

// Bool writes true or false.
func (w *Writer) Bool(b bool) {
	if b {
		w.Simple(SimpleTrue)
	} else {
		w.Simple(SimpleFalse)
	}
}

// Int writes an integer.
func (w *Writer) Int(n int64) {
	if n >= 0 {
		w.Head(MajorUint, uint64(n))
	} else {
		w.Head(MajorNeg, uint64(-1-n))
	}
}

// Number writes a JavaScript number: as a CBOR integer when it is an integer
// within ±2^53 and not -0, otherwise as a float64. Every NaN is written as
// the one NaN 0x7ff8000000000000, so equal values give equal bytes.
func (w *Writer) Number(f float64) {
	if f == math.Trunc(f) && f >= -maxSafeInteger && f <= maxSafeInteger && (f != 0 || !math.Signbit(f)) {
		w.Int(int64(f))
		return
	}
	if f != f {
		f = math.Float64frombits(canonicalNaN)
	}
	w.Float64(f)
}

// canonicalNaN is the bits of the NaN that Number writes.
const canonicalNaN = 0x7ff8000000000000

// HalfNaN writes the NaN of RFC 8949's preferred serialization, the
// half-precision quiet NaN f9 7e 00: the NaN of an invalid Date.
func (w *Writer) HalfNaN() { w.buf = append(w.buf, MajorSimple<<5|25, 0x7e, 0x00) }

// Float64 writes f as a double-precision float.
func (w *Writer) Float64(f float64) {
	w.buf = append(w.buf, MajorSimple<<5|27)
	w.buf = binary.BigEndian.AppendUint64(w.buf, math.Float64bits(f))
}

// Text writes s as a text string. s must be valid UTF-8; use String for text
// that may not be.
func (w *Writer) Text(s string) {
	w.Head(MajorText, uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// String writes s as a text string. Each byte of s that is not part of
// valid UTF-8 is written as U+FFFD. (Package value keeps strings with lone
// surrogates whole, in a tagged form of its own.)
func (w *Writer) String(s string) {
	if utf8.ValidString(s) {
		w.Text(s)
		return
	}
	w.Text(string([]rune(s)))
}

// ByteString writes b as a byte string.
func (w *Writer) ByteString(b []byte) {
	w.Head(MajorBytes, uint64(len(b)))
	w.buf = append(w.buf, b...)
}

// BigInt writes n as a tagged bignum (tag 2 or 3), whatever its size.
func (w *Writer) BigInt(n *big.Int) {
	if n.Sign() >= 0 {
		w.Tag(TagPosBignum)
		w.ByteString(n.Bytes())
		return
	}
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	w.Tag(TagNegBignum)
	w.ByteString(m.Bytes())
}

// Raw appends b, which must be whole CBOR data items.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// Head is a decoded CBOR head.
type Head struct {
	Major byte
	// Arg is the argument: the value of an integer (for MajorNeg the value
	// is -1-Arg), the length of a string, array or map, the tag number, or
	// the simple value.
	Arg uint64
	// Float is set for MajorSimple floats (IsFloat true).
	Float   float64
	IsFloat bool
}

// ErrTruncated is reported (wrapped in a *SyntaxError) when data ends inside
// an item.
var ErrTruncated = errors.New("unexpected end of data")

// SyntaxError reports malformed CBOR at an offset.
type SyntaxError struct {
	Offset int
	Msg    string
	Err    error
}

// Error says what is malformed and at which byte offset.
func (e *SyntaxError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("cbor: malformed data at byte %d: %s: %v", e.Offset, e.Msg, e.Err)
	}
	return fmt.Sprintf("cbor: malformed data at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Reader reads CBOR data items from a byte slice. It never reads past its
// data and never allocates from a length it has not checked against the
// bytes left. A Reader is not safe for concurrent use.
type Reader struct {
	data []byte
	pos  int
}

// NewReader returns a Reader over data.
func NewReader(data []byte) *Reader { return &Reader{data: data} }

// Offset returns the position of the next byte to read.
func (r *Reader) Offset() int { return r.pos }

// Span returns the bytes read from offset start (an earlier Offset) to
// here, aliasing the Reader's data: the whole of the items read since.
func (r *Reader) Span(start int) []byte { return r.data[start:r.pos:r.pos] }

// Remaining returns the number of bytes not yet read.
func (r *Reader) Remaining() int { return len(r.data) - r.pos }

// Errorf returns a *SyntaxError at the current offset.
func (r *Reader) Errorf(format string, args ...any) error {
	return &SyntaxError{Offset: r.pos, Msg: fmt.Sprintf(format, args...)}
}

func (r *Reader) truncated(what string) error {
	return &SyntaxError{Offset: r.pos, Msg: what, Err: ErrTruncated}
}

// Next reads one head. Indefinite lengths and reserved forms are errors.
func (r *Reader) Next() (Head, error) {
	if r.pos >= len(r.data) {
		return Head{}, r.truncated("reading a head")
	}
	start := r.pos
	b := r.data[r.pos]
	r.pos++
	h := Head{Major: b >> 5}
	ai := b & 31
	var n uint64
	switch {
	case ai < 24:
		n = uint64(ai)
	case ai <= 27:
		size := 1 << (ai - 24)
		if len(r.data)-r.pos < size {
			r.pos = start
			return Head{}, r.truncated("reading a head's argument")
		}
		p := r.data[r.pos : r.pos+size]
		switch size {
		case 1:
			n = uint64(p[0])
		case 2:
			n = uint64(binary.BigEndian.Uint16(p))
		case 4:
			n = uint64(binary.BigEndian.Uint32(p))
		default:
			n = binary.BigEndian.Uint64(p)
		}
		r.pos += size
	case ai == 31:
		r.pos = start
		return Head{}, r.Errorf("indefinite-length items are not supported")
	default:
		r.pos = start
		return Head{}, r.Errorf("reserved additional information %d", ai)
	}
	h.Arg = n
	if h.Major == MajorSimple {
		switch ai {
		case 25:
			h.IsFloat, h.Float = true, float16ToFloat64(uint16(n))
		case 26:
			h.IsFloat, h.Float = true, float64(math.Float32frombits(uint32(n)))
		case 27:
			h.IsFloat, h.Float = true, math.Float64frombits(n)
		case 24:
			if n < 32 {
				r.pos = start
				return Head{}, r.Errorf("simple value %d in two-byte form", n)
			}
		}
	}
	return h, nil
}

// Bytes returns the next n bytes (the payload of a string head) without
// copying: the result aliases the Reader's data.
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.data)-r.pos) {
		return nil, r.truncated(fmt.Sprintf("string of %d bytes with %d left", n, len(r.data)-r.pos))
	}
	b := r.data[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// CheckCount checks that a claimed count of items, each at least minBytes
// long, fits in the bytes left, so that a caller may allocate for them.
func (r *Reader) CheckCount(n uint64, minBytes int) error {
	left := uint64(len(r.data) - r.pos)
	if minBytes > 0 && n > left/uint64(minBytes) {
		return r.truncated(fmt.Sprintf("%d items with %d bytes left", n, left))
	}
	return nil
}

// Skip reads and discards one whole data item, nested ones included, up to
// maxDepth levels deep.
func (r *Reader) Skip(maxDepth int) error {
	if maxDepth <= 0 {
		return r.Errorf("nesting deeper than the limit")
	}
	h, err := r.Next()
	if err != nil {
		return err
	}
	switch h.Major {
	case MajorBytes, MajorText:
		_, err = r.Bytes(h.Arg)
		return err
	case MajorArray, MajorMap:
		n := h.Arg
		if h.Major == MajorMap {
			if n > math.MaxUint64/2 {
				return r.truncated("map too large")
			}
			n *= 2
		}
		if err := r.CheckCount(n, 1); err != nil {
			return err
		}
		for i := uint64(0); i < n; i++ {
			if err := r.Skip(maxDepth - 1); err != nil {
				return err
			}
		}
	case MajorTag:
		return r.Skip(maxDepth - 1)
	}
	return nil
}

// Text reads a text string and checks that it is valid UTF-8.
func (r *Reader) Text() (string, error) {
	h, err := r.Next()
	if err != nil {
		return "", err
	}
	if h.Major != MajorText {
		return "", r.Errorf("want a text string, have major type %d", h.Major)
	}
	b, err := r.Bytes(h.Arg)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", r.Errorf("text string is not valid UTF-8")
	}
	return string(b), nil
}

// Uint reads an unsigned integer.
func (r *Reader) Uint() (uint64, error) {
	h, err := r.Next()
	if err != nil {
		return 0, err
	}
	if h.Major != MajorUint {
		return 0, r.Errorf("want an unsigned integer, have major type %d", h.Major)
	}
	return h.Arg, nil
}

// ByteString reads a byte string, aliasing the Reader's data.
func (r *Reader) ByteString() ([]byte, error) {
	h, err := r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != MajorBytes {
		return nil, r.Errorf("want a byte string, have major type %d", h.Major)
	}
	return r.Bytes(h.Arg)
}

// HeadNumber returns the JavaScript number that an integer or float head
// stands for.
func HeadNumber(h Head) (float64, bool) {
	switch {
	case h.Major == MajorUint:
		return float64(h.Arg), true
	case h.Major == MajorNeg:
		return -1 - float64(h.Arg), true
	case h.Major == MajorSimple && h.IsFloat:
		return h.Float, true
	}
	return 0, false
}

// Bignum returns the integer of a tag 2 or 3 payload.
func Bignum(tag uint64, b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if tag == TagNegBignum {
		n.Add(n, big.NewInt(1))
		n.Neg(n)
	}
	return n
}

func float16ToFloat64(h uint16) float64 {
	sign := h >> 15
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	var f float64
	switch exp {
	case 0:
		f = math.Ldexp(frac, -24)
	case 31:
		if frac == 0 {
			f = math.Inf(1)
		} else {
			f = math.NaN()
		}
	default:
		f = math.Ldexp(frac+1024, exp-25)
	}
	if sign != 0 {
		f = -f
	}
	return f
}

// HeadLen returns the length of the head of a data item whose argument is
// n (an array's or a map's count, a string's length, an unsigned integer).
func HeadLen(n uint64) int {
	switch {
	case n < 24:
		return 1
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}
