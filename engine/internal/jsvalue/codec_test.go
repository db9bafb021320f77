package jsvalue

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/value"
)

// testRuntime is a goja runtime with a codec, as the engine makes one
// for a workunit: results encoded as "result", "back to the master", within
// the engine's default limit; functions made from captured sources.
type testRuntime struct {
	rt  *goja.Runtime
	enc *Encoder
	dec *Decoder
}

func newTestRuntime(t testing.TB) *testRuntime {
	t.Helper()
	rt := goja.New()
	in, err := LoadIntrinsics(rt)
	require.NoError(t, err)
	compile := func(name, src string) (*goja.Program, error) { return goja.Compile(name, src, false) }
	return &testRuntime{
		rt:  rt,
		enc: NewEncoder(rt, in, EncodeOptions{Root: "result", Dest: "back to the master", Limit: 64 << 20}),
		dec: NewDecoder(rt, in, NewFunctions(rt, compile), nil),
	}
}

func runJS(t testing.TB, rl *testRuntime, src string) goja.Value {
	t.Helper()
	v, err := rl.rt.RunString(src)
	require.NoError(t, err)
	return v
}

func encodeJS(t testing.TB, rl *testRuntime, v goja.Value) []byte {
	t.Helper()
	var data []byte
	var err error
	require.Nil(t, rl.rt.Try(func() { data, err = rl.enc.EncodeValue(v) }))
	require.NoError(t, err)
	return append([]byte(nil), data...)
}

// checkJS runs check, a JavaScript function source, on v in rl; it must
// return true, or a string saying what is wrong.
func checkJS(t testing.TB, rl *testRuntime, v goja.Value, check string) {
	t.Helper()
	fn, ok := goja.AssertFunction(runJS(t, rl, "("+check+")"))
	require.True(t, ok)
	got, err := fn(goja.Undefined(), v)
	require.NoError(t, err)
	require.Equal(t, true, got.Export(), "check %s", check)
}

