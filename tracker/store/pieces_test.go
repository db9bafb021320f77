package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
)

func TestStore_BlobPieces_RoundTrip(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			defer s.Close()
			data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
			h := blob.Sum(data)
			w, err := s.CreateBlob(ctx, h, int64(len(data)))
			require.NoError(t, err)
			for off := 0; off < len(data); off += 3000 {
				_, err := w.Write(data[off:min(off+3000, len(data))])
				require.NoError(t, err)
				have, err := s.HasBlob(ctx, h)
				require.NoError(t, err)
				assert.False(t, have, "a blob is not there before its commit")
			}
			assert.Equal(t, int64(len(data)), w.Written())
			require.NoError(t, w.Commit(ctx))
			w.Abort() // after a commit: nothing

			have, err := s.HasBlob(ctx, h)
			require.NoError(t, err)
			assert.True(t, have)
			got, err := s.GetBlob(ctx, h)
			require.NoError(t, err)
			assert.Equal(t, data, got)
			p := make([]byte, 5000)
			size, n, err := s.ReadBlob(ctx, h, 14000, p)
			require.NoError(t, err)
			assert.Equal(t, int64(len(data)), size)
			assert.Equal(t, data[14000:], p[:n])
			_, _, err = s.ReadBlob(ctx, h, int64(len(data))+1, p)
			require.ErrorContains(t, err, "past its end")

			// A blob stored whole reads the same way.
			small := []byte("a module")
			require.NoError(t, s.PutBlob(ctx, blob.Sum(small), small))
			size, n, err = s.ReadBlob(ctx, blob.Sum(small), 2, p)
			require.NoError(t, err)
			assert.Equal(t, int64(len(small)), size)
			assert.Equal(t, small[2:], p[:n])
			_, _, err = s.ReadBlob(ctx, blob.Sum([]byte("none")), 0, p)
			require.ErrorIs(t, err, blob.ErrNotFound)
		})
	}
}

func TestStore_BlobPieces_Rejects(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			defer s.Close()
			h := blob.Sum([]byte("the real bytes"))
			w, err := s.CreateBlob(ctx, h, 14)
			require.NoError(t, err)
			_, err = w.Write([]byte("not the bytes!"))
			require.NoError(t, err)
			_, err = w.Write([]byte("x"))
			require.ErrorContains(t, err, "past its size of 14")
			require.ErrorIs(t, w.Commit(ctx), ErrBlobMismatch)
			have, err := s.HasBlob(ctx, h)
			require.NoError(t, err)
			assert.False(t, have)

			w, err = s.CreateBlob(ctx, h, 14)
			require.NoError(t, err)
			_, err = w.Write([]byte("the real"))
			require.NoError(t, err)
			require.ErrorContains(t, w.Commit(ctx), "8 bytes of 14 written")
		})
	}
}

func TestBolt_BlobPieces_SurviveRestart_PartsDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)
	data := []byte("a blob in pieces")
	h := blob.Sum(data)
	w, err := s.CreateBlob(ctx, h, int64(len(data)))
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx))
	left, err := s.CreateBlob(ctx, blob.Sum([]byte("unfinished")), 10)
	require.NoError(t, err)
	_, err = left.Write([]byte("unfin"))
	require.NoError(t, err)
	require.NoError(t, s.Close()) // as if the process died: the part stays

	parts, _ := filepath.Glob(filepath.Join(dir, BlobDir, "*"+partSuffix))
	require.Len(t, parts, 1)
	s, err = OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.GetBlob(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	_, err = os.Stat(parts[0])
	assert.ErrorIs(t, err, os.ErrNotExist, "an unfinished part is removed at open")
}

// TestMemory_CreateBlob_ClaimCostsNothing: an upload's claimed size
// reserves no memory until its pieces come, and the room grows with them.
// A regression test: each claim reserved up to 16 MiB at once, and the
// whole claimed size after 16 MiB had come.
func TestMemory_CreateBlob_ClaimCostsNothing(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	w, err := m.CreateBlob(context.Background(), blob.Hash{1}, 1<<30)
	require.NoError(t, err)
	mw := w.(*memWriter)
	assert.Zero(t, heldBy(mw), "a claim alone reserves nothing")
	_, err = w.Write(make([]byte, 1000))
	require.NoError(t, err)
	assert.LessOrEqual(t, heldBy(mw), memChunk, "the room follows what came")
	w.Abort()
}

