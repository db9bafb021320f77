package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/timeline"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// conn adapts a *client.Client to master.Conn, the connection a job
// script's riot object uses. A script that takes work itself
// (client.waitForWork) gets a second connection for it, made on first use,
// which offers the room for one workunit that a master's does not.
type conn struct {
	c    *client.Client
	dial func(ctx context.Context) (*client.Client, error)
	// workerToken: dial gives a worker's token (Options.WorkerToken).
	workerToken bool

	// timeout is the time limit of the workunits submitted that set none
	// (Options.Timeout); zero leaves it to the worker.
	timeout time.Duration
	// state, when set, is told of GPU work and of waits for work, for the
	// UI's hints.
	state *scriptState
	// track keeps the keys submitted, and which of them finished, for
	// cancelAll.
	track bool
	// trace, when set, records each submission and its outcome for the
	// job's timeline (Options.Trace).
	trace *timeline.Recorder

	mu        sync.Mutex
	work      *client.Client
	submitted []workunit.Key        // every key submitted, when track is set
	finished  map[workunit.Key]bool // those known finished, when track is set
}

var _ master.UploadingConn = (*conn)(nil)

func (k *conn) Name() string { return k.c.Name() }

func (k *conn) Submit(spec *workunit.Spec, opts workunit.Options) master.Submission {
	return k.submit(spec, opts, nil)
}

// SubmitUploading is Submit for a spec whose blobs upload uploads again
// when the tracker lacks one (client.Client.SubmitUploading).
func (k *conn) SubmitUploading(spec *workunit.Spec, opts workunit.Options, upload func(context.Context, []blob.Hash) error) master.Submission {
	return k.submit(spec, opts, upload)
}

func (k *conn) submit(spec *workunit.Spec, opts workunit.Options, upload func(context.Context, []blob.Hash) error) master.Submission {
	if opts.Timeout == 0 {
		opts.Timeout = k.timeout
	}
	var call *client.Call
	if upload != nil {
		call = k.c.SubmitUploading(spec, opts, upload)
	} else {
		call = k.c.Submit(spec, opts)
	}
	if k.trace != nil {
		k.trace.Track(call)
	}
	if k.track {
		// The key, not the Call: a Call keeps its outcome (a result of any
		// size) and its spec's encoding.
		key := call.Key
		k.mu.Lock()
		k.submitted = append(k.submitted, key)
		k.mu.Unlock()
		call.OnFinished(func(out *workunit.Outcome, err error) {
			if _, err := outcome(out, err); err != nil {
				return // the outcome is not known (the client ended)
			}
			k.mu.Lock()
			if k.finished == nil {
				k.finished = make(map[workunit.Key]bool)
			}
			k.finished[key] = true
			k.mu.Unlock()
		})
	}
	if opts.GPUs > 0 && k.state != nil {
		k.state.addGPUWork(opts.GPUs, 1)
		call.OnFinished(func(*workunit.Outcome, error) { k.state.addGPUWork(opts.GPUs, -1) })
	}
	return &submission{call: call, k: k}
}

// maxInfoAfterCancel bounds the workunits whose state cancelAll asks the
// tracker for, one round trip each, after it could not cancel them.
const maxInfoAfterCancel = 256

// canceled is what cancelAll did with a connection's unfinished work.
type canceled struct {
	// n were canceled. others were not, and still wait or run at the
	// tracker: another run submitted them (the tracker lets a master
	// cancel only its own workunits, and this one joined them). unchecked
	// were not canceled, and their state could not be read. The rest
	// finished meanwhile.
	n, others, unchecked int
}

