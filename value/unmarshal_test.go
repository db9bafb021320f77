package value

import (
	"context"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

const (
	refHex  = "da72696f01" // TagRef
	viewHex = "da72696f02" // TagView
)

func TestUnmarshal_Numbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
	}{
		{"00", 0},
		{"17", 23},
		{"1bffffffffffffffff", 18446744073709551615},
		{"3bffffffffffffffff", -18446744073709551616},
		{"f93c00", 1},                    // half
		{"f9c400", -4},                   // half
		{"f90001", 5.960464477539063e-8}, // smallest half subnormal
		{"f97bff", 65504},                // largest half
		{"fa47c35000", 100000},           // single
		{"fa7f7fffff", 3.4028234663852886e+38},
		{"fb3ff199999999999a", 1.1},
	}
	for _, tt := range tests {
		got, err := Unmarshal(mustHex(t, tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, in := range []string{"f97e00", "fa7fc00000", "fb7ff8000000000001"} {
		got, err := Unmarshal(mustHex(t, in))
		require.NoError(t, err)
		assert.True(t, math.IsNaN(got.(float64)), in)
	}
	got, err := Unmarshal(mustHex(t, "f98000"))
	require.NoError(t, err)
	assert.True(t, math.Signbit(got.(float64)), "half -0")
	got, err = Unmarshal(mustHex(t, "f9fc00"))
	require.NoError(t, err)
	assert.Equal(t, math.Inf(-1), got)
}

func TestUnmarshal_BigInt(t *testing.T) {
	t.Parallel()
	// Leading zeros are allowed; the value is what counts.
	got, err := Unmarshal(mustHex(t, "c343000100"))
	require.NoError(t, err)
	assert.Equal(t, 0, got.(*big.Int).Cmp(big.NewInt(-257)))

	for _, s := range []string{"0", "1", "-1", "255", "-256", "256", "-257",
		"340282366920938463463374607431768211456", "-340282366920938463463374607431768211457"} {
		_, got := roundTrip(t, bigInt(t, s))
		assert.Equal(t, s, got.(*big.Int).String())
	}
}

func TestUnmarshal_Dates(t *testing.T) {
	t.Parallel()
	const maxMs = 8.64e15
	ms := []int64{0, 1, -1, 999, -999, 1000, -1500, 1363896240500,
		maxMs, -maxMs, maxMs - 1, -maxMs + 1, maxMs - 999, -maxMs + 999, 8639999999999999, 4503599627370497}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		ms = append(ms, rng.Int64N(2*maxMs+1)-maxMs)
	}
	for _, m := range ms {
		b, err := Marshal(time.UnixMilli(m))
		require.NoError(t, err)
		got, err := Unmarshal(b)
		require.NoError(t, err)
		tm, ok := got.(time.Time)
		require.True(t, ok, "%d ms gave %T", m, got)
		require.Equal(t, m, tm.UnixMilli(), "%d ms survives exactly", m)
		require.Equal(t, time.UTC, tm.Location())
	}

	tests := []struct {
		in   string
		want any
	}{
		{"c1fb7ff8000000000000", InvalidDate{}},           // NaN
		{"c1f97e00", InvalidDate{}},                       // half NaN, as encoders write it
		{"c1fb7ff8000000000001", InvalidDate{}},           // another NaN
		{"c1fa7fc00000", InvalidDate{}},                   // single NaN
		{"c1fb7ff0000000000000", InvalidDate{}},           // +Inf
		{"c11b000007dba8218001", InvalidDate{}},           // 8.64e12 s + 1 s
		{"c1f93e00", time.UnixMilli(1500).UTC()},          // half 1.5
		{"c13903e7", time.UnixMilli(-1_000_000).UTC()},    // -1000 s
		{"c1fb3f50624dd2f1a9fc", time.UnixMilli(1).UTC()}, // 0.001
	}
	for _, tt := range tests {
		got, err := Unmarshal(mustHex(t, tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestUnmarshal_BigEndianTypedArrays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want any
	}{
		{"d841440102fffe", []uint16{0x0102, 0xfffe}},
		{"d8424401020304", []uint32{0x01020304}},
		{"d843480102030405060708", []uint64{0x0102030405060708}},
		{"d84942fffe", []int16{-2}},
		{"d84a44fffffffe", []int32{-2}},
		{"d84b48fffffffffffffffe", []int64{-2}},
		{"d851443fc00000", []float32{1.5}},
		{"d852483ff8000000000000", []float64{1.5}},
		{"d84842ff01", []int8{-1, 1}},
		{"d84442ff01", Uint8ClampedArray{255, 1}},
	}
	for _, tt := range tests {
		got, err := Unmarshal(mustHex(t, tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}

	// The implicit buffer of a big-endian typed array holds little-endian
	// bytes, as in JavaScript.
	got, err := Unmarshal(mustHex(t, "82 d841440102fffe "+refHex+"02"))
	require.NoError(t, err)
	assert.Equal(t, ArrayBuffer{0x02, 0x01, 0xfe, 0xff}, got.([]any)[1])
}

// TestUnmarshal_Views decodes TagView items as the engine writes them.
func TestUnmarshal_Views(t *testing.T) {
	t.Parallel()

	t.Run("two views of one buffer", func(t *testing.T) {
		t.Parallel()
		var w cbor.Writer
		w.ArrayHeader(3) // 0
		w.Tag(TagView)   // 1
		w.ArrayHeader(4)
		w.Int(int64(Float64))
		w.ByteString(mustHex(t, "000000000000f03f 0000000000000040")) // 2
		w.Int(0)
		w.Int(1)
		w.Tag(TagView) // 3
		w.ArrayHeader(4)
		w.Int(int64(Float64))
		w.Tag(TagRef)
		w.Int(2)
		w.Int(8)
		w.Int(1)
		w.Tag(TagRef)
		w.Int(2)
		got, err := Unmarshal(w.Bytes())
		require.NoError(t, err)
		s := got.([]any)
		a, b, buf := s[0].([]float64), s[1].([]float64), s[2].(ArrayBuffer)
		assert.Equal(t, []float64{1}, a)
		assert.Equal(t, []float64{2}, b)
		assert.Equal(t, unsafe.Pointer(&buf[0]), unsafe.Pointer(&a[0]), "views alias their buffer")
		assert.Equal(t, unsafe.Pointer(&buf[8]), unsafe.Pointer(&b[0]))
		assert.Equal(t, 1, cap(a), "a view cannot grow into the rest of the buffer")
	})

	t.Run("view on a typed array's buffer", func(t *testing.T) {
		t.Parallel()
		// [Uint32Array [1, 2], Uint8Array view of bytes 4..8 of its buffer, DataView of byte 1]
		in := "83 d84648 0100000002000000 " +
			viewHex + "84 1840 " + refHex + "02 04 04 " +
			viewHex + "84 00 " + refHex + "02 01 01"
		got, err := Unmarshal(mustHex(t, in))
		require.NoError(t, err)
		s := got.([]any)
		u32, u8, dv := s[0].([]uint32), s[1].([]byte), s[2].(DataView)
		assert.Equal(t, []byte{2, 0, 0, 0}, u8)
		assert.Equal(t, DataView{0}, dv)
		u8[0] = 9
		assert.Equal(t, uint32(9), u32[1], "the view shares the typed array's memory")
	})

	t.Run("every kind", func(t *testing.T) {
		t.Parallel()
		for _, k := range []TypedKind{Uint8, Uint8Clamped, Int8, Uint16, Int16, Uint32, Int32, BigUint64, BigInt64, Float32, Float64, KindDataView} {
			var w cbor.Writer
			w.Tag(TagView)
			w.ArrayHeader(4)
			w.Int(int64(k))
			w.ByteString(make([]byte, 24))
			w.Int(int64(k.Size()))
			w.Int(1)
			got, err := Unmarshal(w.Bytes())
			require.NoError(t, err, k)
			assert.Equal(t, 1, lenOf(got), k)
			// A view that is its buffer's whole is written back on its own.
			_, back := roundTrip(t, got)
			assert.Equal(t, got, back, k)
		}
	})

	t.Run("empty view at the end", func(t *testing.T) {
		t.Parallel()
		got, err := Unmarshal(mustHex(t, viewHex+"84 1856 48 0000000000000000 08 00"))
		require.NoError(t, err)
		assert.Equal(t, []float64{}, got)
	})
}

func lenOf(v any) int {
	switch s := v.(type) {
	case []byte:
		return len(s)
	case Uint8ClampedArray:
		return len(s)
	case DataView:
		return len(s)
	case []int8:
		return len(s)
	case []uint16:
		return len(s)
	case []int16:
		return len(s)
	case []uint32:
		return len(s)
	case []int32:
		return len(s)
	case []uint64:
		return len(s)
	case []int64:
		return len(s)
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	}
	return -1
}

func TestUnmarshal_SharedAndCyclic(t *testing.T) {
	t.Parallel()
	// [ [], TagRef(0), TagRef(1) ]: an array holding itself and a shared one.
	got, err := Unmarshal(mustHex(t, "83 80 "+refHex+"00 "+refHex+"01"))
	require.NoError(t, err)
	s := got.([]any)
	assert.Same(t, &s[0], &s[1].([]any)[0], "the array holds itself")
	assert.Equal(t, []any{}, s[2])

	// A Map whose key is itself: m.set(m, 1).
	got, err = Unmarshal(mustHex(t, "d90103 a1 "+refHex+"00 01"))
	require.NoError(t, err)
	m := got.(*Map)
	assert.Same(t, m, m.Entries[0].Key)

	// A Date and a RegExp are objects (indexes 1 and 2), so the object
	// after them is index 3; a string takes no index.
	got, err = Unmarshal(mustHex(t, "84 c100 d9524a82616160 a0 "+refHex+"03"))
	require.NoError(t, err)
	s = got.([]any)
	s[2].(map[string]any)["k"] = 1
	assert.Equal(t, s[2], s[3])
	_, err = Unmarshal(mustHex(t, "84 c100 6161 a0 "+refHex+"03"))
	require.ErrorContains(t, err, "reference to object 3, but only 3 have started")
}

func TestUnmarshal_Rejects(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("81", MaxDepth+1) + "01"
	deepTags := strings.Repeat("d9010281", MaxDepth) + "80" // a Set and its array are one level
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "unexpected end of data"},
		{"truncated array", "820102"[:4], "unexpected end of data"},
		{"truncated head", "19 01", "unexpected end of data"},
		{"truncated float", "fb3ff8", "unexpected end of data"},
		{"truncated string", "63 6161", "unexpected end of data"},
		{"huge byte string", "5b ffffffffffffffff", "unexpected end of data"},
		{"huge text", "7a ffffffff 61", "unexpected end of data"},
		{"huge array", "9b 00ffffffffffffff 01", "items with 1 bytes left"},
		{"huge map", "bb 0fffffffffffffff 0101", "items with 2 bytes left"},
		{"huge Set", "d90102 9a ffffffff", "items with 0 bytes left"},
		{"huge Map", "d90103 ba ffffffff", "items with 0 bytes left"},
		{"huge env", "da72696f04 85 60 ba 7fffffff", "items with 0 bytes left"},
		{"indefinite array", "9f01ff", "indefinite-length"},
		{"indefinite string", "7f6161ff", "indefinite-length"},
		{"reserved info", "1c", "reserved additional information"},
		{"trailing bytes", "01 01", "1 bytes after the end of the document"},
		{"trailing after array", "820102 ff", "1 bytes after the end"},
		{"unknown tag", "d9 0100 01", "unsupported tag 256"},
		{"tag 0", "c0 6161", "unsupported tag 0"},
		{"self-describe tag", "d9d9f7 01", "unsupported tag 55799"},
		{"float16 array", "d854 42 0000", "unsupported tag 84"},
		{"float128 array", "d857 40", "unsupported tag 87"},
		{"unsupported simple", "e0", "unsupported simple value 0"},
		{"simple 255", "f8ff", "unsupported simple value 255"},
		{"two-byte simple", "f814", "two-byte form"},
		{"break alone", "ff", "indefinite-length"},
		{"invalid UTF-8", "62 c328", "not valid UTF-8"},
		{"surrogate in UTF-8", "63 eda080", "not valid UTF-8"},
		{"non-string key", "a1 01 01", "want a string"},
		{"duplicate key", "a2 6161 01 6161 02", `duplicate key "a"`},
		{"duplicate key via UTF16", "a2 6161 01 da72696f06 42 6100 02", `duplicate key "a"`},
		{"duplicate Set value", "d90102 82 01 f93c00", "duplicate Set value"},
		{"duplicate Set NaN", "d90102 82 f97e00 fb7ff8000000000000", "duplicate Set value"},
		{"duplicate Map key 0 and -0", "d90103 a2 00 01 f98000 02", "duplicate Map key"},
		{"duplicate Map key string", "d90103 a2 6161 01 6161 02", "duplicate Map key"},
		{"duplicate Map key bigint", "d90103 a2 c24101 01 c2420001 02", "duplicate Map key"},
		{"duplicate Map key object", "d90103 a2 a0 01 " + refHex + "01 02", "duplicate Map key"},
		{"ref before any object", refHex + "00", "reference to object 0, but only 0 have started"},
		{"ref ahead", "81 " + refHex + "01", "reference to object 1, but only 1 have started"},
		{"ref huge", "81 " + refHex + "1bffffffffffffffff", "reference to object 18446744073709551615"},
		{"ref not an integer", refHex + "6161", "want an unsigned integer"},
		{"ref to a view from its buffer", viewHex + "84 1856 " + refHex + "00 00 00", "from inside itself"},
		{"odd typed array", "d856 43 010203", "Float64Array of 3 bytes is not a whole number of 8-byte elements"},
		{"odd Uint16Array", "d845 41 01", "Uint16Array of 1 bytes"},
		{"typed array of text", "d856 6161", "want a byte string"},
		{"odd UTF-16", "da72696f06 43 610062", "UTF-16 string of odd length 3"},
		{"UTF-16 of text", "da72696f06 6161", "want a byte string"},
		{"bignum of int", "c2 01", "want a byte string"},
		{"Date of text", "c1 6161", "a Date holds a number"},
		{"Date of bignum", "c1 c24101", "a Date holds a number"},
		{"RegExp of one", "d9524a 81 6161", "want an array of 2 items"},
		{"RegExp of numbers", "d9524a 82 01 02", "want a string"},
		{"Set of map", "d90102 a0", "a Set holds an array"},
		{"Map of array", "d90103 80", "want a map"},
		{"view of 3", viewHex + "83 00 40 00", "want an array of 4 items"},
		{"view kind unknown", viewHex + "84 1841 42 0000 00 01", "unknown view kind 65"},
		{"view kind huge", viewHex + "84 190156 42 0000 00 01", "unknown view kind 342"},
		{"view buffer not bytes", viewHex + "84 1840 80 00 00", "a view's buffer must be an ArrayBuffer, have []interface {}"},
		{"view buffer a typed array", viewHex + "84 1840 d84040 00 00", "have []uint8"},
		{"view past end", viewHex + "84 1856 48 0000000000000000 00 02", "runs past its 8-byte buffer"},
		{"view offset past end", viewHex + "84 00 42 0000 03 00", "runs past its 2-byte buffer"},
		{"view huge length", viewHex + "84 1856 48 0000000000000000 00 1bffffffffffffffff", "runs past"},
		{"view misaligned", viewHex + "84 1856 50 00000000000000000000000000000000 04 01", "not a multiple of 8"},
		{"Error not a map", "da72696f03 80", "want a map"},
		{"Error unknown field", "da72696f03 a1 6378797a 60", `unknown Error field "xyz"`},
		{"Error duplicate field", "da72696f03 a2 646e616d65 60 646e616d65 60", `duplicate key "name"`},
		{"Error too many fields", "da72696f03 a5" + strings.Repeat("60", 10), "at most 4 fields"},
		{"Error name not a string", "da72696f03 a1 646e616d65 01", "want a string"},
		{"Function of 4", "da72696f04 84 60 a0 60 00", "want an array of 5 items"},
		{"Function env key", "da72696f04 85 60 a1 01 01 60 00 00", "want a string"},
		{"Function line huge", "da72696f04 85 60 a0 60 1a80000000 00", "line or column 2147483648 out of range"},
		{"Function line negative", "da72696f04 85 60 a0 60 20 00", "want an unsigned integer"},
		{"wrapper of an array", "da72696f07 80", "a wrapper object holds a number, boolean, string or BigInt"},
		{"wrapper of null", "da72696f07 f6", "a wrapper object holds"},
		{"wrapper of a ref", "81 da72696f07 " + refHex + "00", "a wrapper object holds"},
		{"sparse array of 1", "da72696f08 81 00", "want an array of 2 items"},
		{"sparse array length huge", "da72696f08 82 1b0000000100000000 a0", "array length 4294967296 is above 2^32-1"},
		{"sparse array index past length", "da72696f08 82 02 a1 02 01", "index 2 of an array of length 2"},
		{"sparse array duplicate index", "da72696f08 82 03 a2 01 01 01 02", "duplicate index 1"},
		{"sparse array index as string", "da72696f08 82 03 a1 6131 01", `array property "1" is an index`},
		{"sparse array duplicate key", "da72696f08 82 00 a2 6178 01 6178 02", `duplicate key "x"`},
		{"sparse array key of bytes", "da72696f08 82 00 a1 40 01", "want a string"},
		{"sparse array length property", "da72696f08 82 00 a1 666c656e677468 01", `an array's "length" is its first item`},
		{"blob hash short", "da72696f05 41 00", "blob hash of 1 bytes, want 32"},
		{"blob hash text", "da72696f05 6161", "want a byte string"},
		{"deep arrays", deep, "nested deeper than 10000 levels"},
		{"deep tags", deepTags, "nested deeper than 10000 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Unmarshal(mustHex(t, tt.in))
			require.Error(t, err)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestUnmarshal_DepthLimit(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("81", MaxDepth) + "01"
	_, err := Unmarshal(mustHex(t, ok))
	require.NoError(t, err, "10,000 levels are allowed")

	// Primitives, references and blob references below the deepest
	// object do not count; an ArrayBuffer does.
	for _, leaf := range []string{"c24101", "da72696f0640", "da72696f0100", "da72696f0558200000000000000000000000000000000000000000000000000000000000000000"} {
		_, err = Unmarshal(mustHex(t, strings.Repeat("81", MaxDepth)+leaf))
		require.NoError(t, err, leaf)
	}
	_, err = Unmarshal(mustHex(t, strings.Repeat("81", MaxDepth)+"40"))
	require.ErrorContains(t, err, "nested deeper than 10000 levels")

	// A Set, a Map, an Error or a function is one level, its array or
	// map included.
	for _, in := range []string{"d9010281 01", "d90103a1 0101", "da72696f03a1 6563617573650 1", "da72696f0485 60 a1 6178 01 60 00 00"} {
		_, err = Decoder{MaxDepth: 2}.Decode(context.Background(), mustHex(t, "81"+in))
		require.NoError(t, err, in)
		_, err = Decoder{MaxDepth: 1}.Decode(context.Background(), mustHex(t, "81"+in))
		require.ErrorContains(t, err, "nested deeper than 1 levels", in)
	}

	_, err = Decoder{MaxDepth: 2}.Decode(context.Background(), mustHex(t, "818101"))
	require.NoError(t, err)
	_, err = Decoder{MaxDepth: 2}.Decode(context.Background(), mustHex(t, "81818101"))
	require.ErrorContains(t, err, "at byte 2: nested deeper than 2 levels")
}

func TestUnmarshal_Truncations(t *testing.T) {
	t.Parallel()
	// Every proper prefix of a valid document is rejected, none panics.
	f := &Function{Source: "() => x", Env: map[string]any{"x": 1}}
	m := map[string]any{"a": []any{1.5, "s", nil}}
	doc, err := Marshal([]any{m, m, &Map{Entries: []MapEntry{{1, &Set{Values: []any{2}}}}},
		[]float64{1, 2}, DataView{1}, time.UnixMilli(5), RegExp{Source: "a"}, f,
		&Error{Name: "E", HasCause: true, Cause: f}, big.NewInt(-300), BlobRef{}, "\xed\xa0\x80"})
	require.NoError(t, err)
	_, err = Unmarshal(doc)
	require.NoError(t, err)
	for n := range len(doc) {
		_, err := Unmarshal(doc[:n])
		require.Error(t, err, "prefix of %d bytes", n)
		require.ErrorIs(t, err, cbor.ErrTruncated, "prefix of %d bytes", n)
	}
}

func TestUnmarshal_DoesNotAliasInput(t *testing.T) {
	t.Parallel()
	doc, err := Marshal([]any{ArrayBuffer{1, 2}, []byte{3}, []float64{4}, "text"})
	require.NoError(t, err)
	got, err := Unmarshal(doc)
	require.NoError(t, err)
	for i := range doc {
		doc[i] = 0
	}
	assert.Equal(t, []any{ArrayBuffer{1, 2}, []byte{3}, []float64{4}, "text"}, got)
}

// fakeSource is a blob.Source that counts fetches and can answer with any
// bytes, including ones whose hash is not the one asked for.
type fakeSource struct {
	blobs   map[blob.Hash][]byte
	fetches map[blob.Hash]int
}

func (f *fakeSource) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.fetches[h]++
	b, ok := f.blobs[h]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return b, nil
}

func TestDecoder_Blobs(t *testing.T) {
	t.Parallel()
	inner, err := Marshal(map[string]any{"dict": []any{"a", "b"}})
	require.NoError(t, err)
	h := blob.Sum(inner)
	doc, err := Marshal([]any{BlobRef(h), BlobRef(h), "x"})
	require.NoError(t, err)

	// Without Blobs, references come back as they are.
	got, err := Unmarshal(doc)
	require.NoError(t, err)
	assert.Equal(t, []any{BlobRef(h), BlobRef(h), "x"}, got)

	src := &fakeSource{blobs: map[blob.Hash][]byte{h: inner}, fetches: map[blob.Hash]int{}}
	got, err = Decoder{Blobs: src}.Decode(context.Background(), doc)
	require.NoError(t, err)
	s := got.([]any)
	assert.Equal(t, map[string]any{"dict": []any{"a", "b"}}, s[0])
	s[0].(map[string]any)["seen"] = true
	assert.Equal(t, true, s[1].(map[string]any)["seen"], "one blob, one Go value")
	assert.Equal(t, 1, src.fetches[h], "fetched once")

	// A missing blob.
	other := blob.Sum([]byte("other"))
	doc2, err := Marshal(BlobRef(other))
	require.NoError(t, err)
	_, err = Decoder{Blobs: src}.Decode(context.Background(), doc2)
	require.ErrorIs(t, err, blob.ErrNotFound)
	assert.Contains(t, err.Error(), "value: blob "+other.Short())

	// A malformed blob.
	src.blobs[other] = []byte{0x82, 0x01}
	_, err = Decoder{Blobs: src}.Decode(context.Background(), doc2)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)

	// A blob that refers to itself (possible only with a lying Source).
	src.blobs[other] = append([]byte{0x81}, doc2...)
	_, err = Decoder{Blobs: src}.Decode(context.Background(), doc2)
	require.ErrorContains(t, err, "refers to itself")

	// A cancelled context stops the fetch.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Decoder{Blobs: src}.Decode(ctx, doc)
	require.ErrorIs(t, err, context.Canceled)

	// Blobs work with blob.Map too.
	bm := blob.Map{}
	h2 := bm.Put(inner)
	doc3, err := Marshal(&Set{Values: []any{BlobRef(h2)}})
	require.NoError(t, err)
	got, err = Decoder{Blobs: bm}.Decode(context.Background(), doc3)
	require.NoError(t, err)
	assert.Equal(t, &Set{Values: []any{map[string]any{"dict": []any{"a", "b"}}}}, got)
}

// TestUnmarshal_AllocationBound decodes inputs built to allocate as much as
// possible per byte and checks that the Go memory stays a small multiple of
// the input. It is not parallel: it reads process-wide allocation counts.
func TestUnmarshal_AllocationBound(t *testing.T) {
	const n = 1 << 18
	var w cbor.Writer
	build := func(f func()) []byte {
		w.Reset()
		f()
		return append([]byte(nil), w.Bytes()...)
	}
	inputs := map[string][]byte{
		"empty arrays": build(func() {
			w.ArrayHeader(n)
			for range n {
				w.ArrayHeader(0)
			}
		}),
		"empty objects": build(func() {
			w.ArrayHeader(n)
			for range n {
				w.MapHeader(0)
			}
		}),
		"numbers": build(func() {
			w.ArrayHeader(n)
			for i := range n {
				w.Int(int64(i % 24))
			}
		}),
		"one-byte buffers": build(func() {
			w.ArrayHeader(n)
			for range n {
				w.ByteString(nil)
			}
		}),
		"object keys": build(func() {
			w.MapHeader(n)
			for i := range n {
				w.Text(string(rune('a'+i%26)) + itoa(i/26))
				w.Simple(cbor.SimpleNull)
			}
		}),
		"set": build(func() {
			w.Tag(TagSet)
			w.ArrayHeader(n)
			for i := range n {
				w.Int(int64(i))
			}
		}),
		"typed arrays": build(func() {
			w.ArrayHeader(n)
			for range n {
				WriteTyped(&w, Float64, nil)
			}
		}),
		"refs": build(func() {
			w.ArrayHeader(n)
			w.ArrayHeader(0)
			for range n - 1 {
				w.Tag(TagRef)
				w.Int(1)
			}
		}),
	}
	for name, in := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Unmarshal(in)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, name)
		ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(in))
		t.Logf("%s: %d bytes in, %.1f bytes allocated per byte", name, len(in), ratio)
		assert.Less(t, ratio, 100.0, name, "docs/values.md promises under 100 bytes per input byte")
	}
}

func TestUnmarshal_ErrorOffsets(t *testing.T) {
	t.Parallel()
	_, err := Unmarshal(mustHex(t, "83 01 02 d90100 00"))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 3, se.Offset)
	assert.Equal(t, "value: malformed data at byte 3: unsupported tag 256", err.Error())
	assert.False(t, errors.Is(err, cbor.ErrTruncated))
}

