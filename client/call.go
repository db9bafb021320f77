package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/blob"
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
	var out *workunit.Outcome
	if n := len(o.Result); n > 0 && n <= smallResult {
		// Most results are a few bytes (a number, a short string): they
		// share the Outcome's allocation.
		s := &smallOutcome{Outcome: *o}
		s.Result = append(s.buf[:0:n], o.Result...)
		out = &s.Outcome
	} else {
		out = new(workunit.Outcome)
		*out = *o
		out.Result = bytes.Clone(o.Result)
	}
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
	return out
}

// smallResult is the largest result that outcomeOf keeps in the
// Outcome's own allocation.
const smallResult = 16

// smallOutcome is an Outcome with room for a small result.
type smallOutcome struct {
	workunit.Outcome
	buf [smallResult]byte
}

// Call is a submitted workunit: Submit returns it at once, before the
// tracker has answered. Its methods are safe for concurrent use.
type Call struct {
	// Key is the workunit's key, computed locally (the tracker computes
	// the same from the spec).
	Key workunit.Key

	// A master may hold millions of Calls at once: each field here costs
	// that many times its size, so what only some Calls need is in x.

	c   *Client
	req uint64
	// spec is the submission's encoded spec (nil for Watch's Calls),
	// kept for the life of the Call: it goes out again after a reconnect
	// until the tracker accepts it, and after that when the tracker
	// answers that it no longer knows the key (resubmitLocked). With
	// Options.DropAcceptedSpecs it is dropped once the tracker accepts
	// it (dropSpecLocked).
	spec []byte
	// out is how the Call ended, with x.err when not with an outcome.
	out *workunit.Outcome
	// x holds what some Calls need: set once, never replaced.
	x *callExtra
	// accAt is the accepted outcome's LastChange, in Unix milliseconds (0:
	// none); its status is in st.
	accAt int64
	// st holds the stage the Call has reached and its flags (st*). Bits
	// are set with c.mu held, after the fields they make readable; the
	// methods that do not block read them without the lock.
	st atomic.Uint32
	// As a watch (w == the Call itself): its references (listeners and
	// waiters), and the oldest request whose answer may end it.
	refs   int32
	minReq uint64
}

// Bits of Call.st.
const (
	// stAccepted: the tracker accepted the submission (or the Call is
	// Watch's); Accepted returns the outcome that the bits below and
	// accAt or x.acc describe.
	stAccepted uint32 = 1 << iota
	// stNoAcc: Accepted returns (nil, nil): a Call of Watch's.
	stNoAcc
	// stAccOut: the accepted outcome is out (the result was known).
	stAccOut
	// stAccFull: the accepted outcome is x.acc.
	stAccFull
	// stMemo: the tracker answered the submission with the key's result.
	stMemo
	// stRefused: the submission failed; x.accErr says why.
	stRefused
	// stFinished: the Call ended: out, or x.err.
	stFinished
	// stResolved: the Call's watch ended (see resolution).
	stResolved
	// stOwnSpec: the tracker accepted this Call, which holds its key's
	// watch: its spec is the one to send again (setSpecLocked).
	stOwnSpec
	// stAgain: made by resubmitLocked.
	stAgain
	// stSubmitExtra: x, made with the Call, holds its options or its
	// parent; the writer reads them.
	stSubmitExtra
	// stWatches: the Call ends with its key's watch (see watch); not set
	// for a submission that does not watch (AddWorkunit).
	stWatches
	// stOwnWatch: the Call holds its key's watch itself (it made it); x.of
	// names the watch otherwise.
	stOwnWatch
	// stQueued: the Call is in the writer's queue or its batch, which
	// reads its spec without the lock (set with Options.DropAcceptedSpecs
	// only).
	stQueued
	// stDropSpec: the tracker accepted the Call while stQueued: the writer
	// drops its spec when done with it.
	stDropSpec

	// The accepted outcome's status takes the bits from stStatusShift.
	stStatusShift = 16
)

// callExtra is what some Calls need beyond their fields.
type callExtra struct {
	// err is how the Call ended when not with an outcome; accErr why its
	// submission failed.
	err, accErr error
	// sig, when set, is closed at the Call's next change (accepted,
	// finished, its watch resolved): blocking methods wait on it.
	sig chan struct{}
	// cbs are OnDone's and OnFinished's callbacks.
	cbs []func(*workunit.Outcome, error)
	// opts are the submission's options when not the zero ones; parent
	// the running workunit whose child it is (SubmitChild).
	opts   *workunit.Options
	parent *wire.Lease
	// of is the Call holding the watch this Call ends with, when not the
	// Call itself.
	of *Call
	// acc is the accepted outcome when it says more than its status and
	// its last change (the workunit's worker, say).
	acc *workunit.Outcome
	// watch is what the Call's watch needs beyond its fields.
	watch *watchExtra
	// reup uploads again the blobs the spec names, given (SubmitBlobs,
	// SubmitUploading), should the tracker answer that it does not hold
	// one (wire.CodeUnknownBlob); reups counts the times it did.
	reup  func(context.Context, []blob.Hash) error
	reups int
}

