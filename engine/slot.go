package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// slot evaluates one workunit at a time, in a runtime of the workunit's
// realm that it takes from the engine's idle ones (runtimePool) or makes,
// and gives back when the workunit ends; it closes a runtime whose
// workunit ran away (time, stack or memory limit, or a bug), so that the
// next workunit of that realm starts from a clean one.
//
// A slot evaluates on a goroutine of its own, its executor, and waits for
// it; or, for a request with Abandoned, on the caller's goroutine. A
// workunit that was stopped (time limit, memory guard, caller) but does
// not return within Options.AbandonAfter, because a built-in call does
// not look at interrupts, is abandoned with its runtime and the goroutine
// that runs it (see abandon), and the slot goes on with fresh ones.
type slot struct {
	id   int
	eng  *Engine
	exec *executor // nil until the first run, and after an abandonment
	// cur is the slot's run, from its start until release: release gives
	// back the permit it holds, if it holds one (run.permit). Nil when
	// the run failed before it started.
	cur *run
}

// executor is the goroutine that runs a slot's workunits, one at a time:
// the slot sends it a run on work and waits on end, for true (the run
// returned) or false (it did not return in time after its stop: it is
// abandoned). Only the winner of run.state sends.
type executor struct {
	work chan *run
	end  chan bool
}

// States of a run (run.state). The run is in runSetup until its code
// starts; then the goroutine that evaluates it and the abandon timer race
// to move it out of runEvaluating, and the winner says what happens next.
const (
	runSetup int32 = iota
	runEvaluating
	runReturned
	runAbandoned
)

// Permit states of a run (run.permit). A run starts holding the permit it
// was given with its slot; it gives it back to the engine while it waits
// with its slot given up (Sandbox.Secede) and takes one again to go on
// (Sandbox.Rejoin). When the run's slot is released (its end, or its
// abandonment), the permit goes back only if the run holds it: the state
// becomes permitGone either way, and a Secede or Rejoin that finds it so
// (a stuck call of an abandoned run that returned at last) gives back
// what it took. Every permit so goes back once: two would block a later
// release on the full channel, and none would lose a slot.
const (
	permitHeld int32 = iota
	permitSeceded
	permitGone
)

// evaluate evaluates r's code on the calling goroutine and reports whether
// r returned before it was abandoned. An abandoned run is no longer its
// slot's: its realm is released here, and nothing else of the slot is
// touched.
func (r *run) evaluate(e *Engine) (returned bool) {
	r.state.Store(runEvaluating)
	r.data, r.err = r.rl.evaluate(r, r.spec)
	if r.state.CompareAndSwap(runEvaluating, runReturned) {
		return true
	}
	r.rl.close()
	n := e.stuck.Add(-1)
	e.opts.Logger.Info("engine: an abandoned workunit's call returned at last; its runtime is released",
		"slot", r.slot.id, "stuck", n)
	return false
}

// executor returns the slot's executor, started if it has none.
func (s *slot) executor() *executor {
	if s.exec == nil {
		x := &executor{work: make(chan *run), end: make(chan bool, 1)}
		go x.loop(s.eng)
		s.exec = x
	}
	return s.exec
}

// loop evaluates the runs the slot sends until work is closed, or until a
// run it evaluated was abandoned meanwhile: the slot went on without this
// goroutine, which then releases the abandoned realm and ends.
func (x *executor) loop(e *Engine) {
	for r := range x.work {
		if !r.evaluate(e) {
			return
		}
		x.end <- true
	}
}

// stopExecutor ends the slot's executor, which waits for work.
func (s *slot) stopExecutor() {
	if s.exec != nil {
		close(s.exec.work)
		s.exec = nil
	}
}

// noUnwatch is run.unwatch for a run whose caller's context never ends.
func noUnwatch() bool { return false }

// takeover ends abandoned run r for its caller: the slot's goroutine does,
// waiting on the executor; or, when the caller's goroutine evaluates (it
// is stuck in r), this goroutine does, and gives the slot back.
func (r *run) takeover() {
	if r.exec != nil {
		r.exec.end <- false
		return
	}
	res, err := r.slot.abandoned(r)
	r.slot.eng.release(r.slot)
	r.onAbandon(res, err)
}

// armAbandon starts, once per run, the wait of Options.AbandonAfter after
// which a stopped run that has not returned is abandoned: run.takeover
// ends it for its caller. A run still in setup then (its stop came before
// its code started) gets another wait.
func (r *run) armAbandon(e *Engine) {
	if !r.stopped.CompareAndSwap(false, true) {
		return
	}
	var fire func()
	fire = func() {
		if r.state.CompareAndSwap(runEvaluating, runAbandoned) {
			e.stuck.Add(1)
			e.abandoned.Add(1)
			r.takeover()
			return
		}
		if r.state.Load() == runSetup {
			time.AfterFunc(e.opts.AbandonAfter, fire)
		}
	}
	time.AfterFunc(e.opts.AbandonAfter, fire)
}

// runtime returns a runtime of realm key for a run on slot: an idle one
// of the engine's (any slot's), or a new one.
func (e *Engine) runtime(key string, slot int) (*realm, error) {
	if rl := e.pool.take(key, slot); rl != nil {
		return rl, nil
	}
	return newRealm(e, key)
}

