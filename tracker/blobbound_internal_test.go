package tracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
)

// fakeBlobs is a fake memBlobs: bytes and count as set, and a hook run
// on each read.
type fakeBlobs struct {
	bytes  int64
	count  int
	onRead func()
}

func (f *fakeBlobs) BlobBytes() (int64, int) {
	if f.onRead != nil {
		f.onRead()
	}
	return f.bytes, f.count
}

// TestBlobBound_ReadsStoreUnderLock: reserve and elsewhere read what the
// store holds with the bound's lock held. Read before it, an upload that
// another reader reserves, stores and releases in between is counted
// nowhere (not yet in the store's bytes read, no longer pending), and two
// uploads could pass the bound together.
func TestBlobBound_ReadsStoreUnderLock(t *testing.T) {
	t.Parallel()
	f := &fakeBlobs{}
	b := newBlobBound(1000, f, false, 0)
	f.onRead = func() {
		if b.mu.TryLock() {
			b.mu.Unlock()
			t.Error("the store's blobs read without the bound's lock")
		}
	}
	require.Nil(t, b.reserve("blob-put", 1, blob.Hash{1}, 10))
	b.elsewhere()
}

// TestBlobBound_Reserve: reservations count with the store's blobs and
// the table's bytes; past the limit an upload is refused with memory-full
// saying what is held, and a release gives the room back.
func TestBlobBound_Reserve(t *testing.T) {
	t.Parallel()
	f := &fakeBlobs{bytes: 400, count: 2}
	b := newBlobBound(1000, f, false, 0)
	b.setTable(100)
	require.Nil(t, b.reserve("blob-write", 1, blob.Hash{1}, 300))
	assert.Equal(t, int64(700), b.elsewhere(), "the store's blobs and the upload under way")
	e := b.reserve("blob-put", 2, blob.Hash{2}, 201)
	require.NotNil(t, e)
	assert.Equal(t, wire.CodeMemoryFull, e.Code)
	assert.Equal(t, uint64(2), e.Req)
	assert.Contains(t, e.Message, "the tracker holds 100 bytes for workunits")
	assert.Contains(t, e.Message, "and 400 bytes for 2 blobs (large arguments, large results, modules), 300 bytes for uploads under way, and this one needs 201 bytes more")
	assert.Equal(t, uint64(1), b.refused.Load())
	require.Nil(t, b.reserve("blob-put", 3, blob.Hash{3}, 200), "exactly the bound fits")
	b.release(300)
	b.release(200)
	assert.Equal(t, int64(400), b.elsewhere())
}

// TestBlobBound_Uncounted: without MaxMemory, or with a store that keeps
// no blobs in memory, blobs count for nothing and nothing is refused.
func TestBlobBound_Uncounted(t *testing.T) {
	t.Parallel()
	for _, b := range []*blobBound{newBlobBound(0, &fakeBlobs{bytes: 1 << 30}, false, 0), newBlobBound(1000, struct{}{}, false, 0)} {
		assert.False(t, b.counts())
		assert.Nil(t, b.reserve("blob-put", 1, blob.Hash{1}, 1<<20))
		assert.Zero(t, b.elsewhere())
	}
}