func TestUnmarshal_Concurrent(t *testing.T) {
	t.Parallel()
	doc, err := Marshal(map[string]any{"a": []float64{1}, "b": &Map{Entries: []MapEntry{{"k", "v"}}}})
	require.NoError(t, err)
	want, err := Unmarshal(doc)
	require.NoError(t, err)
	done := make(chan any)
	for range 8 {
		go func() {
			v, _ := Unmarshal(doc)
			done <- v
		}()
	}
	for range 8 {
		assert.Equal(t, want, <-done)
	}
	assert.Equal(t, hex.EncodeToString(doc), hex.EncodeToString(mustMarshal(t, want)))
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := Marshal(v)
	require.NoError(t, err)
	return b
}

func TestUnmarshal_ForeignDateFloats(t *testing.T) {
	t.Parallel()
	// 0.0015 s is no m/1000: the nearest millisecond is taken.
	var w cbor.Writer
	w.Tag(TagEpochTime)
	w.Float64(0.0015)
	got, err := Unmarshal(w.Bytes())
	require.NoError(t, err)
	assert.Equal(t, time.UnixMilli(2).UTC(), got)
	assert.Equal(t, 2.0, DateMillis(0.0015))
	assert.Equal(t, -1500.0, DateMillis(-1.5))
	assert.False(t, math.Signbit(DateMillis(math.Copysign(0, -1))), "no -0 time value")
	assert.True(t, math.IsNaN(DateMillis(8.64e12+0.001)))
	assert.Equal(t, -8.64e15, DateMillis(-8.64e12))
	// Where round(s*1000) is one off, DateMillis is not.
	const m = 8639999999999999.0
	s := m / 1000
	assert.Equal(t, m, DateMillis(s))
}