// roundTripCases are values built in JavaScript, each with a check that
// its copy is the same kind of value, with the same content and the same
// shared and cyclic references.
var roundTripCases = []struct{ src, check string }{
	{"undefined", "v => v === undefined"},
	{"null", "v => v === null"},
	{"true", "v => v === true"},
	{"42", "v => v === 42"},
	{"-7.25", "v => v === -7.25"},
	{"-0", "v => Object.is(v, -0)"},
	{"NaN", "v => Number.isNaN(v)"},
	{"-Infinity", "v => v === -Infinity"},
	{"2 ** 53 + 2", "v => v === 2 ** 53 + 2"},
	{"12345678901234567890123n", "v => v === 12345678901234567890123n"},
	{"-5n", "v => v === -5n"},
	{"0n", "v => v === 0n"},
	{"'héllo ✓ 😀'", "v => v === 'héllo ✓ 😀'"},
	{"'a\\ud800b'", "v => v.length === 3 && v.charCodeAt(1) === 0xd800"},
	{"''", "v => v === ''"},
	{"[1, 'two', [3]]", "v => Array.isArray(v) && v.length === 3 && v[1] === 'two' && v[2][0] === 3"},
	{"({a: 1, 'b c': {d: [null]}, __proto__x: 2})", "v => Object.getPrototypeOf(v) === Object.prototype && JSON.stringify(v) === '{\"a\":1,\"b c\":{\"d\":[null]},\"__proto__x\":2}'"},
	{"JSON.parse('{\"__proto__\": 5}')", "v => Object.getPrototypeOf(v) === Object.prototype && Object.keys(v)[0] === '__proto__' && v.__proto__ === 5"},
	{"({z: 1, a: 2, 10: 3, 2: 4})", "v => Object.keys(v).join() === '2,10,z,a'"},
	{"new Map([[1, 'a'], ['1', 'b'], [{k: 1}, [2]]])", "v => v instanceof Map && v.size === 3 && v.get(1) === 'a' && v.get('1') === 'b' && [...v.keys()][2].k === 1"},
	{"new Set([3, 1, 'x', 3])", "v => v instanceof Set && [...v].join() === '3,1,x'"},
	{"new Date(Date.UTC(2026, 10, 30, 6, 56, 44, 123))", "v => v instanceof Date && v.getTime() === Date.UTC(2026, 10, 30, 6, 56, 44, 123)"},
	{"new Date(8.64e15)", "v => v.getTime() === 8.64e15"},
	{"new Date(-8.64e15 + 1)", "v => v.getTime() === -8.64e15 + 1"},
	{"new Date(NaN)", "v => v instanceof Date && Number.isNaN(v.getTime())"},
	{"/a+b/gi", "v => v instanceof RegExp && v.source === 'a+b' && v.flags === 'gi'"},
	{"new Uint8Array([1, 2, 255]).buffer", "v => v instanceof ArrayBuffer && new Uint8Array(v).join() === '1,2,255'"},
	{"new Float64Array([1.5, -0, NaN])", "v => v instanceof Float64Array && v[0] === 1.5 && Object.is(v[1], -0) && Number.isNaN(v[2])"},
	{"new Float32Array([0.5, 3])", "v => v instanceof Float32Array && v.join() === '0.5,3'"},
	{"new Int8Array([-1, 127])", "v => v instanceof Int8Array && v.join() === '-1,127'"},
	{"new Uint8ClampedArray([300])", "v => v instanceof Uint8ClampedArray && v[0] === 255"},
	{"new Int16Array([-300])", "v => v instanceof Int16Array && v[0] === -300"},
	{"new Uint16Array([65535])", "v => v instanceof Uint16Array && v[0] === 65535"},
	{"new Int32Array([-70000])", "v => v instanceof Int32Array && v[0] === -70000"},
	{"new Uint32Array([4e9])", "v => v instanceof Uint32Array && v[0] === 4e9"},
	{"new BigInt64Array([-5n])", "v => v instanceof BigInt64Array && v[0] === -5n"},
	{"new BigUint64Array([2n ** 64n - 1n])", "v => v instanceof BigUint64Array && v[0] === 2n ** 64n - 1n"},
	{"new Uint16Array(new ArrayBuffer(16), 4, 3)", "v => v instanceof Uint16Array && v.length === 3 && v.byteOffset === 4 && v.buffer.byteLength === 16"},
	{"new DataView(new Uint8Array([9, 8, 7]).buffer, 1)", "v => v instanceof DataView && v.byteLength === 2 && v.getUint8(0) === 8"},
	{"(() => { const b = new ArrayBuffer(8); return [new Uint8Array(b), new Uint32Array(b, 4, 1), b] })()",
		"v => v[0].buffer === v[1].buffer && v[1].buffer === v[2] && (v[1][0] = 7, v[0][4] === 7)"},
	{"new TypeError('bad')", "v => v instanceof TypeError && v.name === 'TypeError' && v.message === 'bad' && typeof v.stack === 'string' && !Object.keys(v).length"},
	{"(() => { class MyError extends Error {}; const e = new MyError('x'); e.name = 'MyError'; e.code = 7; return e })()",
		"v => Object.getPrototypeOf(v) === Error.prototype && v.name === 'Error' && !v.hasOwnProperty('name') && v.message === 'x' && !('code' in v)"},
	{"new Error('outer', {cause: new RangeError('inner')})", "v => v.cause instanceof RangeError && v.cause.message === 'inner'"},
	{"(() => { const o = {n: 1}; return {a: o, b: o, c: [o]} })()", "v => v.a === v.b && v.c[0] === v.a"},
	{"(() => { const o = {}; o.self = o; return o })()", "v => v.self === v"},
	{"(() => { const a = [1]; a.push(a); return a })()", "v => v[1] === v && v[0] === 1"},
	{"(() => { const m = new Map(); m.set(m, m); return m })()", "v => v.get(v) === v"},
	{"(() => { const s = new Set(); s.add(s); return s })()", "v => v.has(v)"},
	{"(() => { const a = [[]]; a[0].push(a); return a })()", "v => v[0][0] === v"},
	{"(() => { const e = new Error('e'); e.cause = e; return e })()", "v => v.cause === v"},
	{"new String('boxed')", "v => v instanceof String && String(v) === 'boxed'"},
	{"new Number(3)", "v => v instanceof Number && Number(v) === 3"},
	{"Object(5n)", "v => typeof v === 'object' && v instanceof BigInt && v.valueOf() === 5n"},
	{"(() => { class P { constructor() { this.x = 1 } get y() { return 2 } }; return new P() })()", "v => Object.getPrototypeOf(v) === Object.prototype && v.x === 1 && !('y' in v)"},
	{"({get g() { return 'got' }})", "v => Object.getOwnPropertyDescriptor(v, 'g').value === 'got'"},
	{"[1, , 3]", "v => v.length === 3 && !(1 in v) && v[2] === 3 && Object.keys(v).join() === '0,2'"},
	// What structured clone keeps and riot once lost (issue 12): wrappers,
	// holes, non-index properties, keys with lone surrogates, "/" in a
	// RegExp, Errors as the HTML standard has them.
	{"new Number(-0)", "v => v instanceof Number && Object.is(v.valueOf(), -0)"},
	{"new Number(NaN)", "v => v instanceof Number && Number.isNaN(v.valueOf())"},
	{"new Number(2 ** 53 + 2)", "v => v instanceof Number && v.valueOf() === 2 ** 53 + 2"},
	{"new Boolean(false)", "v => v instanceof Boolean && v.valueOf() === false && typeof v === 'object'"},
	{"new String('a\\ud800')", "v => v instanceof String && v.length === 2 && v.charCodeAt(1) === 0xd800"},
	{"Object(-(2n ** 70n))", "v => typeof v === 'object' && v.valueOf() === -(2n ** 70n)"},
	{"(() => { const n = new Number(1); return [n, n, {n}] })()", "v => v[0] === v[1] && v[2].n === v[0] && v[0] instanceof Number"},
	{"new Array(10)", "v => Array.isArray(v) && v.length === 10 && Object.keys(v).length === 0"},
	{"(() => { const a = []; a[4294967294] = 'last'; return a })()", "v => v.length === 4294967295 && v[4294967294] === 'last' && Object.keys(v).length === 1"},
	{"(() => { const a = [1, 2]; a.foo = 'bar'; a['-1'] = 'neg'; a['4294967295'] = 'big'; return a })()",
		"v => Array.isArray(v) && v.length === 2 && v.foo === 'bar' && v['-1'] === 'neg' && v['4294967295'] === 'big' && Object.keys(v).join() === '0,1,foo,-1,4294967295'"},
	{"(() => { const a = [, 'x']; a.self = a; a[0] = undefined; delete a[0]; return a })()", "v => v.self === v && !(0 in v) && v[1] === 'x'"},
	{"(() => { const o = {}; o['a\\ud800'] = 5; o['a\\ud801'] = 6; o['a\\ufffd'] = 7; return o })()",
		"v => v['a\\ud800'] === 5 && v['a\\ud801'] === 6 && v['a\\ufffd'] === 7 && Object.keys(v).length === 3"},
	{"(() => { const a = [1]; a['\\udc00'] = 'low'; return a })()", "v => v['\\udc00'] === 'low' && v.length === 1"},
	{"new RegExp('/')", "v => v instanceof RegExp && v.source === '\\\\/' && v.test('/')"},
	{"new RegExp('a[/]b\\\\u002f', 'g')", "v => v.source === 'a[\\\\/]b\\\\/' && v.flags === 'g' && v.test('a/b/')"},
	{"new RegExp('\\\\\\\\u002f')", "v => v.source === '\\\\\\\\u002f' && v.test('\\\\u002f')"},
	{"new RegExp('\\n')", "v => v.source === '\\\\n'"},
	{"(() => { const r = /foo/gim; r.lastIndex = 2; return r })()", "v => v.lastIndex === 0 && v.flags === 'gim'"},
	{"new Error()", "v => v instanceof Error && !v.hasOwnProperty('message') && v.message === ''"},
	{"new Error('')", "v => v.hasOwnProperty('message') && v.message === ''"},
	{"new Error('a\\ud800')", "v => v.message.length === 2 && v.message.charCodeAt(1) === 0xd800"},
	{"(() => { const e = new RangeError('x'); e.name = 'Custom'; return e })()", "v => Object.getPrototypeOf(v) === Error.prototype && v.name === 'Error'"},
	{"(() => { const e = new Error('x'); e.name = 'TypeError'; return e })()", "v => Object.getPrototypeOf(v) === TypeError.prototype && v.name === 'TypeError'"},
	{"(() => { const e = new Error('x'); e.name = 5; return e })()", "v => v.name === 'Error'"},
	{"(() => { const e = new Error('x'); Object.defineProperty(e, 'message', {get() { return 'g' }}); return e })()", "v => !v.hasOwnProperty('message')"},
	{"(() => { const e = new Error('x'); e.message = 12; return e })()", "v => v.message === '12'"},
	{"new AggregateError([1], 'agg')", "v => Object.getPrototypeOf(v) === AggregateError.prototype && v.message === 'agg' && !('errors' in v)"},
	{"new EvalError('e')", "v => Object.getPrototypeOf(v) === EvalError.prototype"},
	{"new URIError('e')", "v => Object.getPrototypeOf(v) === URIError.prototype"},
	{"new ReferenceError('e')", "v => Object.getPrototypeOf(v) === ReferenceError.prototype"},
	{"new SyntaxError('e')", "v => Object.getPrototypeOf(v) === SyntaxError.prototype"},
	{"(() => { class E2 extends TypeError { constructor(m) { super(m); this.extra = 1 } }; return new E2('m') })()",
		"v => Object.getPrototypeOf(v) === TypeError.prototype && v.name === 'TypeError' && !('extra' in v) && v.message === 'm'"},
	{"Object.prototype", "v => Object.getPrototypeOf(v) === Object.prototype && v !== Object.prototype"},
	{"({'0': 'foo', length: 1})", "v => !Array.isArray(v) && v[0] === 'foo' && v.length === 1"},
	{"(() => { const o = {}; Object.defineProperty(o, 'foo', {value: 'bar', enumerable: false}); return o })()", "v => !('foo' in v)"},
	{"(() => { const o = {}; Object.defineProperty(o, 'foo', {value: 'bar', enumerable: true, writable: false, configurable: false}); return o })()",
		"v => { const d = Object.getOwnPropertyDescriptor(v, 'foo'); return d.value === 'bar' && d.writable && d.configurable }"},
}

