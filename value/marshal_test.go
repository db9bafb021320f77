package value

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// roundTrip marshals v, unmarshals the bytes and returns both.
func roundTrip(t *testing.T, v any) ([]byte, any) {
	t.Helper()
	b, err := Marshal(v)
	require.NoError(t, err)
	got, err := Unmarshal(b)
	require.NoError(t, err, "bytes %x", b)
	return b, got
}

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	require.True(t, ok, s)
	return n
}

// TestMarshal_RoundTrip covers every row of docs/values.md, Go → bytes → Go.
func TestMarshal_RoundTrip(t *testing.T) {
	t.Parallel()
	hash := blob.Sum([]byte("x"))
	date := time.Date(2024, 2, 29, 12, 34, 56, 789_000_000, time.UTC)
	self := &Function{Source: "() => f", File: "job.js", Line: 3, Column: 7}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"undefined", Undefined{}, Undefined{}},
		{"null", nil, nil},
		{"false", false, false},
		{"true", true, true},
		{"int", 42, 42.0},
		{"negative int", -7, -7.0},
		{"int8", int8(-128), -128.0},
		{"uint16", uint16(65535), 65535.0},
		{"int32", int32(-1 << 31), float64(-1 << 31)},
		{"uint32", uint32(1<<32 - 1), float64(1<<32 - 1)},
		{"int64 2^53", int64(1 << 53), float64(1 << 53)},
		{"int64 -2^53", int64(-1 << 53), float64(-1 << 53)},
		{"uint64 2^53", uint64(1 << 53), float64(1 << 53)},
		{"uintptr", uintptr(12), 12.0},
		{"float", 1.5, 1.5},
		{"float32", float32(0.25), 0.25},
		{"float beyond 2^53", 1e300, 1e300},
		{"float 2^53+2", float64(1<<53 + 2), float64(1<<53 + 2)},
		{"tiny float", 5e-324, 5e-324},
		{"named float", sampleFloat(2.5), 2.5},
		{"bigint zero", big.NewInt(0), big.NewInt(0)},
		{"bigint small", big.NewInt(1), big.NewInt(1)},
		{"bigint -1", big.NewInt(-1), big.NewInt(-1)},
		{"bigint -256", big.NewInt(-256), big.NewInt(-256)},
		{"bigint 2^64", bigInt(t, "18446744073709551616"), bigInt(t, "18446744073709551616")},
		{"bigint huge negative", bigInt(t, "-123456789012345678901234567890123456789"), bigInt(t, "-123456789012345678901234567890123456789")},
		{"bigint value", *big.NewInt(5), big.NewInt(5)},
		{"string", "héllo, 世界 🌍", "héllo, 世界 🌍"},
		{"empty string", "", ""},
		{"named string", sampleString("s"), "s"},
		{"array", []any{1, "a", nil, Undefined{}, []any{}}, []any{1.0, "a", nil, Undefined{}, []any{}}},
		{"[]string", []string{"a", "b"}, []any{"a", "b"}},
		{"[]int", []int{1, 2}, []any{1.0, 2.0}},
		{"[]bool", []bool{true}, []any{true}},
		{"Go array", [3]int{1, 2, 3}, []any{1.0, 2.0, 3.0}},
		{"empty slice", []any{}, []any{}},
		{"nil slice", []any(nil), nil},
		{"object", map[string]any{"b": 1, "a": "x", "": map[string]any{}}, map[string]any{"b": 1.0, "a": "x", "": map[string]any{}}},
		{"typed map", map[string]int{"x": 1}, map[string]any{"x": 1.0}},
		{"nil map", map[string]any(nil), nil},
		{"Map", &Map{Entries: []MapEntry{{1, "one"}, {"1", "string one"}, {nil, Undefined{}}, {big.NewInt(1), true}}},
			&Map{Entries: []MapEntry{{1.0, "one"}, {"1", "string one"}, {nil, Undefined{}}, {big.NewInt(1), true}}}},
		{"Map value", Map{Entries: []MapEntry{{"k", 1}}}, &Map{Entries: []MapEntry{{"k", 1.0}}}},
		{"empty Map", &Map{}, &Map{Entries: []MapEntry{}}},
		{"Set", &Set{Values: []any{1, "1", 2.5, nil}}, &Set{Values: []any{1.0, "1", 2.5, nil}}},
		{"Date", date, date},
		{"Date whole second", time.Unix(1363896240, 0), time.Unix(1363896240, 0).UTC()},
		{"Date before 1970", time.UnixMilli(-1500), time.UnixMilli(-1500).UTC()},
		{"Date rounds to ms", time.Unix(0, 1_500_000), time.UnixMilli(2).UTC()},
		{"Date in a zone", time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600)), time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC)},
		{"invalid Date", InvalidDate{}, InvalidDate{}},
		{"RegExp", RegExp{Source: `a+\d`, Flags: "gi"}, RegExp{Source: `a+\d`, Flags: "gi"}},
		{"ArrayBuffer", ArrayBuffer{1, 2, 3}, ArrayBuffer{1, 2, 3}},
		{"empty ArrayBuffer", ArrayBuffer{}, ArrayBuffer{}},
		{"Uint8Array", []byte{0, 255}, []byte{0, 255}},
		{"Uint8ClampedArray", Uint8ClampedArray{9}, Uint8ClampedArray{9}},
		{"Int8Array", []int8{-128, 127}, []int8{-128, 127}},
		{"Uint16Array", []uint16{1, 65535}, []uint16{1, 65535}},
		{"Int16Array", []int16{-32768, 1}, []int16{-32768, 1}},
		{"Uint32Array", []uint32{1 << 31}, []uint32{1 << 31}},
		{"Int32Array", []int32{-1 << 31, 5}, []int32{-1 << 31, 5}},
		{"BigUint64Array", []uint64{math.MaxUint64}, []uint64{math.MaxUint64}},
		{"BigInt64Array", []int64{math.MinInt64, 3}, []int64{math.MinInt64, 3}},
		{"Float32Array", []float32{1.5, -0.25}, []float32{1.5, -0.25}},
		{"Float64Array", []float64{math.Pi, math.Inf(-1)}, []float64{math.Pi, math.Inf(-1)}},
		{"empty Float64Array", []float64{}, []float64{}},
		{"nil typed slice", []float64(nil), nil},
		{"named typed slice", sampleFloats{1, 2}, []float64{1, 2}},
		{"DataView", DataView{1, 2, 3}, DataView{1, 2, 3}},
		{"Error", &Error{Name: "TypeError", Message: "x is not a function", Stack: "TypeError: x\n    at f (a.js:1:2)"},
			&Error{Name: "TypeError", Message: "x is not a function", Stack: "TypeError: x\n    at f (a.js:1:2)"}},
		{"Error with cause", &Error{Name: "Error", Message: "outer", Cause: &Error{Name: "RangeError", Message: "inner"}, HasCause: true},
			&Error{Name: "Error", Message: "outer", Cause: &Error{Name: "RangeError", Message: "inner"}, HasCause: true}},
		{"Error with undefined cause", &Error{Name: "Error", Cause: Undefined{}, HasCause: true}, &Error{Name: "Error", Cause: Undefined{}, HasCause: true}},
		{"Error without a message", &Error{Name: "Error", Stack: "Error\n    at a.js:1:1", NoMessage: true}, &Error{Name: "Error", Stack: "Error\n    at a.js:1:1", NoMessage: true}},
		{"Error with a lone surrogate", &Error{Name: "Error", Message: "a\xed\xa0\x80"}, &Error{Name: "Error", Message: "a\xed\xa0\x80"}},
		{"Go error", errors.New("disk full"), &Error{Name: "Error", Message: "disk full"}},
		{"Number wrapper", &Wrapper{Value: 3}, &Wrapper{Value: 3.0}},
		{"Number wrapper -0", &Wrapper{Value: math.Copysign(0, -1)}, &Wrapper{Value: math.Copysign(0, -1)}},
		{"String wrapper", Wrapper{Value: "x\xed\xb0\x80"}, &Wrapper{Value: "x\xed\xb0\x80"}},
		{"Boolean wrapper", &Wrapper{Value: false}, &Wrapper{Value: false}},
		{"BigInt wrapper", &Wrapper{Value: big.NewInt(-9007199254740994)}, &Wrapper{Value: big.NewInt(-9007199254740994)}},
		{"Array with holes", &Array{Length: 4, Elements: map[uint32]any{1: "b", 3: nil}}, &Array{Length: 4, Elements: map[uint32]any{1: "b", 3: nil}}},
		{"Array of holes only", Array{Length: 10}, &Array{Length: 10}},
		{"Array with a property", &Array{Length: 1, Elements: map[uint32]any{0: 1}, Props: map[string]any{"foo": "bar", "4294967295": true, "01": 2}},
			&Array{Length: 1, Elements: map[uint32]any{0: 1.0}, Props: map[string]any{"foo": "bar", "4294967295": true, "01": 2.0}}},
		{"wrapped Go error", fmt.Errorf("open: %w", errors.New("denied")), &Error{Name: "Error", Message: "open: denied"}},
		{"Function", &Function{Source: "(x) => x + y", Env: map[string]any{"y": 1}, File: "job.js", Line: 10, Column: 2},
			&Function{Source: "(x) => x + y", Env: map[string]any{"y": 1.0}, File: "job.js", Line: 10, Column: 2}},
		{"Function without env", self, &Function{Source: "() => f", Env: map[string]any{}, File: "job.js", Line: 3, Column: 7}},
		{"BlobRef", BlobRef(hash), BlobRef(hash)},
		{"pointer", ptrTo(3), 3.0},
		{"nil pointer", (*int)(nil), nil},
		{"pointer to pointer", ptrTo(ptrTo("s")), "s"},
		{"pointer to Undefined", &Undefined{}, Undefined{}},
		{"pointer to Date", &date, date},
		{"interface slice of structs", []fmt.Stringer{RegExp{Source: "a"}}, []any{RegExp{Source: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := roundTrip(t, tt.in)
			assert.Equal(t, tt.want, got)
		})
	}
}