// heldBy returns the bytes of room a memWriter holds.
func heldBy(w *memWriter) int {
	n := 0
	for _, c := range w.chunks {
		n += cap(c)
	}
	return n
}

// TestMemory_CreateBlob_NoSecondCopy: a blob that comes in pieces is held
// in chunks as it comes, never more room than a chunk past what came, and
// read back whole and from any offset, across the chunks' edges. A
// regression test: the room doubled as pieces came (up to twice the
// blob's bytes, and the copies of each smaller buffer as garbage), so a
// 512 MiB value and its result took riotd --memory to 2 GiB.
func TestMemory_CreateBlob_NoSecondCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	data := make([]byte, 3*memChunk+memChunk/2+7)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	h := blob.Sum(data)
	w, err := m.CreateBlob(ctx, h, int64(len(data)))
	require.NoError(t, err)
	mw := w.(*memWriter)
	const piece = 700_001 // not a divisor of the chunk's size
	for off := 0; off < len(data); off += piece {
		p := data[off:min(off+piece, len(data))]
		n, err := w.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
		require.LessOrEqual(t, heldBy(mw), off+len(p)+memChunk, "room past what came, after %d bytes", off+len(p))
	}
	require.Equal(t, len(data), heldBy(mw), "the room is the blob's bytes, exactly")
	require.NoError(t, w.Commit(ctx))

	got, err := m.GetBlob(ctx, h)
	require.NoError(t, err)
	require.Equal(t, data, got)
	for _, off := range []int{0, 1, memChunk - 3, memChunk, 2*memChunk + 5, len(data) - 2, len(data)} {
		p := make([]byte, memChunk+10)
		size, n, err := m.ReadBlob(ctx, h, int64(off), p)
		require.NoError(t, err)
		assert.Equal(t, int64(len(data)), size)
		want := data[off:min(off+len(p), len(data))]
		require.Equal(t, len(want), n, "bytes read from %d", off)
		assert.Equal(t, want, p[:n], "bytes from %d", off)
	}
	_, _, err = m.ReadBlob(ctx, h, int64(len(data))+1, nil)
	assert.Error(t, err, "an offset past the end")
}

// TestMemory_CreateBlob_HeldAlready_KeepsNothing: an upload in pieces of
// a blob the store holds already keeps none of its bytes (the tracker's
// memory bound reserves nothing for it, so a client sending such blobs
// again and again would otherwise hold their whole size in the tracker's
// memory, per upload, until each commit), and still checks them: wrong
// bytes fail, the right ones commit with the blob as it was.
func TestMemory_CreateBlob_HeldAlready_KeepsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	data := bytes.Repeat([]byte("held "), memChunk)
	h := blob.Sum(data)
	require.NoError(t, m.PutBlob(ctx, h, data))
	before, _ := m.BlobBytes()
	for _, tc := range []struct {
		name  string
		bytes []byte
		ok    bool
	}{
		{"the same bytes", data, true},
		{"other bytes", bytes.Repeat([]byte("HELD "), memChunk), false},
	} {
		w, err := m.CreateBlob(ctx, h, int64(len(data)))
		require.NoError(t, err)
		for off := 0; off < len(tc.bytes); off += memChunk / 3 {
			_, err := w.Write(tc.bytes[off:min(off+memChunk/3, len(tc.bytes))])
			require.NoError(t, err)
		}
		assert.Zero(t, heldBy(w.(*memWriter)), "%s: bytes kept by the upload", tc.name)
		err = w.Commit(ctx)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, ErrBlobMismatch, tc.name)
		}
	}
	after, _ := m.BlobBytes()
	assert.Equal(t, before, after)
	got, err := m.GetBlob(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}

