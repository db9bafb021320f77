package jsvalue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/value"
)

// funcPos is where a captured function's source starts in its file, and
// whether it is strict code there.
type funcPos struct {
	file         string
	line, column int
	strict       bool
}

// BlobResolver gives the value of a blob that a document refers to
// (value.BlobRef), in one runtime.
type BlobResolver interface {
	// BlobValue returns the value of blob h, decoded in the runtime.
	BlobValue(h blob.Hash) (goja.Value, error)
}

// Decoder reads value documents into goja values of one runtime. It is used
// on the runtime's goroutine.
type Decoder struct {
	rt    *goja.Runtime
	in    *Intrinsics
	fns   *Functions
	blobs BlobResolver
	r     *cbor.Reader
	objs  []goja.Value
	lazy  []bool // objs[i] is an array not created yet
	// pending are the indexes of functions whose free variables are being
	// decoded on the fast path.
	pending []int
	depth   int
	// owned says the document's bytes are the decoder's
	// (DecodeOwnedValue): buffers are made over them.
	owned bool
}

// NewDecoder returns a decoder into rt, whose built-ins are in. fns makes
// the functions a document holds, blobs gives the values of the blobs it
// refers to; either may be nil, and then a document holding such an item
// does not decode.
func NewDecoder(rt *goja.Runtime, in *Intrinsics, fns *Functions, blobs BlobResolver) *Decoder {
	return &Decoder{rt: rt, in: in, fns: fns, blobs: blobs}
}

// DecodeValue decodes one whole document.
func (d *Decoder) DecodeValue(data []byte) (goja.Value, error) {
	d.r = cbor.NewReader(data)
	d.objs = d.objs[:0]
	d.lazy = d.lazy[:0]
	d.depth = 0
	d.pending = d.pending[:0]
	v, err := d.decode()
	if err != nil {
		return nil, err
	}
	if d.r.Remaining() != 0 {
		return nil, d.r.Errorf("%d bytes after the end of the value", d.r.Remaining())
	}
	return v, nil
}

// DecodeOwnedValue decodes one whole document, as DecodeValue does, from
// bytes that the caller gives to the decoder: the ArrayBuffers it makes
// (those of typed arrays and DataViews too) are made over data's bytes
// rather than over copies, so that a large typed array is in memory once.
// The caller must not use data again, nor give it to anything else: the
// values' writes go to it. A buffer that must be changed first (one of a
// big-endian typed array) or that could be decoded twice (inside a
// function's free variables, which a cyclic function decodes again) is
// still copied.
func (d *Decoder) DecodeOwnedValue(data []byte) (goja.Value, error) {
	d.owned = true
	defer func() { d.owned = false }()
	return d.DecodeValue(data)
}

// buffer returns the bytes for a new ArrayBuffer holding b, a byte string
// of the document: b itself when the document is the decoder's and b is
// decoded once, else a copy.
func (d *Decoder) buffer(b []byte, mustChange bool) []byte {
	if d.owned && !mustChange && len(d.pending) == 0 {
		return b[:len(b):len(b)]
	}
	return append([]byte(nil), b...)
}

// DecodeArgs decodes a document that must be an array and returns its
// elements, for argument lists. The array itself is made only if something
// inside refers to it.
func (d *Decoder) DecodeArgs(data []byte) ([]goja.Value, error) {
	d.r = cbor.NewReader(data)
	d.objs = d.objs[:0]
	d.lazy = d.lazy[:0]
	d.depth = 0
	d.pending = d.pending[:0]
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray {
		return nil, d.r.Errorf("arguments are not an array")
	}
	items, _, err := d.arrayItems(h.Arg)
	if err != nil {
		return nil, err
	}
	if d.r.Remaining() != 0 {
		return nil, d.r.Errorf("%d bytes after the end of the value", d.r.Remaining())
	}
	return items, nil
}

func (d *Decoder) reserve(v goja.Value) int {
	d.objs = append(d.objs, v)
	d.lazy = append(d.lazy, false)
	return len(d.objs) - 1
}