type (
	sampleFloats []float64
	sampleFloat  float64
	sampleString string
)

func ptrTo[T any](v T) *T { return &v }

func TestMarshal_SpecialFloats(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0} {
		b, got := roundTrip(t, f)
		g, ok := got.(float64)
		require.True(t, ok, "%T", got)
		if math.IsNaN(f) {
			assert.True(t, math.IsNaN(g))
			assert.Equal(t, "fb7ff8000000000000", hex.EncodeToString(b), "one NaN on the wire")
			continue
		}
		assert.Equal(t, f, g)
		assert.Equal(t, math.Signbit(f), math.Signbit(g), "sign of %v", f)
	}
	// A NaN with another payload is written as the canonical one.
	b, err := Marshal(math.Float64frombits(0x7ff8000000000123))
	require.NoError(t, err)
	assert.Equal(t, "fb7ff8000000000000", hex.EncodeToString(b))
	// -0 is a float, not the integer 0.
	b, err = Marshal(math.Copysign(0, -1))
	require.NoError(t, err)
	assert.Equal(t, "fb8000000000000000", hex.EncodeToString(b))
}

// TestMarshal_Golden checks bytes against RFC 8949's examples (Appendix A)
// and the riot tags.
func TestMarshal_Golden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   any
		want string
	}{
		{0, "00"},
		{1, "01"},
		{10, "0a"},
		{23, "17"},
		{24, "1818"},
		{100, "1864"},
		{1000, "1903e8"},
		{100000, "1a000186a0"},
		{1000000000000, "1b000000e8d4a51000"},
		{-1, "20"},
		{-10, "29"},
		{-100, "3863"},
		{-1000, "3903e7"},
		{1.5, "fb3ff8000000000000"},
		{1.1, "fb3ff199999999999a"},
		{-4.1, "fbc010666666666666"},
		{1.0e+300, "fb7e37e43c8800759c"},
		{math.Inf(1), "fb7ff0000000000000"},
		{math.Inf(-1), "fbfff0000000000000"},
		{false, "f4"},
		{true, "f5"},
		{nil, "f6"},
		{Undefined{}, "f7"},
		{"", "60"},
		{"a", "6161"},
		{"IETF", "6449455446"},
		{"\u00fc", "62c3bc"},
		{"\u6c34", "63e6b0b4"},
		{"\U00010151", "64f0908591"},
		{[]any{}, "80"},
		{[]any{1, 2}, "820102"},
		{[]any{1, []any{2, 3}, []any{4, 5}}, "8301820203820405"},
		{map[string]any{}, "a0"},
		{map[string]any{"a": 1, "b": []any{2, 3}}, "a26161016162820203"},
		{bigInt(t, "18446744073709551616"), "c249010000000000000000"},
		{bigInt(t, "-18446744073709551617"), "c349010000000000000000"},
		{big.NewInt(0), "c240"},
		{big.NewInt(-1), "c340"},
		{time.Unix(1363896240, 0), "c11a514b67b0"},
		{time.Unix(1363896240, 500_000_000), "c1fb41d452d9ec200000"},
		{InvalidDate{}, "c1f97e00"},
		{ArrayBuffer{1, 2}, "420102"},
		{[]byte{1, 2}, "d840420102"},
		{[]uint16{1}, "d845420100"},
		{[]float32{1}, "d855440000803f"},
		{&Set{Values: []any{1}}, "d901028101"},
		{&Map{Entries: []MapEntry{{1, 2}}}, "d90103a10102"},
		{RegExp{Source: "a", Flags: "g"}, "d9524a8261616167"},
		{DataView{7}, "da72696f0284004107" + "0001"},
		{&Error{Name: "E", Message: "m"}, "da72696f03a3" + "646e616d65" + "6145" + "676d657373616765" + "616d" + "65737461636b" + "60"},
		{&Error{Name: "E", NoMessage: true}, "da72696f03a2" + "646e616d65" + "6145" + "65737461636b" + "60"},
		{&Wrapper{Value: 3}, "da72696f07" + "03"},
		{&Wrapper{Value: "x"}, "da72696f07" + "6178"},
		{&Wrapper{Value: big.NewInt(1)}, "da72696f07" + "c24101"},
		{&Array{Length: 3, Elements: map[uint32]any{2: 7, 0: 5}, Props: map[string]any{"x": 1}}, "da72696f08" + "82" + "03" + "a3" + "0005" + "0207" + "617801"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T %v", tt.in, tt.in), func(t *testing.T) {
			t.Parallel()
			b, err := Marshal(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, hex.EncodeToString(b))
		})
	}
}