// cancelAll cancels what this connection submitted and is not finished,
// and asks the tracker about what it could not cancel.
func (k *conn) cancelAll(ctx context.Context) (canceled, error) {
	k.mu.Lock()
	seen := make(map[workunit.Key]bool, len(k.submitted))
	var keys []workunit.Key
	for _, key := range k.submitted {
		if !seen[key] && !k.finished[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	k.mu.Unlock()
	var r canceled
	done, err := k.c.Cancel(ctx, keys...)
	r.n = len(done)
	for _, key := range done {
		delete(seen, key)
	}
	left := make([]workunit.Key, 0, len(seen))
	for _, key := range keys {
		if seen[key] {
			left = append(left, key)
		}
	}
	if err != nil {
		r.unchecked = len(left)
		return r, err
	}
	for i, key := range left {
		if i == maxInfoAfterCancel {
			r.unchecked += len(left) - i
			break
		}
		out, err := k.c.Info(ctx, key)
		if err != nil {
			r.unchecked += len(left) - i
			break
		}
		if out.Status == workunit.StatusWaiting || out.Status == workunit.StatusRunning {
			r.others++
		}
	}
	return r, nil
}

func (k *conn) Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	out, err := k.c.WaitFor(ctx, key)
	return outcome(out, err)
}

// outcome returns what the client gave: a failed workunit is an outcome
// with status error, not an error (the script decides what to do with it);
// an error is the outcome not known (the client ended, ctx ended).
func outcome(out *workunit.Outcome, err error) (*workunit.Outcome, error) {
	var werr *workunit.Error
	if err != nil && (out == nil || !errors.As(err, &werr)) {
		return nil, err
	}
	if out.Err == nil && werr != nil {
		o := *out
		o.Err = werr
		out = &o
	}
	return out, nil
}

func (k *conn) OnFinished(key workunit.Key, fn func(*workunit.Outcome)) {
	k.c.CallWhenDone(key, func(out *workunit.Outcome, err error) { fn(finished(key, out, err)) })
}

// finished converts the outcome a callback gets. When the client ended
// (closed, or its context) or gave up on the call (a submission again that
// failed for good: a blob it could not upload again, say) instead, it
// reports that as the workunit's failure, so that no callback is left
// waiting forever.
func finished(key workunit.Key, out *workunit.Outcome, err error) *workunit.Outcome {
	o, err := outcome(out, err)
	if err != nil {
		msg := fmt.Sprintf("the workunit could not be followed to its end: %v", err)
		if errors.Is(err, client.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("the connection to the tracker ended: %v", err)
		}
		o = &workunit.Outcome{Key: key, Status: workunit.StatusError, Err: &workunit.Error{
			Kind: workunit.Internal, Name: "Error", Message: msg, Key: key}}
	}
	return o
}

func (k *conn) Info(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	out, err := k.c.Info(ctx, key)
	return outcome(out, err)
}

func (k *conn) Cancel(ctx context.Context, keys []workunit.Key) ([]workunit.Key, error) {
	return k.c.Cancel(ctx, keys...)
}

// MaxBlobBytes is the tracker's limit on one value sent as a blob, which
// the riot object checks (with the value's path) before it uploads one.
func (k *conn) MaxBlobBytes() int { return k.c.Limits().MaxBlobBytes }

// MaxResultBytes is the tracker's limit on a result sent inline: a
// result larger than this came as a blob, fetched for the one who waited
// (client.Call.Wait), whose bytes the riot object decodes in place.
func (k *conn) MaxResultBytes() int { return k.c.Limits().MaxResultBytes }

func (k *conn) EnsureBlobParts(ctx context.Context, blobs map[blob.Hash]blob.Parts) error {
	return k.c.EnsureBlobParts(ctx, blobs)
}

// worker returns the connection that takes work, making it on first use.
func (k *conn) worker(ctx context.Context) (*client.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.work == nil {
		c, err := k.dial(ctx)
		if err != nil {
			if !k.workerToken && wire.IsCode(err, wire.CodeAuth) {
				return nil, fmt.Errorf("%w; a job script takes work with a worker's token: give one with --worker-token or $RIOT_WORKER_TOKEN", err)
			}
			return nil, err
		}
		k.work = c
	}
	return k.work, nil
}

func (k *conn) WaitForWork(ctx context.Context) (*master.Work, error) {
	if k.state != nil {
		k.state.addTaker(1)
		defer k.state.addTaker(-1)
	}
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
	return &master.Work{Key: a.Key, Token: a.Token, Spec: spec, Blobs: blobSource{k.c}}, nil
}

func (k *conn) CompleteWork(ctx context.Context, w *master.Work, result []byte, werr *workunit.Error) error {
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

// submission is a Call as master.Submission. When its connection's state
// is set, it counts the Call once if the tracker answered it from memory:
// as its outcome is handed out, so that the count is in before the script,
// and the UI, have the outcome. When the connection's trace is set, it is
// told of the outcome as it is handed out (it hears of it from the Call
// too, a moment later). A script may hold a million submissions at once
// (riot.forWork): 32 bytes each, the connection's fields read through k
// rather than copied into each.
type submission struct {
	call *client.Call
	k    *conn
	// counted tells state once (a sync.Once of the struct's own, not a
	// sync.OnceFunc: that is three allocations a Call).
	counted sync.Once
}

func (s *submission) Key() workunit.Key { return s.call.Key }

// taken notes that the outcome of the call, out or err, is being handed
// out.
func (s *submission) taken(out *workunit.Outcome, err error) {
	if state := s.k.state; state != nil {
		s.counted.Do(func() {
			if s.call.FromMemory() {
				state.addMemoized()
			}
		})
	}
	if s.k.trace != nil {
		s.k.trace.Finished(s.call, out, err)
	}
}

func (s *submission) Accepted(ctx context.Context) (*workunit.Outcome, error) {
	out, err := s.call.Accepted(ctx)
	if err == nil && out.Finished() {
		s.taken(out, nil)
	}
	return outcome(out, err)
}

func (s *submission) Wait(ctx context.Context) (*workunit.Outcome, error) {
	out, err := s.call.Wait(ctx)
	// The lines that streamed while it ran show before its outcome's.
	_ = s.k.c.AwaitPrints(ctx)
	s.taken(out, err)
	return outcome(out, err)
}

func (s *submission) OnDone(fn func(*workunit.Outcome)) {
	s.call.OnDone(func(out *workunit.Outcome, err error) {
		s.taken(out, err)
		fn(finished(s.call.Key, out, err))
	})
}

func (s *submission) OnFinished(fn func(*workunit.Outcome)) {
	s.call.OnFinished(func(out *workunit.Outcome, err error) {
		s.taken(out, err)
		fn(finished(s.call.Key, out, err))
	})
}

// blobSource fetches blobs from the tracker for workunits a script takes
// with waitForWork.
type blobSource struct{ c *client.Client }

func (b blobSource) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	return b.c.FetchBlob(ctx, h)
}
