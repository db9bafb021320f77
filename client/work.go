package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Assignment is a lease on a workunit that the tracker gave this client
// (a wire.Assign): run it, then answer with Done or Failed (or Return it)
// with its Lease.
type Assignment struct {
	Key workunit.Key
	// Token names the lease; Done, Failed and Return carry it.
	Token uint64
	// Spec is the workunit as the master submitted it (Decode it with
	// Assignment.Decode).
	Spec []byte
	// Realm groups workunits that may share a JavaScript realm.
	Realm string
	// Timeout is the workunit's time limit; 0 for the worker's default.
	Timeout time.Duration
	// GPUs is how many of the worker's GPU devices it gets.
	GPUs int

	revoked atomic.Bool
}

// Revoked reports whether the tracker has revoked the assignment: its
// master canceled the workunit, or the connection it came on was lost
// (the tracker took it back and gave it to another worker). Do not start it; stop it if it runs; and
// answer it (Failed, kind workunit.Canceled) at once, which frees its
// place in the worker's window (the tracker discards the answer). See
// Options.OnRevoke. It is safe for concurrent use.
func (a *Assignment) Revoked() bool { return a.revoked.Load() }

// Lease returns the assignment's key and token.
func (a *Assignment) Lease() wire.Lease { return wire.Lease{Key: a.Key, Token: a.Token} }

// Decode returns the workunit's spec.
func (a *Assignment) Decode() (*workunit.Spec, error) {
	var s workunit.Spec
	if err := s.UnmarshalBinary(a.Spec); err != nil {
		return nil, err
	}
	return &s, nil
}

// Credit lets the tracker assign n more workunits to this client (a
// worker grants slots+prefetch at the start, then one per result). The
// client remembers the credit not yet used and grants it again on each
// new connection. Credit does not block.
func (c *Client) Credit(n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.credit += n
	c.sendLocked(&wire.Credit{N: n})
}

// SendStats tells the tracker how this worker is doing: its heap in use
// and how many workunits it runs now (wire.Stats), for status pages. It
// does not block; a stats message not sent when the connection drops is
// not sent again.
func (c *Client) SendStats(heap uint64, running int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.sendLocked(&wire.Stats{Heap: heap, Running: running})
}

// Print streams console lines of a workunit while it runs (wire.Print)
// for lease l: the tracker passes them on to the masters that watch it.
// A worker that streams lines leaves them out of the lease's Report's
// console. It does not block; lines not sent when the connection drops
// are not sent again.
func (c *Client) Print(l wire.Lease, lines []wire.Line) {
	if len(lines) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.sendLocked(&wire.Print{Key: l.Key, Token: l.Token, Lines: lines})
}

// AwaitPrints waits until the Options.OnPrint callbacks of the lines
// received so far have run, or ctx ends; at once when none are waiting.
// A master that took an outcome with Wait calls it before it shows the
// outcome's console, so that the lines that streamed show first. It must
// not be called from a callback of the Client's.
func (c *Client) AwaitPrints(ctx context.Context) error {
	if c.printsQueued.Load() == 0 {
		return nil
	}
	done := make(chan struct{})
	c.cb.push(func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client: wait for console lines: %w", ctx.Err())
	}
}

// signalAssign wakes a goroutine waiting in NextAssignment.
func (c *Client) signalAssign() {
	select {
	case c.assignSig <- struct{}{}:
	default:
	}
}

// NextAssignment returns the next workunit the tracker assigned, waiting
// for one until ctx ends. Assignments come only for credit (Credit).
func (c *Client) NextAssignment(ctx context.Context) (*Assignment, error) {
	for {
		c.mu.Lock()
		if len(c.assigns) > 0 {
			a := c.assigns[0]
			c.assigns[0] = nil
			c.assigns = c.assigns[1:]
			if len(c.assigns) > 0 {
				c.signalAssign()
			}
			c.mu.Unlock()
			return a, nil
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return nil, err
		}
		c.mu.Unlock()
		select {
		case <-c.assignSig:
		case <-c.ended:
		case <-ctx.Done():
			return nil, fmt.Errorf("client: wait for work: %w", ctx.Err())
		}
	}
}

// TakeQueued returns the assignments received and not yet taken by
// NextAssignment, and removes them: a worker that stops returns them.
func (c *Client) TakeQueued() []*Assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.assigns
	c.assigns = nil
	return q
}

// Report is a workunit's end as a worker reports it: a result (Done) or
// an error (Failed), with the credit to grant with it.
type Report struct {
	Lease wire.Lease
	// Result is the value document of a workunit that succeeded; Error
	// the error of one that failed (exactly one of them is set).
	Result []byte
	Error  *workunit.Error
	// Console and Elapsed are the run's console output and duration.
	Console workunit.Console
	Elapsed time.Duration
	// Credit is granted in the same frame (see Credit); 0 for none.
	Credit int
}