func TestMarshal_MapKeysSorted(t *testing.T) {
	t.Parallel()
	m := map[string]any{}
	for i := range 100 {
		m[fmt.Sprint(i)] = i
	}
	first, err := Marshal(m)
	require.NoError(t, err)
	for range 10 {
		b, err := Marshal(m)
		require.NoError(t, err)
		require.Equal(t, first, b, "equal maps give equal bytes")
	}
}

func TestMarshal_AppendMarshal(t *testing.T) {
	t.Parallel()
	dst := []byte{0xff}
	out, err := AppendMarshal(dst, []any{1, 2})
	require.NoError(t, err)
	assert.Equal(t, "ff820102", hex.EncodeToString(out))

	out, err = AppendMarshal(dst, func() {})
	require.Error(t, err)
	assert.Equal(t, dst, out, "on error dst comes back unchanged")
}

type jsonInner struct {
	X int `json:"x"`
}

type Embedded struct {
	E      int
	Shadow string
	Tagged int `json:"tagged"`
}

type embeddedPtr struct {
	P int
}

type jsonSample struct {
	Name       string    `json:"name"`
	Skip       int       `json:"-"`
	Dash       int       `json:"-,"`
	Empty      string    `json:"empty,omitempty"`
	EmptyList  []int     `json:"emptyList,omitempty"`
	Zero       time.Time `json:"zero,omitzero"`
	Kept       int       `json:"kept,omitempty"`
	unexported int
	Embedded
	*embeddedPtr
	Shadow string
	Tagged int
	Ptr    *jsonInner `json:"ptr"`
	NilPtr *jsonInner `json:"nilPtr"`
	Any    any
}

