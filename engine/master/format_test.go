package master

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riot-go/riot/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatValue(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engine.Options{Slots: 1})
	for _, tt := range []struct {
		src    string
		want   string
		isJSON bool
	}{
		{"3 + 5", "8", true},
		{"'hi'", `"hi"`, true},
		{"({b: 1, a: [true, null, 'x']})", `{"b":1,"a":[true,null,"x"]}`, true},
		{"undefined", "undefined", false},
		{"-0", "-0", false},
		{"NaN", "NaN", false},
		{"10n", "10n", false},
		{"new Map([['a', 1]])", "Map(1) { 'a' => 1 }", false},
		{"({d: new Date(0)})", "{ d: 1970-01-01T00:00:00.000Z }", false},
		{"(() => { const o = {}; o.o = o; return o })()", "<ref *1> { o: [Circular *1] }", false},
		{"({a: {b: {c: {d: {e: 1}}}}})", `{"a":{"b":{"c":{"d":{"e":1}}}}}`, true},
		{"({a: {b: {c: {d: {e: undefined}}}}})", "{ a: { b: { c: [Object] } } }", false},
		{"new Float64Array([1, 2.5])", "Float64Array(2) [ 1, 2.5 ]", false},
		// What JSON would lose: holes (null), an array's other properties,
		// wrapper objects (their primitive).
		{"[1, , 3]", "[ 1, <1 empty item>, 3 ]", false},
		{"(() => { const a = [1]; a.foo = 'bar'; return a })()", "[ 1, foo: 'bar' ]", false},
		{"[new Number(3)]", "[ [Number: 3] ]", false},
	} {
		res, err := e.Eval(context.Background(), tt.src)
		require.NoError(t, err)
		got, isJSON, err := FormatValue(context.Background(), res.Value)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.src)
		assert.Equal(t, tt.isJSON, isJSON, tt.src)
	}
}

// dagSource is a result of a few hundred bytes, 40 levels of [a, a], that
// a walk of every path would print as 2^40 leaves.
const dagSource = "let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; a"

// TestFormatValue_Bounded: a result of shared references prints in its
// readable form, two levels deep, at once; a long string inside a value is
// cut as Node cuts it; JSON that fits is printed whole, at any depth. A
// regression test: the graph of shared references was walked path by path
// (JSON first), for ever, and riot-worker eval with it.
func TestFormatValue_Bounded(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engine.Options{Slots: 1})
	format := func(src string) (string, bool) {
		t.Helper()
		res, err := e.Eval(context.Background(), src)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, isJSON, err := FormatValue(ctx, res.Value)
		require.NoError(t, err, src)
		return got, isJSON
	}
	got, isJSON := format(dagSource)
	assert.False(t, isJSON)
	assert.Equal(t, "[\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ],\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ]\n]", got)

	got, isJSON = format("new Map([['s', 'x'.repeat(20000)]])")
	assert.False(t, isJSON)
	assert.True(t, got == "Map(1) {\n  's' => '"+strings.Repeat("x", 10000)+"'... 10000 more characters\n}", "cut at 10000 characters: %.100q", got)

	got, isJSON = format("({s: 'x'.repeat(20000), deep: {a: {b: {c: {d: [1]}}}}})")
	assert.True(t, isJSON)
	assert.True(t, got == `{"s":"`+strings.Repeat("x", 20000)+`","deep":{"a":{"b":{"c":{"d":[1]}}}}}`, "JSON, whole: %.100q", got)
}

// TestFormatValue_Canceled: FormatValue stops when its context ends.
func TestFormatValue_Canceled(t *testing.T) {
	t.Parallel()
	e := newEngine(t, engine.Options{Slots: 1})
	res, err := e.Eval(context.Background(), dagSource)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = FormatValue(ctx, res.Value)
	require.ErrorIs(t, err, context.Canceled)
}

// formatSeeds are results FuzzFormatValue starts from: each kind of value
// riot-worker eval prints, and shapes that print large.
var formatSeeds = []string{
	"null", "true", "-0", "NaN", "10n", "'hi'", "[1, , 3]", "({b: 1, a: [true, null, 'x']})",
	"new Map([['a', {b: new Set([1, 2])}]])", "new Float64Array([1, 2.5])", "new Date(0)", "/x/g",
	"(() => { const o = {}; o.o = o; return o })()", "[new Number(3), new String('s')]",
	"new Error('boom')", "new Uint8Array(100).buffer", dagSource,
	"let o = {}; for (let i = 0; i < 20; i++) o = {a: o, b: o, c: [o, o]}; o",
	"Object.fromEntries(Array.from({length: 2000}, (_, i) => ['k' + i, 'v'.repeat(50)]))",
}

// FuzzFormatValue checks that the master's result printer neither panics
// nor runs unbounded on any value document: every call ends within a
// deadline, and a readable form stays within the bound FormatValue
// promises.
func FuzzFormatValue(f *testing.F) {
	e := newEngine(f, engine.Options{Slots: 1})
	for _, src := range formatSeeds {
		res, err := e.Eval(context.Background(), src)
		if err != nil {
			f.Fatalf("%s: %v", src, err)
		}
		f.Add(res.Value)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		text, isJSON, err := FormatValue(ctx, data)
		if ctx.Err() != nil {
			t.Fatalf("FormatValue of %d bytes ran past 20 s", len(data))
		}
		if err != nil || isJSON {
			return
		}
		if limit := max(DefaultMaxPrintBytes, 8*len(data)); len(text) > limit*3/2+64 {
			t.Fatalf("%d bytes of text for %d bytes of value, over the bound of %d", len(text), len(data), limit)
		}
	})
}
