package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// This file holds Riot's forms under their Go names (docs/client.md):
// the low-level client API of the seed's section 4, and the master's
// do-work forms of section 3.

// Connect is Riot's connect-to-riot-server! and connect-to-tracker: the
// same as Dial.
func Connect(ctx context.Context, addr string, opts Options) (*Client, error) {
	return Dial(ctx, addr, opts)
}

// WorkunitInfo is Riot's client-workunit-info: the workunit's status,
// worker, result and last change (Outcome.Status, Worker, Result or Err,
// LastChange), now. The same as Info.
func (c *Client) WorkunitInfo(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	return c.Info(ctx, key)
}

// CallWithWorkunitInfo is Riot's client-call-with-workunit-info: it gets
// the workunit's info and calls fn with it, on the caller's goroutine.
func (c *Client) CallWithWorkunitInfo(ctx context.Context, key workunit.Key, fn func(*workunit.Outcome)) error {
	out, err := c.Info(ctx, key)
	if err != nil {
		return err
	}
	fn(out)
	return nil
}

// AddWorkunit is Riot's client-add-workunit: it submits spec, waits until
// the tracker has made it durable, and returns its key (the workunit id).
// It does not watch the key: wait for it with WaitForFinishedWorkunit or
// WaitFor. To add many, use Submit, which does not wait for each.
func (c *Client) AddWorkunit(ctx context.Context, spec *workunit.Spec) (workunit.Key, error) {
	k := c.submit(spec, workunit.Options{}, false)
	if _, err := k.Accepted(ctx); err != nil {
		return k.Key, err
	}
	return k.Key, nil
}

// CallWithNewWorkunit is Riot's client-call-with-new-workunit: it adds the
// workunit (AddWorkunit) and calls fn with its key.
func (c *Client) CallWithNewWorkunit(ctx context.Context, spec *workunit.Spec, fn func(workunit.Key)) error {
	key, err := c.AddWorkunit(ctx, spec)
	if err != nil {
		return err
	}
	fn(key)
	return nil
}

// WaitForFinishedWorkunit is Riot's client-wait-for-finished-workunit: it
// waits until the workunit is finished and returns its Outcome (key,
// status, worker, result or error). Unlike WaitFor, a failed workunit is
// not an error here: its error is in Outcome.Err. The error is about the
// wait only (ctx, the client ending, an unknown key).
func (c *Client) WaitForFinishedWorkunit(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	out, err := c.WaitFor(ctx, key)
	if out != nil {
		return out, nil
	}
	return nil, err
}

// CallWithFinishedWorkunit is Riot's client-call-with-finished-workunit:
// it waits as WaitForFinishedWorkunit does and calls fn with the Outcome
// on the caller's goroutine.
func (c *Client) CallWithFinishedWorkunit(ctx context.Context, key workunit.Key, fn func(*workunit.Outcome)) error {
	out, err := c.WaitForFinishedWorkunit(ctx, key)
	if err != nil {
		return err
	}
	fn(out)
	return nil
}

// DoWorkEval is Riot's do-work/eval: it submits source as an eval
// workunit (its last expression's value is the result), watching it, and
// returns at once. WaitUntilDone or the Call's Wait gives the result. The
// workunit's stack traces name its source "eval".
func (c *Client) DoWorkEval(source string) *Call {
	return c.Submit(&workunit.Spec{Kind: workunit.Eval, Source: source, Name: "eval"}, workunit.Options{})
}

// DoWork is Riot's do-work: it submits a call of fn (a function given by
// its source and its free variables, see value.Function) with args,
// watching it, and returns at once. An argument or captured value that
// cannot travel is an error that names its path.
func (c *Client) DoWork(fn *value.Function, args ...any) (*Call, error) {
	if fn == nil {
		return nil, fmt.Errorf("client: do-work: nil function")
	}
	// The payload is encoded into a buffer of the client's, which
	// spec.Encode copies: no allocation, and no growing, per call.
	buf := c.scratch.get()
	defer c.scratch.put(buf)
	all := append(buf.args[:0], fn)
	all = append(all, args...)
	payload, err := value.Encoder{Root: "args"}.AppendEncodeArray(buf.b[:0], all)
	clear(all)
	buf.b, buf.args = payload[:0], all[:0]
	if err != nil {
		// The payload is [fn, args...]: name the path in the caller's
		// own terms, fn or args[i].
		if _, aerr := (value.Encoder{Root: "args"}).Encode(slices.Clone(args)); aerr != nil {
			err = aerr
		} else if _, ferr := (value.Encoder{Root: "fn"}).Encode(fn); ferr != nil {
			err = ferr
		}
		return nil, fmt.Errorf("client: do-work: %w", err)
	}
	name := fn.File
	if name == "" {
		name = "fn"
	}
	return c.Submit(&workunit.Spec{Kind: workunit.Fn, Name: name, Payload: payload}, workunit.Options{}), nil
}

// WaitUntilDone is Riot's wait-until-done: it waits until the workunit key
// is finished and returns its result as a Go value (see value.Unmarshal),
// or its *workunit.Error, whose message names the worker that raised it.
func (c *Client) WaitUntilDone(ctx context.Context, key workunit.Key) (any, error) {
	out, err := c.WaitFor(ctx, key)
	if err != nil {
		return nil, err
	}
	return out.Value()
}

// ForWork is Riot's for/work: it submits spec(i) for each i in [0, n),
// pipelined and watched, then waits for them in order and returns their
// results as Go values. The first workunit that failed (in order) ends it
// with its *workunit.Error, which names the worker; the others go on, and
// their results are kept by the tracker, so running the same job again
// picks up where it left off.
func ForWork(ctx context.Context, c *Client, n int, spec func(i int) *workunit.Spec) ([]any, error) {
	if n < 0 {
		return nil, fmt.Errorf("client: for-work: %d workunits: want 0 or more", n)
	}
	calls := make([]*Call, n)
	for i := range calls {
		calls[i] = c.Submit(spec(i), workunit.Options{})
	}
	out := make([]any, n)
	for i, k := range calls {
		o, err := k.Wait(ctx)
		if err != nil {
			return nil, err
		}
		if out[i], err = o.Value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