func TestUnmarshal_HugeBigIntKeysAreCheap(t *testing.T) {
	t.Parallel()
	// A Set of two 512 KiB BigInts that differ in sign: comparing them must
	// not convert them to decimal.
	mag := make([]byte, 512<<10)
	mag[0] = 1
	var w cbor.Writer
	w.Tag(TagSet)
	w.ArrayHeader(3)
	w.Tag(TagPosBignum)
	w.ByteString(mag)
	w.Tag(TagNegBignum)
	w.ByteString(mag)
	w.Tag(TagPosBignum)
	w.ByteString(append([]byte{0}, mag...)) // the first again, with a leading zero
	_, err := Unmarshal(w.Bytes())
	require.ErrorContains(t, err, "duplicate Set value")
}

// TestUnmarshal_ErrorMessage: an Error document without a message key is
// an Error with no own message (NoMessage), and the message of one sent
// by an older encoder, which always wrote it, is kept even when empty.
func TestUnmarshal_ErrorMessage(t *testing.T) {
	t.Parallel()
	v, err := Unmarshal(mustHex(t, "da72696f03 a2 646e616d65 654572726f72 65737461636b 60"))
	require.NoError(t, err)
	assert.Equal(t, &Error{Name: "Error", NoMessage: true}, v)
	v, err = Unmarshal(mustHex(t, "da72696f03 a3 646e616d65 654572726f72 676d657373616765 60 65737461636b 60"))
	require.NoError(t, err)
	assert.Equal(t, &Error{Name: "Error"}, v)
}

// TestUnmarshal_SharedWrapperAndArray: wrappers and sparse arrays take an
// object index, so that references to them (and from inside an array to
// itself) come back as the same pointer.
func TestUnmarshal_SharedWrapperAndArray(t *testing.T) {
	t.Parallel()
	w := &Wrapper{Value: "s"}
	a := &Array{Length: 3, Props: map[string]any{"w": w}}
	a.Elements = map[uint32]any{0: a, 2: w}
	_, got := roundTrip(t, []any{a, w})
	arr := got.([]any)
	ga := arr[0].(*Array)
	assert.Same(t, ga, ga.Elements[0])
	assert.Same(t, arr[1], ga.Elements[2])
	assert.Same(t, arr[1], ga.Props["w"])
	assert.Equal(t, &Wrapper{Value: "s"}, arr[1])
}
