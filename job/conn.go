package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// conn adapts a *client.Client to engine.Conn, the connection a job
// script's riot object uses. A script that takes work itself
// (client.waitForWork) gets a second connection for it, made on first use,
// which offers the room for one workunit that a master's does not.
type conn struct {
	c    *client.Client
	dial func(ctx context.Context) (*client.Client, error)

	// track keeps the keys submitted, for cancelAll.
	track bool

	mu        sync.Mutex
	work      *client.Client
	submitted []workunit.Key // every key submitted, when track is set
}

var _ engine.Conn = (*conn)(nil)

func (k *conn) Name() string { return k.c.Name() }

func (k *conn) Submit(spec *workunit.Spec, opts engine.WorkOptions) engine.Submission {
	s := submission{k.c.Submit(spec, wireOptions(opts))}
	if k.track {
		k.mu.Lock()
		k.submitted = append(k.submitted, s.Key())
		k.mu.Unlock()
	}
	return s
}

// cancelAll cancels what this connection submitted and is not finished,
// and returns how many workunits that was.
func (k *conn) cancelAll(ctx context.Context) (int, error) {
	k.mu.Lock()
	keys := k.submitted
	k.mu.Unlock()
	canceled, err := k.c.Cancel(ctx, keys...)
	return len(canceled), err
}

func wireOptions(o engine.WorkOptions) wire.Options {
	return wire.Options{NoCache: o.NoCache, GPUs: o.GPUs, Timeout: o.Timeout, Watch: o.Watch}
}

func (k *conn) Wait(ctx context.Context, key workunit.Key) (*engine.Outcome, error) {
	out, err := k.c.WaitFor(ctx, key)
	return outcome(out, err)
}

// outcome converts a client outcome. A failed workunit is an outcome with
// status "error", not an error: the script decides what to do with it.
func outcome(out *client.Outcome, err error) (*engine.Outcome, error) {
	var werr *workunit.Error
	if err != nil && (out == nil || !errors.As(err, &werr)) {
		return nil, err
	}
	o := &engine.Outcome{
		Key:        out.Key,
		Status:     out.Status.String(),
		Worker:     out.Worker,
		Result:     out.Result,
		Err:        out.Err,
		LastChange: out.LastChange,
	}
	if o.Err == nil && werr != nil {
		o.Err = werr
	}
	for _, l := range out.Console {
		o.Console = append(o.Console, engine.ConsoleLine{Level: engine.Level(l.Level), Text: l.Text})
	}
	return o, nil
}

func (k *conn) OnFinished(key workunit.Key, fn func(*engine.Outcome)) {
	k.c.CallWhenDone(key, func(out *client.Outcome, err error) { fn(finished(key, out, err)) })
}

// finished converts the outcome a callback gets. When the client ended
// (closed, or its context) instead, it reports that as the workunit's
// failure, so that no callback is left waiting forever.
func finished(key workunit.Key, out *client.Outcome, err error) *engine.Outcome {
	o, err := outcome(out, err)
	if err != nil {
		o = &engine.Outcome{Key: key, Status: "error", Err: &workunit.Error{
			Kind: workunit.Internal, Name: "Error", Message: fmt.Sprintf("the connection to the tracker ended: %v", err), Key: key}}
	}
	return o
}

func (k *conn) Info(ctx context.Context, key workunit.Key) (*engine.Outcome, error) {
	out, err := k.c.Info(ctx, key)
	return outcome(out, err)
}

func (k *conn) Cancel(ctx context.Context, keys []workunit.Key) ([]workunit.Key, error) {
	return k.c.Cancel(ctx, keys...)
}

func (k *conn) EnsureBlobs(ctx context.Context, blobs map[blob.Hash][]byte) error {
	return k.c.EnsureBlobs(ctx, blobs)
}

// worker returns the connection that takes work, making it on first use.
func (k *conn) worker(ctx context.Context) (*client.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.work == nil {
		c, err := k.dial(ctx)
		if err != nil {
			return nil, err
		}
		k.work = c
	}
	return k.work, nil
}

func (k *conn) WaitForWork(ctx context.Context) (*engine.Work, error) {
	wc, err := k.worker(ctx)
	if err != nil {
		return nil, err
	}
	a, err := wc.WaitForWork(ctx)
	if err != nil {
		return nil, err
	}
	spec, err := a.Decode()
	if err != nil {
		return nil, err
	}
	return &engine.Work{Key: a.Key, Token: a.Token, Spec: spec, Blobs: blobSource{k.c}}, nil
}

func (k *conn) CompleteWork(ctx context.Context, w *engine.Work, result []byte, werr *workunit.Error) error {
	wc, err := k.worker(ctx)
	if err != nil {
		return err
	}
	l := wire.Lease{Key: w.Key, Token: w.Token}
	if werr != nil {
		return wc.Failed(l, werr, nil, 0)
	}
	return wc.Done(l, result, nil, 0)
}

func (k *conn) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.work != nil {
		_ = k.work.Close()
	}
	return k.c.Close()
}

type submission struct{ call *client.Call }

func (s submission) Key() workunit.Key { return s.call.Key }

func (s submission) Accepted(ctx context.Context) (*engine.Outcome, error) {
	out, err := s.call.Accepted(ctx)
	return outcome(out, err)
}

func (s submission) Wait(ctx context.Context) (*engine.Outcome, error) {
	out, err := s.call.Wait(ctx)
	return outcome(out, err)
}

func (s submission) OnDone(fn func(*engine.Outcome)) {
	s.call.OnDone(func(out *client.Outcome, err error) { fn(finished(s.call.Key, out, err)) })
}

// blobSource fetches blobs from the tracker for workunits a script takes
// with waitForWork.
type blobSource struct{ c *client.Client }

func (b blobSource) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	return b.c.FetchBlob(ctx, h)
}
