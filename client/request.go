package client

import (
	"context"
	"fmt"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// request is a message awaiting its answer, by Req, in Client.pending: a
// submission (*Call, which also ends a watch) or an rpc. On a reconnect
// every pending request is sent again.
type request interface {
	// fail ends the request with err; called with c.mu held.
	fail(c *Client, err error)
}

// rpc is a request with one answer: Info, Cancel, BlobHave, BlobPut and
// BlobGet. A blob upload or fetch in flight is shared by every caller that
// needs the same blob (refs of them wait).
type rpc struct {
	msg  wire.Msg
	op   string // what its errors say it was: "info 3fa2c1b0e4d5", "blob-get 1c2d..."
	done chan struct{}
	// val is the answer's content, set with done closed: a
	// *workunit.Outcome (info), []workunit.Key (cancel), []blob.Hash
	// (blob-have: the missing ones), []byte (blob-get), nil (blob-put).
	val  any
	err  error
	over bool
	refs int
	// keep: the request goes on when its last caller stops waiting (an
	// upload, which a later caller may join).
	keep bool
	// dst, when set, receives a BlobRead's data (a piece of a blob being
	// fetched into one buffer).
	dst []byte
	// cancel, when set, stops the transfer the rpc stands for when its
	// last caller stops waiting.
	cancel func()
	// shared, when set, removes the rpc from the Client's table of
	// shared uploads or fetches as it ends; called with c.mu held.
	shared func()
	// given says that a shared fetch's buffer was handed to one of its
	// callers (FetchBlob): the others get copies.
	given bool
}

func (r *rpc) fail(_ *Client, err error) { r.finish(nil, fmt.Errorf("client: %s: %w", r.op, err)) }

// finish ends r (the first end wins); called with c.mu held.
func (r *rpc) finish(val any, err error) {
	if r.over {
		return
	}
	r.over = true
	r.val, r.err = val, err
	if r.shared != nil {
		r.shared()
	}
	close(r.done)
}

// startLocked registers an rpc for msg, whose Req it sets, and sends it.
func (c *Client) startLocked(op string, msg wire.Msg) *rpc {
	req := c.nextReqLocked()
	switch m := msg.(type) {
	case *wire.Info:
		m.Req = req
	case *wire.Cancel:
		m.Req = req
	case *wire.BlobHave:
		m.Req = req
	case *wire.BlobPut:
		m.Req = req
	case *wire.BlobGet:
		m.Req = req
	case *wire.BlobWrite:
		m.Req = req
	case *wire.BlobRead:
		m.Req = req
	}
	r := &rpc{msg: msg, op: op, done: make(chan struct{}), refs: 1}
	c.pending.put(req, r)
	c.sendLocked(msg)
	return r
}

// call sends msg as an rpc and waits for its answer.
func (c *Client) call(ctx context.Context, op string, msg wire.Msg) (any, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	r := c.startLocked(op, msg)
	c.mu.Unlock()
	return c.await(ctx, r)
}

// await waits for r's answer. A caller whose ctx ends stops waiting; the
// last one to stop forgets the request, whose answer is then ignored.
func (c *Client) await(ctx context.Context, r *rpc) (any, error) {
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		c.mu.Lock()
		if r.refs--; r.refs == 0 && !r.over && !r.keep {
			if r.msg != nil {
				c.pending.delete(wire.ReqOf(r.msg))
			}
			if r.shared != nil {
				r.shared()
			}
			if r.cancel != nil {
				r.cancel()
			}
		}
		c.mu.Unlock()
		return nil, fmt.Errorf("client: %s: %w", r.op, ctx.Err())
	}
}

// answerLocked returns the rpc that msg (an answer with Req req) answers,
// taking it from the pending requests; nil when none waits (a request
// forgotten, or an answer to something else).
func (c *Client) answerLocked(req uint64) *rpc {
	p, _ := c.pending.get(req)
	r, ok := p.(*rpc)
	if !ok {
		return nil
	}
	c.pending.delete(req)
	return r
}

// onAnswerLocked handles the answer to an rpc: InfoReply, Canceled,
// BlobNeed, BlobStored, BlobData, BlobWritten or BlobPart. Everything kept is copied out of the
// frame.
func (c *Client) onAnswerLocked(m wire.Msg) {
	r := c.answerLocked(wire.ReqOf(m))
	if r == nil {
		return
	}
	if !answers(r.msg, m) {
		r.finish(nil, fmt.Errorf("client: %s: the tracker answered with %s", r.op, m.Type()))
		return
	}
	switch m := m.(type) {
	case *wire.InfoReply:
		r.finish(outcomeOf(&m.Outcome), nil)
	case *wire.Canceled:
		r.finish(append([]workunit.Key(nil), m.Keys...), nil)
	case *wire.BlobNeed:
		missing := append([]blob.Hash(nil), m.Missing...)
		need := make(map[blob.Hash]bool, len(missing))
		for _, h := range missing {
			need[h] = true
		}
		for _, h := range r.msg.(*wire.BlobHave).Hashes {
			if !need[h] {
				c.stored[h] = struct{}{}
			}
		}
		r.finish(missing, nil)
	case *wire.BlobStored:
		put := r.msg.(*wire.BlobPut)
		c.stored[put.Hash] = struct{}{}
		put.Data = nil // stored: drop the bytes
		r.finish(nil, nil)
	case *wire.BlobData:
		h := r.msg.(*wire.BlobGet).Hash
		switch {
		case m.Missing:
			r.finish(nil, fmt.Errorf("client: %s: %w", r.op, blob.ErrNotFound))
		case blob.Sum(m.Data) != h:
			r.finish(nil, fmt.Errorf("client: %s: the tracker sent data that hashes to %s", r.op, blob.Sum(m.Data).Short()))
		default:
			r.finish(append([]byte{}, m.Data...), nil)
		}
	case *wire.BlobWritten:
		r.finish(m.Written, nil)
	case *wire.BlobPart:
		r.onPartLocked(m)
	default:
		r.finish(nil, fmt.Errorf("client: %s: answered with %s", r.op, m.Type()))
	}
}

// answers reports whether ans is the kind of message that answers req: a
// tracker that answers a blob-get with an info-reply is refused, not
// trusted.
func answers(req, ans wire.Msg) bool {
	switch req.(type) {
	case *wire.Info:
		_, ok := ans.(*wire.InfoReply)
		return ok
	case *wire.Cancel:
		_, ok := ans.(*wire.Canceled)
		return ok
	case *wire.BlobHave:
		_, ok := ans.(*wire.BlobNeed)
		return ok
	case *wire.BlobPut:
		_, ok := ans.(*wire.BlobStored)
		return ok
	case *wire.BlobGet:
		_, ok := ans.(*wire.BlobData)
		return ok
	case *wire.BlobWrite:
		_, ok := ans.(*wire.BlobWritten)
		return ok
	case *wire.BlobRead:
		_, ok := ans.(*wire.BlobPart)
		return ok
	}
	return false
}

// sharedLocked returns the rpc in flight for h in table, or starts one
// with msg; either way one more caller waits for it.
func (c *Client) sharedLocked(table map[blob.Hash]*rpc, h blob.Hash, op string, msg wire.Msg) *rpc {
	if r := table[h]; r != nil {
		r.refs++
		return r
	}
	r := c.startLocked(op, msg)
	table[h] = r
	r.shared = func() {
		if table[h] == r {
			delete(table, h)
		}
	}
	return r
}
