package value

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

// Decoder unmarshals value documents with options that Unmarshal does not
// take. The zero Decoder is Unmarshal's. A Decoder holds no state between
// calls and is safe for concurrent use when its Blobs is.
type Decoder struct {
	// MaxDepth bounds nesting (see the MaxDepth constant); 0 means MaxDepth.
	MaxDepth int
	// Blobs, when set, resolves TagBlob references: each is replaced by
	// the value its blob's bytes decode to (a value document of its own).
	// A blob referred to more than once in one Decode call is fetched and
	// decoded once, and gives the same Go value each time. The Decoder
	// trusts Blobs to return the bytes of the hash it was asked for. When
	// Blobs is nil, references are returned as BlobRef values.
	Blobs blob.Source
}

// Unmarshal decodes one value document (docs/values.md) into the Go values
// that the package documentation lists. Malformed data gives a
// *SyntaxError; Unmarshal never panics and allocates at most a small
// multiple of len(data). The result does not alias data.
func Unmarshal(data []byte) (any, error) {
	return Decoder{}.Decode(context.Background(), data)
}

// Decode decodes one value document, as Unmarshal, resolving blob
// references through d.Blobs when it is set. ctx bounds the fetching of
// blobs.
func (dec Decoder) Decode(ctx context.Context, data []byte) (any, error) {
	d := decodeState{r: *cbor.NewReader(data), ctx: ctx, maxDepth: dec.MaxDepth}
	if d.maxDepth <= 0 {
		d.maxDepth = MaxDepth
	}
	if dec.Blobs != nil {
		d.blobs = &blobCache{src: dec.Blobs, done: map[blob.Hash]any{}, busy: map[blob.Hash]bool{}}
	}
	return d.document(1)
}

// SyntaxError reports a malformed value document: what is wrong, and at
// which byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
	// Err is the underlying error, such as cbor.ErrTruncated, if any.
	Err error
}