func TestMarshal_Struct(t *testing.T) {
	t.Parallel()
	in := jsonSample{
		Name: "n", Skip: 1, Dash: 2, Kept: 3, unexported: 4,
		Embedded:    Embedded{E: 5, Shadow: "inner", Tagged: 6},
		embeddedPtr: &embeddedPtr{P: 7},
		Shadow:      "outer", Tagged: 8,
		Ptr: &jsonInner{X: 9},
	}
	_, got := roundTrip(t, in)
	assert.Equal(t, map[string]any{
		"name": "n", "-": 2.0, "kept": 3.0,
		"E": 5.0, "tagged": 6.0, "P": 7.0,
		"Shadow": "outer", "Tagged": 8.0,
		"ptr": map[string]any{"x": 9.0}, "nilPtr": nil, "Any": nil,
	}, got)

	// A nil embedded pointer drops its fields.
	in.embeddedPtr = nil
	_, got = roundTrip(t, &in)
	_, has := got.(map[string]any)["P"]
	assert.False(t, has)

	// Properties come in field order, not sorted.
	b, err := Marshal(struct {
		B int
		A int
	}{1, 2})
	require.NoError(t, err)
	assert.Equal(t, "a2614201614102", hex.EncodeToString(b))
}

type node struct {
	Name string `json:"name"`
	Next *node  `json:"next"`
}

// TestMarshal_Shared checks that values met twice are written once and come
// back as one Go value.
func TestMarshal_Shared(t *testing.T) {
	t.Parallel()

	t.Run("map", func(t *testing.T) {
		t.Parallel()
		m := map[string]any{"a": 1}
		b, got := roundTrip(t, []any{m, m})
		// [ {a: 1}, TagRef(1) ]
		assert.Equal(t, "82a1616101da72696f0101", hex.EncodeToString(b))
		s := got.([]any)
		s[0].(map[string]any)["z"] = true
		assert.Equal(t, true, s[1].(map[string]any)["z"], "one map")
	})

	t.Run("indexes count typed arrays twice", func(t *testing.T) {
		t.Parallel()
		f := []float64{1}
		m := map[string]any{}
		b, got := roundTrip(t, []any{f, m, m, f})
		// array 0, Float64Array 1 and its buffer 2, object 3.
		assert.Contains(t, hex.EncodeToString(b), "a0da72696f0103da72696f0101")
		s := got.([]any)
		assert.Same(t, &s[0].([]float64)[0], &s[3].([]float64)[0])
		assert.Equal(t, reflect.ValueOf(s[1]).Pointer(), reflect.ValueOf(s[2]).Pointer())
	})

	t.Run("more objects than the encoder tracks without a map", func(t *testing.T) {
		t.Parallel()
		// Each map is met once, then again after all the others: the
		// second meetings of the later ones are found in the map the
		// encoder makes once its first few are taken.
		const n = 3 * fewRefs
		v := make([]any, 2*n)
		for i := range n {
			m := map[string]any{"i": i}
			v[i], v[n+i] = m, m
		}
		_, got := roundTrip(t, v)
		s := got.([]any)
		for i := range n {
			s[i].(map[string]any)["z"] = i
			assert.Equal(t, i, s[n+i].(map[string]any)["z"], "map %d is one map", i)
		}
	})

	t.Run("struct pointer", func(t *testing.T) {
		t.Parallel()
		n := &node{Name: "x"}
		_, got := roundTrip(t, map[string]any{"a": n, "b": n})
		m := got.(map[string]any)
		assert.Equal(t, reflect.ValueOf(m["a"]).Pointer(), reflect.ValueOf(m["b"]).Pointer())
	})

	t.Run("model pointers", func(t *testing.T) {
		t.Parallel()
		mp, st := &Map{}, &Set{}
		e, f := &Error{Name: "E"}, &Function{Source: "() => 1"}
		_, got := roundTrip(t, []any{mp, st, e, f, mp, st, e, f})
		s := got.([]any)
		for i := range 4 {
			assert.Same(t, s[i], s[i+4], "item %d", i)
		}
	})

	t.Run("slice", func(t *testing.T) {
		t.Parallel()
		inner := []any{1}
		_, got := roundTrip(t, []any{inner, inner, inner[:0]})
		s := got.([]any)
		assert.Same(t, &s[0].([]any)[0], &s[1].([]any)[0])
		assert.Equal(t, []any{}, s[2], "an empty slice is its own value")
	})

	t.Run("error pointer", func(t *testing.T) {
		t.Parallel()
		err := &customError{"boom"}
		_, got := roundTrip(t, []any{err, err})
		s := got.([]any)
		assert.Equal(t, &Error{Name: "Error", Message: "custom boom"}, s[0])
		assert.Same(t, s[0], s[1])
	})
}

type customError struct{ what string }

func (e *customError) Error() string { return "custom " + e.what }