func (d *Decoder) decode() (goja.Value, error) {
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	switch h.Major {
	case cbor.MajorUint:
		if h.Arg <= math.MaxInt64 {
			return d.rt.ToValue(int64(h.Arg)), nil
		}
		return d.rt.ToValue(float64(h.Arg)), nil
	case cbor.MajorNeg:
		if h.Arg < math.MaxInt64 {
			return d.rt.ToValue(-1 - int64(h.Arg)), nil
		}
		return d.rt.ToValue(-1 - float64(h.Arg)), nil
	case cbor.MajorBytes:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return nil, err
		}
		buf := d.rt.ToValue(d.rt.NewArrayBuffer(d.buffer(b, false)))
		d.reserve(buf)
		return buf, nil
	case cbor.MajorText:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, d.r.Errorf("text string is not valid UTF-8")
		}
		return d.rt.ToValue(string(b)), nil
	case cbor.MajorArray:
		return d.array(h.Arg)
	case cbor.MajorMap:
		return d.object(h.Arg)
	case cbor.MajorTag:
		return d.tagged(h.Arg)
	default: // MajorSimple
		if h.IsFloat {
			return d.rt.ToValue(h.Float), nil
		}
		switch h.Arg {
		case cbor.SimpleFalse:
			return d.rt.ToValue(false), nil
		case cbor.SimpleTrue:
			return d.rt.ToValue(true), nil
		case cbor.SimpleNull:
			return goja.Null(), nil
		case cbor.SimpleUndefined:
			return goja.Undefined(), nil
		}
		return nil, d.r.Errorf("unknown simple value %d", h.Arg)
	}
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > MaxNesting {
		return d.r.Errorf("nested more than %d levels deep", MaxNesting)
	}
	return nil
}

func (d *Decoder) array(n uint64) (goja.Value, error) {
	items, idx, err := d.arrayItems(n)
	if err != nil {
		return nil, err
	}
	if arr := d.objs[idx]; arr != nil {
		return arr, nil
	}
	vals := make([]any, len(items))
	for i, v := range items {
		vals[i] = v
	}
	arr := d.rt.NewArray(vals...)
	d.objs[idx] = arr
	return arr, nil
}

// arrayItems decodes the n items of an array and returns them with the
// array's object index. The array object is made only if an item refers to
// it; then it is filled here, and d.objs[idx] holds it.
func (d *Decoder) arrayItems(n uint64) ([]goja.Value, int, error) {
	if err := d.enter(); err != nil {
		return nil, 0, err
	}
	defer func() { d.depth-- }()
	if err := d.r.CheckCount(n, 1); err != nil {
		return nil, 0, err
	}
	idx := d.reserve(nil)
	d.lazy[idx] = true
	items := make([]goja.Value, n)
	for i := range items {
		v, err := d.decode()
		if err != nil {
			return nil, 0, err
		}
		items[i] = v
	}
	d.lazy[idx] = false
	if arr := d.objs[idx]; arr != nil {
		o := arr.(*goja.Object)
		for i, v := range items {
			if err := o.Set(Index(i), v); err != nil {
				return nil, 0, err
			}
		}
	}
	return items, idx, nil
}

