package store

import (
	"fmt"

	"github.com/riot-go/riot/blob"
)

// memChunk is the size of the pieces a Memory store keeps a blob in.
// A blob that came in pieces is kept as they came, in chunks of this size,
// never joined: joining (or growing one buffer to the blob's size by
// doubling) would cost a second copy of the blob, and the garbage of the
// smaller buffers, while it arrives.
const memChunk = 1 << 20

// memBlob is a blob in a Memory store: its bytes in order, in chunks of
// memChunk bytes (the last may be shorter). A blob stored whole
// (PutBlob) is one chunk of any size.
type memBlob struct {
	chunks [][]byte
	size   int64
}

// wholeBlob is a memBlob of one chunk.
func wholeBlob(b []byte) memBlob { return memBlob{chunks: [][]byte{b}, size: int64(len(b))} }

// bytes returns the blob's bytes in one slice: the chunk itself when there
// is one, else a new slice.
func (b memBlob) bytes() []byte {
	if len(b.chunks) == 1 {
		return b.chunks[0]
	}
	out := make([]byte, 0, b.size)
	for _, c := range b.chunks {
		out = append(out, c...)
	}
	return out
}

// readAt copies the blob's bytes from off into p and returns the blob's
// size and the bytes copied.
func (b memBlob) readAt(h blob.Hash, off int64, p []byte) (int64, int, error) {
	if off < 0 || off > b.size {
		return b.size, 0, fmt.Errorf("store: read blob %s: offset %d is past its end (%d bytes)", h.Short(), off, b.size)
	}
	n := 0
	for _, c := range b.chunks {
		if n == len(p) {
			break
		}
		if off >= int64(len(c)) {
			off -= int64(len(c))
			continue
		}
		n += copy(p[n:], c[off:])
		off = 0
	}
	return b.size, n, nil
}