func TestMarshal_Cycles(t *testing.T) {
	t.Parallel()

	t.Run("self-containing array", func(t *testing.T) {
		t.Parallel()
		s := make([]any, 2)
		s[0], s[1] = 1, s
		b, got := roundTrip(t, s)
		assert.Equal(t, "8201da72696f0100", hex.EncodeToString(b))
		g := got.([]any)
		assert.Same(t, &g[0], &g[1].([]any)[0])
	})

	t.Run("self-containing object", func(t *testing.T) {
		t.Parallel()
		m := map[string]any{}
		m["self"] = m
		_, got := roundTrip(t, m)
		g := got.(map[string]any)
		assert.Equal(t, reflect.ValueOf(g).Pointer(), reflect.ValueOf(g["self"]).Pointer())
	})

	t.Run("linked list cycle", func(t *testing.T) {
		t.Parallel()
		a, b := &node{Name: "a"}, &node{Name: "b"}
		a.Next, b.Next = b, a
		_, got := roundTrip(t, a)
		g := got.(map[string]any)
		back := g["next"].(map[string]any)["next"]
		assert.Equal(t, reflect.ValueOf(g).Pointer(), reflect.ValueOf(back).Pointer())
	})

	t.Run("Map holding itself", func(t *testing.T) {
		t.Parallel()
		m := &Map{}
		m.Set(m, m)
		_, got := roundTrip(t, m)
		g := got.(*Map)
		assert.Same(t, g, g.Entries[0].Key)
		assert.Same(t, g, g.Entries[0].Value)
	})

	t.Run("Set holding itself", func(t *testing.T) {
		t.Parallel()
		s := &Set{}
		s.Add(s)
		_, got := roundTrip(t, s)
		g := got.(*Set)
		assert.Same(t, g, g.Values[0])
	})

	t.Run("recursive function", func(t *testing.T) {
		t.Parallel()
		f := &Function{Source: "(n) => n && fact(n - 1)", Env: map[string]any{}}
		f.Env["fact"] = f
		_, got := roundTrip(t, f)
		g := got.(*Function)
		assert.Same(t, g, g.Env["fact"])
	})

	t.Run("error its own cause", func(t *testing.T) {
		t.Parallel()
		e := &Error{Name: "Error", HasCause: true}
		e.Cause = e
		_, got := roundTrip(t, e)
		g := got.(*Error)
		assert.Same(t, g, g.Cause)
	})

	t.Run("pointer cycle without objects", func(t *testing.T) {
		t.Parallel()
		var x any
		x = &x
		_, err := Marshal(x)
		var pe *PathError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, pe.Msg, "pointer cycle")
	})

	t.Run("slices of one array", func(t *testing.T) {
		t.Parallel()
		// s[:1] and s are two values (lengths differ); each holds
		// itself or the other, and both cycles close.
		s := make([]any, 2)
		s[0] = s[:1]
		s[1] = s
		_, got := roundTrip(t, s)
		g := got.([]any)
		first := g[0].([]any)
		assert.Len(t, first, 1)
		assert.Same(t, &first[0], &first[0].([]any)[0])
		assert.Same(t, &g[0], &g[1].([]any)[0])
	})
}

func TestMarshal_PathError(t *testing.T) {
	t.Parallel()
	type withFunc struct {
		OnDone func() `json:"onDone"`
	}
	tests := []struct {
		name string
		enc  Encoder
		in   any
		want string
	}{
		{"function in args", Encoder{Root: "args"}, []any{1, map[string]any{"onDone": func() {}}},
			"args[1].onDone: a function cannot be sent to a worker"},
		{"struct field by json name", Encoder{Root: "args"}, []any{1, withFunc{}},
			"args[1].onDone: a function cannot be sent to a worker"},
		{"root", Encoder{}, make(chan int), "value: a channel cannot be sent to a worker"},
		{"quoted key", Encoder{}, map[string]any{"my key": make(chan int)},
			`value["my key"]: a channel cannot be sent to a worker`},
		{"digit key", Encoder{}, map[string]any{"0": complex(1, 2)},
			`value["0"]: a complex number cannot be sent to a worker`},
		{"Map value", Encoder{}, &Map{Entries: []MapEntry{{"a", 1}, {"k", complex64(1)}}},
			"value<Map value #1>: a complex number cannot be sent to a worker"},
		{"Map key", Encoder{}, &Map{Entries: []MapEntry{{func() {}, 1}}},
			"value<Map key #0>: a function cannot be sent to a worker"},
		{"Set value", Encoder{}, []any{&Set{Values: []any{1, []any{unsafe.Pointer(nil)}}}},
			"value[0]<Set value #1>[0]: an unsafe.Pointer cannot be sent to a worker"},
		{"error cause", Encoder{}, &Error{Cause: func() {}, HasCause: true},
			"value.cause: a function cannot be sent to a worker"},
		{"sparse array element", Encoder{}, &Array{Length: 3, Elements: map[uint32]any{2: func() {}}},
			"value[2]: a function cannot be sent to a worker"},
		{"sparse array property", Encoder{}, &Array{Length: 3, Props: map[string]any{"cb": func() {}}},
			"value.cb: a function cannot be sent to a worker"},
		{"sparse array index past length", Encoder{}, &Array{Length: 3, Elements: map[uint32]any{3: 1}},
			"value: a value.Array of length 3 holds an element at index 3"},
		{"sparse array index as property", Encoder{}, &Array{Props: map[string]any{"1": 1}},
			`value: a value.Array's property "1" is an index; put it in Elements`},
		{"sparse array length property", Encoder{}, &Array{Props: map[string]any{"length": 1}},
			`value: a value.Array's property "length" is its Length`},
		{"wrapper of an object", Encoder{}, []any{&Wrapper{Value: []any{}}},
			"value[0]: a value.Wrapper holds a []interface {}; it holds a number, string, boolean or *big.Int"},
		{"captured variable", Encoder{Root: "fn"}, &Function{Env: map[string]any{"cb": func() {}}},
			"fn(free variable cb): a function cannot be sent to a worker"},
		{"non-ASCII key is quoted", Encoder{}, map[string]any{"é": func() {}},
			`value["é"]: a function cannot be sent to a worker`},
		{"integer too large", Encoder{}, map[string]any{"n": int64(1<<53 + 1)},
			"value.n: integer 9007199254740993 is outside ±2^53, where JavaScript numbers are exact (send a *big.Int)"},
		{"uint too large", Encoder{}, []uint{1 << 60},
			"value[0]: integer 1152921504606846976 is outside ±2^53, where JavaScript numbers are exact (send a *big.Int)"},
		{"int keys", Encoder{}, map[int]string{1: "a"},
			"value: a map with int keys cannot be sent to a worker (use *value.Map)"},
		{"date out of range", Encoder{}, []any{time.UnixMilli(8.64e15 + 1)},
			"value[0]: a date more than 8.64e15 ms from 1970 is outside the range of a JavaScript Date"},
		{"duplicate Map key", Encoder{}, &Map{Entries: []MapEntry{{1, "a"}, {1.0, "b"}}},
			"value: Map key #1 repeats an earlier one"},
		{"duplicate Set value", Encoder{}, &Set{Values: []any{math.NaN(), math.NaN()}},
			"value: Set value #1 repeats an earlier one"},
		{"keys equal in JavaScript", Encoder{}, map[string]any{"\xff": 1, "\xfe": 2},
			`value: keys "\xfe" and "\xff" are the same JavaScript string`},
		{"negative line", Encoder{}, &Function{Line: -1},
			"value: a function's line and column must be in [0, 2^31), have -1:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.enc.Encode(tt.in)
			var pe *PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestMarshal_Depth(t *testing.T) {
	t.Parallel()
	nest := func(n int) any {
		var v any = 1
		for range n {
			v = []any{v}
		}
		return v
	}
	b, err := Marshal(nest(MaxDepth))
	require.NoError(t, err)
	_, err = Unmarshal(b)
	require.NoError(t, err, "what Marshal writes, Unmarshal reads")

	_, err = Marshal(nest(MaxDepth + 1))
	var pe *PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "nested deeper than 10000 levels", pe.Msg)

	_, err = Encoder{MaxDepth: 3}.Encode(nest(4))
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "value[0][0][0]", pe.Path)

	// Objects count, each one level: a Set holding a Set is two.
	_, err = Encoder{MaxDepth: 2}.Encode([]any{&Set{Values: []any{1, "s", big.NewInt(1)}}})
	require.NoError(t, err)
	_, err = Encoder{MaxDepth: 2}.Encode([]any{&Set{Values: []any{&Set{}}}})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "value[0]<Set value #0>", pe.Path)
	// A DataView's buffer is an object inside it.
	_, err = Encoder{MaxDepth: 1}.Encode(DataView{1})
	require.ErrorAs(t, err, &pe)
	_, err = Encoder{MaxDepth: 2}.Encode(DataView{1})
	require.NoError(t, err)
	// A reference is not an object: it may sit one below the limit.
	inner := []any{1}
	_, err = Encoder{MaxDepth: 2}.Encode([]any{inner, []any{inner}})
	require.NoError(t, err)
}

