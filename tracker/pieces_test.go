package tracker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// TestServer_BlobPieces: a blob written in pieces is stored once whole and
// checked, read back by range by a worker, and bounded by max-blob-bytes;
// pieces out of order, past the size or of a bad hash are refused.
func TestServer_BlobPieces(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "bolt"}[durable], func(t *testing.T) {
			t.Parallel()
			opts := []trackertest.Option{trackertest.WithOptions(func(o *tracker.Options) { o.Limits.MaxBlobBytes = 1000 })}
			if durable {
				opts = append(opts, trackertest.Durable())
			}
			tr := trackertest.Start(t, opts...)
			m := master(t, tr, "m")
			data := make([]byte, 600)
			for i := range data {
				data[i] = byte(i)
			}
			h := blob.Sum(data)
			write := func(req uint64, off, end int) {
				m.send(&wire.BlobWrite{Req: req, Hash: h, Size: uint64(len(data)), Offset: uint64(off), Data: data[off:end]})
			}
			write(1, 0, 250)
			write(2, 250, 500)
			assert.Equal(t, uint64(250), recv[*wire.BlobWritten](m).Written)
			assert.Equal(t, uint64(500), recv[*wire.BlobWritten](m).Written)
			m.send(&wire.BlobHave{Req: 3, Hashes: []blob.Hash{h}})
			assert.Equal(t, []blob.Hash{h}, recv[*wire.BlobNeed](m).Missing, "not there before its last piece")
			write(4, 500, 600)
			bw := recv[*wire.BlobWritten](m)
			assert.Equal(t, uint64(4), bw.Req)
			assert.Equal(t, uint64(600), bw.Written)
			m.send(&wire.BlobHave{Req: 5, Hashes: []blob.Hash{h}})
			assert.Empty(t, recv[*wire.BlobNeed](m).Missing)

			w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 1})
			w.send(&wire.BlobRead{Req: 6, Hash: h, Offset: 100, Length: 200})
			p := recv[*wire.BlobPart](w)
			assert.Equal(t, uint64(600), p.Size)
			assert.Equal(t, uint64(100), p.Offset)
			assert.Equal(t, data[100:300], p.Data)
			w.send(&wire.BlobRead{Req: 7, Hash: h, Offset: 500, Length: 200})
			assert.Equal(t, data[500:], recv[*wire.BlobPart](w).Data, "fewer at the end")
			_, missing := blobOf("nobody put this")
			w.send(&wire.BlobRead{Req: 8, Hash: missing, Length: 10})
			assert.True(t, recv[*wire.BlobPart](w).Missing)
			w.send(&wire.BlobRead{Req: 9, Hash: h, Offset: 601, Length: 10})
			e := recv[*wire.Error](w)
			assert.Equal(t, wire.CodeInvalid, e.Code)
			assert.Contains(t, e.Message, "past its end")

			// A worker's token may write blobs: its large results.
			res := []byte("a result")
			w.send(&wire.BlobWrite{Req: 10, Hash: blob.Sum(res), Size: uint64(len(res)), Data: res})
			assert.Equal(t, uint64(len(res)), recv[*wire.BlobWritten](w).Written)

			other := make([]byte, 300)
			oh := blob.Sum(other)
			m.send(&wire.BlobWrite{Req: 11, Hash: oh, Size: 300, Offset: 100, Data: other[100:200]})
			e = recv[*wire.Error](m)
			assert.Equal(t, wire.CodeInvalid, e.Code)
			assert.Contains(t, e.Message, "no upload of it is in progress")
			m.send(&wire.BlobWrite{Req: 12, Hash: oh, Size: 300, Data: other[:100]},
				&wire.BlobWrite{Req: 13, Hash: oh, Size: 300, Offset: 200, Data: other[200:]})
			recv[*wire.BlobWritten](m)
			e = recv[*wire.Error](m)
			assert.Equal(t, uint64(13), e.Req)
			assert.Contains(t, e.Message, "after 100 bytes")
			m.send(&wire.BlobWrite{Req: 14, Hash: oh, Size: 300, Offset: 250, Data: other[:100]})
			assert.Contains(t, recv[*wire.Error](m).Message, "passes its size")
			m.send(&wire.BlobWrite{Req: 15, Hash: oh, Size: 300, Data: make([]byte, 299)},
				&wire.BlobWrite{Req: 16, Hash: oh, Size: 300, Offset: 299, Data: []byte{1}})
			recv[*wire.BlobWritten](m)
			e = recv[*wire.Error](m)
			assert.Equal(t, uint64(16), e.Req)
			assert.ErrorContains(t, e, "does not match its hash")

			m.send(&wire.BlobWrite{Req: 17, Hash: oh, Size: 1001, Data: other[:10]})
			e = recv[*wire.Error](m)
			assert.Equal(t, wire.CodeLimit, e.Code)
			assert.Contains(t, e.Message, "1001 bytes, over this tracker's max-blob-bytes (1000)")

			// A later piece that gives another size is refused as invalid
			// input, not taken for a store failure.
			m.send(&wire.BlobWrite{Req: 19, Hash: oh, Size: 300, Data: other[:100]},
				&wire.BlobWrite{Req: 20, Hash: oh, Size: 150, Offset: 100, Data: other[100:150]})
			recv[*wire.BlobWritten](m)
			e = recv[*wire.Error](m)
			assert.Equal(t, uint64(20), e.Req)
			assert.Equal(t, wire.CodeInvalid, e.Code)
			assert.Contains(t, e.Message, "gives a size of 150, after a first piece that gave 300")
			m.send(&wire.BlobWrite{Req: 21, Hash: oh, Size: 300, Offset: 100, Data: other[100:200]})
			assert.Contains(t, recv[*wire.Error](m).Message, "no upload of it is in progress", "the upload was dropped")

			// blob-get still serves a blob that fits in a message.
			w.send(&wire.BlobGet{Req: 18, Hash: h})
			require.Equal(t, data, recv[*wire.BlobData](w).Data)
		})
	}
}