// Error says what is malformed and at which byte offset.
func (e *SyntaxError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("value: malformed data at byte %d: %s: %v", e.Offset, e.Msg, e.Err)
	}
	return fmt.Sprintf("value: malformed data at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *SyntaxError) Unwrap() error { return e.Err }

// decodeState is the decoding of one document.
type decodeState struct {
	r        cbor.Reader
	ctx      context.Context
	maxDepth int
	// objs holds every object decoded so far, by index, for TagRef.
	objs  objects
	blobs *blobCache
}

// objects is a table of decoded objects by index. It grows in fixed chunks
// rather than by copying, so that its memory stays 16 bytes an object.
type objects struct {
	chunks [][]any
	n      int
}

const objectChunk = 1024

func (o *objects) add(v any) int {
	c := o.n / objectChunk
	if c == len(o.chunks) {
		var chunk []any
		if c > 0 {
			chunk = make([]any, 0, objectChunk)
		}
		o.chunks = append(o.chunks, chunk)
	}
	o.chunks[c] = append(o.chunks[c], v)
	o.n++
	return o.n - 1
}

func (o *objects) get(i int) any { return o.chunks[i/objectChunk][i%objectChunk] }

func (o *objects) set(i int, v any) { o.chunks[i/objectChunk][i%objectChunk] = v }

// blobCache holds the blobs decoded in one Decode call.
type blobCache struct {
	src  blob.Source
	done map[blob.Hash]any
	busy map[blob.Hash]bool
}

// pending stands in objs for a Date, RegExp or view whose index is taken but
// whose value is not known yet. A reference to it is an error: none of them
// can hold itself.
type pending struct{}

func (d *decodeState) errorAt(offset int, format string, args ...any) error {
	return &SyntaxError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// document decodes one whole document and checks that nothing follows it.
// Malformed CBOR is reported as a *SyntaxError of this package.
func (d *decodeState) document(depth int) (any, error) {
	v, err := d.value(depth)
	if se, ok := err.(*cbor.SyntaxError); ok {
		return nil, &SyntaxError{Offset: se.Offset, Msg: se.Msg, Err: se.Err}
	}
	if err != nil {
		return nil, err
	}
	if n := d.r.Remaining(); n > 0 {
		return nil, d.errorAt(d.r.Offset(), "%d bytes after the end of the document", n)
	}
	return v, nil
}

// enter checks that an object may start at depth.
func (d *decodeState) enter(depth, offset int) error {
	if depth > d.maxDepth {
		return d.errorAt(offset, "nested deeper than %d levels", d.maxDepth)
	}
	return nil
}

func (d *decodeState) register(v any) { d.objs.add(v) }

func (d *decodeState) reserve() int { return d.objs.add(pending{}) }

// value decodes one item at depth.
func (d *decodeState) value(depth int) (any, error) {
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	switch h.Major {
	case cbor.MajorUint:
		return float64(h.Arg), nil
	case cbor.MajorNeg:
		return -1 - float64(h.Arg), nil
	case cbor.MajorBytes:
		if err := d.enter(depth, start); err != nil {
			return nil, err
		}
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return nil, err
		}
		buf := alignedBytes(len(b))
		copy(buf, b)
		v := any(ArrayBuffer(buf)) // boxed once, registered and returned
		d.register(v)
		return v, nil
	case cbor.MajorText:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, d.errorAt(start, "text string is not valid UTF-8")
		}
		return string(b), nil
	case cbor.MajorArray:
		if err := d.enter(depth, start); err != nil {
			return nil, err
		}
		if err := d.r.CheckCount(h.Arg, 1); err != nil {
			return nil, err
		}
		// The array is registered before its items, which may refer to it.
		s := make([]any, h.Arg)
		v := any(s)
		d.register(v)
		for i := range s {
			if s[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return v, nil
	case cbor.MajorMap:
		if err := d.enter(depth, start); err != nil {
			return nil, err
		}
		return d.object(h.Arg, depth)
	case cbor.MajorTag:
		return d.tagged(h.Arg, start, depth)
	}
	// cbor.MajorSimple.
	if h.IsFloat {
		return h.Float, nil
	}
	switch h.Arg {
	case cbor.SimpleFalse:
		return false, nil
	case cbor.SimpleTrue:
		return true, nil
	case cbor.SimpleNull:
		return nil, nil
	case cbor.SimpleUndefined:
		return Undefined{}, nil
	}
	return nil, d.errorAt(start, "unsupported simple value %d", h.Arg)
}

// object decodes a plain object of n properties.
func (d *decodeState) object(n uint64, depth int) (any, error) {
	if err := d.r.CheckCount(n, 2); err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	d.register(m)
	for range n {
		at := d.r.Offset()
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, d.errorAt(at, "duplicate key %q", k)
		}
		if m[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// str decodes a string: a text string, or TagUTF16 over UTF-16LE code units
// (a string holding lone surrogates, which Go holds as WTF-8).
func (d *decodeState) str() (string, error) {
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return "", err
	}
	switch {
	case h.Major == cbor.MajorText:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return "", err
		}
		if !utf8.Valid(b) {
			return "", d.errorAt(start, "text string is not valid UTF-8")
		}
		return string(b), nil
	case h.Major == cbor.MajorTag && h.Arg == TagUTF16:
		return d.utf16()
	}
	return "", d.errorAt(start, "want a string, have major type %d", h.Major)
}

// utf16 decodes the byte string inside TagUTF16.
func (d *decodeState) utf16() (string, error) {
	start := d.r.Offset()
	b, err := d.r.ByteString()
	if err != nil {
		return "", err
	}
	if len(b)%2 != 0 {
		return "", d.errorAt(start, "UTF-16 string of odd length %d", len(b))
	}
	return wtf8FromUTF16LE(b), nil
}

// tagged decodes the item of a tag whose head started at start. Tags of
// objects count as a level of nesting; the array or map inside the tag is
// part of the object and does not.
func (d *decodeState) tagged(tag uint64, start, depth int) (any, error) {
	switch tag {
	case TagPosBignum, TagNegBignum, TagRef, TagBlob, TagUTF16:
		// Not objects: no nesting to count.
	default:
		if err := d.enter(depth, start); err != nil {
			return nil, err
		}
	}
	switch tag {
	case TagEpochTime:
		idx := d.reserve()
		at := d.r.Offset()
		h, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		s, ok := cbor.HeadNumber(h)
		if !ok {
			return nil, d.errorAt(at, "a Date holds a number, have major type %d", h.Major)
		}
		v := dateOf(s)
		d.objs.set(idx, v)
		return v, nil
	case TagPosBignum, TagNegBignum:
		b, err := d.r.ByteString()
		if err != nil {
			return nil, err
		}
		return cbor.Bignum(tag, b), nil
	case TagSet:
		return d.set(depth)
	case TagMap:
		return d.jsMap(depth)
	case TagRegExp:
		idx := d.reserve()
		if err := d.arrayHead(2); err != nil {
			return nil, err
		}
		source, err := d.str()
		if err != nil {
			return nil, err
		}
		flags, err := d.str()
		if err != nil {
			return nil, err
		}
		v := any(RegExp{Source: source, Flags: flags})
		d.objs.set(idx, v)
		return v, nil
	case TagRef:
		i, err := d.r.Uint()
		if err != nil {
			return nil, err
		}
		if i >= uint64(d.objs.n) {
			return nil, d.errorAt(start, "reference to object %d, but only %d have started", i, d.objs.n)
		}
		v := d.objs.get(int(i))
		if _, ok := v.(pending); ok {
			return nil, d.errorAt(start, "reference to object %d from inside itself", i)
		}
		return v, nil
	case TagView:
		return d.view(start, depth)
	case TagError:
		return d.jsError(depth)
	case TagFunction:
		return d.function(depth)
	case TagBlob:
		at := d.r.Offset()
		b, err := d.r.ByteString()
		if err != nil {
			return nil, err
		}
		if len(b) != blob.Size {
			return nil, d.errorAt(at, "blob hash of %d bytes, want %d", len(b), blob.Size)
		}
		h := blob.Hash(b)
		if d.blobs == nil {
			return BlobRef(h), nil
		}
		return d.resolve(h, start, depth+1)
	case TagUTF16:
		return d.utf16()
	case TagWrapper:
		return d.wrapper(depth)
	case TagArray:
		return d.sparseArray(depth)
	}
	if k, bigEndian, ok := TypedKindOfTag(tag); ok {
		return d.typed(k, bigEndian)
	}
	return nil, d.errorAt(start, "unsupported tag %d", tag)
}

// arrayHead reads the head of the array inside a tag, which must have n
// items.
func (d *decodeState) arrayHead(n uint64) error {
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return err
	}
	if h.Major != cbor.MajorArray || h.Arg != n {
		return d.errorAt(start, "want an array of %d items", n)
	}
	return nil
}

// mapHead reads the head of the map inside a tag and returns its number of
// pairs, checked against the bytes left.
func (d *decodeState) mapHead() (uint64, error) {
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return 0, err
	}
	if h.Major != cbor.MajorMap {
		return 0, d.errorAt(start, "want a map, have major type %d", h.Major)
	}
	return h.Arg, d.r.CheckCount(h.Arg, 2)
}