func TestMarshal_LoneSurrogates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		units []uint16
		want  string // the Go string Unmarshal gives
	}{
		{"lone high", []uint16{'a', 0xd800, 'b'}, "a\xed\xa0\x80b"},
		{"lone low", []uint16{0xdc00}, "\xed\xb0\x80"},
		{"high at end", []uint16{'x', 0xdbff}, "x\xed\xaf\xbf"},
		{"reversed pair", []uint16{0xdc00, 0xd800}, "\xed\xb0\x80\xed\xa0\x80"},
		{"pair and lone", []uint16{0xd83d, 0xde00, 0xd800}, "😀\xed\xa0\x80"},
		{"valid pair only", []uint16{0xd83d, 0xde00}, "😀"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w cbor.Writer
			WriteUTF16(&w, tt.units)
			got, err := Unmarshal(w.Bytes())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			// Marshal gives the same code units back.
			b, err := Marshal(got)
			require.NoError(t, err)
			assert.Equal(t, w.Bytes(), b)
		})
	}

	// Invalid bytes that are not a surrogate's form become U+FFFD.
	_, got := roundTrip(t, "a\xffb")
	assert.Equal(t, "a\uFFFDb", got)

	// As an object key.
	var w cbor.Writer
	w.MapHeader(1)
	WriteUTF16(&w, []uint16{0xd800})
	w.Int(1)
	got, err := Unmarshal(w.Bytes())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"\xed\xa0\x80": 1.0}, got)
	b, err := Marshal(got)
	require.NoError(t, err)
	assert.Equal(t, w.Bytes(), b)
}

func TestMarshal_TypedArraysSingleCopy(t *testing.T) {
	t.Parallel()
	// The element bytes are the slice's memory, little-endian.
	in := []uint32{0x01020304, 0xa0b0c0d0}
	b, err := Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, "d84648"+"04030201"+"d0c0b0a0", hex.EncodeToString(b))

	// The portable path writes the same bytes element by element.
	for _, tt := range []struct {
		p    unsafe.Pointer
		n    int
		size int
	}{
		{unsafe.Pointer(&in[0]), 2, 4},
		{unsafe.Pointer(&[]uint16{0x0102, 0xfffe}[0]), 2, 2},
		{unsafe.Pointer(&[]float64{math.Pi, -1}[0]), 2, 8},
	} {
		native := appendElements(nil, tt.p, tt.n, tt.size, true)
		portable := appendElements(nil, tt.p, tt.n, tt.size, false)
		if hostLittleEndian() {
			assert.Equal(t, native, portable)
		}
		back := alignedBytes(len(portable))
		fillElements(back, portable, tt.size, false)
		assert.Equal(t, unsafe.Slice((*byte)(tt.p), tt.n*tt.size), back, "fillElements undoes appendElements")
	}
}

