package inspect

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

func newRuntime(t *testing.T) (*goja.Runtime, *jsvalue.Intrinsics) {
	t.Helper()
	rt := goja.New()
	js, err := jsvalue.LoadIntrinsics(rt)
	require.NoError(t, err)
	return rt, js
}

func TestInspect(t *testing.T) {
	t.Parallel()
	rt, js := newRuntime(t)
	for _, tt := range []struct {
		src  string
		opts Options
		want string
	}{
		{"'it\\'s'", Options{}, `"it's"`},
		{"[1, 'a', null, undefined, -0, 10n]", Options{}, "[ 1, 'a', null, undefined, -0, 10n ]"},
		{"({a: {b: {c: {d: 1}}}})", Options{}, "{ a: { b: { c: [Object] } } }"},
		{"({a: {b: {c: {d: 1}}}})", Options{Depth: -1}, "{\n  a: { b: { c: { d: 1 } } }\n}"},
		{"new Map([['k', [1]]])", Options{}, "Map(1) { 'k' => [ 1 ] }"},
		{"(() => { const o = {}; o.self = o; return o })()", Options{}, "<ref *1> { self: [Circular *1] }"},
		{"class K {}; new K()", Options{}, "K {}"},
		{"Array.from({length: 3}, (_, i) => i)", Options{MaxItems: 2}, "[ 0, 1, ... 1 more item ]"},
		{"({get boom() { throw new Error('no') }})", Options{}, "[inspect: Error: no at boom (<eval>:1:22(3))]"},
		// Holes and other properties of arrays, as Node shows them.
		{"[1, , 3]", Options{}, "[ 1, <1 empty item>, 3 ]"},
		{"new Array(5)", Options{}, "[ <5 empty items> ]"},
		{"(() => { const a = [1, 2]; a.foo = 'bar'; return a })()", Options{}, "[ 1, 2, foo: 'bar' ]"},
		{"[, 'a', , , 'b', ,]", Options{}, "[ <1 empty item>, 'a', <2 empty items>, 'b', <1 empty item> ]"},
		{"(() => { const a = []; a[4294967294] = 'x'; return a })()", Options{}, "[ <4294967294 empty items>, 'x' ]"},
		{"[1, , 3, , 5, , 7, , 9]", Options{}, "[\n  1,\n  <1 empty item>,\n  3,\n  <1 empty item>,\n  5,\n  <1 empty item>,\n  7,\n  <1 empty item>,\n  9\n]"},
		{"[1, , 3, , 5]", Options{MaxItems: 2}, "[ 1, <1 empty item>, ... 3 more items ]"},
	} {
		v, err := rt.RunString(tt.src)
		require.NoError(t, err, tt.src)
		assert.Equal(t, tt.want, Inspect(rt, js, v, tt.opts), tt.src)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	rt, js := newRuntime(t)
	args := func(src string) []goja.Value {
		v, err := rt.RunString(src)
		require.NoError(t, err)
		var out []goja.Value
		rt.ForOf(v, func(v goja.Value) bool { out = append(out, v); return true })
		return out
	}
	assert.Equal(t, "", Format(rt, js, nil))
	assert.Equal(t, "Bob is 42 (42.5) {\"a\":1} 100% { a: 1 } extra", Format(rt, js, args(`['%s is %i (%d) %j 100%% %o', 'Bob', 42.5, 42.5, {a: 1}, {a: 1}, 'extra']`)))
	assert.Equal(t, "%x 1 [ 2 ]", Format(rt, js, args(`['%x', 1, [2]]`)))
}

func TestStacks(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Error: x\n    at f (job.js:3:7)\n    at job.js:5:1",
		NormalizeStack("Error: x\n\tat f (job.js:3:7(12))\n\tat "+jsvalue.InternalFile+":1:1(0)\n\tat job.js:5:1(4)\n"))
	assert.Equal(t, "RangeError: deep", StackString("RangeError", "deep", nil, 10))
	assert.Equal(t, "Uncaught 1", StackString("", "Uncaught 1", nil, 0))
}
