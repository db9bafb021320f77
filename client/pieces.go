package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// pieceWindow is how many pieces of one blob a client has in flight at
// once, uploading or fetching: enough to keep the connection busy, few
// enough that neither side holds more than a few pieces.
const pieceWindow = 8

// errPieceLost ends the pieces in flight when the connection drops: the
// transfer starts again on the next one.
var errPieceLost = errors.New("the connection dropped during the transfer")

// pieceAttempts bounds the times a transfer in pieces starts again after
// its connection dropped.
const pieceAttempts = 3

// BlobLimitError reports a blob larger than the tracker's max-blob-bytes
// (riotd --max-blob-bytes). It wraps wire.ErrLimit.
type BlobLimitError struct {
	Hash  blob.Hash
	Size  int
	Limit int
}

func (e *BlobLimitError) Error() string {
	return fmt.Sprintf("client: blob %s: %s, over the tracker's limit on a value of %s (riotd --max-blob-bytes)",
		e.Hash.Short(), units.FormatBytes(int64(e.Size)), units.FormatSize(uint64(e.Limit)))
}

// Unwrap returns wire.ErrLimit.
func (e *BlobLimitError) Unwrap() error { return wire.ErrLimit }

// newSharedLocked returns an rpc that stands for a piece-by-piece transfer of h
// in table (c.puts or c.gets): not a message of its own, it ends when the
// transfer does, and callers share it as they share a BlobPut or BlobGet.
func (c *Client) newSharedLocked(table map[blob.Hash]*rpc, h blob.Hash, op string) *rpc {
	r := &rpc{op: op, done: make(chan struct{}), refs: 1, keep: true}
	table[h] = r
	r.shared = func() {
		if table[h] == r {
			delete(table, h)
		}
	}
	return r
}