// watch returns the Call whose watch this Call ends with (itself when it
// made the key's watch); nil when the Call does not watch (AddWorkunit).
// It does not change once the Call is made.
func (k *Call) watch() *Call {
	st := k.st.Load()
	switch {
	case st&stOwnWatch != 0:
		return k
	case st&stWatches != 0:
		return k.x.of
	}
	return nil
}

// setWatchLocked makes k end with w's watch; k is being made.
func (k *Call) setWatchLocked(w *Call) {
	if w == k {
		k.st.Or(stWatches | stOwnWatch)
		return
	}
	k.extra().of = w
	k.st.Or(stWatches)
}

// has reports whether every bit of b is set in k.st.
func (k *Call) has(b uint32) bool { return k.st.Load()&b == b }

// extra returns k's callExtra, making it; c.mu is held.
func (k *Call) extra() *callExtra {
	if k.x == nil {
		k.x = new(callExtra)
	}
	return k.x
}

// sigLocked returns a channel closed at k's next change.
func (k *Call) sigLocked() <-chan struct{} {
	x := k.extra()
	if x.sig == nil {
		x.sig = make(chan struct{})
	}
	return x.sig
}

// notifyLocked wakes the goroutines waiting for k to change.
func (k *Call) notifyLocked() {
	if k.x != nil && k.x.sig != nil {
		close(k.x.sig)
		k.x.sig = nil
	}
}

// endErr returns the error the Call ended with; k is finished.
func (k *Call) endErr() error {
	if k.out != nil {
		return errOf(k.out)
	}
	if k.x != nil {
		return k.x.err
	}
	return nil
}

// ended returns how the Call ended, and whether it has.
func (k *Call) ended() (*workunit.Outcome, error, bool) {
	if k.st.Load()&stFinished == 0 {
		return nil, nil, false
	}
	return k.out, k.endErr(), true
}

// acceptance returns what Accepted returns, and whether the tracker has
// answered the submission.
func (k *Call) acceptance() (*workunit.Outcome, error, bool) {
	st := k.st.Load()
	switch {
	case st&stRefused != 0:
		return nil, k.x.accErr, true
	case st&stAccepted == 0:
		return nil, nil, false
	case st&stNoAcc != 0:
		return nil, nil, true
	case st&stAccOut != 0:
		return k.out, nil, true
	case st&stAccFull != 0:
		acc := *k.x.acc
		return &acc, nil, true
	}
	acc := &workunit.Outcome{Key: k.Key, Status: workunit.Status(st >> stStatusShift)}
	if k.accAt != 0 {
		acc.LastChange = time.UnixMilli(k.accAt).UTC()
	}
	return acc, nil, true
}

// Finished reports whether the Call has ended: Wait returns without
// waiting for the tracker (it may still fetch a result sent as a blob).
func (k *Call) Finished() bool { return k.has(stFinished) }

// FromMemory reports whether the tracker answered the submission with the
// key's result (a memoized workunit: nothing ran for it). It is false
// until the tracker has accepted the submission.
func (k *Call) FromMemory() bool { return k.has(stMemo) }

// fail ends the submission with err (the tracker refused it, or the client
// ended). A watch it carried is sent again for others waiting on the key;
// a resubmission's watch ends with err.
func (k *Call) fail(c *Client, err error) {
	var accErr error
	if k.Key == (workunit.Key{}) { // a spec that has no key: nil or invalid
		accErr = fmt.Errorf("client: submit: %w", err)
	} else {
		accErr = fmt.Errorf("client: submit %s: %w", k.Key.Short(), err)
	}
	k.extra().accErr = accErr
	k.st.Or(stRefused)
	k.finishLocked(nil, accErr)
	k.notifyLocked()
	w := k.watch()
	if w == nil || w.has(stResolved) {
		return
	}
	if k.has(stAgain) {
		if c.err == nil {
			err = fmt.Errorf("client: workunit %s: the tracker no longer knew it, and refused it again: %w", k.Key.Short(), err)
		}
		c.resolveLocked(w, nil, err)
		return
	}
	w.refs--
	if w.refs == 0 {
		c.dropWatchLocked(w)
	} else if c.err == nil {
		c.sendLocked(c.watchMsgLocked([]workunit.Key{w.Key}))
	}
}

