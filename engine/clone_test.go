package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// TestEngine_BlobValue_SparseArray: a blob value that is an array of
// length 2^32-1 with a few elements and a property comes to the workunit
// as it was, holes and all, without anything counting to its length.
func TestEngine_BlobValue_SparseArray(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	arr := &value.Array{Length: math.MaxUint32, Elements: map[uint32]any{7: map[string]any{"x": 1}},
		Props: map[string]any{"meta": map[string]any{"y": 2}}}
	data, err := value.Marshal(arr)
	require.NoError(t, err)
	src := blob.Map{}
	h := src.Put(data)
	fn := &value.Function{Source: "() => [big.length, 6 in big, big[7].x, big.meta.y]",
		Env: map[string]any{"big": value.BlobRef(h)}}
	payload, err := value.Marshal([]any{fn})
	require.NoError(t, err)
	res, err := e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src})
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, []any{float64(math.MaxUint32), false, 1.0, 2.0}, v)
}
