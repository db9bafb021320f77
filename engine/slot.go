package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// slot evaluates one workunit at a time. It keeps a few realms, most
// recently used first, and drops a realm whose workunit ran away (time,
// stack or memory limit, or a bug), so that the next workunit there starts
// from a clean runtime.
type slot struct {
	id     int
	eng    *Engine
	realms []*realm
}

func (s *slot) realm(key string) (*realm, error) {
	for i, rl := range s.realms {
		if rl.key == key {
			copy(s.realms[1:i+1], s.realms[:i])
			s.realms[0] = rl
			return rl, nil
		}
	}
	rl, err := newRealm(s.eng, s.id, key)
	if err != nil {
		return nil, err
	}
	s.realms = append([]*realm{rl}, s.realms...)
	if n := s.eng.opts.RealmsPerSlot; len(s.realms) > n {
		for _, old := range s.realms[n:] {
			old.close()
		}
		s.realms = s.realms[:n]
	}
	return rl, nil
}

func (s *slot) drop(rl *realm) {
	for i, r := range s.realms {
		if r == rl {
			// slices.Delete clears the freed end, which would keep rl's heap.
			s.realms = slices.Delete(s.realms, i, i+1)
			rl.close()
			return
		}
	}
}

// closeRealms drops every realm of the slot.
func (s *slot) closeRealms() {
	for _, rl := range s.realms {
		rl.close()
	}
	s.realms = nil
}

// timeLimitError is the cause of a run that passed its time limit.
type timeLimitError struct{ limit time.Duration }

func (e *timeLimitError) Error() string {
	return fmt.Sprintf("workunit ran past its time limit of %s", e.limit)
}

func (s *slot) run(parent context.Context, req *Request) (*Result, error) {
	rl, err := s.realm(req.Realm)
	if err != nil {
		return nil, fmt.Errorf("engine: new runtime: %w", err)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	r := &run{ctx: ctx, blobs: req.Blobs, gpus: req.GPUs, workerName: req.WorkerName}
	// stop is the one way a workunit is stopped from outside: it cancels
	// the context (which ends sleeps and waits) and interrupts the script.
	r.cancel = func(cause error) {
		cancel(cause)
		rl.interruptRun(r, cause)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = s.eng.opts.Timeout
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { r.cancel(&timeLimitError{limit: timeout}) })
		defer t.Stop()
	}
	r.console.max, r.console.print = s.eng.opts.MaxConsoleBytes, req.Print

	rl.cur = r
	rl.setRunning(r)
	stop := func() bool { return false }
	if parent.Done() != nil {
		stop = context.AfterFunc(parent, func() { r.cancel(context.Cause(parent)) })
	}
	if s.eng.guard != nil {
		s.eng.guard.add(r)
	}
	if req.Started != nil {
		req.Started(r.cancel)
	}
	start := time.Now()
	parts, err := rl.evaluate(r, req.Spec)
	elapsed := time.Since(start)
	if s.eng.guard != nil {
		s.eng.guard.remove(r)
	}
	stop()
	rl.setRunning(nil)
	r.timers.reset()
	if rl.sets != nil && len(r.shared) > 0 {
		rl.sets.settle(r.shared)
	}
	rl.cur = nil

	res := &Result{Console: r.console.finish(), Slot: s.id, Elapsed: elapsed}
	if err == nil {
		if req.PutResult == nil {
			res.Value = parts.Bytes()
			return res, nil
		}
		// The slot is this run's until it returns: no script runs in the
		// realm, so a buffer among the parts stays as it was encoded.
		v, perr := req.PutResult(parent, parts, len(res.Console))
		if perr != nil {
			return res, perr
		}
		res.Value = v
		return res, nil
	}
	werr, discard := rl.failure(ctx, err)
	werr = cutError(werr, s.eng.opts.MaxErrorBytes)
	if discard {
		s.drop(rl)
		if werr.Kind == workunit.MemoryLimit {
			runtime.GC()
			debug.FreeOSMemory()
		}
	}
	return res, werr
}

// evaluate runs the workunit's code, waits for its promise if it returned
// one, and encodes the result, in parts (jsvalue's EncodeParts): a typed
// array or ArrayBuffer result is its buffer's bytes by reference, between
// a few bytes of its own; any other is one part, the realm's own. A Go
// panic from the engine's own code stops here and fails only this
// workunit.
func (rl *realm) evaluate(r *run, spec *workunit.Spec) (data blob.Parts, err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(error); ok {
				var ie *goja.InterruptedError
				var so *goja.StackOverflowError
				if errors.As(e, &ie) || errors.As(e, &so) {
					err = e
					return
				}
			}
			err = &internalError{panic: x, stack: debug.Stack()}
		}
	}()
	v, err := rl.evalSpec(spec)
	if err != nil {
		return nil, err
	}
	if v, err = rl.settle(r, v); err != nil {
		return nil, err
	}
	if len(r.unhandled) > 0 {
		return nil, &rejection{value: r.unhandled[0].Result()}
	}
	var out blob.Parts
	if ex := rl.rt.Try(func() { out, err = rl.enc.EncodeParts(v) }); ex != nil {
		return nil, ex
	}
	if err != nil {
		return nil, err
	}
	if len(out) > 1 {
		return out, nil // the result's buffer and a few bytes of its own
	}
	if len(out[0]) > takeResultBytes {
		// The encoder's buffer becomes the result: no copy of a large
		// value, and the realm does not keep its buffer.
		return blob.Parts{rl.enc.TakeBytes()}, nil
	}
	return blob.Parts{append([]byte(nil), out[0]...)}, nil
}

// takeResultBytes is the encoded size from which a result is the
// encoder's buffer itself rather than a copy of it (the encoder keeps
// its buffer for the next, small, result).
const takeResultBytes = 1 << 20

// settle waits for a promise result to settle, running the workunit's
// timers meanwhile, and returns its value; other values are returned as
// they are.
func (rl *realm) settle(r *run, v goja.Value) (goja.Value, error) {
	o, ok := v.(*goja.Object)
	if !ok || !jsvalue.IsPromise(o) {
		return v, nil
	}
	p := o.Export().(*goja.Promise)
	for p.State() == goja.PromiseStatePending {
		if !r.timers.pending() {
			return nil, &workunit.Error{Kind: workunit.Thrown, Name: "Error",
				Message: "the workunit returned a promise that can never settle: nothing it waits for is pending (no timers are set)"}
		}
		if err := r.timers.runNext(r.ctx); err != nil {
			return nil, err
		}
	}
	if p.State() == goja.PromiseStateRejected {
		return nil, &rejection{value: p.Result()}
	}
	return p.Result(), nil
}

// rejection is the reason a workunit's promise was rejected with.
type rejection struct{ value goja.Value }

func (r *rejection) Error() string { return "promise rejected" }

// internalError is a Go panic in the engine's own code.
type internalError struct {
	panic any
	stack []byte
}

func (e *internalError) Error() string { return fmt.Sprintf("engine: panic: %v", e.panic) }
