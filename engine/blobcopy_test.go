package engine

import (
	"context"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

func TestFlatKindOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want flatKind
	}{
		{"array of primitives", []any{1.0, -2.0, 0.5, "s", true, nil, value.Undefined{}, big.NewInt(7), math.NaN()}, flatArray},
		{"empty array", []any{}, flatArray},
		{"Set of strings", &value.Set{Values: []any{"a", "b"}}, flatSet},
		{"object of primitives", map[string]any{"a": 1.0, "b": "x"}, flatObject},
		{"nested array", []any{[]any{1.0}}, notFlat},
		{"array holding a Date-like object", []any{map[string]any{}}, notFlat},
		{"Set of arrays", &value.Set{Values: []any{[]any{}}}, notFlat},
		{"Map", func() *value.Map { m := &value.Map{}; m.Set("k", 1.0); return m }(), notFlat},
		{"typed array", []float64{1, 2}, notFlat},
		{"string", "just a string", notFlat},
		{"object with an ArrayBuffer", map[string]any{"b": value.ArrayBuffer{1}}, notFlat},
	} {
		data, err := value.Marshal(tc.v)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, flatKindOf(data), tc.name)
	}
}

// A flat blob value (an array, Set or object of primitives) is copied for
// each workunit without decoding: each copy is what decoding gives, and
// what one workunit changes does not reach the next.
func TestEngine_BlobValue_FlatCopies(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	obj := map[string]any{"b": 1.0, "a": "x", "2": true, "1": nil, "__proto__": 5.0}
	for _, tc := range []struct {
		name   string
		v      any
		proto  string
		mutate string
	}{
		{"array", []any{1.0, math.Copysign(0, -1), math.NaN(), math.Inf(-1), "s", "\xed\xa0\x80 lone", true, false, nil, value.Undefined{}, big.NewInt(-9)},
			"Array.prototype", "big[0] = 99; big.push(1); big.length = 2; big.reverse()"},
		{"Set", &value.Set{Values: []any{"w1", "w2", 3.0, math.Copysign(0, -1), big.NewInt(5), value.Undefined{}}},
			"Set.prototype", "big.add('new'); big.delete('w1'); big.clear()"},
		{"object", obj, "Object.prototype", "big.b = 2; delete big.a; big.z = 1; Object.setPrototypeOf(big, null)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := value.Marshal(tc.v)
			require.NoError(t, err)
			src := blob.Map{}
			h := src.Put(data)
			run := func(source string) []byte {
				payload, err := value.Marshal([]any{&value.Function{Source: source, Env: map[string]any{"big": value.BlobRef(h)}}})
				require.NoError(t, err)
				res, err := e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src, Realm: tc.name})
				require.NoError(t, err)
				return res.Value
			}
			read := "() => [big, Object.getPrototypeOf(big) === " + tc.proto + ", Object.keys(big), Object.isExtensible(big)]"
			first := run(read) // decoded
			for range 3 {
				assert.Equal(t, 1.0, decodeResult(t, run("() => { "+tc.mutate+"; return 1 }")))
				assert.Equal(t, first, run(read), "a copy is what decoding gives, whatever the workunit before did")
			}
			got := decodeResult(t, first).([]any)
			assert.Equal(t, true, got[1], "the prototype")
			assert.Equal(t, true, got[3], "extensible")
		})
	}
}

func decodeResult(t *testing.T, data []byte) any {
	t.Helper()
	v, err := value.Unmarshal(data)
	require.NoError(t, err)
	return v
}
