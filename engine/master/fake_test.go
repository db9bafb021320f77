package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// fakeTracker is a tracker for the master's unit tests: it keeps workunits
// in memory and runs them on an in-process engine (or, when manual, hands
// them out through WaitForWork). It is a test double, not riot's tracker:
// the end-to-end tests run the real one.
type fakeTracker struct {
	eng    *engine.Engine
	manual bool
	// hashOnly: blobs are checked against their hashes, counted, and not
	// kept (a test of what the master allocates).
	hashOnly bool
	// checkBlobs: a submission that names a blob the fake does not hold
	// is refused with unknown-blob, as riotd --memory refuses it;
	// freeOnFinish: every blob is dropped when a workunit finishes, as
	// riotd --memory frees them once nothing names them.
	checkBlobs, freeOnFinish bool
	refusals                 int // submissions refused with unknown-blob
	// forWorkWindow is the ScriptOptions.ForWorkWindow of the scripts
	// runScriptOn runs against it (0: the default).
	forWorkWindow int

	mu       sync.Mutex
	blobs    blob.Map
	uploads  int // blobs uploaded
	outcomes map[workunit.Key]*workunit.Outcome
	waiters  map[workunit.Key][]func(*workunit.Outcome)
	open     map[workunit.Key]bool // submitted, not finished
	maxOpen  int                   // the most open at once
	runs     int                   // workunits run
	queue    chan *Work
	names    int
}

func newEngine(t testing.TB, opts engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func newFakeTracker(t testing.TB, manual bool) *fakeTracker {
	return &fakeTracker{
		eng:      newEngine(t, engine.Options{Slots: 4, WorkerName: "fake-worker"}),
		manual:   manual,
		blobs:    blob.Map{},
		outcomes: make(map[workunit.Key]*workunit.Outcome),
		waiters:  make(map[workunit.Key][]func(*workunit.Outcome)),
		open:     make(map[workunit.Key]bool),
		queue:    make(chan *Work, 100),
	}
}

func (ft *fakeTracker) connect(ctx context.Context, host string, port int, name string) (Conn, error) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.names++
	if name == "" {
		name = "master"
	}
	return &fakeConn{ft: ft, name: name}, nil
}

// finish records a workunit's outcome and tells its waiters. The first
// outcome of a run counts: a canceled run's result comes too late.
func (ft *fakeTracker) finish(o *workunit.Outcome) {
	ft.mu.Lock()
	if !ft.open[o.Key] {
		ft.mu.Unlock()
		return
	}
	delete(ft.open, o.Key)
	ft.outcomes[o.Key] = o
	if ft.freeOnFinish {
		clear(ft.blobs)
	}
	ws := ft.waiters[o.Key]
	delete(ft.waiters, o.Key)
	ft.mu.Unlock()
	for _, w := range ws {
		w(o)
	}
}

func (ft *fakeTracker) blobSource() blob.Source {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	m := blob.Map{}
	for h, b := range ft.blobs {
		m[h] = b
	}
	return m
}

type fakeConn struct {
	ft   *fakeTracker
	name string
}

type fakeSubmission struct {
	key workunit.Key
	out *workunit.Outcome
	err error // the refusal, if refused
	c   *fakeConn
}

func (s *fakeSubmission) Key() workunit.Key { return s.key }
func (s *fakeSubmission) Accepted(ctx context.Context) (*workunit.Outcome, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.out, nil
}
func (s *fakeSubmission) Wait(ctx context.Context) (*workunit.Outcome, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.c.Wait(ctx, s.key)
}
func (s *fakeSubmission) OnDone(fn func(*workunit.Outcome))     { s.c.OnFinished(s.key, fn) }
func (s *fakeSubmission) OnFinished(fn func(*workunit.Outcome)) { s.c.OnFinished(s.key, fn) }

func (c *fakeConn) Name() string { return c.name }