// finishLocked ends the Call (the first end wins), wakes its waiters and
// queues its callbacks. err is errOf(out) when out is not nil.
func (k *Call) finishLocked(out *workunit.Outcome, err error) {
	if k.has(stFinished) {
		return
	}
	k.out = out
	if out == nil {
		k.extra().err = err
	}
	k.st.Or(stFinished)
	x := k.x
	if x == nil {
		return
	}
	k.notifyLocked()
	for _, fn := range x.cbs {
		k.c.cb.push(func() { fn(out, err) })
	}
	x.cbs = nil
}

// onAcceptedLocked handles an Accepted: the submission is durable. A
// memoized (finished) outcome ends the Call and the key's watch at once.
func (c *Client) onAcceptedLocked(m *wire.Accepted) {
	r, ok := c.pending.get(m.Req)
	k, isCall := r.(*Call)
	if !ok || !isCall {
		return
	}
	c.pending.delete(m.Req)
	if m.Key != k.Key {
		c.log.Error("client: the tracker computed another key", "want", k.Key.String(), "got", m.Key.String())
	}
	w := k.watch()
	if c.opts.DropAcceptedSpecs {
		// Nothing will send it again (see Options.DropAcceptedSpecs).
		c.dropSpecLocked(k)
	} else if w != nil && (k.x == nil || k.x.parent == nil) {
		// The tracker took this spec: the one to send again should it
		// forget the key (not a child's: its parent's lease is gone by
		// then).
		w.setSpecLocked(k)
	}
	o := &m.Outcome
	st := stAccepted | uint32(o.Status)<<stStatusShift
	if o.Finished() {
		out := outcomeOf(o)
		if w != nil && w.minReq <= k.req {
			c.resolveLocked(w, out, errOf(out))
		}
		k.finishLocked(out, errOf(out))
		if k.out == out {
			st |= stAccOut
		} else { // the Call had ended before (its watch did)
			k.extra().acc = out
			st |= stAccFull
		}
		if out.Status == workunit.StatusDone {
			st |= stMemo
		}
		k.st.Or(st)
		k.notifyLocked()
		return
	}
	if o.Worker != "" || o.Result != nil || o.Err != nil || len(o.Console) > 0 || o.Elapsed != 0 {
		k.extra().acc = outcomeOf(o)
		st |= stAccFull
	} else if !o.LastChange.IsZero() {
		k.accAt = o.LastChange.UnixMilli()
	}
	k.st.Or(st)
	k.notifyLocked()
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
	return c.submitAs(spec, opts, watched, nil, nil)
}