// Report sends r as a Done or a Failed, and its credit, in the same frame.
// It does not block. A result over the tracker's MaxResultBytes is refused
// with an error wrapping wire.ErrLimit (and nothing is sent): report a
// workunit.ResultLimit error instead. A thrown value over that limit is
// dropped from the error, and its message says so. A report that still
// cannot be sent (with its console, larger than a frame) fails the
// workunit with a workunit.ResultLimit error that says why, sent in its
// place. Reports of leases from an earlier connection may be sent: the
// tracker discards those it no longer holds.
func (c *Client) Report(r Report) error {
	if (r.Error == nil) == (r.Result == nil) {
		return fmt.Errorf("client: report of workunit %s: want a result or an error", r.Lease.Key.Short())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	lim := c.welcome.Limits.WithDefaults().MaxResultBytes
	var m wire.Msg
	if r.Error != nil {
		werr := r.Error
		if len(werr.Value) > lim {
			cp := *werr
			cp.Value = nil
			cp.Message += fmt.Sprintf(" (the thrown value is not sent: its encoding of %d bytes is over the tracker's limit of %d)",
				len(werr.Value), lim)
			werr = &cp
		}
		m = &wire.Failed{Key: r.Lease.Key, Token: r.Lease.Token, Error: werr, Console: r.Console, Elapsed: r.Elapsed}
	} else {
		if len(r.Result) > lim {
			return fmt.Errorf("client: result of workunit %s: %w: %d bytes, limit %d",
				r.Lease.Key.Short(), wire.ErrLimit, len(r.Result), lim)
		}
		if len(r.Result) == 0 {
			return fmt.Errorf("client: result of workunit %s: empty (a value document has at least one byte)", r.Lease.Key.Short())
		}
		m = &wire.Done{Key: r.Lease.Key, Token: r.Lease.Token, Result: r.Result, Console: r.Console, Elapsed: r.Elapsed}
	}
	delete(c.live, r.Lease.Token)
	c.sendLocked(m)
	if r.Credit > 0 {
		c.credit += r.Credit
		c.sendLocked(&wire.Credit{N: r.Credit})
	}
	return nil
}

// Done reports a workunit's result (a value document, see package value)
// for lease l, with its console output and run time: Report without
// credit.
func (c *Client) Done(l wire.Lease, result []byte, console workunit.Console, elapsed time.Duration) error {
	if result == nil {
		result = []byte{}
	}
	return c.Report(Report{Lease: l, Result: result, Console: console, Elapsed: elapsed})
}

// Failed reports a workunit's error for lease l (the tracker fills in its
// Worker and Key): Report without credit.
func (c *Client) Failed(l wire.Lease, werr *workunit.Error, console workunit.Console, elapsed time.Duration) error {
	if werr == nil {
		return errors.New("client: failed: nil error")
	}
	return c.Report(Report{Lease: l, Error: werr, Console: console, Elapsed: elapsed})
}

// Return hands leases back unfinished, as a worker that stops does: the
// tracker gives them to other workers at once. It does not block.
func (c *Client) Return(leases ...wire.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	for _, l := range leases {
		delete(c.live, l.Token)
	}
	for len(leases) > 0 {
		n := min(len(leases), maxWatchKeys)
		c.sendLocked(&wire.Return{Leases: append([]wire.Lease(nil), leases[:n]...)})
		leases = leases[n:]
	}
	return nil
}

// WaitForWork is Riot's client-wait-for-work: it takes one workunit from
// the tracker itself, granting credit 1 when it holds neither a queued
// assignment nor unused credit, and waits for the assignment. Answer it
// with CompleteWorkunit (or Done, Failed, Return). The tracker assigns
// work only to clients whose Hello offered room: dial with Options.Slots
// 1 to take work from a master's client.
func (c *Client) WaitForWork(ctx context.Context) (*Assignment, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if c.opts.Slots+c.opts.Prefetch == 0 {
		return nil, errors.New("client: wait for work: this client offered no room for work in its hello (dial with Options.Slots 1)")
	}
	c.mu.Lock()
	if len(c.assigns) == 0 && c.credit == 0 && c.err == nil {
		c.credit++
		c.sendLocked(&wire.Credit{N: 1})
	}
	c.mu.Unlock()
	return c.NextAssignment(ctx)
}

// CompleteWorkunit is Riot's client-complete-workunit!: it finishes the
// assignment a with result (a Go value, see value.Marshal) when werr is
// nil, or fails it with werr (a *workunit.Error is sent as it is; any
// other error as a thrown Error with its message).
func (c *Client) CompleteWorkunit(a *Assignment, result any, werr error) error {
	if a == nil {
		return errors.New("client: complete workunit: nil assignment")
	}
	if werr != nil {
		e := wire.WorkError(werr)
		if e.Kind == workunit.Internal && !errors.As(werr, new(*workunit.Error)) {
			e.Kind = workunit.Thrown
		}
		return c.Failed(a.Lease(), e, nil, 0)
	}
	data, err := value.Marshal(result)
	if err != nil {
		return fmt.Errorf("client: result of workunit %s: %w", a.Key.Short(), err)
	}
	return c.Done(a.Lease(), data, nil, 0)
}

// maxInsteadText bounds the texts of a report's error that failedInstead
// keeps.
const maxInsteadText = 1 << 10

// failedInstead returns the Failed to send in place of a report (Done or
// Failed) that cannot be sent, because err (a frame over the tracker's
// limits, with its console and its result or error): it fails the
// workunit with a workunit.ResultLimit error that says why, and keeps the
// start of the error it replaces. It returns nil for other messages.
func failedInstead(m wire.Msg, err error) *wire.Failed {
	var (
		key     workunit.Key
		token   uint64
		elapsed time.Duration
		what    string
		was     *workunit.Error
	)
	switch m := m.(type) {
	case *wire.Done:
		key, token, elapsed, what = m.Key, m.Token, m.Elapsed, "result"
	case *wire.Failed:
		key, token, elapsed, what, was = m.Key, m.Token, m.Elapsed, "error", m.Error
	default:
		return nil
	}
	msg := fmt.Sprintf("the worker could not send the workunit's %s with its console output: %v (riotd --max-frame-bytes)", what, err)
	if was != nil {
		msg += "; its error was " + cutString(was.Error(), maxInsteadText)
	}
	return &wire.Failed{Key: key, Token: token, Elapsed: elapsed,
		Error: &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError", Message: msg}}
}

// cutString cuts s to at most n bytes, at a character's boundary, and
// says how much it cut.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("... [%d more bytes cut]", len(s)-i)
}
