package jsvalue

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/value"
)

// TestCodec_RefusesWhatCloneRefuses: objects with internal state that
// their properties do not show are refused, with the path to them, not
// sent as empty plain objects.
func TestCodec_RefusesWhatCloneRefuses(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	for _, tc := range []struct{ src, path, msg string }{
		{"Object(Symbol('s'))", "result", "a Symbol object cannot be sent back to the master"},
		{"({a: [1, (function* () {})()]})", "result.a[1]", "a generator cannot be sent back to the master"},
		{"[[].values()]", "result[0]", "an Array Iterator cannot be sent"},
		{"new Map([[1, new Map().entries()]])", "result<Map value #0>", "a Map Iterator cannot be sent"},
		{"new Set().values()", "result", "a Set Iterator cannot be sent"},
		{"'ab'[Symbol.iterator]()", "result", "a String Iterator cannot be sent"},
		{"'x'.matchAll(/x/g)", "result", "a RegExp String Iterator cannot be sent"},
		{"({args: (function () { return arguments })(1, 2)})", "result.args", "an arguments object cannot be sent"},
		{"(function () { 'use strict'; return arguments })(1)", "result", "an arguments object cannot be sent"},
		{"(() => { const a = [1]; a.extra = Symbol('x'); return a })()", "result.extra", "a symbol cannot be sent"},
		{"(() => { const o = {}; o['k\\ud800'] = new WeakMap(); return o })()", "result[\"k\ufffd\"]", "a WeakMap cannot be sent"},
	} {
		v := runJS(t, rl, tc.src)
		var err error
		require.Nil(t, rl.rt.Try(func() { _, err = rl.enc.EncodeValue(v) }), tc.src)
		var u *UnsendableError
		require.ErrorAs(t, err, &u, tc.src)
		assert.Equal(t, tc.path, u.Path("result"), tc.src)
		assert.Contains(t, u.Msg, tc.msg, tc.src)
	}
	// Plain objects that look alike are still plain.
	for _, src := range []string{"Math", "JSON", "Object.create(null)", "new (class A { constructor() { this.x = 1 } })()"} {
		encodeJS(t, rl, runJS(t, rl, src))
	}
}

// TestCodec_GoRoundTripsJS: what the JavaScript codec writes, package
// value decodes, writes again and stably, and the JavaScript codec reads
// that back to the same value (the order of object keys aside: Go sorts
// them; and views: Go keeps a view's elements, not its place in a larger
// buffer).
func TestCodec_GoRoundTripsJS(t *testing.T) {
	t.Parallel()
	a, b := newTestRuntime(t), newTestRuntime(t)
	for _, tc := range roundTripCases {
		data := encodeJS(t, a, runJS(t, a, tc.src))
		v, err := value.Unmarshal(data)
		require.NoError(t, err, tc.src)
		goBytes, err := value.Marshal(v)
		require.NoError(t, err, tc.src)
		v2, err := value.Unmarshal(goBytes)
		require.NoError(t, err, tc.src)
		again, err := value.Marshal(v2)
		require.NoError(t, err, tc.src)
		assert.Equal(t, goBytes, again, "Go re-encoding of %s", tc.src)
		if strings.Contains(tc.check, "Object.keys(v).join") || strings.Contains(tc.check, "JSON.stringify") || strings.Contains(tc.check, ".buffer") {
			continue
		}
		jv, err := b.dec.DecodeValue(goBytes)
		require.NoError(t, err, tc.src)
		checkJS(t, b, jv, tc.check)
	}
}

// TestCodec_CloneKindsToGo: the Go values of the kinds structured clone
// keeps that a plain Go value cannot hold.
func TestCodec_CloneKindsToGo(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	for _, tc := range []struct {
		src  string
		want any
	}{
		{"new Number(3)", &value.Wrapper{Value: 3.0}},
		{"new Boolean(false)", &value.Wrapper{Value: false}},
		{"new String('a\\ud800')", &value.Wrapper{Value: "a\xed\xa0\x80"}},
		{"Object(-2n)", &value.Wrapper{Value: big.NewInt(-2)}},
		{"[1, , 3]", &value.Array{Length: 3, Elements: map[uint32]any{0: 1.0, 2: 3.0}}},
		{"new Array(5)", &value.Array{Length: 5}},
		{"(() => { const a = ['x']; a.foo = 'bar'; return a })()", &value.Array{Length: 1, Elements: map[uint32]any{0: "x"}, Props: map[string]any{"foo": "bar"}}},
		{"(() => { const o = {}; o['a\\ud800'] = 5; return o })()", map[string]any{"a\xed\xa0\x80": 5.0}},
		{"new RegExp('/', 'g')", value.RegExp{Source: `\/`, Flags: "g"}},
	} {
		got, err := value.Unmarshal(encodeJS(t, rl, runJS(t, rl, tc.src)))
		require.NoError(t, err, tc.src)
		assert.Equal(t, tc.want, got, tc.src)
	}
	got, err := value.Unmarshal(encodeJS(t, rl, runJS(t, rl, "new Error()")))
	require.NoError(t, err)
	e := got.(*value.Error)
	assert.True(t, e.NoMessage)
	assert.Equal(t, "Error", e.Name)
	got, err = value.Unmarshal(encodeJS(t, rl, runJS(t, rl, "(() => { const e = new TypeError('m\\udc00'); e.name = 'Mine'; return e })()")))
	require.NoError(t, err)
	e = got.(*value.Error)
	assert.Equal(t, "Error", e.Name)
	assert.Equal(t, "m\xed\xb0\x80", e.Message)
	assert.False(t, e.NoMessage)
}

