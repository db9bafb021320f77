package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// errOf returns an outcome's workunit error as an error (nil when none).
func errOf(o *workunit.Outcome) error {
	if o == nil || o.Err == nil {
		return nil
	}
	return o.Err
}

// outcomeOf copies an outcome out of a message (whose bytes belong to the
// reader's frame). The error gets the worker and key when the tracker left
// them out.
func outcomeOf(o *workunit.Outcome) *workunit.Outcome {
	out := *o
	out.Result = bytes.Clone(o.Result)
	out.Console = bytes.Clone(o.Console)
	if o.Err != nil {
		e := *o.Err
		e.Value = bytes.Clone(e.Value)
		if e.Worker == "" {
			e.Worker = o.Worker
		}
		if e.Key == (workunit.Key{}) {
			e.Key = o.Key
		}
		out.Err = &e
	}
	return &out
}

// watch is the client's wait for one key: every waiter, callback and
// watched Call of the key shares it, so that the tracker gets one Watch
// per key however many wait. It ends with the first Finished answering a
// request made since it began (Req ≥ minReq): answers to older requests
// are stale.
type watch struct {
	key       workunit.Key
	minReq    uint64
	refs      int
	resolved  bool
	done      chan struct{}
	out       *workunit.Outcome
	err       error
	listeners []func(*workunit.Outcome, error) // called with c.mu held; must not block
	// spec is this client's latest watched submission of the key that
	// the tracker accepted, sent again when the tracker answers that it
	// does not know the key.
	spec *wire.Submit
	// streamed holds the lines the workunit streamed while it ran, for
	// a client without Options.OnPrint: its outcome's console gets them
	// back in front of its own (at most maxStreamedBytes of text).
	streamed      []wire.Line
	streamedBytes int
	streamedCut   int // lines past the bound, not kept
}

// maxStreamedBytes bounds the streamed lines a watch keeps for its
// outcome: a workunit's console is at most about that much anyway.
const maxStreamedBytes = 1 << 20

// keepStreamedLocked keeps m's lines for the outcome of its watch.
func (c *Client) keepStreamedLocked(m *wire.Printed) {
	w := c.watches[m.Key]
	if w == nil || w.resolved {
		return
	}
	for _, l := range m.Lines {
		if w.streamedBytes+len(l.Text) > maxStreamedBytes {
			w.streamedCut++
			continue
		}
		w.streamedBytes += len(l.Text)
		w.streamed = append(w.streamed, l)
	}
	w.streamedCut += m.Missed
}

// withStreamed returns out with w's streamed lines in front of its
// console's.
func withStreamed(w *watch, out *workunit.Outcome) *workunit.Outcome {
	if len(w.streamed) == 0 && w.streamedCut == 0 {
		return out
	}
	var b workunit.ConsoleBuilder
	for _, l := range w.streamed {
		b.Add(l.Level, l.Text)
	}
	if w.streamedCut > 0 {
		b.Add(workunit.Level("warn"), fmt.Sprintf("[riot: %d lines the workunit printed while it ran were not kept]", w.streamedCut))
	}
	if rest, err := out.Console.Lines(); err == nil {
		for _, l := range rest {
			b.Add(l.Level, l.Text)
		}
	}
	out.Console = b.Console()
	w.streamed, w.streamedBytes, w.streamedCut = nil, 0, 0
	return out
}

// watchBatch is a Watch message on the current connection: its keys, and
// how many of them have not been answered.
type watchBatch struct {
	keys []workunit.Key
	left int
}

// watchLocked returns key's watch with one more reference, making it and
// sending a Watch when there is none.
func (c *Client) watchLocked(key workunit.Key) *watch {
	w := c.watches[key]
	if w == nil {
		w = &watch{key: key, minReq: c.req + 1, done: make(chan struct{})}
		c.watches[key] = w
		c.sendLocked(c.watchMsgLocked([]workunit.Key{key}))
	}
	w.refs++
	return w
}

// releaseLocked drops a reference to w; the last one, before w is
// resolved, unwatches the key.
func (c *Client) releaseLocked(w *watch) {
	w.refs--
	if w.refs > 0 || w.resolved {
		return
	}
	if c.watches[w.key] == w {
		delete(c.watches, w.key)
		if c.err == nil {
			c.sendLocked(&wire.Unwatch{Keys: []workunit.Key{w.key}})
		}
	}
}

// resolveLocked ends w with out and err and tells its listeners.
func (c *Client) resolveLocked(w *watch, out *workunit.Outcome, err error) {
	if w.resolved {
		return
	}
	w.resolved = true
	w.out, w.err = out, err
	close(w.done)
	if c.watches[w.key] == w {
		delete(c.watches, w.key)
	}
	for _, l := range w.listeners {
		l(out, err)
	}
	w.listeners = nil
}

