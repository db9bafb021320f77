package client

import (
	"fmt"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A key's watch is the client's wait for it: every waiter, callback and
// watched Call of the key shares it, so that the tracker gets one Watch
// per key however many wait. It ends (resolves) with the first Finished
// answering a request made since it began (Req ≥ minReq): answers to
// older requests are stale.
//
// A watch is not an object of its own but a role of the Call that made
// it, its owner: the first watched submission of the key (Submit), or a
// Call that Watch, WaitFor or CallWhenDone made. A master with a million
// calls outstanding holds a million watches, one for each, so the common
// case (one Call per key) costs one object, and what only some watches
// need (other Calls of the same key, callbacks, streamed lines) lives in
// a watchExtra made when needed.

// watchExtra is what some watches need beyond their owner's fields.
type watchExtra struct {
	// listeners end with the watch, in the order they came: the other
	// Calls of the key (later submissions, Watch's Calls), and funcs
	// called with c.mu held (CallWhenDone's, which queue their callbacks).
	listeners []listener
	// out and err are how the watch ended when its owner had ended before
	// (the tracker refused its submission, or answered it from memory
	// while a later submission of the key went on); ended says they are
	// set.
	out   *workunit.Outcome
	err   error
	ended bool
	// spec is the latest watched submission of the key that the tracker
	// accepted, when it is not the owner's: its spec is sent again when
	// the tracker answers that it does not know the key.
	spec *Call
	// streamed holds the lines the workunit streamed while it ran, for
	// a client without Options.OnPrint: its outcome's console gets them
	// back in front of its own (at most maxStreamedBytes of text).
	streamed      []wire.Line
	streamedBytes int
	streamedCut   int // lines past the bound, not kept
}

// listener is a Call, or a func that must not block, that ends with a
// watch.
type listener struct {
	call *Call
	fn   func(*workunit.Outcome, error)
}

// watchExtra returns w's watchExtra, making it.
func (w *Call) watchExtra() *watchExtra {
	x := w.extra()
	if x.watch == nil {
		x.watch = new(watchExtra)
	}
	return x.watch
}

// wx returns w's watchExtra, nil when it has none.
func (w *Call) wx() *watchExtra {
	if w.x == nil {
		return nil
	}
	return w.x.watch
}

// watchOfLocked returns key's watch, nil when none waits.
func (c *Client) watchOfLocked(key workunit.Key) *Call { return c.watches.get(key) }

// addWatchLocked returns the watch of w's key, making w that watch (and
// putting it in the table) when there is none.
func (c *Client) addWatchLocked(w *Call) *Call { return c.watches.getOrPut(w) }

// dropWatchLocked takes w out of the table of watches, and reports
// whether it was there.
func (c *Client) dropWatchLocked(w *Call) bool { return c.watches.remove(w) }

// eachWatchLocked calls fn for every watch in the table; fn may drop
// the watch it is given.
func (c *Client) eachWatchLocked(fn func(*Call)) {
	for _, w := range c.watches.all() {
		fn(w)
	}
}

// watchLocked returns key's watch with one more reference, making it
// (a Call that Watch returns, or that WaitFor waits on) and sending a
// Watch when there is none.
func (c *Client) watchLocked(key workunit.Key) *Call {
	w := c.watchOfLocked(key)
	if w == nil {
		w = &Call{Key: key, c: c, minReq: c.req + 1}
		w.st.Store(stAccepted | stNoAcc | stWatches | stOwnWatch)
		c.addWatchLocked(w)
		c.sendLocked(c.watchMsgLocked([]workunit.Key{key}))
	}
	w.refs++
	return w
}

// releaseLocked drops a reference to w; the last one, before w is
// resolved, unwatches the key.
func (c *Client) releaseLocked(w *Call) {
	w.refs--
	if w.refs > 0 || w.has(stResolved) {
		return
	}
	if c.dropWatchLocked(w) && c.err == nil {
		c.sendLocked(&wire.Unwatch{Keys: []workunit.Key{w.Key}})
	}
}

// resolveLocked ends w with out and err (err is errOf(out) when out is
// not nil): its owner, every Call listening, every func, and every
// waiter.
func (c *Client) resolveLocked(w *Call, out *workunit.Outcome, err error) {
	if w.has(stResolved) {
		return
	}
	c.dropWatchLocked(w)
	x := w.wx()
	if w.has(stFinished) {
		x = w.watchExtra()
		x.out, x.err, x.ended = out, err, true
	} else {
		w.finishLocked(out, err)
	}
	w.st.Or(stResolved)
	if x != nil {
		for _, l := range x.listeners {
			if l.call != nil {
				l.call.finishLocked(out, err)
			} else {
				l.fn(out, err)
			}
		}
		x.listeners = nil
	}
	w.notifyLocked()
}

// resolution returns how w ended as a watch; w is resolved.
func (w *Call) resolution() (*workunit.Outcome, error) {
	if x := w.wx(); x != nil && x.ended {
		return x.out, x.err
	}
	return w.out, w.endErr()
}

// setSpecLocked notes that the tracker accepted k, a watched submission
// of w's key: k's spec is the one to send again should the tracker forget
// the key.
func (w *Call) setSpecLocked(k *Call) {
	if k == w {
		w.st.Or(stOwnSpec)
		if x := w.wx(); x != nil {
			x.spec = nil
		}
		return
	}
	w.watchExtra().spec = k
}

// specLocked returns the latest watched submission of w's key that the
// tracker accepted, nil when none.
func (w *Call) specLocked() *Call {
	if x := w.wx(); x != nil && x.spec != nil {
		return x.spec
	}
	if w.has(stOwnSpec) {
		return w
	}
	return nil
}

// onFinishedLocked handles a Finished: it ends the key's watch unless the
// answer is stale.
func (c *Client) onFinishedLocked(m *wire.Finished) {
	if b := c.batches[m.Req]; b != nil {
		if b.left--; b.left <= 0 {
			delete(c.batches, m.Req)
		}
	}
	w := c.watchOfLocked(m.Key)
	if w == nil || m.Req < w.minReq {
		return
	}
	switch m.Status {
	case workunit.StatusUnknown:
		if src := w.specLocked(); src != nil && c.err == nil && !c.closing {
			c.resubmitLocked(w, src)
			return
		}
		c.resolveLocked(w, nil, unknownKeyErr(m.Key))
	case workunit.StatusDone, workunit.StatusError:
		out := withStreamed(w, outcomeOf(&m.Outcome))
		c.resolveLocked(w, out, errOf(out))
	}
}

// resubmitLocked submits src's spec again (src is w's latest accepted
// watched submission): the tracker accepted it once but does not know
// the key now, because it forgot the finished workunit (riotd
// --keep-results) while this client was away, or restarted without a
// store. The workunit runs again, and w ends with that run. The
// submission is a Call of its own; if the tracker refuses it, w ends with
// the refusal.
func (c *Client) resubmitLocked(w, src *Call) {
	k := &Call{Key: w.Key, c: c, spec: src.spec}
	st := stAgain
	if src.has(stSubmitExtra) {
		k.extra().opts = src.x.opts
		st |= stSubmitExtra
	}
	if src.x != nil && src.x.reup != nil {
		k.extra().reup = src.x.reup // a tracker that restarted lost the blobs too
	}
	k.st.Store(st)
	k.setWatchLocked(w)
	k.req = c.nextReqLocked()
	w.minReq = k.req
	w.refs++
	c.pending.put(k.req, k)
	c.log.Warn("client: the tracker no longer knows a workunit it accepted; submitting it again", "key", w.Key.Short())
	c.sendCallLocked(k)
}

// maxStreamedBytes bounds the streamed lines a watch keeps for its
// outcome: a workunit's console is at most about that much anyway.
const maxStreamedBytes = 1 << 20

// keepStreamedLocked keeps m's lines for the outcome of its watch.
func (c *Client) keepStreamedLocked(m *wire.Printed) {
	w := c.watchOfLocked(m.Key)
	if w == nil {
		return
	}
	x := w.watchExtra()
	for _, l := range m.Lines {
		if x.streamedBytes+len(l.Text) > maxStreamedBytes {
			x.streamedCut++
			continue
		}
		x.streamedBytes += len(l.Text)
		x.streamed = append(x.streamed, l)
	}
	x.streamedCut += m.Missed
}

// withStreamed returns out with w's streamed lines in front of its
// console's.
func withStreamed(w *Call, out *workunit.Outcome) *workunit.Outcome {
	x := w.wx()
	if x == nil || len(x.streamed) == 0 && x.streamedCut == 0 {
		return out
	}
	var b workunit.ConsoleBuilder
	for _, l := range x.streamed {
		b.Add(l.Level, l.Text)
	}
	if x.streamedCut > 0 {
		b.Add(workunit.Level("warn"), fmt.Sprintf("[riot: %d lines the workunit printed while it ran were not kept]", x.streamedCut))
	}
	if rest, err := out.Console.Lines(); err == nil {
		for _, l := range rest {
			b.Add(l.Level, l.Text)
		}
	}
	out.Console = b.Console()
	x.streamed, x.streamedBytes, x.streamedCut = nil, 0, 0
	return out
}

// watchBatch is a Watch message on the current connection: its keys, and
// how many of them have not been answered.
type watchBatch struct {
	keys []workunit.Key
	left int
}
