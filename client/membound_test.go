package client_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// TestClient_EnsureBlobs_MemoryFull: a tracker that keeps its blobs in
// memory and holds its MaxMemory refuses an upload, whole (blob-put) or in
// pieces (blob-write): EnsureBlobs returns an error that wraps
// client.ErrMemoryFull with the tracker's message, and the client keeps
// nothing of it as stored (asked again, it uploads again, and is refused
// again); a blob that fits is still taken.
func TestClient_EnsureBlobs_MemoryFull(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 2 << 20
		o.Limits.MaxFrameBytes = 256 << 10 // pieces of under 256 KiB
	}))
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)

	fill := bytes.Repeat([]byte{'f'}, 200<<10)
	_, err := m.PutBlobParts(ctx, blob.Parts{fill, fill, fill, fill, fill, fill, fill, fill, fill, fill}) // 2,048,000 bytes, in pieces
	require.NoError(t, err)

	small := bytes.Repeat([]byte{'s'}, 200<<10) // one blob-put
	large := bytes.Repeat([]byte{'l'}, 1<<20)   // in pieces
	for _, data := range [][]byte{small, large, small, large} {
		h := blob.Sum(data)
		err := m.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data})
		require.ErrorIs(t, err, client.ErrMemoryFull)
		assert.True(t, wire.IsCode(err, wire.CodeMemoryFull))
		assert.Contains(t, err.Error(), "of blob "+h.Short()+" refused")
		assert.Contains(t, err.Error(), "past its --max-memory of 2097152 bytes (2.0 MiB)")
	}
	_, err = m.PutBlob(ctx, []byte("fits"))
	require.NoError(t, err)
	st := tr.Stats(t)
	assert.Equal(t, uint64(4), st.RefusedBlobs, "each refused upload asked the tracker again")
	assert.Equal(t, 2, st.Blobs)
}