func TestCodec_RoundTrip_JS(t *testing.T) {
	t.Parallel()
	a, b := newTestRuntime(t), newTestRuntime(t)
	for _, tc := range roundTripCases {
		data := encodeJS(t, a, runJS(t, a, tc.src))
		v, err := b.dec.DecodeValue(data)
		require.NoError(t, err, tc.src)
		// Encoding the copy gives the same bytes: the encoding is stable.
		assert.Equal(t, data, encodeJS(t, b, v), "re-encoding %s", tc.src)
		checkJS(t, b, v, tc.check)
	}
}

func TestCodec_RoundTrip_GoToJS(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	shared := map[string]any{"n": 1.0}
	cyclic := []any{"x", nil}
	cyclic[1] = cyclic
	m := &value.Map{}
	m.Set("k", []any{1.0})
	m.Set(2.0, "two")
	cases := []struct {
		v     any
		check string
	}{
		{value.Undefined{}, "v => v === undefined"},
		{nil, "v => v === null"},
		{3, "v => v === 3"},
		{-0.0 * -1 * math.Copysign(0, -1), "v => Object.is(v, -0)"},
		{math.Inf(1), "v => v === Infinity"},
		{"s", "v => v === 's'"},
		{big.NewInt(-99), "v => v === -99n"},
		{[]any{1.0, "a"}, "v => v.length === 2 && v[1] === 'a'"},
		{map[string]any{"b": true}, "v => v.b === true"},
		{m, "v => v instanceof Map && v.get('k')[0] === 1 && v.get(2) === 'two'"},
		{&value.Set{Values: []any{1.0, 2.0}}, "v => v instanceof Set && v.size === 2"},
		{time.UnixMilli(1700000000123), "v => v instanceof Date && v.getTime() === 1700000000123"},
		{value.RegExp{Source: "x*", Flags: "y"}, "v => v.sticky && v.source === 'x*'"},
		{value.ArrayBuffer{1, 2}, "v => v instanceof ArrayBuffer && v.byteLength === 2"},
		{[]byte{7, 8}, "v => v instanceof Uint8Array && v[1] === 8"},
		{[]float64{1.5, -2}, "v => v instanceof Float64Array && v[1] === -2"},
		{[]float32{0.25}, "v => v instanceof Float32Array && v[0] === 0.25"},
		{[]int32{-1}, "v => v instanceof Int32Array && v[0] === -1"},
		{[]int64{-1}, "v => v instanceof BigInt64Array && v[0] === -1n"},
		{[]uint64{1}, "v => v instanceof BigUint64Array && v[0] === 1n"},
		{&value.Error{Name: "RangeError", Message: "m", Stack: "RangeError: m\n    at x"}, "v => v instanceof RangeError && v.message === 'm' && v.stack.includes('at x')"},
		{[]any{shared, shared}, "v => v[0] === v[1] && v[0].n === 1"},
		{cyclic, "v => v[1] === v"},
		{struct {
			Name string `json:"name"`
			Age  int
		}{"ann", 3}, "v => v.name === 'ann' && v.Age === 3"},
	}
	for _, tc := range cases {
		data, err := value.Marshal(tc.v)
		require.NoError(t, err, "%#v", tc.v)
		v, err := rl.dec.DecodeValue(data)
		require.NoError(t, err)
		checkJS(t, rl, v, tc.check)
	}
}