// abandon gives up x, the executor that runs an abandoned run, if any
// (nil: the caller's goroutine runs it): the slot's next run starts a new
// executor. The run's realm is not given back (the stuck goroutine closes
// it if the call ever returns). Nothing the stuck goroutine holds is
// needed by the slot: a run holds no lock while it evaluates.
func (s *slot) abandon(x *executor) {
	if x != nil && s.exec == x {
		s.exec = nil
	}
}

// timeLimitError is the cause of a run that passed its time limit.
type timeLimitError struct{ limit time.Duration }

func (e *timeLimitError) Error() string {
	return fmt.Sprintf("workunit ran past its time limit of %s", e.limit)
}

func (s *slot) run(parent context.Context, req *Request) (*Result, error) {
	s.cur = nil
	rl, err := s.eng.runtime(req.Realm, s.id)
	if err != nil {
		return nil, fmt.Errorf("engine: new runtime: %w", err)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	r := &run{ctx: ctx, blobs: req.Blobs, gpus: req.GPUs, workerName: req.WorkerName, rl: rl, spec: req.Spec,
		slot: s, onAbandon: req.Abandoned, host: req.Host}
	s.cur = r
	if req.Abandoned == nil {
		// Run must return even if the workunit does not: the executor
		// evaluates, and Run waits for it.
		r.exec = s.executor()
	}
	// stop is the one way a workunit is stopped from outside: it cancels
	// the context (which ends sleeps and waits), interrupts the script, and
	// starts the wait after which a run that has not returned is abandoned.
	r.cancel = func(cause error) {
		cancel(cause)
		rl.interruptRun(r, cause)
		r.armAbandon(s.eng)
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
	r.unwatch = noUnwatch
	if parent.Done() != nil {
		r.unwatch = context.AfterFunc(parent, func() { r.cancel(context.Cause(parent)) })
	}
	if s.eng.guard != nil {
		s.eng.guard.add(r)
	}
	if req.Started != nil {
		req.Started(r.cancel)
	}
	r.start = time.Now()
	if x := r.exec; x != nil {
		x.work <- r
		if returned := <-x.end; !returned {
			return s.abandoned(r)
		}
	} else if !r.evaluate(s.eng) {
		return nil, ErrAbandoned
	}
	parts, err := r.data, r.err
	elapsed := time.Since(r.start)
	if s.eng.guard != nil {
		s.eng.guard.remove(r)
	}
	r.unwatch()
	rl.setRunning(nil)
	r.timers.reset()
	if rl.sets != nil && len(r.shared) > 0 {
		rl.sets.settle(r.shared)
	}
	rl.cur = nil
	rl.fns.Forget()

	res := &Result{Console: r.console.finish(), Slot: s.id, Elapsed: elapsed}
	if err == nil {
		// The runtime goes back to the engine's idle ones only after
		// PutResult: until then no script runs in it, so a buffer among
		// the parts stays as it was encoded.
		defer s.eng.pool.put(rl, s.id)
		if req.PutResult == nil {
			res.Value = parts.Bytes()
			return res, nil
		}
		v, perr := req.PutResult(parent, parts, len(res.Console))
		if perr != nil {
			return res, perr
		}
		res.Value = v
		return res, nil
	}
	werr, discard := rl.failure(ctx, err)
	werr = cutError(werr, s.eng.opts.MaxErrorBytes)
	if !discard {
		s.eng.pool.put(rl, s.id)
		return res, werr
	}
	rl.close()
	if werr.Kind == workunit.MemoryLimit {
		runtime.GC()
		debug.FreeOSMemory()
	}
	return res, werr
}

// abandoned ends run r, which was stopped but did not return within
// Options.AbandonAfter: the slot gives up its realm and executor, and the
// workunit fails as its stop says (a time limit, the memory guard, its
// caller). The console output of r is not read (the stuck goroutine may
// still write it); a line says it was lost.
func (s *slot) abandoned(r *run) (*Result, error) {
	ctx, stop := r.ctx, r.unwatch
	elapsed := time.Since(r.start)
	if s.eng.guard != nil {
		s.eng.guard.remove(r)
	}
	stop()
	s.abandon(r.exec)
	werr := causeError(ctx, context.Cause(ctx), nil)
	werr.Message += fmt.Sprintf("; it did not stop within %s of its interruption (a long built-in call, such as "+
		"JSON.stringify of a deeply nested value or a regular expression that backtracks), so its runtime was abandoned", s.eng.opts.AbandonAfter)
	werr = cutError(werr, s.eng.opts.MaxErrorBytes)
	s.eng.opts.Logger.Warn("engine: a stopped workunit did not return; its runtime is abandoned",
		"slot", s.id, "cause", context.Cause(ctx), "abandon_after", s.eng.opts.AbandonAfter, "stuck", s.eng.stuck.Load())
	c := console{max: s.eng.opts.MaxConsoleBytes}
	c.add(workunit.LevelWarn, "[riot: the console output of this workunit is lost: its runtime was abandoned]")
	return &Result{Console: c.finish(), Slot: s.id, Elapsed: elapsed}, werr
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