func (d *Decoder) object(n uint64) (goja.Value, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	if err := d.r.CheckCount(n, 2); err != nil {
		return nil, err
	}
	o := d.rt.NewObject()
	d.reserve(o)
	var seen map[string]struct{}
	if n > 1 {
		seen = make(map[string]struct{}, n)
	}
	for i := uint64(0); i < n; i++ {
		if err := d.property(o, seen); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// property reads one key and its value into o. seen holds the keys read
// so far, as WTF-8 (nil when o has one property only).
func (d *Decoder) property(o *goja.Object, seen map[string]struct{}) error {
	k, jsKey, err := d.key()
	if err != nil {
		return err
	}
	if seen != nil {
		if _, dup := seen[k]; dup {
			return d.r.Errorf("an object holds the key %q twice", k)
		}
		seen[k] = struct{}{}
	}
	v, err := d.decode()
	if err != nil {
		return err
	}
	if jsKey != nil {
		_, err = d.in.DefineData(nil, o, jsKey, v)
		return err
	}
	return o.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
}

// key reads an object's property name: a text string, or a TagUTF16 one.
// A name that holds lone surrogates is also returned as a JavaScript
// string, jsKey, since a Go string cannot hold it; the Go string is then
// its WTF-8 form, to tell keys apart.
func (d *Decoder) key() (k string, jsKey goja.Value, err error) {
	h, err := d.r.Next()
	if err != nil {
		return "", nil, err
	}
	switch {
	case h.Major == cbor.MajorText:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return "", nil, err
		}
		if !utf8.Valid(b) {
			return "", nil, d.r.Errorf("text string is not valid UTF-8")
		}
		return string(b), nil, nil
	case h.Major == cbor.MajorTag && h.Arg == value.TagUTF16:
		b, err := d.r.ByteString()
		if err != nil {
			return "", nil, err
		}
		units, err := value.DecodeUTF16(b)
		if err != nil {
			return "", nil, d.r.Errorf("%v", err)
		}
		if s, ok := validUTF16(units); ok {
			return s, nil, nil
		}
		return wtf8(units), goja.StringFromUTF16(units), nil
	}
	return "", nil, d.r.Errorf("object key of major type %d; keys are strings", h.Major)
}

// validUTF16 returns the string of units when they hold no lone surrogate.
func validUTF16(units []uint16) (string, bool) {
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u < 0xd800 || u > 0xdfff:
		case u <= 0xdbff && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff:
			i++
		default:
			return "", false
		}
	}
	return string(utf16.Decode(units)), true
}

// wtf8 returns units as WTF-8: UTF-8, with each lone surrogate in the
// three-byte form UTF-8 leaves out.
func wtf8(units []uint16) string {
	var b []byte
	for i := 0; i < len(units); i++ {
		u := rune(units[i])
		if u >= 0xd800 && u <= 0xdbff && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
			b = utf8.AppendRune(b, utf16.DecodeRune(u, rune(units[i+1])))
			i++
			continue
		}
		if u >= 0xd800 && u <= 0xdfff {
			b = append(b, 0xe0|byte(u>>12), 0x80|byte(u>>6)&0x3f, 0x80|byte(u)&0x3f)
			continue
		}
		b = utf8.AppendRune(b, u)
	}
	return string(b)
}

// str reads a string item: a text string, or a TagUTF16 one.
func (d *Decoder) str() (goja.Value, error) {
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	switch {
	case h.Major == cbor.MajorText:
		b, err := d.r.Bytes(h.Arg)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, d.r.Errorf("text string is not valid UTF-8")
		}
		return d.rt.ToValue(string(b)), nil
	case h.Major == cbor.MajorTag && h.Arg == value.TagUTF16:
		return d.utf16()
	}
	return nil, d.r.Errorf("want a string, have major type %d", h.Major)
}

func (d *Decoder) utf16() (goja.Value, error) {
	b, err := d.r.ByteString()
	if err != nil {
		return nil, err
	}
	units, err := value.DecodeUTF16(b)
	if err != nil {
		return nil, d.r.Errorf("%v", err)
	}
	return goja.StringFromUTF16(units), nil
}

