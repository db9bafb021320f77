package tracker

import (
	"context"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

func TestPreview_Values(t *testing.T) {
	t.Parallel()
	m := &value.Map{}
	m.Set("k", 1.0)
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{value.Undefined{}, "undefined"},
		{42.0, "42"},
		{math.Copysign(0, -1), "-0"},
		{math.NaN(), "NaN"},
		{big.NewInt(7), "7n"},
		{"it's", `'it\'s'`},
		{[]any{1.0, "a", true}, "[ 1, 'a', true ]"},
		{map[string]any{"b": 1.0, "a-b": []any{}}, "{ 'a-b': [], b: 1 }"},
		{m, "Map(1) { 'k' => 1 }"},
		{[]float64{1.5, 2}, "Float64Array(2) [ 1.5, 2 ]"},
		{time.UnixMilli(0), "1970-01-01T00:00:00.000Z"},
		{&value.Error{Name: "TypeError", Message: "no"}, "TypeError: no"},
		{value.RegExp{Source: "a+", Flags: "g"}, "/a+/g"},
		{&value.Wrapper{Value: "s"}, "[String: 's']"},
		{&value.Array{Length: 3, Elements: map[uint32]any{1: 2.0}}, "Array(3) [ 1: 2 ]"},
	}
	for _, tc := range tests {
		doc, err := value.Marshal(tc.v)
		require.NoError(t, err, "%v", tc.v)
		p := previewDoc(context.Background(), doc)
		assert.Equal(t, tc.want, p.Text)
		assert.False(t, p.Truncated)
		assert.Equal(t, len(doc), p.Bytes)
	}
}

// A value that is small as a document but huge as a tree (shared
// references: 2^40 leaves), a cycle, deep nesting and a long string all
// preview in bounded text.
func TestPreview_Bounded(t *testing.T) {
	t.Parallel()
	dag := []any{1.0, 2.0}
	for range 40 {
		dag = []any{dag, dag}
	}
	cyc := []any{1.0}
	cyc = append(cyc, nil)
	cyc[1] = cyc
	deep := any(1.0)
	for range 1000 {
		deep = []any{deep}
	}
	long := make([]any, 10_000)
	for i := range long {
		long[i] = float64(i)
	}
	for name, v := range map[string]any{"dag": dag, "deep": deep, "long": long, "string": strings.Repeat("x", 1<<20)} {
		p := previewValue(v, 0)
		assert.LessOrEqual(t, len(p.Text), previewBytes+len("…"), name)
	}
	p := previewValue(cyc, 0)
	assert.Equal(t, "[ 1, [Circular] ]", p.Text)
	p = previewValue(long, 0)
	assert.Contains(t, p.Text, "... 9950 more items")
	p = previewDoc(context.Background(), make([]byte, previewDocBytes+1))
	assert.Contains(t, p.Text, "too large to preview")
	p = previewDoc(context.Background(), []byte{0xff})
	assert.Contains(t, p.Text, "does not decode")
}

func TestPreview_Spec(t *testing.T) {
	t.Parallel()
	fn := &value.Function{Source: "(x) => {\n  return x * 2;\n}"}
	payload, err := value.Marshal([]any{fn, 21.0, "s"})
	require.NoError(t, err)
	sp := workunit.Spec{Kind: workunit.Fn, Payload: payload, Name: "job.js"}
	data, err := sp.MarshalBinary()
	require.NoError(t, err)
	got, err := previewSpec(context.Background(), data)
	require.NoError(t, err)
	assert.Equal(t, "fn", got.Kind)
	assert.Equal(t, "job.js", got.Name)
	assert.Equal(t, fn.Source, got.Source)
	require.Len(t, got.Args, 2)
	assert.Equal(t, "21", got.Args[0].Text)
	assert.Equal(t, "'s'", got.Args[1].Text)

	src := strings.Repeat("line\n", 100)
	ev := workunit.Spec{Kind: workunit.Eval, Source: src}
	data, err = ev.MarshalBinary()
	require.NoError(t, err)
	got, err = previewSpec(context.Background(), data)
	require.NoError(t, err)
	assert.True(t, got.SourceTruncated)
	assert.Equal(t, sourceLines, strings.Count(got.Source, "\n"))
	_, err = previewSpec(context.Background(), []byte("nope"))
	assert.Error(t, err)
}

// FuzzPreview: whatever a worker sends as a result, its preview is bounded
// and never panics.
func FuzzPreview(f *testing.F) {
	for _, v := range []any{nil, 1.0, "x", []any{1.0, []any{}}, map[string]any{"a": 1.0}, []float64{1}} {
		doc, err := value.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p := previewDoc(context.Background(), doc)
		if len(p.Text) > previewBytes+len("…")+200 {
			t.Fatalf("a preview of %d bytes", len(p.Text))
		}
	})
}