// SubmitChild submits spec as a child of the running workunit of lease
// parent, which this client (a worker) holds: the tracker runs it on
// behalf of the parent's submitter, with its memo scope, and refuses it
// (a *wire.Error of code wire.CodeForbidden) when this connection does
// not hold the lease. Otherwise it is Submit: the Call watches the key,
// and Wait returns its outcome. A worker's token may submit children, but
// not Submit.
func (c *Client) SubmitChild(parent wire.Lease, spec *workunit.Spec, opts workunit.Options) *Call {
	return c.submitAs(spec, opts, true, &parent, nil)
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

var errNilSpec = errors.New("nil spec")

// zeroOptions reports whether o are the default options.
func zeroOptions(o *workunit.Options) bool {
	return !o.NoCache && o.GPUs == 0 && o.Timeout == 0 && o.Retries == 0 && len(o.RetryOn) == 0
}

func (c *Client) submitAs(spec *workunit.Spec, opts workunit.Options, watched bool, parent *wire.Lease, reup func(context.Context, []blob.Hash) error) *Call {
	k := &Call{c: c}
	var data []byte
	err := errNilSpec
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
	k.spec = data
	if parent != nil || !zeroOptions(&opts) {
		x := k.extra()
		if !zeroOptions(&opts) {
			own := opts
			x.opts = &own
		}
		x.parent = parent
		k.st.Store(stSubmitExtra)
	}
	if reup != nil {
		k.extra().reup = reup
	}
	c.pending.put(k.req, k)
	if watched {
		w := c.addWatchLocked(k)
		if w != k {
			x := w.watchExtra()
			x.listeners = append(x.listeners, listener{call: k})
		}
		// Only answers to this submission or later requests end the
		// watch: an older watch may report an earlier run's error.
		w.minReq = k.req
		w.refs++
		k.setWatchLocked(w)
	}
	c.sendCallLocked(k)
	return k
}

// submission fills sub or child (by the Call's kind) with k's message and
// returns it. k's fields that it reads do not change once k is queued (a
// spec dropped once accepted is dropped when the writer is done with it:
// dropSpecLocked).
func (k *Call) submission(sub *wire.Submit, child *wire.Child) wire.Msg {
	spec := k.spec
	var opts workunit.Options
	var parent *wire.Lease
	if k.has(stSubmitExtra) {
		if k.x.opts != nil {
			opts = *k.x.opts
		}
		parent = k.x.parent
	}
	if parent != nil {
		*child = wire.Child{Req: k.req, Parent: parent.Key, Token: parent.Token, Spec: spec, Options: opts, Watch: k.has(stWatches)}
		return child
	}
	*sub = wire.Submit{Req: k.req, Spec: spec, Options: opts, Watch: k.has(stWatches)}
	return sub
}

// Accepted waits until the tracker has made the submission durable and
// returns the outcome it acknowledged: status waiting or running, or done
// with the result inline when the key's result was known. A Call made by
// Watch returns (nil, nil) at once. The error is the tracker's refusal (a
// *wire.Error: wire.IsCode tells why), ErrClosed, or ctx's.
func (k *Call) Accepted(ctx context.Context) (*workunit.Outcome, error) {
	for {
		if acc, err, ok := k.acceptance(); ok {
			return acc, err
		}
		k.c.mu.Lock()
		if k.st.Load()&(stAccepted|stRefused) != 0 {
			k.c.mu.Unlock()
			continue
		}
		sig := k.sigLocked()
		k.c.mu.Unlock()
		select {
		case <-sig:
		case <-ctx.Done():
			return nil, fmt.Errorf("client: submit %s: %w", k.Key.Short(), ctx.Err())
		}
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
	if !k.has(stWatches) {
		if out, err, ok := k.ended(); ok {
			return out, err
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
	for {
		if out, err, ok := k.ended(); ok {
			return out, err
		}
		k.c.mu.Lock()
		if k.has(stFinished) {
			k.c.mu.Unlock()
			continue
		}
		sig := k.sigLocked()
		k.c.mu.Unlock()
		select {
		case <-sig:
		case <-ctx.Done():
			return nil, fmt.Errorf("client: wait for workunit %s: %w", k.Key.Short(), ctx.Err())
		}
	}
}

// OnDone calls fn with what Wait would return once the workunit is
// finished (or the submission failed, or the client ended). fn runs on the
// client's callback goroutine, which runs callbacks one at a time in the
// order their outcomes arrived: it must not block for long, and may call
// the Client.
func (k *Call) OnDone(fn func(*workunit.Outcome, error)) {
	if !k.has(stWatches) { // Wait resolves a result sent as a blob
		go func() {
			out, err := k.Wait(context.Background())
			k.c.cb.push(func() { fn(out, err) })
		}()
		return
	}
	k.onEnd(k.c.resolving(fn))
}

// OnFinished calls fn once the workunit is finished, as OnDone does, but
// with the outcome as the tracker gave it: a result that the worker sent as
// a blob stays a blob reference (Outcome.Result is BlobRefDocument's
// document), not fetched. It is for callers that want to know that the
// workunit ended (its status, console, worker), not its value: fetching a
// large result for each of them would cost a copy of it each.
func (k *Call) OnFinished(fn func(*workunit.Outcome, error)) {
	if !k.has(stWatches) {
		go func() {
			out, err := k.wait(context.Background())
			k.c.cb.push(func() { fn(out, err) })
		}()
		return
	}
	k.onEnd(fn)
}

// onEnd queues fn for the callback goroutine once the Call has ended.
func (k *Call) onEnd(fn func(*workunit.Outcome, error)) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if out, err, ok := k.ended(); ok {
		k.c.cb.push(func() { fn(out, err) })
		return
	}
	x := k.extra()
	x.cbs = append(x.cbs, fn)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		k := &Call{Key: key, c: c}
		k.st.Store(stAccepted | stNoAcc)
		k.finishLocked(nil, c.err)
		return k
	}
	w := c.watchOfLocked(key)
	if w == nil {
		return c.watchLocked(key) // the watch's own Call
	}
	k := &Call{Key: key, c: c}
	k.st.Store(stAccepted | stNoAcc)
	k.setWatchLocked(w)
	w.refs++
	x := w.watchExtra()
	x.listeners = append(x.listeners, listener{call: k})
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
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	w := c.watchLocked(key)
	for !w.has(stResolved) {
		sig := w.sigLocked()
		c.mu.Unlock()
		select {
		case <-sig:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			c.releaseLocked(w)
			return nil, fmt.Errorf("client: wait for workunit %s: %w", key.Short(), ctx.Err())
		}
	}
	return w.resolution()
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
	x := w.watchExtra()
	x.listeners = append(x.listeners, listener{fn: func(out *workunit.Outcome, err error) {
		c.cb.push(func() { fn(out, err) })
	}})
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