func (d *Decoder) tagged(tag uint64) (goja.Value, error) {
	// Objects count as levels of nesting; BigInts, references, UTF-16
	// strings and blob references do not (docs/values.md, Limits).
	switch tag {
	case value.TagRef, value.TagPosBignum, value.TagNegBignum, value.TagUTF16, value.TagBlob:
	default:
		if err := d.enter(); err != nil {
			return nil, err
		}
		defer func() { d.depth-- }()
	}
	switch {
	case tag == value.TagRef:
		idx, err := d.r.Uint()
		if err != nil {
			return nil, err
		}
		if idx >= uint64(len(d.objs)) {
			return nil, d.r.Errorf("reference to object %d of %d", idx, len(d.objs))
		}
		if v := d.objs[idx]; v != nil {
			return v, nil
		}
		if d.lazy[idx] {
			arr := d.rt.NewArray()
			d.objs[idx] = arr
			return arr, nil
		}
		for _, p := range d.pending {
			if uint64(p) == idx {
				return nil, &cycleError{fn: p}
			}
		}
		return nil, d.r.Errorf("reference to object %d, which is still being decoded", idx)
	case tag == value.TagPosBignum || tag == value.TagNegBignum:
		b, err := d.r.ByteString()
		if err != nil {
			return nil, err
		}
		return d.rt.ToValue(cbor.Bignum(tag, b)), nil
	case tag == value.TagUTF16:
		return d.utf16()
	case tag == value.TagEpochTime:
		idx := d.reserve(nil)
		h, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		sec, ok := cbor.HeadNumber(h)
		if !ok {
			return nil, d.r.Errorf("a date holds major type %d, not a number", h.Major)
		}
		ms := value.DateMillis(sec)
		date, err := d.in.NewDate(nil, d.rt.ToValue(ms))
		if err != nil {
			return nil, err
		}
		d.objs[idx] = date
		return date, nil
	case tag == value.TagRegExp:
		idx := d.reserve(nil)
		h, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		if h.Major != cbor.MajorArray || h.Arg != 2 {
			return nil, d.r.Errorf("a RegExp is [source, flags]")
		}
		src, err := d.str()
		if err != nil {
			return nil, err
		}
		flags, err := d.str()
		if err != nil {
			return nil, err
		}
		re, err := d.in.NewRegExp(nil, src, flags)
		if err != nil {
			return nil, d.r.Errorf("bad RegExp /%s/%s: %v", src, flags, err)
		}
		d.objs[idx] = re
		return re, nil
	case tag == value.TagSet:
		h, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		if h.Major != cbor.MajorArray {
			return nil, d.r.Errorf("a Set holds an array")
		}
		if err := d.r.CheckCount(h.Arg, 1); err != nil {
			return nil, err
		}
		set, err := d.in.NewSet(nil)
		if err != nil {
			return nil, err
		}
		d.reserve(set)
		for i := uint64(0); i < h.Arg; i++ {
			v, err := d.decode()
			if err != nil {
				return nil, err
			}
			if _, err := d.in.SetAdd(set, v); err != nil {
				return nil, err
			}
		}
		if size := set.Get("size"); size != nil && uint64(size.ToInteger()) != h.Arg {
			return nil, d.r.Errorf("a Set holds equal values")
		}
		return set, nil
	case tag == value.TagMap:
		h, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		if h.Major != cbor.MajorMap {
			return nil, d.r.Errorf("a Map holds a map")
		}
		if err := d.r.CheckCount(h.Arg, 2); err != nil {
			return nil, err
		}
		m, err := d.in.NewMap(nil)
		if err != nil {
			return nil, err
		}
		d.reserve(m)
		for i := uint64(0); i < h.Arg; i++ {
			k, err := d.decode()
			if err != nil {
				return nil, err
			}
			v, err := d.decode()
			if err != nil {
				return nil, err
			}
			if _, err := d.in.MapSet(m, k, v); err != nil {
				return nil, err
			}
		}
		if size := m.Get("size"); size != nil && uint64(size.ToInteger()) != h.Arg {
			return nil, d.r.Errorf("a Map holds equal keys")
		}
		return m, nil
	case tag == value.TagError:
		return d.errorObject()
	case tag == value.TagWrapper:
		return d.wrapper()
	case tag == value.TagArray:
		return d.sparseArray()
	case tag == value.TagView:
		return d.view()
	case tag == value.TagFunction:
		return d.function()
	case tag == value.TagBlob:
		b, err := d.r.ByteString()
		if err != nil {
			return nil, err
		}
		h, err := blob.FromBytes(b)
		if err != nil {
			return nil, d.r.Errorf("%v", err)
		}
		if d.blobs == nil {
			return nil, fmt.Errorf("engine: value refers to blob %s, and no blobs are available", h.Short())
		}
		return d.blobs.BlobValue(h)
	case tag >= 64 && tag <= 87:
		return d.typedArray(tag)
	}
	return nil, d.r.Errorf("unknown tag %d", tag)
}

