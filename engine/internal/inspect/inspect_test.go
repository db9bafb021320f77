package inspect

import (
	"context"
	"strings"
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
		// Symbols, and symbol keys after the others, as Node shows them.
		{"Symbol('foo')", Options{}, "Symbol(foo)"},
		{"Symbol()", Options{}, "Symbol()"},
		{"[Symbol.iterator, Symbol.for('k')]", Options{}, "[ Symbol(Symbol.iterator), Symbol(k) ]"},
		{"({a: 1, [Symbol('foo')]: 2})", Options{}, "{ a: 1, [Symbol(foo)]: 2 }"},
		{"({[Symbol('a b')]: {[Symbol()]: 'x'}})", Options{}, "{ [Symbol(a b)]: { [Symbol()]: 'x' } }"},
		{"Object.defineProperty({}, Symbol('hidden'), {value: 1})", Options{}, "{}"},
		{"(() => { const a = [1, 2]; a[Symbol('s')] = 3; return a })()", Options{}, "[ 1, 2, [Symbol(s)]: 3 ]"},
		{"(() => { const a = [1, , 3]; a[Symbol('s')] = 3; return a })()", Options{}, "[ 1, <1 empty item>, 3, [Symbol(s)]: 3 ]"},
		{"(() => { class K {}; const k = new K(); k[Symbol('s')] = 1; return k })()", Options{}, "K { [Symbol(s)]: 1 }"},
		{"Object.assign(Object.create(null), {[Symbol('n')]: null})", Options{}, "[Object: null prototype] { [Symbol(n)]: null }"},
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

// dagSource builds 40 levels of [a, a]: a few hundred bytes that a walk of
// every path would write as 2^40 leaves.
const dagSource = "(() => { let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; return a })()"

// TestInspect_Bounded: the text is bounded whatever the value's shape (a
// graph of shared references, a long string, many keys), and so is the
// work. A regression test: the graph of shared references never finished
// at Depth -1.
func TestInspect_Bounded(t *testing.T) {
	t.Parallel()
	rt, js := newRuntime(t)
	run := func(src string) goja.Value {
		v, err := rt.RunString(src)
		require.NoError(t, err, src)
		return v
	}
	dag := run(dagSource)
	out := Inspect(rt, js, dag, Options{Depth: -1, MaxBytes: 16384})
	assert.LessOrEqual(t, len(out), 16384*3/2+64)
	assert.Contains(t, out, "\n  ... 1 more item\n]", "past MaxBytes, each array ends with what it left out")
	// At the default depth it is short.
	assert.Equal(t, "[\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ],\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ]\n]",
		Inspect(rt, js, dag, Options{}))

	// Strings inside a value are cut at MaxStringLength characters, as
	// Node's are.
	assert.Equal(t, "{ big: 'xx'... 99998 more characters }", Inspect(rt, js, run("({big: 'x'.repeat(100000)})"), Options{MaxStringLength: 2}))
	out = Inspect(rt, js, run("['é'.repeat(20000)]"), Options{})
	assert.Equal(t, "[\n  '"+strings.Repeat("é", 10000)+"'... 10000 more characters\n]", out)

	// Many keys: the object ends with what it left out.
	out = Inspect(rt, js, run("Object.fromEntries(Array.from({length: 100000}, (_, i) => ['k' + i, i]))"), Options{MaxBytes: 1000})
	assert.Less(t, len(out), 1500)
	assert.Regexp(t, `\.\.\. \d+ more items\n\}$`, out)
}

// TestInspectContext_Canceled: an ended context stops the walk, and says
// so.
func TestInspectContext_Canceled(t *testing.T) {
	t.Parallel()
	rt, js := newRuntime(t)
	dag, err := rt.RunString(dagSource)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = InspectContext(ctx, rt, js, dag, Options{Depth: -1, MaxBytes: -1})
	require.ErrorIs(t, err, context.Canceled)
}
