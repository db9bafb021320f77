package jsvalue

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestItems_AsForOf: Items yields what for...of does, for the arrays it
// reads directly and for everything it iterates; a script that patched
// the array iterator sees its patch run.
func TestItems_AsForOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, setup, value string
		want               []any
	}{
		{"dense array", ``, `[1, 'two', {three: 3}]`, []any{int64(1), "two", map[string]any{"three": int64(3)}}},
		{"empty array", ``, `[]`, nil},
		{"holes", ``, `[1, , 3]`, []any{int64(1), nil, int64(3)}},
		{"a getter element", ``, `(() => { const a = [1, 2]; Object.defineProperty(a, 1, {get() { globalThis.seen = true; return 20; }}); return a; })()`, []any{int64(1), int64(20)}},
		{"an own iterator", ``, `(() => { const a = [1, 2]; a[Symbol.iterator] = function* () { yield 'own'; }; return a; })()`, []any{"own"}},
		{"Array.prototype[Symbol.iterator] patched", `Array.prototype[Symbol.iterator] = function* () { yield 'patched'; };`, `[1, 2]`, []any{"patched"}},
		{"the iterator's next patched", `(() => { const p = Object.getPrototypeOf([][Symbol.iterator]()); const next = p.next; p.next = function () { const r = next.call(this); if (!r.done) r.value = r.value * 10; return r; }; })();`, `[1, 2]`, []any{int64(10), int64(20)}},
		{"a subclass", ``, `(() => { class Row extends Array {} return Row.from([4, 5]); })()`, []any{int64(4), int64(5)}},
		{"a Set", ``, `new Set([1, 2, 2])`, []any{int64(1), int64(2)}},
		{"a generator", ``, `(function* () { yield 7; yield 8; })()`, []any{int64(7), int64(8)}},
		{"a string", ``, `'hé'`, []any{"h", "é"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := goja.New()
			in, err := LoadIntrinsics(rt)
			require.NoError(t, err)
			if tc.setup != "" {
				_, err := rt.RunString(tc.setup)
				require.NoError(t, err)
			}
			v, err := rt.RunString(tc.value)
			require.NoError(t, err)
			var got []any
			for _, item := range in.Items(rt, v) {
				got = append(got, item.Export())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestItems_ThrowingIterator: an exception from the iteration panics,
// as goja.Runtime.ForOf's does, for the caller's Try to take.
func TestItems_ThrowingIterator(t *testing.T) {
	t.Parallel()
	rt := goja.New()
	in, err := LoadIntrinsics(rt)
	require.NoError(t, err)
	v, err := rt.RunString(`(function* () { yield 1; throw new RangeError('no more'); })()`)
	require.NoError(t, err)
	ex := rt.Try(func() { in.Items(rt, v) })
	require.NotNil(t, ex)
	assert.Contains(t, ex.Error(), "RangeError: no more")
}

// BenchmarkItems_DenseArray: a million plain items, as riot.forWork takes
// them, read directly against iterated (ForOf).
func BenchmarkItems_DenseArray(b *testing.B) {
	rt := goja.New()
	in, err := LoadIntrinsics(rt)
	require.NoError(b, err)
	v, err := rt.RunString(`Array.from({length: 1000000}, (_, i) => i)`)
	require.NoError(b, err)
	b.Run("Items", func(b *testing.B) {
		for b.Loop() {
			in.Items(rt, v)
		}
	})
	b.Run("ForOf", func(b *testing.B) {
		for b.Loop() {
			var items []goja.Value
			rt.ForOf(v, func(item goja.Value) bool { items = append(items, item); return true })
		}
	})
}

// TestItems_DenseArray_NotIterated: a plain array's elements are read,
// not stepped through: a thousand items cost a few allocations (the
// slice), where iterating makes an iterator result for each.
func TestItems_DenseArray_NotIterated(t *testing.T) {
	rt := goja.New()
	in, err := LoadIntrinsics(rt)
	require.NoError(t, err)
	v, err := rt.RunString(`Array.from({length: 1000}, (_, i) => 'item ' + i)`)
	require.NoError(t, err)
	var items []goja.Value
	allocs := testing.AllocsPerRun(10, func() { items = in.Items(rt, v) })
	require.Len(t, items, 1000)
	assert.Equal(t, "item 999", items[999].String())
	assert.LessOrEqual(t, allocs, 4.0, "read directly")

	_, err = rt.RunString(`const p = Object.getPrototypeOf([][Symbol.iterator]()); const next = p.next; p.next = function () { return next.call(this); };`)
	require.NoError(t, err)
	allocs = testing.AllocsPerRun(10, func() { items = in.Items(rt, v) })
	require.Len(t, items, 1000)
	assert.Greater(t, allocs, 1000.0, "iterated, through the patched next")
}