func (d *decodeState) set(depth int) (any, error) {
	s := &Set{}
	d.register(s)
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray {
		return nil, d.errorAt(start, "a Set holds an array, have major type %d", h.Major)
	}
	if err := d.r.CheckCount(h.Arg, 1); err != nil {
		return nil, err
	}
	s.Values = make([]any, 0, h.Arg)
	seen := make(keySet)
	for range h.Arg {
		at := d.r.Offset()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if !seen.add(v) {
			return nil, d.errorAt(at, "duplicate Set value")
		}
		s.Values = append(s.Values, v)
	}
	return s, nil
}

func (d *decodeState) jsMap(depth int) (any, error) {
	m := &Map{}
	d.register(m)
	n, err := d.mapHead()
	if err != nil {
		return nil, err
	}
	m.Entries = make([]MapEntry, 0, n)
	seen := make(keySet)
	for range n {
		at := d.r.Offset()
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if !seen.add(k) {
			return nil, d.errorAt(at, "duplicate Map key")
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m.Entries = append(m.Entries, MapEntry{k, v})
	}
	return m, nil
}

func (d *decodeState) jsError(depth int) (any, error) {
	e := &Error{}
	d.register(e)
	n, err := d.mapHead()
	if err != nil {
		return nil, err
	}
	if n > 4 {
		return nil, d.errorAt(d.r.Offset(), "an Error has at most 4 fields, have %d", n)
	}
	var have [4]bool
	for range n {
		at := d.r.Offset()
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		var field int
		switch k {
		case "name":
			e.Name, err = d.str()
		case "message":
			field = 1
			e.Message, err = d.str()
		case "stack":
			field = 2
			e.Stack, err = d.str()
		case "cause":
			field = 3
			e.HasCause = true
			e.Cause, err = d.value(depth + 1)
		default:
			return nil, d.errorAt(at, "unknown Error field %q", k)
		}
		if have[field] {
			return nil, d.errorAt(at, "duplicate key %q", k)
		}
		have[field] = true
		if err != nil {
			return nil, err
		}
	}
	e.NoMessage = !have[1]
	return e, nil
}

// peek returns the head of the next item without reading it.
func (d *decodeState) peek() (cbor.Head, error) {
	r := d.r
	return r.Next()
}

// wrapper decodes TagWrapper over a primitive: a number, boolean, string or
// BigInt.
func (d *decodeState) wrapper(depth int) (any, error) {
	w := &Wrapper{}
	d.register(w)
	at := d.r.Offset()
	h, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case h.Major == cbor.MajorUint, h.Major == cbor.MajorNeg, h.Major == cbor.MajorText,
		h.Major == cbor.MajorSimple && (h.IsFloat || h.Arg == cbor.SimpleFalse || h.Arg == cbor.SimpleTrue),
		h.Major == cbor.MajorTag && (h.Arg == TagPosBignum || h.Arg == TagNegBignum || h.Arg == TagUTF16):
	default:
		return nil, d.errorAt(at, "a wrapper object holds a number, boolean, string or BigInt")
	}
	if w.Value, err = d.value(depth + 1); err != nil {
		return nil, err
	}
	return w, nil
}

