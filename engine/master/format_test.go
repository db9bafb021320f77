package master

import (
	"context"
	"testing"

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
		{"({a: {b: {c: {d: {e: undefined}}}}})", "{\n  a: {\n    b: { c: { d: { e: undefined } } }\n  }\n}", false},
		{"new Float64Array([1, 2.5])", "Float64Array(2) [ 1, 2.5 ]", false},
		// What JSON would lose: holes (null), an array's other properties,
		// wrapper objects (their primitive).
		{"[1, , 3]", "[ 1, <1 empty item>, 3 ]", false},
		{"(() => { const a = [1]; a.foo = 'bar'; return a })()", "[ 1, foo: 'bar' ]", false},
		{"[new Number(3)]", "[ [Number: 3] ]", false},
	} {
		res, err := e.Eval(context.Background(), tt.src)
		require.NoError(t, err)
		got, isJSON, err := FormatValue(res.Value)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.src)
		assert.Equal(t, tt.isJSON, isJSON, tt.src)
	}
}
