package client

import (
	"context"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
)

// maxHaveHashes is the most hashes put in one BlobHave.
const maxHaveHashes = 8192

// haveReq is a BlobHave awaiting its BlobNeed.
type haveReq struct {
	msg     *wire.BlobHave
	done    chan struct{}
	missing []blob.Hash
	err     error
}

func (r *haveReq) message() wire.Msg { return r.msg }

func (r *haveReq) fail(_ *Client, err error) {
	r.err = fmt.Errorf("client: blob-have: %w", err)
	close(r.done)
}

func (c *Client) onBlobNeedLocked(m *wire.BlobNeed) {
	r, ok := c.pending[m.Req].(*haveReq)
	if !ok {
		return
	}
	delete(c.pending, m.Req)
	r.missing = append([]blob.Hash(nil), m.Missing...)
	need := make(map[blob.Hash]bool, len(r.missing))
	for _, h := range r.missing {
		need[h] = true
	}
	for _, h := range r.msg.Hashes {
		if !need[h] {
			c.stored[h] = struct{}{}
		}
	}
	close(r.done)
}

// putReq is a blob upload: one per hash at a time, shared by every caller
// that needs the blob.
type putReq struct {
	msg  *wire.BlobPut
	done chan struct{}
	err  error
	over bool
}

func (r *putReq) message() wire.Msg { return r.msg }

func (r *putReq) fail(c *Client, err error) {
	if c.puts[r.msg.Hash] == r {
		delete(c.puts, r.msg.Hash)
	}
	r.finish(fmt.Errorf("client: blob-put %s: %w", r.msg.Hash.Short(), err))
}

func (r *putReq) finish(err error) {
	if r.over {
		return
	}
	r.over = true
	r.err = err
	close(r.done)
}

func (c *Client) onBlobStoredLocked(m *wire.BlobStored) {
	r, ok := c.pending[m.Req].(*putReq)
	if !ok {
		return
	}
	delete(c.pending, m.Req)
	c.stored[r.msg.Hash] = struct{}{}
	if c.puts[r.msg.Hash] == r {
		delete(c.puts, r.msg.Hash)
	}
	r.msg.Data = nil // stored: drop the bytes
	r.finish(nil)
}

// EnsureBlobs makes sure the tracker holds every blob of blobs (content by
// hash), uploading those it lacks: it asks which are missing (BlobHave →
// BlobNeed), puts those (BlobPut → BlobStored), and returns once all are
// durable. Each blob is uploaded at most once per client: blobs known to
// be stored are skipped without asking, and concurrent calls share an
// upload in flight. Call it before submitting workunits whose specs refer
// to the blobs.
//
// Each hash must be blob.Sum of its data, and each blob within the
// tracker's MaxBlobBytes.
func (c *Client) EnsureBlobs(ctx context.Context, blobs map[blob.Hash][]byte) error {
	for h, data := range blobs {
		if blob.Sum(data) != h {
			return fmt.Errorf("client: blob %s: its data hashes to %s", h.Short(), blob.Sum(data).Short())
		}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	lim := c.welcome.Limits.WithDefaults().MaxBlobBytes
	var ask []blob.Hash
	var wait []*putReq
	for h, data := range blobs {
		if _, ok := c.stored[h]; ok {
			continue
		}
		if len(data) > lim {
			c.mu.Unlock()
			return fmt.Errorf("client: blob %s: %w: %d bytes, limit %d", h.Short(), wire.ErrLimit, len(data), lim)
		}
		if p := c.puts[h]; p != nil {
			wait = append(wait, p)
			continue
		}
		ask = append(ask, h)
	}
	var haves []*haveReq
	for len(ask) > 0 {
		n := min(len(ask), maxHaveHashes)
		req := c.nextReqLocked()
		r := &haveReq{msg: &wire.BlobHave{Req: req, Hashes: ask[:n:n]}, done: make(chan struct{})}
		c.pending[req] = r
		c.sendLocked(r.msg)
		haves = append(haves, r)
		ask = ask[n:]
	}
	c.mu.Unlock()

	for _, r := range haves {
		select {
		case <-r.done:
		case <-ctx.Done():
			c.dropPending(r.msg.Req)
			return fmt.Errorf("client: blob-have: %w", ctx.Err())
		}
		if r.err != nil {
			return r.err
		}
		if len(r.missing) == 0 {
			continue
		}
		c.mu.Lock()
		for _, h := range r.missing {
			data, ok := blobs[h]
			if !ok {
				continue // the tracker named a blob it was not asked about
			}
			if p := c.puts[h]; p != nil {
				wait = append(wait, p)
				continue
			}
			req := c.nextReqLocked()
			p := &putReq{msg: &wire.BlobPut{Req: req, Hash: h, Data: data}, done: make(chan struct{})}
			c.pending[req] = p
			c.puts[h] = p
			c.sendLocked(p.msg)
			wait = append(wait, p)
		}
		c.mu.Unlock()
	}
	for _, p := range wait {
		select {
		case <-p.done:
		case <-ctx.Done():
			// The upload goes on for others; this caller stops waiting.
			return fmt.Errorf("client: blob-put %s: %w", p.msg.Hash.Short(), ctx.Err())
		}
		if p.err != nil {
			return p.err
		}
	}
	return nil
}

// PutBlob uploads data as a blob (unless the tracker holds it already) and
// returns its hash, as EnsureBlobs does for one blob.
func (c *Client) PutBlob(ctx context.Context, data []byte) (blob.Hash, error) {
	h := blob.Sum(data)
	return h, c.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data})
}