// wrapper decodes a wrapper object, TagWrapper over its primitive.
func (d *Decoder) wrapper() (goja.Value, error) {
	idx := d.reserve(nil)
	r := *d.r
	h, err := r.Next()
	if err != nil {
		return nil, err
	}
	switch {
	case h.Major == cbor.MajorUint, h.Major == cbor.MajorNeg, h.Major == cbor.MajorText,
		h.Major == cbor.MajorSimple && (h.IsFloat || h.Arg == cbor.SimpleFalse || h.Arg == cbor.SimpleTrue),
		h.Major == cbor.MajorTag && (h.Arg == value.TagPosBignum || h.Arg == value.TagNegBignum || h.Arg == value.TagUTF16):
	default:
		return nil, d.r.Errorf("a wrapper object holds a number, boolean, string or BigInt")
	}
	v, err := d.decode()
	if err != nil {
		return nil, err
	}
	o := v.ToObject(d.rt)
	d.objs[idx] = o
	return o, nil
}

// sparseArray decodes an array with holes or non-index properties:
// TagArray [length, map of index or name to value].
func (d *Decoder) sparseArray() (goja.Value, error) {
	arr := d.rt.NewArray()
	d.reserve(arr)
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray || h.Arg != 2 {
		return nil, d.r.Errorf("an array with holes is [length, map]")
	}
	n, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	if n > math.MaxUint32 {
		return nil, d.r.Errorf("array length %d is above 2^32-1", n)
	}
	if err := arr.Set("length", n); err != nil {
		return nil, err
	}
	h, err = d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorMap {
		return nil, d.r.Errorf("an array with holes is [length, map]")
	}
	if err := d.r.CheckCount(h.Arg, 2); err != nil {
		return nil, err
	}
	seen := make(map[string]struct{}, h.Arg)
	for i := uint64(0); i < h.Arg; i++ {
		r := *d.r
		kh, err := r.Next()
		if err != nil {
			return nil, err
		}
		if kh.Major != cbor.MajorUint {
			if kh.Major == cbor.MajorText && kh.Arg <= 10 {
				if b, err := r.Bytes(kh.Arg); err == nil {
					if string(b) == "length" {
						return nil, d.r.Errorf(`an array's "length" is its first item, not a property`)
					}
					if _, isIndex := value.ArrayIndex(string(b)); isIndex {
						return nil, d.r.Errorf("array property %q is an index, written as a string", b)
					}
				}
			}
			if err := d.property(arr, seen); err != nil {
				return nil, err
			}
			continue
		}
		*d.r = r
		if kh.Arg >= n {
			return nil, d.r.Errorf("index %d of an array of length %d", kh.Arg, n)
		}
		k := Index(int(kh.Arg))
		if _, dup := seen[k]; dup {
			return nil, d.r.Errorf("an array holds index %d twice", kh.Arg)
		}
		seen[k] = struct{}{}
		v, err := d.decode()
		if err != nil {
			return nil, err
		}
		if err := arr.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
			return nil, err
		}
	}
	return arr, nil
}

// typedArray decodes an RFC 8746 typed array: the view takes one index and
// its buffer the next.
func (d *Decoder) typedArray(tag uint64) (goja.Value, error) {
	kind, bigEndian, ok := value.TypedKindOfTag(tag)
	if !ok {
		return nil, d.r.Errorf("typed array tag %d is not supported", tag)
	}
	vi := d.reserve(nil)
	bi := d.reserve(nil)
	b, err := d.r.ByteString()
	if err != nil {
		return nil, err
	}
	size := kind.Size()
	if len(b)%size != 0 {
		return nil, d.r.Errorf("%s of %d bytes is not a whole number of %d-byte elements", kind, len(b), size)
	}
	data := d.buffer(b, bigEndian)
	if bigEndian {
		swapBytes(data, size)
	}
	buf := d.rt.ToValue(d.rt.NewArrayBuffer(data))
	d.objs[bi] = buf
	ta, err := d.in.TypedCtors[kind.String()](nil, buf)
	if err != nil {
		return nil, err
	}
	d.objs[vi] = ta
	return ta, nil
}