func TestCodec_RoundTrip_JSToGo(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	for _, tc := range []struct {
		src  string
		want any
	}{
		{"[1, 'a', null, undefined, true]", []any{1.0, "a", nil, value.Undefined{}, true}},
		{"({x: {y: [2]}})", map[string]any{"x": map[string]any{"y": []any{2.0}}}},
		{"12n ** 20n", new(big.Int).Exp(big.NewInt(12), big.NewInt(20), nil)},
		{"new Date(0)", time.UnixMilli(0).UTC()},
		{"new Date(NaN)", value.InvalidDate{}},
		{"new Float64Array([1, 2])", []float64{1, 2}},
		{"new Uint8Array([1, 2])", []byte{1, 2}},
		{"new Uint8ClampedArray([1])", value.Uint8ClampedArray{1}},
		{"/x/g", value.RegExp{Source: "x", Flags: "g"}},
		{"new Set(['a'])", &value.Set{Values: []any{"a"}}},
	} {
		data := encodeJS(t, rl, runJS(t, rl, tc.src))
		got, err := value.Unmarshal(data)
		require.NoError(t, err, tc.src)
		assert.Equal(t, tc.want, got, tc.src)
	}
	data := encodeJS(t, rl, runJS(t, rl, "(() => { const o = {}; o.me = o; return o })()"))
	got, err := value.Unmarshal(data)
	require.NoError(t, err)
	m := got.(map[string]any)
	assert.Equal(t, identityOf(m), identityOf(m["me"].(map[string]any)))
}