// TestMemory_CreateBlob_Empty: an empty blob uploaded in pieces (no piece
// at all) is stored and read back empty.
func TestMemory_CreateBlob_Empty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	h := blob.Sum(nil)
	w, err := m.CreateBlob(ctx, h, 0)
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx))
	got, err := m.GetBlob(ctx, h)
	require.NoError(t, err)
	assert.Empty(t, got)
	size, n, err := m.ReadBlob(ctx, h, 0, make([]byte, 4))
	require.NoError(t, err)
	assert.Zero(t, size)
	assert.Zero(t, n)
}

// TestMemory_BlobBytes: a Memory store counts the bytes of the blobs it
// holds, put whole or committed from pieces, each blob once however often
// it is stored; an upload counts only once committed, and an aborted or
// mismatched one never.
func TestMemory_BlobBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	n, count := m.BlobBytes()
	assert.Zero(t, n)
	assert.Zero(t, count)

	a := bytes.Repeat([]byte("a"), 1000)
	require.NoError(t, m.PutBlob(ctx, blob.Sum(a), a))
	require.NoError(t, m.PutBlob(ctx, blob.Sum(a), a), "stored again: counted once")
	n, count = m.BlobBytes()
	assert.Equal(t, int64(1000), n)
	assert.Equal(t, 1, count)

	b := make([]byte, memChunk+300)
	w, err := m.CreateBlob(ctx, blob.Sum(b), int64(len(b)))
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	n, _ = m.BlobBytes()
	assert.Equal(t, int64(1000), n, "not committed yet: not counted")
	require.NoError(t, w.Commit(ctx))
	n, count = m.BlobBytes()
	assert.Equal(t, int64(1000+len(b)), n)
	assert.Equal(t, 2, count)

	w, err = m.CreateBlob(ctx, blob.Sum(a), int64(len(a)))
	require.NoError(t, err)
	_, err = w.Write(a)
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx), "a blob held already")
	c := []byte("ccc")
	w, err = m.CreateBlob(ctx, blob.Sum(c), 3)
	require.NoError(t, err)
	_, err = w.Write(c)
	require.NoError(t, err)
	w.Abort()
	w, err = m.CreateBlob(ctx, blob.Hash{9}, 3)
	require.NoError(t, err)
	_, err = w.Write(c)
	require.NoError(t, err)
	require.ErrorIs(t, w.Commit(ctx), ErrBlobMismatch)
	n, count = m.BlobBytes()
	assert.Equal(t, int64(1000+len(b)), n, "neither a second copy, an aborted upload nor a mismatch counts")
	assert.Equal(t, 2, count)
}

// TestMemory_DeleteBlob: a blob deleted is gone (HasBlob, GetBlob,
// ReadBlob) and its bytes leave BlobBytes; deleting one not held reports
// false and changes nothing; a blob put again after it is held again.
func TestMemory_DeleteBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemory()
	a := bytes.Repeat([]byte("a"), 1000)
	b := make([]byte, memChunk+300)
	require.NoError(t, m.PutBlob(ctx, blob.Sum(a), a))
	require.NoError(t, m.PutBlob(ctx, blob.Sum(b), b))

	assert.True(t, m.DeleteBlob(blob.Sum(b)))
	assert.False(t, m.DeleteBlob(blob.Sum(b)), "deleted already")
	assert.False(t, m.DeleteBlob(blob.Hash{7}), "never held")
	n, count := m.BlobBytes()
	assert.Equal(t, int64(1000), n)
	assert.Equal(t, 1, count)
	ok, err := m.HasBlob(ctx, blob.Sum(b))
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = m.GetBlob(ctx, blob.Sum(b))
	require.ErrorIs(t, err, blob.ErrNotFound)
	_, _, err = m.ReadBlob(ctx, blob.Sum(b), 0, make([]byte, 10))
	require.ErrorIs(t, err, blob.ErrNotFound)

	require.NoError(t, m.PutBlob(ctx, blob.Sum(b), b))
	n, count = m.BlobBytes()
	assert.Equal(t, int64(1000+len(b)), n)
	assert.Equal(t, 2, count)
	got, err := m.GetBlob(ctx, blob.Sum(b))
	require.NoError(t, err)
	assert.Equal(t, b, got)
}
