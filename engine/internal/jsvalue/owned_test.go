package jsvalue

import (
	"testing"
	"unsafe"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/cbor"
)

// within reports whether b's bytes lie inside doc's.
func within(b, doc []byte) bool {
	if len(b) == 0 || len(doc) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&doc[0]))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(doc))
}

func bufferOf(t *testing.T, v goja.Value) []byte {
	t.Helper()
	o := v.(*goja.Object)
	buf := o.Get("buffer")
	if buf == nil || goja.IsUndefined(buf) {
		return o.Export().(goja.ArrayBuffer).Bytes()
	}
	return buf.Export().(goja.ArrayBuffer).Bytes()
}

// DecodeOwnedValue makes a typed array's buffer over the document's own
// bytes (a large result is in memory once); DecodeValue copies them.
func TestDecodeOwnedValue_TypedArrayOverTheBytes(t *testing.T) {
	rl := newTestRuntime(t)
	src := runJS(t, rl, `const a = new Float64Array(1000); a[0] = 1.5; a[999] = -2; a`)
	doc := encodeJS(t, rl, src)

	copied, err := rl.dec.DecodeValue(doc)
	require.NoError(t, err)
	assert.False(t, within(bufferOf(t, copied), doc), "DecodeValue copies")

	v, err := rl.dec.DecodeOwnedValue(doc)
	require.NoError(t, err)
	buf := bufferOf(t, v)
	require.Len(t, buf, 8000)
	assert.True(t, within(buf, doc), "the Float64Array's buffer is the document's bytes")
	assert.Equal(t, 8000, cap(buf), "the buffer cannot grow into the bytes after it")
	checkJS(t, rl, v, `(a) => a instanceof Float64Array && a.length === 1000 && a[0] === 1.5 && a[999] === -2 || 'wrong: ' + a[0] + ' ' + a[999]`)
	checkJS(t, rl, copied, `(a) => a[0] === 1.5 && a[999] === -2`)

	// A later plain decode on the same decoder copies again.
	again, err := rl.dec.DecodeValue(doc)
	require.NoError(t, err)
	assert.False(t, within(bufferOf(t, again), doc))
}

// An ArrayBuffer and views sharing one buffer decode to one buffer over
// the bytes, still shared.
func TestDecodeOwnedValue_SharedBuffer(t *testing.T) {
	rl := newTestRuntime(t)
	src := runJS(t, rl, `const b = new ArrayBuffer(64); const x = new Uint8Array(b); x[3] = 9;
		[b, x, new DataView(b, 8, 8), new Int32Array(b, 16, 4)]`)
	doc := encodeJS(t, rl, src)
	v, err := rl.dec.DecodeOwnedValue(doc)
	require.NoError(t, err)
	arr := v.(*goja.Object)
	assert.True(t, within(bufferOf(t, arr.Get("0")), doc))
	checkJS(t, rl, v, `([b, x, d, i]) => x.buffer === b && d.buffer === b && i.buffer === b && x[3] === 9 && (i[0] = 5, x[16] === 5) || 'not shared'`)
}

// A big-endian typed array is swapped into a copy: the document's bytes
// are not changed in place.
func TestDecodeOwnedValue_BigEndianCopies(t *testing.T) {
	rl := newTestRuntime(t)
	w := cbor.NewWriter(nil)
	w.Tag(82)                                          // RFC 8746: float64, big-endian
	w.ByteString([]byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) // 1.5, big-endian
	doc := w.Bytes()
	before := append([]byte(nil), doc...)
	v, err := rl.dec.DecodeOwnedValue(doc)
	require.NoError(t, err)
	assert.False(t, within(bufferOf(t, v), doc))
	assert.Equal(t, before, doc)
	checkJS(t, rl, v, `(a) => a[0] === 1.5 || 'got ' + a[0]`)
}

// TakeBytes gives the document away: the next one is written in a new
// buffer, and the taken bytes stay as they were.
func TestEncoder_TakeBytes(t *testing.T) {
	rl := newTestRuntime(t)
	var first, second []byte
	var err error
	require.Nil(t, rl.rt.Try(func() { _, err = rl.enc.EncodeValue(rl.rt.ToValue("the first document")) }))
	require.NoError(t, err)
	first = rl.enc.TakeBytes()
	kept := append([]byte(nil), first...)
	require.Nil(t, rl.rt.Try(func() { second, err = rl.enc.EncodeValue(rl.rt.ToValue("another")) }))
	require.NoError(t, err)
	assert.Equal(t, kept, first, "the taken bytes are not written over")
	assert.False(t, within(second, first[:cap(first)]), "the next document is in a new buffer")
}