func (d *Decoder) view() (goja.Value, error) {
	vi := d.reserve(nil)
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray || h.Arg != 4 {
		return nil, d.r.Errorf("a view is [kind, buffer, byteOffset, length]")
	}
	k, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	kind := value.TypedKind(k)
	size := kind.Size()
	if k > 255 || size == 0 {
		return nil, d.r.Errorf("unknown view kind %d", k)
	}
	bufv, err := d.decode()
	if err != nil {
		return nil, err
	}
	bufo, ok := bufv.(*goja.Object)
	if !ok || bufo.ExportType() != typeArrayBuffer {
		return nil, d.r.Errorf("a view's buffer is not an ArrayBuffer")
	}
	off, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	n, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	total := uint64(len(bufo.Export().(goja.ArrayBuffer).Bytes()))
	if off > total || n > (total-off)/uint64(size) || off%uint64(size) != 0 {
		return nil, d.r.Errorf("%s at byte %d of %d elements does not fit a buffer of %d bytes", kind, off, n, total)
	}
	var v *goja.Object
	if kind == value.KindDataView {
		v, err = d.in.NewDataView(nil, bufo, d.rt.ToValue(off), d.rt.ToValue(n))
	} else {
		v, err = d.in.TypedCtors[kind.String()](nil, bufo, d.rt.ToValue(off), d.rt.ToValue(n))
	}
	if err != nil {
		return nil, err
	}
	d.objs[vi] = v
	return v, nil
}