// onFinishedLocked handles a Finished: it ends the key's watch unless the
// answer is stale.
func (c *Client) onFinishedLocked(m *wire.Finished) {
	if b := c.batches[m.Req]; b != nil {
		if b.left--; b.left <= 0 {
			delete(c.batches, m.Req)
		}
	}
	w := c.watches[m.Key]
	if w == nil || m.Req < w.minReq {
		return
	}
	switch m.Status {
	case workunit.StatusUnknown:
		if w.spec != nil && c.err == nil && !c.closing {
			c.resubmitLocked(w)
			return
		}
		c.resolveLocked(w, nil, unknownKeyErr(m.Key))
	case workunit.StatusDone, workunit.StatusError:
		out := withStreamed(w, outcomeOf(&m.Outcome))
		c.resolveLocked(w, out, errOf(out))
	}
}

// resubmitLocked submits w's spec again: the tracker accepted it once but
// does not know the key now, because it forgot the finished workunit
// (riotd --keep-results) while this client was away, or restarted without
// a store. The workunit runs again, and w ends with that run. The
// submission is a Call of its own; if the tracker refuses it, w ends with
// the refusal.
func (c *Client) resubmitLocked(w *watch) {
	k := &Call{Key: w.key, c: c, accepted: make(chan struct{}), done: make(chan struct{}), again: true}
	k.req = c.nextReqLocked()
	msg := *w.spec
	msg.Req = k.req
	msg.Watch = true
	k.msg = &msg
	k.w = w
	w.minReq = k.req
	w.refs++
	c.pending[k.req] = k
	c.log.Warn("client: the tracker no longer knows a workunit it accepted; submitting it again", "key", w.key.Short())
	c.sendLocked(k.msg)
}

// Call is a submitted workunit: Submit returns it at once, before the
// tracker has answered. Its methods are safe for concurrent use.
type Call struct {
	// Key is the workunit's key, computed locally (the tracker computes
	// the same from the spec).
	Key workunit.Key

	c        *Client
	req      uint64
	msg      *wire.Submit
	child    *wire.Child // instead of msg: a child's submission (SubmitChild)
	w        *watch      // the key's watch, when the Call watches
	accepted chan struct{}
	acc      *workunit.Outcome // guarded by accepted
	accErr   error

	// guarded by c.mu, readable after done is closed
	finished bool
	done     chan struct{}
	out      *workunit.Outcome
	err      error
	cbs      []func(*workunit.Outcome, error)
	again    bool // made by resubmitLocked
}

func (k *Call) message() wire.Msg {
	if k.child != nil {
		return k.child
	}
	return k.msg
}

// Finished reports whether the Call has ended: Wait returns without
// waiting for the tracker (it may still fetch a result sent as a blob).
func (k *Call) Finished() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// FromMemory reports whether the tracker answered the submission with the
// key's result (a memoized workunit: nothing ran for it). It is false
// until the tracker has accepted the submission.
func (k *Call) FromMemory() bool {
	select {
	case <-k.accepted:
		return k.acc != nil && k.acc.Status == workunit.StatusDone
	default:
		return false
	}
}

// fail ends the submission with err (the tracker refused it, or the client
// ended). A watch it carried is sent again for others waiting on the key;
// a resubmission's watch ends with err.
func (k *Call) fail(c *Client, err error) {
	if k.Key == (workunit.Key{}) { // a spec that has no key: nil or invalid
		k.accErr = fmt.Errorf("client: submit: %w", err)
	} else {
		k.accErr = fmt.Errorf("client: submit %s: %w", k.Key.Short(), err)
	}
	close(k.accepted)
	k.finishLocked(nil, k.accErr)
	if w := k.w; w != nil && !w.resolved && k.again {
		if c.err == nil {
			err = fmt.Errorf("client: workunit %s: the tracker no longer knew it, and refused it again: %w", k.Key.Short(), err)
		}
		c.resolveLocked(w, nil, err)
		return
	}
	if w := k.w; w != nil && !w.resolved {
		w.refs--
		if w.refs == 0 {
			if c.watches[w.key] == w {
				delete(c.watches, w.key)
			}
		} else if c.err == nil {
			c.sendLocked(c.watchMsgLocked([]workunit.Key{w.key}))
		}
	}
}