// putPieces uploads data as the blob h in pieces (BlobWrite), at most
// pieceWindow in flight, and ends r with the outcome.
func (c *Client) putPieces(ctx context.Context, h blob.Hash, data blob.Parts, piece int, r *rpc) {
	var err error
	for range pieceAttempts {
		if err = c.writePieces(ctx, h, data, piece); !errors.Is(err, errPieceLost) {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.stored[h] = struct{}{}
	}
	r.finish(nil, err)
}

func (c *Client) writePieces(ctx context.Context, h blob.Hash, data blob.Parts, piece int) error {
	var inflight []*rpc
	off, size := 0, data.Len()
	for off < size || len(inflight) > 0 {
		for len(inflight) < pieceWindow && off < size {
			end := min(off+piece, size)
			c.mu.Lock()
			if c.err != nil {
				err := c.err
				c.mu.Unlock()
				return err
			}
			p := c.startLocked(fmt.Sprintf("blob-write %s at %d", h.Short(), off),
				&wire.BlobWrite{Hash: h, Size: uint64(size), Offset: uint64(off), Data: data.Slice(off, end)})
			c.mu.Unlock()
			inflight = append(inflight, p)
			off = end
		}
		v, err := c.await(ctx, inflight[0])
		if err != nil {
			return err
		}
		want := inflight[0].msg.(*wire.BlobWrite)
		if got := v.(uint64); got != want.Offset+uint64(len(want.Data)) && got != want.Size {
			return fmt.Errorf("client: blob-write %s: the tracker holds %d bytes, after the piece that ends at %d", h.Short(), got, want.Offset+uint64(len(want.Data)))
		}
		want.Data = nil
		inflight = inflight[1:]
	}
	return nil
}

// fetchPieces fetches the blob h in pieces (BlobRead), at most
// pieceWindow in flight, into one buffer of its size, checks its hash,
// and ends r with it.
func (c *Client) fetchPieces(ctx context.Context, h blob.Hash, r *rpc) {
	var data []byte
	var err error
	for range pieceAttempts {
		if data, err = c.readPieces(ctx, h); !errors.Is(err, errPieceLost) {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.finish(data, err)
}

func (c *Client) readPieces(ctx context.Context, h blob.Hash) ([]byte, error) {
	lim := c.Limits()
	piece := lim.PieceBytes()
	start := func(off uint64, dst []byte) (*rpc, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return nil, c.err
		}
		p := c.startLocked("blob-read "+h.Short(), &wire.BlobRead{Hash: h, Offset: off, Length: uint64(piece)})
		p.dst = dst
		return p, nil
	}
	first, err := start(0, nil)
	if err != nil {
		return nil, err
	}
	v, err := c.await(ctx, first)
	if err != nil {
		return nil, err
	}
	part := v.(*blobPart)
	if part.size > uint64(lim.MaxBlobBytes) {
		return nil, fmt.Errorf("client: blob-read %s: the tracker gives its size as %d bytes, over its own max-blob-bytes (%d)", h.Short(), part.size, lim.MaxBlobBytes)
	}
	if uint64(len(part.data)) == part.size {
		return part.data, checkSum(h, part.data)
	}
	out := make([]byte, part.size)
	copy(out, part.data)
	off := uint64(len(part.data))
	next := off
	var inflight []*rpc
	for off < part.size {
		for len(inflight) < pieceWindow && next < part.size {
			end := min(next+uint64(piece), part.size)
			p, err := start(next, out[next:end:end])
			if err != nil {
				return nil, err
			}
			inflight = append(inflight, p)
			next = end
		}
		p := inflight[0]
		inflight = inflight[1:]
		v, err := c.await(ctx, p)
		if err != nil {
			return nil, err
		}
		got := v.(*blobPart)
		if got.size != part.size || got.offset != off || len(got.data) == 0 {
			return nil, fmt.Errorf("client: blob-read %s: the tracker sent %d bytes at %d of %d, want bytes at %d of %d",
				h.Short(), len(got.data), got.offset, got.size, off, part.size)
		}
		off += uint64(len(got.data))
	}
	return out, checkSum(h, out)
}

func checkSum(h blob.Hash, data []byte) error {
	if sum := blob.Hash(sha256.Sum256(data)); sum != h {
		return fmt.Errorf("client: blob-read %s: the tracker sent data that hashes to %s", h.Short(), sum.Short())
	}
	return nil
}

// blobPart is the value of a BlobRead's rpc: data was copied into the
// rpc's dst when it had one.
type blobPart struct {
	size, offset uint64
	data         []byte
}

// onPartLocked takes a BlobPart for r.
func (r *rpc) onPartLocked(m *wire.BlobPart) {
	if m.Missing {
		r.finish(nil, fmt.Errorf("client: %s: %w", r.op, blob.ErrNotFound))
		return
	}
	var data []byte
	if r.dst != nil {
		if len(m.Data) > len(r.dst) {
			r.finish(nil, fmt.Errorf("client: %s: the tracker sent %d bytes, more than the %d asked for", r.op, len(m.Data), len(r.dst)))
			return
		}
		data = r.dst[:copy(r.dst, m.Data)]
	} else {
		data = append([]byte{}, m.Data...)
	}
	r.finish(&blobPart{size: m.Size, offset: m.Offset, data: data}, nil)
}

// BlobRefDocument returns the value document that stands for the value
// stored, as a document of its own, in the blob h: a worker sends a
// result too large for a done message this way (docs/protocol.md, "Large
// values").
func BlobRefDocument(h blob.Hash) []byte {
	w := cbor.NewWriter(nil)
	w.Tag(value.TagBlob)
	w.ByteString(h[:])
	return w.Bytes()
}

// blobRefOf reports whether doc is a value document that is a blob
// reference and nothing else, and returns its hash.
func blobRefOf(doc []byte) (blob.Hash, bool) {
	if len(doc) > 64 {
		return blob.Hash{}, false
	}
	r := cbor.NewReader(doc)
	hd, err := r.Next()
	if err != nil || hd.Major != cbor.MajorTag || hd.Arg != value.TagBlob {
		return blob.Hash{}, false
	}
	b, err := r.ByteString()
	if err != nil || len(b) != blob.Size || r.Remaining() != 0 {
		return blob.Hash{}, false
	}
	return blob.Hash(b), true
}

// resolve returns out with its result in place when the worker sent it
// as a blob (BlobRefDocument): the blob's bytes, fetched, are the
// result's value document. Other outcomes come back as they are.
func (c *Client) resolve(ctx context.Context, out *workunit.Outcome, err error) (*workunit.Outcome, error) {
	if out == nil || out.Status != workunit.StatusDone {
		return out, err
	}
	h, ok := blobRefOf(out.Result)
	if !ok {
		return out, err
	}
	data, ferr := c.FetchBlob(ctx, h)
	if ferr != nil {
		if errors.Is(ferr, blob.ErrNotFound) {
			ferr = fmt.Errorf("client: the result of workunit %s is blob %s, which the tracker does not hold: %w", out.Key.Short(), h.Short(), ferr)
		}
		return nil, ferr
	}
	cp := *out
	cp.Result = data
	return &cp, err
}
