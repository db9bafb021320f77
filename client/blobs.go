package client

import (
	"bytes"
	"context"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// maxHaveHashes is the most hashes put in one BlobHave.
const maxHaveHashes = 8192

// EnsureBlobs makes sure the tracker holds every blob of blobs (content by
// hash), uploading those it lacks: it asks which are missing (BlobHave →
// BlobNeed), puts those (BlobPut → BlobStored), and returns once all are
// durable. Each blob is uploaded at most once per connection: blobs
// known to be stored are skipped without asking, and concurrent calls
// share an upload in flight. The client forgets what is stored when it
// reconnects (a riotd --memory may have freed or lost the blobs), and a
// spec's blobs when the tracker answers its submission that it does not
// hold one (wire.CodeUnknownBlob): the next call asks again. Call it
// before submitting workunits whose specs refer to the blobs.
//
// Each hash must be blob.Sum of its data, and each blob within the
// tracker's MaxBlobBytes (a *BlobLimitError otherwise). A blob larger
// than the tracker's Limits.PieceBytes goes in pieces (BlobWrite), a few
// at a time, without copies of its data. EnsureBlobs is EnsureBlobParts
// with each blob in one part.
//
// A tracker that keeps its blobs in memory (riotd --memory) and holds its
// --max-memory refuses a blob: the error wraps ErrMemoryFull (a
// *wire.Error of code wire.CodeMemoryFull whose message says what is held
// and what to do), and nothing of that blob is kept.
func (c *Client) EnsureBlobs(ctx context.Context, blobs map[blob.Hash][]byte) error {
	parts := make(map[blob.Hash]blob.Parts, len(blobs))
	for h, data := range blobs {
		parts[h] = blob.Parts{data}
	}
	return c.EnsureBlobParts(ctx, parts)
}

// EnsureBlobParts is EnsureBlobs for blobs given as parts (blob.Parts):
// each blob is the concatenation of its parts, and its hash that of the
// concatenation, as if it were one slice. A blob that goes in pieces is
// sent from its parts as they are, a piece that lies within one part
// without a copy (one that spans two parts is copied into a piece of its
// own), so that a large value given as a few header bytes and a buffer
// by reference is never copied whole.
//
// The parts are read while the upload goes on, which is after
// EnsureBlobParts returns when ctx ends first (the upload goes on for
// other callers): the caller must not change them until then. The tracker
// hashes each blob as it arrives and refuses one whose bytes do not match
// its hash, so a blob changed during its upload is an error and is not
// stored, never stored under a hash its bytes do not have.
func (c *Client) EnsureBlobParts(ctx context.Context, blobs map[blob.Hash]blob.Parts) error {
	// A blob that goes in pieces is checked by the tracker as it arrives
	// (an error if it does not match): one pass less over a large value.
	small := c.Limits().PieceBytes()
	for h, data := range blobs {
		if data.Len() <= small {
			if sum := data.Sum(); sum != h {
				return fmt.Errorf("client: blob %s: its data hashes to %s", h.Short(), sum.Short())
			}
		}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	lims := c.welcome.Limits.WithDefaults()
	lim, piece := lims.MaxBlobBytes, lims.PieceBytes()
	var ask []blob.Hash
	var wait []*rpc
	// While disconnected the client trusts no blob as stored: the
	// connection it comes back on may not hold it (see unknownBlobLocked).
	trust := c.cur != nil
	for h, data := range blobs {
		if _, ok := c.stored[h]; ok && trust {
			continue
		}
		if size := data.Len(); size > lim {
			c.mu.Unlock()
			return &BlobLimitError{Hash: h, Size: size, Limit: lim}
		}
		if p := c.puts[h]; p != nil {
			p.refs++
			wait = append(wait, p)
			continue
		}
		ask = append(ask, h)
	}
	var haves []*rpc
	for len(ask) > 0 {
		n := min(len(ask), maxHaveHashes)
		haves = append(haves, c.startLocked("blob-have", &wire.BlobHave{Hashes: ask[:n:n]}))
		ask = ask[n:]
	}
	c.mu.Unlock()

	for _, r := range haves {
		v, err := c.await(ctx, r)
		if err != nil {
			return err
		}
		missing := v.([]blob.Hash)
		if len(missing) == 0 {
			continue
		}
		c.mu.Lock()
		for _, h := range missing {
			data, ok := blobs[h]
			if !ok {
				continue // the tracker named a blob it was not asked about
			}
			if p := c.puts[h]; p != nil {
				p.refs++
				wait = append(wait, p)
				continue
			}
			if data.Len() > piece {
				// Like a blob-put, it goes on for others when this caller
				// stops waiting; it ends with the client.
				p := c.newSharedLocked(c.puts, h, "blob-write "+h.Short())
				go c.putPieces(context.WithoutCancel(ctx), h, data, piece, p)
				wait = append(wait, p)
				continue
			}
			p := c.sharedLocked(c.puts, h, "blob-put "+h.Short(), &wire.BlobPut{Hash: h, Data: data.Bytes()})
			p.keep = true // it goes on for others when this caller stops waiting
			wait = append(wait, p)
		}
		c.mu.Unlock()
	}
	for _, p := range wait {
		if _, err := c.await(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// ForgetBlobs makes the client forget that the tracker holds the blobs
// hs, so that the next EnsureBlobs asks the tracker again. A worker calls
// it before it uploads a result as a blob: a tracker in memory (riotd
// --memory) frees a result blob once its workunit is forgotten, and a
// result it sends must name a blob the tracker holds, which no refusal
// would tell it.
func (c *Client) ForgetBlobs(hs ...blob.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hs {
		delete(c.stored, h)
	}
}

// PutBlob uploads data as a blob (unless the tracker holds it already) and
// returns its hash, as EnsureBlobs does for one blob.
func (c *Client) PutBlob(ctx context.Context, data []byte) (blob.Hash, error) {
	h := blob.Sum(data)
	return h, c.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data})
}

// PutBlobParts is PutBlob for a blob given as parts (EnsureBlobParts):
// its hash is that of their concatenation, computed from the parts as they
// are, and they are read, not copied, until the upload ends.
func (c *Client) PutBlobParts(ctx context.Context, parts blob.Parts) (blob.Hash, error) {
	h := parts.Sum()
	return h, c.EnsureBlobParts(ctx, map[blob.Hash]blob.Parts{h: parts})
}

// FetchBlob returns the blob h from the tracker (BlobRead → BlobPart, in
// pieces of the tracker's Limits.PieceBytes, a few in flight at a time,
// into one buffer of the blob's size), checking that the data hashes to h.
// Concurrent fetches of one hash share one transfer, which stops when the
// last of them stops waiting. A blob the tracker does not hold gives an
// error wrapping blob.ErrNotFound. FetchBlob does not cache: a worker keeps its own cache
// (package worker). The bytes returned are the caller's own, to keep or
// change: when fetches share a transfer, the first caller to return gets
// its buffer and each other one a copy.
func (c *Client) FetchBlob(ctx context.Context, h blob.Hash) ([]byte, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	r := c.gets[h]
	if r != nil {
		r.refs++
	} else {
		r = c.newSharedLocked(c.gets, h, "blob-read "+h.Short())
		r.keep = false
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.cancel = cancel
		go func() {
			defer cancel()
			c.fetchPieces(fctx, h, r)
		}()
	}
	c.mu.Unlock()
	v, err := c.await(ctx, r)
	if err != nil {
		return nil, err
	}
	data := v.([]byte)
	c.mu.Lock()
	given := r.given
	r.given = true
	c.mu.Unlock()
	if given {
		data = bytes.Clone(data)
	}
	return data, nil
}

// maxReuploads bounds the times one submission uploads its blobs again
// on the tracker's unknown-blob answers.
const maxReuploads = 3

// SubmitBlobs is Submit for a spec whose blobs (spec.Blobs) are given with
// their bytes, uploaded already (EnsureBlobParts). Should the tracker
// answer that it does not hold one of them (wire.CodeUnknownBlob: a
// riotd --memory frees a blob once nothing names it, and loses them all
// when it restarts), the client uploads them again and submits again,
// and the caller sees nothing of it; the same when the tracker no longer
// knows the workunit and the client submits it again (a riotd --memory
// that restarted: see Options.DropAcceptedSpecs). The Call keeps blobs,
// which must not change, until it ends.
//
// A spec submitted with Submit that names a blob the tracker does not
// hold fails instead with an error that wraps ErrUnknownBlob (the client
// has no bytes to upload): upload the blobs again (EnsureBlobs, which asks
// the tracker afresh) and submit again. Either way, the client forgets
// that it uploaded the spec's blobs.
func (c *Client) SubmitBlobs(spec *workunit.Spec, opts workunit.Options, blobs map[blob.Hash]blob.Parts) *Call {
	return c.submitAs(spec, opts, true, nil, func(ctx context.Context, _ []blob.Hash) error { return c.EnsureBlobParts(ctx, blobs) })
}

// SubmitUploading is SubmitBlobs for a caller that does not keep the
// blobs' bytes but can make them again: should the tracker answer that
// it does not hold a blob the spec names (at the submission, or at its
// resubmission after a reconnect), the client calls upload with the
// spec's blobs, on a goroutine of its own, with a context that is never
// canceled (an upload through a client that ended fails), to upload
// them again (EnsureBlobParts), and submits again; an error from upload
// fails the Call with it. One upload function serves any number of
// Calls. riot's JavaScript master uses it: it encodes a large value
// again, on the script's goroutine, rather than keep its encoding.
func (c *Client) SubmitUploading(spec *workunit.Spec, opts workunit.Options, upload func(ctx context.Context, blobs []blob.Hash) error) *Call {
	return c.submitAs(spec, opts, true, nil, upload)
}

// unknownBlobLocked handles the tracker's unknown-blob answer e to k's
// submission, taken from the pending requests: the client forgets that it
// uploaded the blobs the spec names; a Call that has their bytes
// (SubmitBlobs) uploads them again and goes out again, and one that has
// not fails with e.
func (c *Client) unknownBlobLocked(k *Call, e *wire.Error) {
	var blobs []blob.Hash
	if k.spec != nil {
		if _, hs, err := workunit.BlobsOf(k.spec); err == nil {
			blobs = hs
			for _, h := range blobs {
				delete(c.stored, h)
			}
		}
	}
	if k.x == nil || k.x.reup == nil {
		k.fail(c, fmt.Errorf("the tracker does not hold a blob the spec names, and this client has no bytes of it to upload again "+
			"(upload the blobs again with EnsureBlobs and submit again, or submit with SubmitBlobs): %w", e))
		return
	}
	if k.x.reups >= maxReuploads {
		k.fail(c, fmt.Errorf("the tracker does not hold a blob the spec names, after %d uploads of it: %w", k.x.reups, e))
		return
	}
	k.x.reups++
	reup := k.x.reup
	c.log.Info("client: the tracker does not hold a blob a workunit names; uploading it again", "key", k.Key.Short(), "message", e.Message)
	go func() {
		err := reup(context.Background(), blobs) // ends with the client
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case c.err != nil:
			k.fail(c, c.err)
		case err != nil:
			k.fail(c, fmt.Errorf("the tracker does not hold a blob the spec names (%w), and uploading it again failed: %w", e, err))
		default:
			old := k.req
			k.req = c.nextReqLocked()
			if w := k.watch(); w != nil && w.minReq == old {
				w.minReq = k.req
			}
			c.pending.put(k.req, k)
			c.sendCallLocked(k)
		}
	}()
}