func (d *Decoder) errorObject() (goja.Value, error) {
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorMap || h.Arg > 4 {
		return nil, d.r.Errorf("an Error holds a map of name, message, stack and cause")
	}
	e, err := d.in.ErrorCtors["Error"](nil)
	if err != nil {
		return nil, err
	}
	d.reserve(e)
	hidden := func(k string, v goja.Value) error {
		return e.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	var seen [4]string
	for i := uint64(0); i < h.Arg; i++ {
		k, err := d.r.Text()
		if err != nil {
			return nil, err
		}
		for _, s := range seen[:i] {
			if s == k {
				return nil, d.r.Errorf("an Error holds %q twice", k)
			}
		}
		seen[i] = k
		switch k {
		case "name":
			nv, err := d.str()
			if err != nil {
				return nil, err
			}
			name := nv.String()
			if proto, ok := d.in.ErrorProtos[name]; ok {
				if name != "Error" {
					if err := e.SetPrototype(proto); err != nil {
						return nil, err
					}
				}
			} else if err := hidden("name", nv); err != nil {
				return nil, err
			}
		case "message", "stack":
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			if err := hidden(k, s); err != nil {
				return nil, err
			}
		case "cause":
			c, err := d.decode()
			if err != nil {
				return nil, err
			}
			if err := hidden(k, c); err != nil {
				return nil, err
			}
		default:
			return nil, d.r.Errorf("unknown Error field %q", k)
		}
	}
	if !slices.Contains(seen[:h.Arg], "stack") {
		// Not the stack of this decoding: none.
		if err := hidden("stack", d.rt.ToValue("")); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// cycleError reports, during the fast path of a function's decoding, that
// its free variables refer back to it (index fn) through something other
// than a direct self-reference; the function then takes the slow path.
type cycleError struct{ fn int }

func (e *cycleError) Error() string { return "engine: cyclic function reference" }

// function decodes a captured function. Fast path: decode the free
// variables first, then make the function with them as parameters of its
// factory; a free variable that is the function itself becomes a binding
// the factory sets. Slow path, when a free variable refers back to the
// function in a deeper way (mutual recursion): make the function first,
// with a setter for its variables, and decode them after.
func (d *Decoder) function() (goja.Value, error) {
	idx := d.reserve(nil)
	h, err := d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorArray || (h.Arg != 5 && h.Arg != 6) {
		return nil, d.r.Errorf("a function is [source, env, file, line, column], and true after them if strict")
	}
	strict := h.Arg == 6
	src, err := d.r.Text()
	if err != nil {
		return nil, err
	}
	if d.fns == nil {
		return nil, fmt.Errorf("engine: functions cannot be received here")
	}
	// Read the names and the position first, from a copy of the reader.
	envStart := *d.r
	h, err = d.r.Next()
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorMap {
		return nil, d.r.Errorf("a function's env is a map")
	}
	if err := d.r.CheckCount(h.Arg, 2); err != nil {
		return nil, err
	}
	names := make([]string, h.Arg)
	for i := range names {
		if names[i], err = d.r.Text(); err != nil {
			return nil, err
		}
		if err := d.r.Skip(MaxNesting - d.depth); err != nil {
			return nil, err
		}
	}
	file, err := d.r.Text()
	if err != nil {
		return nil, err
	}
	line, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	col, err := d.r.Uint()
	if err != nil {
		return nil, err
	}
	if strict {
		s, err := d.r.Next()
		if err != nil {
			return nil, err
		}
		if s.Major != cbor.MajorSimple || s.Arg != cbor.SimpleTrue {
			return nil, d.r.Errorf("a function's sixth item is true (strict), or absent")
		}
	}
	end := *d.r
	pos := funcPos{file: file, line: int(min(line, math.MaxInt32)), column: int(min(col, math.MaxInt32)), strict: strict}

	// Fast path.
	mark := len(d.objs)
	*d.r = envStart
	if _, err := d.r.Next(); err != nil {
		return nil, err
	}
	d.pending = append(d.pending, idx)
	vals := make([]goja.Value, len(names))
	self := make([]bool, len(names))
	var cyc *cycleError
	for i := range names {
		if _, err = d.r.Text(); err != nil {
			break
		}
		if d.selfRef(idx) {
			self[i] = true
			continue
		}
		if vals[i], err = d.decode(); err != nil {
			break
		}
	}
	d.pending = d.pending[:len(d.pending)-1]
	if err == nil {
		fn, err := d.fns.makeFunction(src, names, self, vals, pos)
		if err != nil {
			return nil, err
		}
		d.objs[idx] = fn
		*d.r = end
		return fn, nil
	}
	if !errors.As(err, &cyc) || cyc.fn != idx {
		return nil, err
	}

	// Slow path: forget what the fast path decoded, make the function,
	// then decode its variables, which may now refer to it.
	d.objs, d.lazy = d.objs[:mark], d.lazy[:mark]
	fn, setEnv, err := d.fns.makeCyclicFunction(src, names, pos)
	if err != nil {
		return nil, err
	}
	d.objs[idx] = fn
	*d.r = envStart
	if _, err := d.r.Next(); err != nil {
		return nil, err
	}
	for i := range vals {
		if _, err := d.r.Text(); err != nil {
			return nil, err
		}
		if vals[i], err = d.decode(); err != nil {
			return nil, err
		}
	}
	*d.r = end
	if err := setEnv(vals); err != nil {
		return nil, err
	}
	return fn, nil
}

// selfRef reports whether the next item is a reference to object idx, and
// if so reads it.
func (d *Decoder) selfRef(idx int) bool {
	r := *d.r
	h, err := r.Next()
	if err != nil || h.Major != cbor.MajorTag || h.Arg != value.TagRef {
		return false
	}
	n, err := r.Uint()
	if err != nil || n != uint64(idx) {
		return false
	}
	*d.r = r
	return true
}

func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for j := 0; j < size/2; j++ {
			b[i+j], b[i+size-1-j] = b[i+size-1-j], b[i+j]
		}
	}
}