// dropPending forgets the request req: its answer, if any, is ignored.
func (c *Client) dropPending(req uint64) {
	c.mu.Lock()
	delete(c.pending, req)
	c.mu.Unlock()
}

// getReq is a blob fetch: one per hash at a time, shared by every caller
// that needs the blob.
type getReq struct {
	msg  *wire.BlobGet
	refs int
	done chan struct{}
	data []byte
	err  error
	over bool
}

func (r *getReq) message() wire.Msg { return r.msg }

func (r *getReq) fail(c *Client, err error) {
	if c.gets[r.msg.Hash] == r {
		delete(c.gets, r.msg.Hash)
	}
	r.finish(nil, fmt.Errorf("client: blob-get %s: %w", r.msg.Hash.Short(), err))
}

func (r *getReq) finish(data []byte, err error) {
	if r.over {
		return
	}
	r.over = true
	r.data, r.err = data, err
	close(r.done)
}

func (c *Client) onBlobDataLocked(m *wire.BlobData) {
	r, ok := c.pending[m.Req].(*getReq)
	if !ok {
		return
	}
	delete(c.pending, m.Req)
	if c.gets[r.msg.Hash] == r {
		delete(c.gets, r.msg.Hash)
	}
	switch {
	case m.Missing:
		r.finish(nil, fmt.Errorf("client: blob-get %s: %w", r.msg.Hash.Short(), blob.ErrNotFound))
	case blob.Sum(m.Data) != r.msg.Hash:
		r.finish(nil, fmt.Errorf("client: blob-get %s: the tracker sent data that hashes to %s",
			r.msg.Hash.Short(), blob.Sum(m.Data).Short()))
	default:
		data := append([]byte{}, m.Data...)
		r.finish(data, nil)
	}
}

// FetchBlob returns the blob h from the tracker (BlobGet → BlobData),
// checking that the data hashes to h. Concurrent fetches of one hash share
// one request. A blob the tracker does not hold gives an error wrapping
// blob.ErrNotFound. FetchBlob does not cache: a worker keeps its own cache
// (package worker).
func (c *Client) FetchBlob(ctx context.Context, h blob.Hash) ([]byte, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	r := c.gets[h]
	if r == nil {
		req := c.nextReqLocked()
		r = &getReq{msg: &wire.BlobGet{Req: req, Hash: h}, done: make(chan struct{})}
		c.gets[h] = r
		c.pending[req] = r
		c.sendLocked(r.msg)
	}
	r.refs++
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.data, r.err
	case <-ctx.Done():
		c.mu.Lock()
		if r.refs--; r.refs == 0 && !r.over {
			delete(c.pending, r.msg.Req)
			if c.gets[h] == r {
				delete(c.gets, h)
			}
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("client: blob-get %s: %w", h.Short(), ctx.Err())
	}
}