// TestCodec_DecodeKeepsSurrogatesInErrorNames: an Error name that riot
// does not recreate by prototype (sent from Go, or by an older riot) is
// kept as an own name, lone surrogates and all.
func TestCodec_DecodeKeepsSurrogatesInErrorNames(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	data, err := value.Marshal(&value.Error{Name: "My\xed\xa0\x80", Message: "x\xed\xa0\x80"})
	require.NoError(t, err)
	v, err := rl.dec.DecodeValue(data)
	require.NoError(t, err)
	checkJS(t, rl, v, "v => v.name === 'My\\ud800' && v.message === 'x\\ud800' && !Object.keys(v).length")
}

// TestCodec_PollutedPrototypes: a script that puts setters and getters on
// the built-in prototypes changes nothing in what is encoded or decoded.
func TestCodec_PollutedPrototypes(t *testing.T) {
	t.Parallel()
	a, b := newTestRuntime(t), newTestRuntime(t)
	const pollute = `
		Object.defineProperty(Array.prototype, '1', { set() { throw new Error('Array setter') }, get() { return 'proto' }, configurable: true });
		Object.defineProperty(Object.prototype, 'k\ud800', { set() { throw new Error('Object setter') }, configurable: true });
		Object.defineProperty(Object.prototype, 'get', { value: function () {}, configurable: true });
		Object.defineProperty(Object.prototype, 'message', { get() { throw new Error('message getter') }, configurable: true });
		Object.keys = () => { throw new Error('Object.keys') };
		Reflect.get = () => { throw new Error('Reflect.get') };
		Object.defineProperty = () => { throw new Error('Object.defineProperty') };
		Object.getOwnPropertyDescriptor = () => { throw new Error('gopd') };
	`
	in := runJS(t, a, "(() => { const o = {}; o['k\\ud800'] = [0, , 2]; o.e = new Error(); return o })()")
	runJS(t, a, pollute)
	runJS(t, b, pollute)
	data := encodeJS(t, a, in)
	v, err := b.dec.DecodeValue(data)
	require.NoError(t, err)
	checkJS(t, b, v, "v => { const a = v['k\\ud800']; return a.length === 3 && a[0] === 0 && !a.hasOwnProperty(1) && a[2] === 2 }")
	assert.Equal(t, data, encodeJS(t, b, v))
	got, err := value.Unmarshal(data)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"k\xed\xa0\x80": &value.Array{Length: 3, Elements: map[uint32]any{0: 0.0, 2: 2.0}},
		"e":             got.(map[string]any)["e"],
	}, got)
	assert.True(t, got.(map[string]any)["e"].(*value.Error).NoMessage)
}

// TestCodec_DenseArrays: the constant-time test for a plain dense array
// works with this goja (it finds its fields), and says no to every array
// that has a hole, a property that is not an element, or an element that
// is not plain data.
func TestCodec_DenseArrays(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	in, err := LoadIntrinsics(rl.rt)
	require.NoError(t, err)
	require.NotNil(t, in.dense.t, "goja's array fields not found")
	for src, want := range map[string]bool{
		"[]":                      true,
		"[1, 2, 3]":               true,
		"Array.from({length: 3})": true,
		"[1, , 3]":                false,
		"new Array(3)":            false,
		"(() => { const a = [1]; a.x = 1; return a })()":                                           false,
		"(() => { const a = [1]; Object.defineProperty(a, 'x', {value: 1}); return a })()":         false,
		"(() => { const a = [1, 2]; delete a[1]; return a })()":                                    false,
		"(() => { const a = [1, 2]; a.length = 5; return a })()":                                   false,
		"(() => { const a = [1]; Object.defineProperty(a, 0, {enumerable: false}); return a })()":  false,
		"(() => { const a = [1]; Object.defineProperty(a, 0, {get() { return 2 }}); return a })()": false,
		"(() => { const a = []; a[100000] = 1; return a })()":                                      false,
	} {
		_, got := in.dense.plain(runJS(t, rl, src).(*goja.Object))
		assert.Equal(t, want, got, src)
	}
}

// TestCodec_DecodeErrorWithoutStack: an Error document without a stack
// gives an Error whose stack is empty, not the stack of the decoding.
func TestCodec_DecodeErrorWithoutStack(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	v, err := rl.dec.DecodeValue([]byte("\xda\x72\x69\x6f\x03\xa1\x64name\x69TypeError"))
	require.NoError(t, err)
	checkJS(t, rl, v, "v => v instanceof TypeError && v.stack === '' && !v.hasOwnProperty('message')")
}

// TestCodec_DecodeRejectsBadArrays: a TagArray document that no encoder
// writes is an error that says what is wrong.
func TestCodec_DecodeRejectsBadArrays(t *testing.T) {
	t.Parallel()
	rl := newTestRuntime(t)
	for hex, want := range map[string]string{
		"da72696f08 81 00":                      "an array with holes is [length, map]",
		"da72696f08 82 1b0000000100000000 a0":   "array length 4294967296 is above 2^32-1",
		"da72696f08 82 02 a1 02 01":             "index 2 of an array of length 2",
		"da72696f08 82 03 a2 01 01 01 02":       "an array holds index 1 twice",
		"da72696f08 82 00 a1 666c656e677468 01": `an array's "length" is its first item`,
		// An index written as a string, which would make the array longer
		// than its length (Go's decoder refuses it too).
		"da72696f08 82 01 a1 623130 01": `array property "10" is an index, written as a string`,
		"da72696f07 80":                 "a wrapper object holds a number, boolean, string or BigInt",
		"da72696f07 f7":                 "a wrapper object holds",
	} {
		_, err := rl.dec.DecodeValue(mustHexJS(t, hex))
		assert.ErrorContains(t, err, want, hex)
	}
}

func mustHexJS(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}