// finishLocked ends the Call (the first end wins) and queues its
// callbacks.
func (k *Call) finishLocked(out *workunit.Outcome, err error) {
	if k.finished {
		return
	}
	k.finished = true
	k.out, k.err = out, err
	close(k.done)
	for _, fn := range k.cbs {
		k.c.cb.push(func() { fn(out, err) })
	}
	k.cbs = nil
}

// onAcceptedLocked handles an Accepted: the submission is durable. A
// memoized (finished) outcome ends the Call and the key's watch at once.
func (c *Client) onAcceptedLocked(m *wire.Accepted) {
	r, ok := c.pending[m.Req]
	k, isCall := r.(*Call)
	if !ok || !isCall {
		return
	}
	delete(c.pending, m.Req)
	if m.Key != k.Key {
		c.log.Error("client: the tracker computed another key", "want", k.Key.String(), "got", m.Key.String())
	}
	out := outcomeOf(&m.Outcome)
	k.acc = out
	close(k.accepted)
	if k.w != nil && k.msg != nil {
		// The tracker took this spec: the one to send again should it
		// forget the key.
		k.w.spec = k.msg
	}
	if out.Finished() {
		if k.w != nil && k.w.minReq <= k.req {
			c.resolveLocked(k.w, out, errOf(out))
		}
		k.finishLocked(out, errOf(out))
	}
}

// Submit queues spec for the tracker and returns at once: submissions are
// pipelined, so that 10,000 Submits share a few frames and round trips.
// The Call's Accepted waits for the tracker's durable acknowledgement;
// Wait for the workunit to finish.
//
// The submission also watches the key, so that the result comes without
// another message. Submitting a key that is done answers from memory
// (Accepted carries the result); one that is waiting or running joins it;
// one in error runs it again (see docs/protocol.md, Memoization).
// With opts.NoCache, a spec without a Nonce is sent with a fresh one
// (spec itself is not changed): every such submission is a workunit of its
// own, with a key of its own, and runs, however many equal ones ran or run.
//
// A spec that is invalid or over the tracker's MaxSpecBytes gives a Call
// whose Accepted and Wait return the error.
func (c *Client) Submit(spec *workunit.Spec, opts workunit.Options) *Call {
	return c.submit(spec, opts, true)
}

// submit is Submit; unless watched, the tracker is not asked to report the
// outcome (Riot's client-add-workunit), and Wait asks for it then.
func (c *Client) submit(spec *workunit.Spec, opts workunit.Options, watched bool) *Call {
	return c.submitAs(spec, opts, watched, nil)
}

// SubmitChild submits spec as a child of the running workunit of lease
// parent, which this client (a worker) holds: the tracker runs it on
// behalf of the parent's submitter, with its memo scope, and refuses it
// (a *wire.Error of code wire.CodeForbidden) when this connection does
// not hold the lease. Otherwise it is Submit: the Call watches the key,
// and Wait returns its outcome. A worker's token may submit children, but
// not Submit.
func (c *Client) SubmitChild(parent wire.Lease, spec *workunit.Spec, opts workunit.Options) *Call {
	return c.submitAs(spec, opts, true, &parent)
}

// WaitChildren tells the tracker that the workunit of lease l waits for
// its children (waiting), or runs again: while it waits, its lease does
// not count in the worker's window, so that credit brings other work in
// its place. Sending it costs no round trip.
func (c *Client) WaitChildren(l wire.Lease, waiting bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.sendLocked(&wire.Wait{Key: l.Key, Token: l.Token, Waiting: waiting})
	}
}