func identityOf(m map[string]any) string {
	return fmtPointer(m)
}

func TestCodec_Decode_Malformed(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	for _, data := range [][]byte{
		{},           // empty
		{0x82, 0x01}, // array missing an item
		{0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // huge array
		{0xda, 0x72, 0x69, 0x6f, 0x01, 0x05},                   // reference to object 5 of 0
		{0xd8, 0x56, 0x43, 1, 2, 3},                            // Float64Array of 3 bytes
		{0x01, 0x02},                                           // bytes after the end
		{0x62, 0xff, 0xfe},                                     // text that is not UTF-8
		{0xd9, 0x03, 0xe7, 0x00},                               // unknown tag 999
	} {
		_, err := rl.dec.DecodeValue(data)
		assert.Error(t, err, "% x", data)
	}
	deep := make([]byte, 0, MaxNesting+2)
	for i := 0; i <= MaxNesting+1; i++ {
		deep = append(deep, 0x81)
	}
	deep = append(deep, 0x00)
	_, err := rl.dec.DecodeValue(deep)
	assert.ErrorContains(t, err, "levels deep")
}

// FuzzDecodeJS checks that no input makes the engine's Decoder panic, and
// that what decodes encodes again.
func FuzzDecodeJS(f *testing.F) {
	rl := newTestRuntime(f)
	for _, tc := range roundTripCases {
		v, err := rl.rt.RunString(tc.src)
		if err != nil {
			f.Fatal(err)
		}
		data, err := rl.enc.EncodeValue(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte(nil), data...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := rl.dec.DecodeValue(data)
		if err != nil {
			return
		}
		if ex := rl.rt.Try(func() { _, err = rl.enc.EncodeValue(v) }); ex != nil {
			t.Fatalf("encoding a decoded value threw: %v", ex)
		}
	})
}

func fmtPointer(m map[string]any) string { return fmt.Sprintf("%p", m) }

// TestCodec_InvalidDate_CanonicalNaN: an invalid Date is written with the
// one NaN docs/values.md gives (f9 7e 00), whatever the bits of the NaN
// the runtime holds, as the Go encoder writes it.
func TestCodec_InvalidDate_CanonicalNaN(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	want, err := value.Marshal(value.InvalidDate{})
	require.NoError(t, err)
	assert.Equal(t, []byte{0xc1, 0xf9, 0x7e, 0x00}, want)
	for _, src := range []string{"new Date(NaN)", "new Date('not a date')", "new Date(8.64e15 + 1)"} {
		assert.Equal(t, want, encodeJS(t, rl, runJS(t, rl, src)), src)
	}
}