// sparseArray decodes TagArray [length, map]: the map's keys are indexes
// below length (unsigned integers) or other property names (strings).
func (d *decodeState) sparseArray(depth int) (any, error) {
	a := &Array{}
	d.register(a)
	if err := d.arrayHead(2); err != nil {
		return nil, err
	}
	at := d.r.Offset()
	n, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	if n > math.MaxUint32 {
		return nil, d.errorAt(at, "array length %d is above 2^32-1", n)
	}
	a.Length = uint32(n)
	pairs, err := d.mapHead()
	if err != nil {
		return nil, err
	}
	for range pairs {
		at := d.r.Offset()
		h, err := d.peek()
		if err != nil {
			return nil, err
		}
		if h.Major == cbor.MajorUint {
			i, err := d.r.Uint()
			if err != nil {
				return nil, err
			}
			if i >= n {
				return nil, d.errorAt(at, "index %d of an array of length %d", i, n)
			}
			if a.Elements == nil {
				a.Elements = make(map[uint32]any)
			}
			if _, dup := a.Elements[uint32(i)]; dup {
				return nil, d.errorAt(at, "duplicate index %d", i)
			}
			if a.Elements[uint32(i)], err = d.value(depth + 1); err != nil {
				return nil, err
			}
			continue
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, isIndex := arrayIndex(k); isIndex {
			return nil, d.errorAt(at, "array property %q is an index, written as a string", k)
		}
		if k == "length" {
			return nil, d.errorAt(at, `an array's "length" is its first item, not a property`)
		}
		if a.Props == nil {
			a.Props = make(map[string]any)
		}
		if _, dup := a.Props[k]; dup {
			return nil, d.errorAt(at, "duplicate key %q", k)
		}
		if a.Props[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (d *decodeState) function(depth int) (any, error) {
	f := &Function{}
	d.register(f)
	start := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray || (h.Arg != 5 && h.Arg != 6) {
		return nil, d.errorAt(start, "want an array of 5 items (6 for a strict function)")
	}
	if f.Source, err = d.str(); err != nil {
		return nil, err
	}
	n, err := d.mapHead()
	if err != nil {
		return nil, err
	}
	f.Env = make(map[string]any, n)
	for range n {
		at := d.r.Offset()
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := f.Env[k]; dup {
			return nil, d.errorAt(at, "duplicate key %q", k)
		}
		if f.Env[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	if f.File, err = d.str(); err != nil {
		return nil, err
	}
	for _, p := range []*int{&f.Line, &f.Column} {
		at := d.r.Offset()
		n, err := d.r.Uint()
		if err != nil {
			return nil, err
		}
		if n > math.MaxInt32 {
			return nil, d.errorAt(at, "line or column %d out of range", n)
		}
		*p = int(n)
	}
	if h.Arg == 6 {
		at := d.r.Offset()
		s, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		if s.Major != cbor.MajorSimple || s.Arg != cbor.SimpleTrue {
			return nil, d.errorAt(at, "a function's sixth item is true (strict), or absent")
		}
		f.Strict = true
	}
	return f, nil
}

// typed decodes the byte string of an RFC 8746 typed array. The typed array
// takes one index and its buffer the next.
func (d *decodeState) typed(k TypedKind, bigEndian bool) (any, error) {
	start := d.r.Offset()
	raw, err := d.r.ByteString()
	if err != nil {
		return nil, err
	}
	size := k.Size()
	if len(raw)%size != 0 {
		return nil, d.errorAt(start, "%s of %d bytes is not a whole number of %d-byte elements", k, len(raw), size)
	}
	native := hostLittleEndian()
	b := alignedBytes(len(raw))
	if native && !bigEndian {
		copy(b, raw)
	} else {
		fillElements(b, raw, size, bigEndian)
	}
	v := viewAs(k, b)
	d.register(v)
	if native {
		d.register(ArrayBuffer(b))
	} else {
		d.register(ArrayBuffer(appendElements(make([]byte, 0, len(b)), unsafe.Pointer(unsafe.SliceData(b)), len(b)/size, size, false)))
	}
	return v, nil
}

// view decodes TagView [kind, buffer, byteOffset, length]. The view takes
// its index before its buffer does.
func (d *decodeState) view(start, depth int) (any, error) {
	idx := d.reserve()
	if err := d.arrayHead(4); err != nil {
		return nil, err
	}
	at := d.r.Offset()
	kind, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	k := TypedKind(kind)
	size := k.Size()
	if kind > math.MaxUint8 || size == 0 {
		return nil, d.errorAt(at, "unknown view kind %d", kind)
	}
	at = d.r.Offset()
	bv, err := d.value(depth + 1)
	if err != nil {
		return nil, err
	}
	buf, ok := bv.(ArrayBuffer)
	if !ok {
		return nil, d.errorAt(at, "a view's buffer must be an ArrayBuffer, have %T", bv)
	}
	off, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	n, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	if off > uint64(len(buf)) || n > (uint64(len(buf))-off)/uint64(size) {
		return nil, d.errorAt(start, "%s of %d elements at byte %d runs past its %d-byte buffer", k, n, off, len(buf))
	}
	if off%uint64(size) != 0 {
		return nil, d.errorAt(start, "%s at byte %d: the offset is not a multiple of %d", k, off, size)
	}
	seg := buf[off : off+n*uint64(size)]
	var v any
	if len(seg) > 0 && hostLittleEndian() && uintptr(unsafe.Pointer(&seg[0]))%uintptr(size) == 0 {
		v = viewAs(k, seg[:len(seg):len(seg)]) // alias the buffer
	} else {
		b := alignedBytes(len(seg))
		fillElements(b, seg, size, false)
		v = viewAs(k, b)
	}
	d.objs.set(idx, v)
	return v, nil
}

// resolve decodes the blob h as a document of its own, once per Decode.
// Each blob inside a blob counts a level, so that a chain of blobs that
// refer to one another cannot recurse without bound.
func (d *decodeState) resolve(h blob.Hash, start, depth int) (any, error) {
	if err := d.enter(depth, start); err != nil {
		return nil, err
	}
	c := d.blobs
	if v, ok := c.done[h]; ok {
		return v, nil
	}
	if c.busy[h] {
		return nil, fmt.Errorf("value: blob %s refers to itself", h.Short())
	}
	data, err := c.src.Blob(d.ctx, h)
	if err != nil {
		return nil, fmt.Errorf("value: blob %s: %w", h.Short(), err)
	}
	c.busy[h] = true
	sub := decodeState{r: *cbor.NewReader(data), ctx: d.ctx, maxDepth: d.maxDepth, blobs: c}
	v, err := sub.document(depth)
	delete(c.busy, h)
	if err != nil {
		return nil, fmt.Errorf("value: blob %s: %w", h.Short(), err)
	}
	c.done[h] = v
	return v, nil
}

// dateOf returns the Date of tag 1's number of seconds: time.Time in UTC
// at a whole millisecond, or InvalidDate.
func dateOf(sec float64) any {
	ms := DateMillis(sec)
	if ms != ms {
		return InvalidDate{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// alignedBytes allocates n bytes aligned for any typed array element.
func alignedBytes(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

// fillElements stores the elements of raw (little- or big-endian, size
// bytes each) into dst in the host's order, one by one. It is the portable
// path; little-endian hosts copy instead.
func fillElements(dst, raw []byte, size int, bigEndian bool) {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	if size == 1 {
		copy(dst, raw)
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(dst))
	for i := 0; i+size <= len(raw); i += size {
		q := unsafe.Add(p, i)
		switch size {
		case 2:
			*(*uint16)(q) = order.Uint16(raw[i:])
		case 4:
			*(*uint32)(q) = order.Uint32(raw[i:])
		default:
			*(*uint64)(q) = order.Uint64(raw[i:])
		}
	}
}

// viewAs returns b as a typed slice of kind k, sharing its memory. b must be
// aligned for k's elements and hold a whole number of them.
func viewAs(k TypedKind, b []byte) any {
	n := len(b) / k.Size()
	p := unsafe.Pointer(unsafe.SliceData(b))
	switch k {
	case Uint8:
		return b
	case Uint8Clamped:
		return Uint8ClampedArray(b)
	case KindDataView:
		return DataView(b)
	case Int8:
		return typedSlice[int8](p, n)
	case Uint16:
		return typedSlice[uint16](p, n)
	case Int16:
		return typedSlice[int16](p, n)
	case Uint32:
		return typedSlice[uint32](p, n)
	case Int32:
		return typedSlice[int32](p, n)
	case BigUint64:
		return typedSlice[uint64](p, n)
	case BigInt64:
		return typedSlice[int64](p, n)
	case Float32:
		return typedSlice[float32](p, n)
	default:
		return typedSlice[float64](p, n)
	}
}

func typedSlice[T any](p unsafe.Pointer, n int) []T {
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(p), n)
}

// wtf8FromUTF16LE returns the Go string of UTF-16LE code units: pairs and
// other characters as UTF-8, lone surrogates in their three-byte form
// (WTF-8), which Marshal turns back into the same code units.
func wtf8FromUTF16LE(b []byte) string {
	out := make([]byte, 0, len(b)*3/2)
	for i := 0; i+1 < len(b); i += 2 {
		u := rune(b[i]) | rune(b[i+1])<<8
		switch {
		case u < 0xd800 || u > 0xdfff:
			out = utf8.AppendRune(out, u)
		case u <= 0xdbff && i+3 < len(b):
			lo := rune(b[i+2]) | rune(b[i+3])<<8
			if lo >= 0xdc00 && lo <= 0xdfff {
				out = utf8.AppendRune(out, utf16.DecodeRune(u, lo))
				i += 2
				continue
			}
			out = append(out, 0xe0|byte(u>>12), 0x80|byte(u>>6)&0x3f, 0x80|byte(u)&0x3f)
		default:
			out = append(out, 0xe0|byte(u>>12), 0x80|byte(u>>6)&0x3f, 0x80|byte(u)&0x3f)
		}
	}
	return string(out)
}