func (c *Client) submitAs(spec *workunit.Spec, opts workunit.Options, watched bool, parent *wire.Lease) *Call {
	k := &Call{c: c, accepted: make(chan struct{}), done: make(chan struct{})}
	var data []byte
	err := errors.New("nil spec")
	if spec != nil {
		if opts.NoCache && len(spec.Nonce) == 0 {
			own := *spec
			own.Nonce = workunit.NewNonce()
			spec = &own
		}
		if err = spec.Validate(); err == nil {
			data, k.Key = spec.Encode()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.err != nil {
		err = c.err
	}
	if err == nil {
		if lim := c.welcome.Limits.WithDefaults().MaxSpecBytes; len(data) > lim {
			err = fmt.Errorf("%w: a spec of %d bytes, limit %d (put large values in blobs)", wire.ErrLimit, len(data), lim)
		}
	}
	if err != nil {
		k.fail(c, err)
		return k
	}
	k.req = c.nextReqLocked()
	if parent != nil {
		k.child = &wire.Child{Req: k.req, Parent: parent.Key, Token: parent.Token, Spec: data, Options: opts, Watch: watched}
	} else {
		k.msg = &wire.Submit{Req: k.req, Spec: data, Options: opts, Watch: watched}
	}
	c.pending[k.req] = k
	if watched {
		w := c.watches[k.Key]
		if w == nil {
			w = &watch{key: k.Key, done: make(chan struct{})}
			c.watches[k.Key] = w
		}
		// Only answers to this submission or later requests end the
		// watch: an older watch may report an earlier run's error.
		w.minReq = k.req
		w.refs++
		w.listeners = append(w.listeners, k.finishLocked)
		k.w = w
	}
	c.sendLocked(k.message())
	return k
}

// Accepted waits until the tracker has made the submission durable and
// returns the outcome it acknowledged: status waiting or running, or done
// with the result inline when the key's result was known. A Call made by
// Watch returns (nil, nil) at once. The error is the tracker's refusal (a
// *wire.Error: wire.IsCode tells why), ErrClosed, or ctx's.
func (k *Call) Accepted(ctx context.Context) (*workunit.Outcome, error) {
	select {
	case <-k.accepted:
		return k.acc, k.accErr
	case <-ctx.Done():
		return nil, fmt.Errorf("client: submit %s: %w", k.Key.Short(), ctx.Err())
	}
}

// Wait waits until the workunit is finished and returns its Outcome. When
// the workunit failed, the error is its *workunit.Error (the Outcome is
// returned too), whose message names the worker; use errors.As. Other
// errors mean the outcome is not known: the tracker refused the
// submission, the client ended, or ctx ended.
//
// A result that the worker sent as a blob (one larger than the tracker's
// MaxResultBytes) is fetched, and Wait returns it in place.
func (k *Call) Wait(ctx context.Context) (*workunit.Outcome, error) {
	out, err := k.wait(ctx)
	return k.c.resolve(ctx, out, err)
}

func (k *Call) wait(ctx context.Context) (*workunit.Outcome, error) {
	if k.w == nil {
		select {
		case <-k.done:
			return k.out, k.err
		default:
		}
		acc, err := k.Accepted(ctx)
		if err != nil {
			return nil, err
		}
		if acc != nil && acc.Finished() {
			return acc, errOf(acc)
		}
		return k.c.waitFor(ctx, k.Key)
	}
	select {
	case <-k.done:
		return k.out, k.err
	case <-ctx.Done():
		return nil, fmt.Errorf("client: wait for workunit %s: %w", k.Key.Short(), ctx.Err())
	}
}

// OnDone calls fn with what Wait would return once the workunit is
// finished (or the submission failed, or the client ended). fn runs on the
// client's callback goroutine, which runs callbacks one at a time in the
// order their outcomes arrived: it must not block for long, and may call
// the Client.
func (k *Call) OnDone(fn func(*workunit.Outcome, error)) {
	if k.w == nil { // Wait resolves a result sent as a blob
		go func() {
			out, err := k.Wait(context.Background())
			k.c.cb.push(func() { fn(out, err) })
		}()
		return
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	fn = k.c.resolving(fn)
	if k.finished {
		out, err := k.out, k.err
		k.c.cb.push(func() { fn(out, err) })
		return
	}
	k.cbs = append(k.cbs, fn)
}

// OnFinished calls fn once the workunit is finished, as OnDone does, but
// with the outcome as the tracker gave it: a result that the worker sent as
// a blob stays a blob reference (Outcome.Result is BlobRefDocument's
// document), not fetched. It is for callers that want to know that the
// workunit ended (its status, console, worker), not its value: fetching a
// large result for each of them would cost a copy of it each.
func (k *Call) OnFinished(fn func(*workunit.Outcome, error)) {
	if k.w == nil {
		go func() {
			out, err := k.wait(context.Background())
			k.c.cb.push(func() { fn(out, err) })
		}()
		return
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if k.finished {
		out, err := k.out, k.err
		k.c.cb.push(func() { fn(out, err) })
		return
	}
	k.cbs = append(k.cbs, fn)
}

// resolving returns fn, called with its outcome's result in place when
// the worker sent it as a blob (see resolve); the fetch runs on the
// callback goroutine.
func (c *Client) resolving(fn func(*workunit.Outcome, error)) func(*workunit.Outcome, error) {
	return func(out *workunit.Outcome, err error) {
		if out != nil && out.Status == workunit.StatusDone {
			if _, ok := blobRefOf(out.Result); ok {
				out, err = c.resolve(context.Background(), out, err)
			}
		}
		fn(out, err)
	}
}

// Watch returns a Call for a key submitted elsewhere (by another master,
// or an earlier run: results are durable): Wait and OnDone work as for a
// submitted workunit, and Accepted returns (nil, nil) at once. Waiting for
// a key the tracker does not know fails with a *wire.Error of code
// wire.CodeUnknownKey.
func (c *Client) Watch(key workunit.Key) *Call {
	k := &Call{Key: key, c: c, accepted: make(chan struct{}), done: make(chan struct{})}
	close(k.accepted)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		k.finishLocked(nil, c.err)
		return k
	}
	w := c.watchLocked(key)
	k.w = w
	w.listeners = append(w.listeners, k.finishLocked)
	return k
}

// WaitFor waits until the workunit key is finished and returns its
// Outcome, as Call.Wait does: a failed workunit gives its Outcome and its
// *workunit.Error. Any number of goroutines may wait for one key; the
// tracker is asked once. Riot's wait-until-done on a workunit id.
func (c *Client) WaitFor(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	out, err := c.waitFor(ctx, key)
	return c.resolve(ctx, out, err)
}

func (c *Client) waitFor(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	w := c.watchLocked(key)
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.out, w.err
	case <-ctx.Done():
		c.mu.Lock()
		c.releaseLocked(w)
		c.mu.Unlock()
		return nil, fmt.Errorf("client: wait for workunit %s: %w", key.Short(), ctx.Err())
	}
}

// CallWhenDone calls fn once the workunit key is finished, with what
// WaitFor would return, on the client's callback goroutine (see
// Call.OnDone). Riot's call-when-done: fn gets the error (a
// *workunit.Error naming the worker), the worker's name (Outcome.Worker)
// and the result (Outcome.Value). When the client ends first, fn gets a
// nil Outcome and the client's error.
func (c *Client) CallWhenDone(key workunit.Key, fn func(*workunit.Outcome, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		err := c.err
		c.cb.push(func() { fn(nil, err) })
		return
	}
	w := c.watchLocked(key)
	fn = c.resolving(fn)
	w.listeners = append(w.listeners, func(out *workunit.Outcome, err error) {
		c.cb.push(func() { fn(out, err) })
	})
}

// Info returns the workunit's current state at once, without waiting for
// it to finish (Riot's client-workunit-info: status, worker, result, last
// change). A key the tracker does not know has status workunit.StatusUnknown.
// A failed workunit's error is in Outcome.Err; the error returned is about
// the request only.
func (c *Client) Info(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	out, err := c.info(ctx, key, "info "+key.Short())
	return c.resolve(ctx, out, err)
}

// info asks for key's info; op names the call in errors.
func (c *Client) info(ctx context.Context, key workunit.Key, op string) (*workunit.Outcome, error) {
	v, err := c.call(ctx, op, &wire.Info{Key: key})
	if err != nil {
		return nil, err
	}
	return v.(*workunit.Outcome), nil
}

// Sync is a round trip to the tracker: it returns once the tracker has
// handled every message this client sent before the call, and the client
// has received every message the tracker sent before it answered (the
// tracker answers in order). A worker that stops uses it to receive the
// assignments already on their way, so that it can return them.
func (c *Client) Sync(ctx context.Context) error {
	_, err := c.info(ctx, workunit.Key{}, "sync")
	return err
}

// Cancel asks the tracker to cancel workunits, and returns the keys it
// canceled. Each key that is waiting or running, and was submitted by
// this client (its credentials and its Session), fails with a
// *workunit.Error of kind
// workunit.Canceled ("canceled by NAME"): those waiting for it get that
// error, and a worker running it is told to stop. Keys that are done, in
// error or unknown are left as they are. Of another master's keys, this
// client stops waiting for those it watches (its waits end with an
// AbortError), and the tracker cancels each that no other master still
// waits for (listed in the answer); the others are left. Submitting a
// canceled key again runs it again. The tracker answers once the
// cancellations are durable; Cancel waits for that, or for ctx.
func (c *Client) Cancel(ctx context.Context, keys ...workunit.Key) ([]workunit.Key, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var canceled []workunit.Key
	for len(keys) > 0 {
		n := min(len(keys), maxWatchKeys)
		got, err := c.cancel(ctx, keys[:n])
		canceled = append(canceled, got...)
		if err != nil {
			return canceled, err
		}
		keys = keys[n:]
	}
	return canceled, nil
}

func (c *Client) cancel(ctx context.Context, keys []workunit.Key) ([]workunit.Key, error) {
	v, err := c.call(ctx, "cancel", &wire.Cancel{Keys: append([]workunit.Key(nil), keys...)})
	if err != nil {
		return nil, err
	}
	return v.([]workunit.Key), nil
}