func (c *fakeConn) Submit(spec *workunit.Spec, opts workunit.Options) Submission {
	ft := c.ft
	key := spec.Key()
	ft.mu.Lock()
	if o, ok := ft.outcomes[key]; ok && o.Status == workunit.StatusDone && !opts.NoCache {
		ft.mu.Unlock()
		return &fakeSubmission{key: key, out: o, c: c}
	}
	if ft.checkBlobs {
		for _, h := range spec.Blobs {
			if _, ok := ft.blobs[h]; !ok {
				ft.refusals++
				ft.mu.Unlock()
				return &fakeSubmission{key: key, c: c, err: fmt.Errorf("fake tracker: %w",
					&wire.Error{Code: wire.CodeUnknownBlob, Message: "fake tracker: submit: the spec names blob " + h.Short() + ", which the tracker does not hold"})}
			}
		}
	}
	ft.runs++
	ft.open[key] = true
	ft.maxOpen = max(ft.maxOpen, len(ft.open))
	ft.mu.Unlock()
	if ft.manual {
		ft.queue <- &Work{Key: key, Spec: spec, Blobs: ft.blobSource()}
		return &fakeSubmission{key: key, out: &workunit.Outcome{Key: key, Status: workunit.StatusWaiting}, c: c}
	}
	src := ft.blobSource()
	go func() {
		// Retries as the tracker's table runs them: the attempts go on the
		// final error (tracker/table has the real ones).
		var attempts []workunit.Attempt
		for {
			res, err := ft.eng.Run(context.Background(), engine.Request{Spec: spec, Blobs: src, Realm: c.name, Timeout: opts.Timeout})
			o := &workunit.Outcome{Key: key, Worker: "fake-worker", LastChange: time.Now()}
			if res != nil {
				o.Console = res.Console
			}
			var werr *workunit.Error
			switch {
			case err == nil:
				o.Status, o.Result = workunit.StatusDone, res.Value
			case errors.As(err, &werr):
				w := *werr
				w.Worker, w.Key = "fake-worker", key
				o.Status, o.Err = workunit.StatusError, &w
			default:
				o.Status, o.Err = workunit.StatusError, &workunit.Error{Kind: workunit.Internal, Message: err.Error()}
			}
			if o.Err != nil && opts.Retries > 0 {
				attempts = append(attempts, workunit.AttemptOf(o.Err))
				if opts.Retryable(o.Err, len(attempts)) {
					continue
				}
				o.Err.Attempts = attempts
			}
			ft.finish(o)
			return
		}
	}()
	return &fakeSubmission{key: key, out: &workunit.Outcome{Key: key, Status: workunit.StatusWaiting}, c: c}
}

func (c *fakeConn) Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	ch := make(chan *workunit.Outcome, 1)
	c.OnFinished(key, func(o *workunit.Outcome) { ch <- o })
	select {
	case o := <-ch:
		return o, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) OnFinished(key workunit.Key, fn func(*workunit.Outcome)) {
	ft := c.ft
	ft.mu.Lock()
	if o, ok := ft.outcomes[key]; ok {
		ft.mu.Unlock()
		go fn(o)
		return
	}
	ft.waiters[key] = append(ft.waiters[key], fn)
	ft.mu.Unlock()
}

func (c *fakeConn) Info(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	c.ft.mu.Lock()
	defer c.ft.mu.Unlock()
	if o, ok := c.ft.outcomes[key]; ok {
		return o, nil
	}
	return &workunit.Outcome{Key: key, Status: workunit.StatusUnknown}, nil
}

func (c *fakeConn) Cancel(ctx context.Context, keys []workunit.Key) ([]workunit.Key, error) {
	var canceled []workunit.Key
	for _, k := range keys {
		c.ft.mu.Lock()
		open := c.ft.open[k]
		c.ft.mu.Unlock()
		if !open {
			continue
		}
		c.ft.finish(&workunit.Outcome{Key: k, Status: workunit.StatusError, LastChange: time.Now(),
			Err: &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Message: "canceled by " + c.name, Key: k}})
		canceled = append(canceled, k)
	}
	return canceled, nil
}

func (c *fakeConn) EnsureBlobParts(ctx context.Context, blobs map[blob.Hash]blob.Parts) error {
	c.ft.mu.Lock()
	defer c.ft.mu.Unlock()
	for h, p := range blobs {
		if _, ok := c.ft.blobs[h]; !ok {
			if sum := p.Sum(); sum != h {
				return fmt.Errorf("fake tracker: blob %s: its bytes hash to %s", h.Short(), sum.Short())
			}
			c.ft.uploads++
			if c.ft.hashOnly {
				continue
			}
			// A copy, as a tracker's: the parts may be the script's buffer.
			c.ft.blobs[h] = bytes.Clone(p.Bytes())
		}
	}
	return nil
}

func (c *fakeConn) WaitForWork(ctx context.Context) (*Work, error) {
	select {
	case w := <-c.ft.queue:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *fakeConn) CompleteWork(ctx context.Context, w *Work, result []byte, werr *workunit.Error) error {
	o := &workunit.Outcome{Key: w.Key, Worker: c.name, LastChange: time.Now()}
	if werr != nil {
		e := *werr
		e.Worker = c.name
		o.Status, o.Err = workunit.StatusError, &e
	} else {
		o.Status, o.Result = workunit.StatusDone, result
	}
	c.ft.finish(o)
	return nil
}

func (c *fakeConn) Close() error { return nil }
