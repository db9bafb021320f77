package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// fakeTaker is a blob.Taker for the engine's tests: each Take gives away a
// fresh copy of the blob, as a worker's cache does for one too large to
// keep, and remembers the last one given.
type fakeTaker struct {
	blob.Map
	mu    sync.Mutex
	takes int
	last  []byte
}

func (f *fakeTaker) Take(ctx context.Context, h blob.Hash) ([]byte, bool, error) {
	data, err := f.Blob(ctx, h)
	if err != nil {
		return nil, false, err
	}
	data = append([]byte(nil), data...)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.takes++
	f.last = data
	return data, true, nil
}

// A large blob value that its source gives away is decoded in place: the
// workunit's typed array is over the bytes given, which the realm does not
// keep; the next workunit takes the blob again and sees none of the
// first's writes.
func TestEngine_BlobValue_TakenBytesDecodedInPlace(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	big := make([]float64, OwnBlobBytes/8+1)
	big[1] = 1.5
	data, err := value.Marshal(big)
	require.NoError(t, err)
	src := &fakeTaker{Map: blob.Map{}}
	h := src.Put(data)
	run := func(source string) any {
		payload, err := value.Marshal([]any{&value.Function{Source: source, Env: map[string]any{"big": value.BlobRef(h)}}})
		require.NoError(t, err)
		res, err := e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src, Realm: "r"})
		require.NoError(t, err)
		return decodeResult(t, res.Value)
	}
	assert.Equal(t, 1.5, run("() => { const was = big[1]; big[1] = -7; return was }"))
	src.mu.Lock()
	taken := src.last
	src.mu.Unlock()
	assert.Equal(t, data[:len(data)-len(big)*8], taken[:len(data)-len(big)*8], "the document's head")
	assert.NotEqual(t, data, taken, "the workunit's write went to the bytes given: its Float64Array is over them")
	assert.Equal(t, 1.5, run("() => big[1]"), "the next workunit has its own copy, taken again")
	src.mu.Lock()
	assert.Equal(t, 2, src.takes, "the realm kept none of it")
	src.mu.Unlock()
}