func TestMarshal_Concurrent(t *testing.T) {
	t.Parallel()
	v := map[string]any{"a": []float64{1, 2}, "b": &Set{Values: []any{"x"}}}
	want, err := Marshal(v)
	require.NoError(t, err)
	enc := Encoder{Root: "args"}
	done := make(chan []byte)
	for range 8 {
		go func() {
			b, _ := enc.Encode(v)
			done <- b
		}()
	}
	for range 8 {
		assert.Equal(t, want, <-done)
	}
}

type (
	namedU8   uint8
	namedI8   int8
	namedU16  uint16
	namedI16  int16
	namedU32  uint32
	namedI32  int32
	namedU64  uint64
	namedI64  int64
	namedF32  float32
	namedF64  float64
	namedBool bool
	namedKey  string
)

// TestMarshal_ReflectKinds covers values that only reflection sees: named
// element types, maps of other value types, Go arrays, named scalars.
func TestMarshal_ReflectKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"[]namedU8", []namedU8{1}, []byte{1}},
		{"[]namedI8", []namedI8{-1}, []int8{-1}},
		{"[]namedU16", []namedU16{1}, []uint16{1}},
		{"[]namedI16", []namedI16{-1}, []int16{-1}},
		{"[]namedU32", []namedU32{1}, []uint32{1}},
		{"[]namedI32", []namedI32{-1}, []int32{-1}},
		{"[]namedU64", []namedU64{1}, []uint64{1}},
		{"[]namedI64", []namedI64{-1}, []int64{-1}},
		{"[]namedF32", []namedF32{0.5}, []float32{0.5}},
		{"[]namedF64", []namedF64{0.5}, []float64{0.5}},
		{"named bool", namedBool(true), true},
		{"[]namedBool", []namedBool{true}, []any{true}},
		{"map with named keys", map[namedKey][]int{"b": {1}, "a": nil}, map[string]any{"a": nil, "b": []any{1.0}}},
		{"map of structs", map[string]jsonInner{"k": {X: 1}}, map[string]any{"k": map[string]any{"x": 1.0}}},
		{"array of pointers", [2]*int{ptrTo(1), nil}, []any{1.0, nil}},
		{"pointer to array", &[2]string{"a", "b"}, []any{"a", "b"}},
		{"pointer to map", &map[string]int{"a": 1}, map[string]any{"a": 1.0}},
		{"slice of times", []time.Time{time.UnixMilli(1)}, []any{time.UnixMilli(1).UTC()}},
		{"slice of *Map", []*Map{{}, nil}, []any{&Map{Entries: []MapEntry{}}, nil}},
		{"slice of errors", []error{errors.New("e"), nil}, []any{&Error{Name: "Error", Message: "e"}, nil}},
		{"nil error pointer", []any{(*customError)(nil)}, []any{nil}},
		{"slice of big.Int", []big.Int{*big.NewInt(2)}, []any{big.NewInt(2)}},
		{"pointer to RegExp", &RegExp{Source: "x"}, RegExp{Source: "x"}},
		{"pointer to InvalidDate", &InvalidDate{}, InvalidDate{}},
		{"pointer to BlobRef", &BlobRef{9}, BlobRef{9}},
		{"Set value", Set{Values: []any{1}}, &Set{Values: []any{1.0}}},
		{"Error value", Error{Name: "E"}, &Error{Name: "E"}},
		{"Function value", Function{Source: "f"}, &Function{Source: "f", Env: map[string]any{}}},
		{"reflected ArrayBuffer", struct{ B ArrayBuffer }{ArrayBuffer{1}}, map[string]any{"B": ArrayBuffer{1}}},
		{"reflected DataView", struct{ D DataView }{DataView{1}}, map[string]any{"D": DataView{1}}},
		{"reflected Undefined", struct{ U Undefined }{}, map[string]any{"U": Undefined{}}},
		{"interface field", struct{ I fmt.Stringer }{RegExp{}}, map[string]any{"I": RegExp{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := roundTrip(t, tt.in)
			assert.Equal(t, tt.want, got)
		})
	}
}

type zeroer struct{ n int }

func (z *zeroer) IsZero() bool { return z == nil || z.n == 0 }

func TestMarshal_OmitEmptyAndZero(t *testing.T) {
	t.Parallel()
	type sample struct {
		M  map[string]int `json:",omitempty"`
		P  *int           `json:",omitempty"`
		B  bool           `json:",omitempty"`
		F  float64        `json:",omitempty"`
		I  any            `json:",omitempty"`
		A  [0]int         `json:",omitempty"`
		S  struct{}       `json:",omitempty"` // structs are never empty
		Z  *zeroer        `json:",omitzero"`
		ZV time.Time      `json:",omitzero"`
		ZA [2]int         `json:",omitzero"`
	}
	_, got := roundTrip(t, sample{})
	assert.Equal(t, map[string]any{"S": map[string]any{}}, got)

	_, got = roundTrip(t, sample{M: map[string]int{"a": 1}, P: ptrTo(0), B: true, F: 1, I: 0,
		Z: &zeroer{1}, ZV: time.UnixMilli(0), ZA: [2]int{0, 1}})
	m := got.(map[string]any)
	for _, k := range []string{"M", "P", "B", "F", "I", "S", "Z", "ZV", "ZA"} {
		assert.Contains(t, m, k)
	}
}

func TestMarshal_MoreShared(t *testing.T) {
	t.Parallel()
	ab, dv := ArrayBuffer{1, 2}, DataView{3}
	ts := &struct{ T time.Time }{time.UnixMilli(5)}
	tm := &ts.T
	// array 0, ArrayBuffer 1, DataView 2 (buffer 3), Date 4.
	b, got := roundTrip(t, []any{ab, dv, tm, ab, dv, tm})
	assert.Equal(t, "86"+"420102"+"da72696f0284004103"+"0001"+"c1fb3f747ae147ae147b"+
		refHex+"01"+refHex+"02"+refHex+"04", hex.EncodeToString(b))
	s := got.([]any)
	assert.Same(t, &s[0].(ArrayBuffer)[0], &s[3].(ArrayBuffer)[0])
	assert.Same(t, &s[1].(DataView)[0], &s[4].(DataView)[0])
	assert.Equal(t, s[2], s[5])
}

func TestMarshal_MapKeysSameValueZero(t *testing.T) {
	t.Parallel()
	shared := []int{1}
	m := map[string]any{}
	tests := []struct {
		name string
		keys []any
		dup  bool
	}{
		{"int and float", []any{int8(1), 1.0}, true},
		{"uint and named float", []any{uint(2), namedF64(2)}, true},
		{"float32 and int", []any{float32(0.5), 0.5}, true},
		{"named string", []any{namedKey("a"), "a"}, true},
		{"named bool", []any{namedBool(true), true}, true},
		{"nil and nil pointer", []any{nil, (*int)(nil)}, true},
		{"nil slice and nil map", []any{[]int(nil), map[string]any(nil)}, true},
		{"one slice", []any{shared, shared}, true},
		{"one map", []any{m, m}, true},
		{"two empty slices", []any{[]int{}, []int{}}, false},
		{"equal structs", []any{RegExp{Source: "a"}, RegExp{Source: "a"}}, false},
		{"equal times", []any{time.UnixMilli(1), time.UnixMilli(1)}, false},
		{"big.Int values", []any{*big.NewInt(3), big.NewInt(3)}, true},
		{"nil big.Int and null", []any{(*big.Int)(nil), nil}, true},
		{"BlobRefs", []any{BlobRef{1}, BlobRef{1}}, true},
		{"undefined", []any{Undefined{}, Undefined{}}, true},
		{"1 and \"1\"", []any{1, "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mp := &Map{}
			for _, k := range tt.keys {
				mp.Entries = append(mp.Entries, MapEntry{k, 0})
			}
			_, err := Marshal(mp)
			if tt.dup {
				require.ErrorContains(t, err, "Map key #1 repeats an earlier one")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestMap_SameValueZero checks the model's own key comparison.
func TestMap_SameValueZero(t *testing.T) {
	t.Parallel()
	m := &Map{}
	m.Set(math.NaN(), 1)
	m.Set(math.NaN(), 2)
	m.Set(0.0, "zero")
	m.Set(math.Copysign(0, -1), "minus zero")
	m.Set(big.NewInt(7), "seven")
	assert.Equal(t, 3, m.Len())
	v, ok := m.Get(math.NaN())
	assert.True(t, ok)
	assert.Equal(t, 2, v)
	v, _ = m.Get(0.0)
	assert.Equal(t, "minus zero", v)
	v, _ = m.Get(big.NewInt(7))
	assert.Equal(t, "seven", v)
	_, ok = m.Get("7")
	assert.False(t, ok)

	s := &Set{}
	s.Add(math.NaN())
	s.Add(math.NaN())
	s.Add(m)
	s.Add(m)
	assert.Equal(t, 2, s.Len())
	assert.True(t, s.Has(m))
	assert.False(t, s.Has(&Map{}))
}

// AppendEncodeArray writes what AppendEncode writes for the same []any,
// shared references, errors' paths and a nil list included, without the
// allocation of boxing the list.
func TestEncoder_AppendEncodeArray_IsAppendEncode(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"a": 1.5}
	list := []any{"p", true}
	fn := &Function{Source: "(o) => o", Env: map[string]any{"k": list}}
	many := make([]any, 0, 4*fewRefs)
	for i := range 2 * fewRefs {
		m := map[string]any{"i": i}
		many = append(many, m, m)
	}
	enc := Encoder{Root: "args"}
	for name, items := range map[string][]any{
		"nil":     nil,
		"empty":   {},
		"do-work": {fn, 5},
		"shared":  {fn, obj, list, obj, list, -7, []byte{1, 2}},
		"many":    many,
	} {
		want, werr := enc.AppendEncode([]byte{0xff}, items)
		got, gerr := enc.AppendEncodeArray([]byte{0xff}, items)
		require.NoError(t, werr, name)
		require.NoError(t, gerr, name)
		assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got), name)
	}
	_, werr := enc.AppendEncode(nil, []any{1, map[string]any{"f": func() {}}})
	_, gerr := enc.AppendEncodeArray(nil, []any{1, map[string]any{"f": func() {}}})
	require.Error(t, gerr)
	assert.Equal(t, werr.Error(), gerr.Error())
	assert.Contains(t, gerr.Error(), "args[1].f")
}

// Not parallel: testing.AllocsPerRun refuses parallel tests.
func TestEncoder_AppendEncodeArray_AllocatesNothing(t *testing.T) {
	enc := Encoder{Root: "args"}
	items := []any{&Function{Source: "(i) => i + 1"}, 5}
	buf := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = enc.AppendEncodeArray(buf[:0], items); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations encoding [fn, 5] into a reused buffer")
}
