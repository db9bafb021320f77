// Package jschild is the riot object's submitting half inside a workunit:
// riot.doWork, riot.forWork, riot.doWorkEval, riot.doWorkCall,
// riot.waitUntilDone, riot.with and the await forms (riot.run, riot.map,
// riot.runEval, riot.runCall, riot.result) submit child workunits on
// behalf of the job that owns the running one (docs/reference.md,
// "Workunits that make workunits").
//
// The binding knows nothing of the network: it reaches the worker
// through a Host, the running workunit's engine.Request.Host, which a
// worker implements over its tracker connection (package worker). A
// workunit that waits for children gives up its engine slot while it
// waits (Sandbox.Secede), so that its children, and others, run in its
// place on the same worker: one slot finishes a recursive job. A child
// the tracker refused is thrown at its wait, as the Host's Wait says: one
// refused for the tracker's memory bound (wire.ErrMemoryFull, riotd
// --max-memory) as a TrackerMemoryFullError, the name a master's
// riot.doWork throws; others as an Error.
//
// Functions travel as the master's do, as source and free variables: a
// workunit sends on a function it received (its own function, so that
// recursion works, an argument, a captured variable), with the values its
// free variables were given; a closure that the code of a received
// function calling riot made (the engine instruments such sources with
// the capture pass); or one without free variables of its own. Another is
// a DataCloneError that says so (Sandbox.EncodeCall).
package jschild

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Host is the running workunit's handle on the worker: what submits its
// children and waits for them. A worker gives one per run, as
// engine.Request.Host. Its methods are called on the run's goroutine.
type Host interface {
	// Submit submits spec as a child of the running workunit and returns
	// its key at once (submissions are pipelined); a refusal comes from
	// Wait.
	Submit(spec *workunit.Spec, opts workunit.Options) workunit.Key
	// Finished reports whether Wait of key would return at once.
	Finished(key workunit.Key) bool
	// Wait waits for the child key (one this Host submitted) to finish,
	// and returns its outcome: an error workunit's outcome comes with a
	// nil error. Other errors (a refusal, a key it did not submit, ctx)
	// mean the outcome is not known.
	Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error)
	// Secede says that the workunit waits for children, its engine slot
	// given up: the worker takes other work in its place. Rejoin says it
	// runs again.
	Secede()
	Rejoin()
}

// Binding returns the binding that installs the submitting functions on
// riot in every sandbox of an engine. In a workunit whose request has no
// Host (an engine used alone), they throw an Error that says so.
func Binding() engine.Binding {
	return engine.BindingFunc(func(sb *engine.Sandbox) error {
		b := &binding{sb: sb, rt: sb.Runtime(), in: sb.Intrinsics()}
		return b.install()
	})
}

type binding struct {
	sb *engine.Sandbox
	rt *goja.Runtime
	in *jsvalue.Intrinsics
	// awaitForms puts the await forms on an object with the seed forms
	// (the prelude's).
	awaitForms goja.Callable
}

// prelude defines what is easier to write in JavaScript: the
// WorkunitError class (the master's) and the await forms, each the seed
// form it mirrors, waited for in a promise's job.
const prelude = `(function (riot, waitAll) {
	class WorkunitError extends Error {
		constructor(message, props) {
			super(message, props && props.cause !== undefined ? { cause: props.cause } : undefined);
			Object.defineProperty(this, 'name', { value: 'WorkunitError', writable: true, configurable: true });
			if (props) {
				this.workunit = props.workunit;
				this.worker = props.worker;
				this.kind = props.kind;
				if (props.attempts !== undefined) this.attempts = props.attempts;
			}
		}
	}
	Object.defineProperty(riot, 'WorkunitError', { value: WorkunitError, enumerable: true });
	const later = (ids) => Promise.resolve().then(() => waitAll(ids));
	const one = (id) => later([id]).then((rs) => rs[0]);
	return function awaitForms(obj, submitEach) {
		obj.run = function run(fn, ...args) { return one(obj.doWork(fn, ...args)); };
		obj.runEval = function runEval(source, options) { return one(obj.doWorkEval(source, options)); };
		obj.runCall = function runCall(path, name, ...args) { return one(obj.doWorkCall(path, name, ...args)); };
		obj.map = function map(items, fn, options) { return later(submitEach(items, fn, options)); };
		obj.result = function result(id) { return one(id); };
	};
})`

// preludeProgram is the prelude, compiled once: programs are immutable,
// and shared by every runtime.
var preludeProgram = sync.OnceValues(func() (*goja.Program, error) {
	return goja.Compile(jsvalue.InternalFile, prelude, false)
})

func (b *binding) install() error {
	riot, ok := b.rt.Get("riot").(*goja.Object)
	if !ok {
		return errors.New("jschild: no riot object to install into")
	}
	if err := b.sb.SetFuncs(riot, []engine.Func{
		{Name: "waitUntilDone", Fn: b.waitUntilDone},
		{Name: "with", Fn: b.with},
	}); err != nil {
		return err
	}
	prg, err := preludeProgram()
	if err != nil {
		return err
	}
	pre, err := b.rt.RunProgram(prg)
	if err != nil {
		return err
	}
	define, _ := goja.AssertFunction(pre)
	waitAll := b.rt.ToValue(func(c goja.FunctionCall) goja.Value { return b.waitAll(c) })
	af, err := define(goja.Undefined(), riot, waitAll)
	if err != nil {
		return err
	}
	b.awaitForms, _ = goja.AssertFunction(af)
	return b.submitters(riot, workunit.Options{})
}

// submitters puts doWork, forWork, doWorkCall, doWorkEval and the await
// forms on obj, submitting with opts.
func (b *binding) submitters(obj *goja.Object, opts workunit.Options) error {
	if err := b.sb.SetFuncs(obj, []engine.Func{
		{Name: "doWork", Fn: func(c goja.FunctionCall) goja.Value { return b.doWork(c, opts) }},
		{Name: "forWork", Fn: func(c goja.FunctionCall) goja.Value { return b.forWork(c, opts) }},
		{Name: "doWorkCall", Fn: func(c goja.FunctionCall) goja.Value { return b.doWorkCall(c, opts) }},
		{Name: "doWorkEval", Fn: func(c goja.FunctionCall) goja.Value { return b.doWorkEval(c, opts) }},
	}); err != nil {
		return err
	}
	submitEach := b.rt.ToValue(func(c goja.FunctionCall) goja.Value { return b.submitItems(c, opts) })
	_, err := b.awaitForms(goja.Undefined(), obj, submitEach)
	return err
}

// host returns the running workunit's Host, or throws.
func (b *binding) host(op string) Host {
	h, ok := b.sb.Host().(Host)
	if !ok || h == nil {
		b.sb.Throw("Error", "%s: this workunit runs where it cannot submit workunits (an engine without a worker and a tracker)", op)
	}
	return h
}

func (b *binding) fnSpec(op string, fn goja.Value, args []goja.Value) *workunit.Spec {
	if _, ok := goja.AssertFunction(fn); !ok {
		b.sb.Throw("TypeError", "%s: the first argument must be a function; it is %s", op, jsvalue.Describe(fn))
	}
	payload, blobs, err := b.sb.EncodeCall(op, fn, args)
	if err != nil {
		b.sb.Throw("DataCloneError", "%v", err)
	}
	return &workunit.Spec{Kind: workunit.Fn, Name: "workunit", Payload: payload, Blobs: blobs}
}

// doWork implements riot.doWork(fn, ...args) in a workunit: the child's id.
func (b *binding) doWork(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.doWork"
	h := b.host(op)
	var args []goja.Value
	if len(call.Arguments) > 1 {
		args = call.Arguments[1:]
	}
	return b.rt.ToValue(h.Submit(b.fnSpec(op, call.Argument(0), args), opts).String())
}

// submitKeys submits one child per item of an iterable, fn(item,
// index), and returns their keys.
func (b *binding) submitKeys(op string, items goja.Value, fn goja.Value, optsV goja.Value, opts workunit.Options) []workunit.Key {
	h := b.host(op)
	vals := b.in.Items(b.rt, items)
	if o, ok := optsV.(*goja.Object); ok {
		opts = b.workOptions(op, o, opts)
	}
	keys := make([]workunit.Key, len(vals))
	for i, v := range vals {
		keys[i] = h.Submit(b.fnSpec(op, fn, []goja.Value{v, b.rt.ToValue(i)}), opts)
	}
	return keys
}

// forWork implements riot.forWork(iterable, fn[, options]) in a workunit.
func (b *binding) forWork(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.forWork"
	keys := b.submitKeys(op, call.Argument(0), call.Argument(1), call.Argument(2), opts)
	return b.rt.NewArray(b.results(op, keys)...)
}

// submitItems is riot.map's submitting half: the ids.
func (b *binding) submitItems(call goja.FunctionCall, opts workunit.Options) goja.Value {
	keys := b.submitKeys("riot.map", call.Argument(0), call.Argument(1), call.Argument(2), opts)
	ids := make([]any, len(keys))
	for i, k := range keys {
		ids[i] = k.String()
	}
	return b.rt.NewArray(ids...)
}

// doWorkEval implements riot.doWorkEval(source[, options]) in a workunit.
func (b *binding) doWorkEval(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.doWorkEval"
	h := b.host(op)
	if !goja.IsString(call.Argument(0)) {
		b.sb.Throw("TypeError", "%s: the source must be a string; it is %s", op, jsvalue.Describe(call.Argument(0)))
	}
	if o, ok := call.Argument(1).(*goja.Object); ok {
		opts = b.workOptions(op, o, opts)
	}
	spec := &workunit.Spec{Kind: workunit.Eval, Source: call.Argument(0).String(), Name: "eval"}
	return b.rt.ToValue(h.Submit(spec, opts).String())
}

// doWorkCall implements riot.doWorkCall(module, exportName, ...args) in
// a workunit: a call workunit calls the modules it was sent, its own
// ('.', or its path) and those it requires (by the names it requires them
// with); a workunit has no files to load others from.
func (b *binding) doWorkCall(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.doWorkCall"
	h := b.host(op)
	path, name := call.Argument(0), call.Argument(1)
	if !goja.IsString(path) || !goja.IsString(name) {
		b.sb.Throw("TypeError", "%s: give a module and an export name, as strings", op)
	}
	spec := b.sb.Spec()
	if spec == nil || spec.Kind != workunit.Call {
		b.sb.Throw("Error", "%s in a workunit: only a call workunit (one riot.doWorkCall made) calls modules, those it was sent; "+
			"a workunit has no files to load a module from: pass the function to riot.doWork, or use riot.doWorkEval", op)
	}
	self, err := b.sb.FetchModule(spec.Module)
	if err != nil {
		b.sb.Throw("Error", "%s: the workunit's module: %v", op, err)
	}
	mod := spec.Module
	p := path.String()
	if p != "." && p != self.Path {
		dep, ok := self.Requires[p]
		if !ok {
			names := make([]string, 0, len(self.Requires))
			for n := range self.Requires {
				names = append(names, fmt.Sprintf("%q", n))
			}
			slices.Sort(names)
			b.sb.Throw("Error", "%s in a workunit: module %q is not this workunit's module (%q, or '.') nor one it requires (%s)",
				op, p, self.Path, strings.Join(names, ", "))
		}
		mod = dep
	}
	var args []goja.Value
	if len(call.Arguments) > 2 {
		args = call.Arguments[2:]
	}
	payload, blobs, err := b.sb.EncodeArgs(op, args)
	if err != nil {
		b.sb.Throw("DataCloneError", "%v", err)
	}
	// The parent's list holds the modules (and more: it is not binding).
	child := &workunit.Spec{Kind: workunit.Call, Name: spec.Name, Module: mod, Export: name.String(), Payload: payload,
		Blobs: append(slices.Clone(spec.Blobs), blobs...)}
	return b.rt.ToValue(h.Submit(child, opts).String())
}

// with implements riot.with(options) in a workunit.
func (b *binding) with(call goja.FunctionCall) goja.Value {
	o, ok := call.Argument(0).(*goja.Object)
	if !ok {
		b.sb.Throw("TypeError", "riot.with: give an options object, such as {timeout: '30s'}")
	}
	opts := b.workOptions("riot.with", o, workunit.Options{})
	riot := b.rt.Get("riot").(*goja.Object)
	obj := b.rt.NewObject()
	if err := b.submitters(obj, opts); err != nil {
		panic(err)
	}
	if err := obj.Set("waitUntilDone", riot.Get("waitUntilDone")); err != nil {
		panic(err)
	}
	return obj
}

// workOptions reads {gpus, noCache, timeout, retries, retryOn} over base,
// as a job script's riot.with does.
func (b *binding) workOptions(op string, o *goja.Object, base workunit.Options) workunit.Options {
	for _, k := range o.Keys() {
		v := o.Get(k)
		switch k {
		case "gpus":
			n := v.ToInteger()
			if n < 0 || n > 64 {
				b.sb.Throw("RangeError", "%s: gpus must be between 0 and 64, not %s", op, v)
			}
			base.GPUs = int(n)
		case "noCache":
			base.NoCache = v.ToBoolean()
		case "timeout":
			base.Timeout = b.duration(op, v)
		case "retries":
			n := v.ToFloat()
			if n != math.Trunc(n) || n < 0 || n > workunit.MaxRetries {
				b.sb.Throw("RangeError", "%s: retries must be a whole number from 0 to %d (how many times to run a failed workunit again), not %s",
					op, workunit.MaxRetries, jsvalue.Describe(v))
			}
			base.Retries = int(n)
		case "retryOn":
			base.RetryOn = b.retryOn(op, v)
		default:
			b.sb.Throw("TypeError", "%s: unknown option %q (options are gpus, noCache, timeout, retries and retryOn)", op, k)
		}
	}
	if len(base.RetryOn) > 0 && base.Retries == 0 {
		b.sb.Throw("TypeError", "%s: retryOn without retries: give retries too, such as {retries: 3, retryOn: [%q]}", op, base.RetryOn[0])
	}
	return base
}

// retryOn reads the retryOn option: an array of error names or error
// classes, which stand for their names.
func (b *binding) retryOn(op string, v goja.Value) []string {
	o, ok := v.(*goja.Object)
	if !ok || b.in.Classify(o) != jsvalue.KindArray {
		b.sb.Throw("TypeError", "%s: retryOn must be an array of error names or classes, such as ['TypeError', 'TimeoutError']; it is %s", op, jsvalue.Describe(v))
	}
	n := o.Get("length").ToInteger()
	if n > workunit.MaxRetryOn {
		b.sb.Throw("RangeError", "%s: retryOn names %d errors; at most %d", op, n, workunit.MaxRetryOn)
	}
	names := make([]string, 0, n)
	for i := range n {
		e := o.Get(jsvalue.Index(int(i)))
		var name string
		if goja.IsString(e) {
			name = e.String()
		} else if f, isFn := e.(*goja.Object); isFn {
			if _, ok := goja.AssertFunction(f); ok {
				if nv := f.Get("name"); nv != nil && goja.IsString(nv) {
					name = nv.String()
				}
			}
		}
		if name == "" || len(name) > workunit.MaxRetryName {
			b.sb.Throw("TypeError", "%s: retryOn[%d] must be an error's name (a non-empty string of at most %d bytes) or an error class; it is %s",
				op, i, workunit.MaxRetryName, jsvalue.Describe(e))
		}
		names = append(names, name)
	}
	return names
}

// duration reads a time limit: milliseconds as a number, or a Go duration
// string such as "30s".
func (b *binding) duration(op string, v goja.Value) time.Duration {
	if goja.IsString(v) {
		d, err := time.ParseDuration(v.String())
		if err != nil {
			b.sb.Throw("TypeError", "%s: timeout %q: %v", op, v.String(), err)
		}
		if d < 0 || d > workunit.MaxTimeout {
			b.sb.Throw("RangeError", "%s: timeout %q is out of range (0 to %v)", op, v.String(), workunit.MaxTimeout)
		}
		return d
	}
	ms := v.ToFloat()
	if math.IsNaN(ms) || ms < 0 || ms > float64(workunit.MaxTimeout/time.Millisecond) {
		b.sb.Throw("RangeError", "%s: timeout %s ms is out of range (0 to %d ms, or a string such as \"30s\")",
			op, v.String(), workunit.MaxTimeout/time.Millisecond)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func (b *binding) parseID(op string, v goja.Value) workunit.Key {
	k, err := workunit.ParseKey(v.String())
	if err != nil {
		b.sb.Throw("TypeError", "%s: %s is not a workunit id", op, jsvalue.Describe(v))
	}
	return k
}

// refusalName returns the name of the JavaScript error thrown for a
// child whose outcome is not known because of err: TrackerMemoryFullError
// when the tracker refused it for its memory bound (wire.ErrMemoryFull,
// the name a master's riot.doWork throws), so that a workunit can tell it
// apart and submit less; else Error.
func refusalName(err error) string {
	if errors.Is(err, wire.ErrMemoryFull) {
		return "TrackerMemoryFullError"
	}
	return "Error"
}

// waitUntilDone implements riot.waitUntilDone(id) in a workunit.
func (b *binding) waitUntilDone(call goja.FunctionCall) goja.Value {
	const op = "riot.waitUntilDone"
	return b.results(op, []workunit.Key{b.parseID(op, call.Argument(0))})[0].(goja.Value)
}

// waitAll is the await forms' wait: an array of ids in, an array of
// results out (or the first failure thrown).
func (b *binding) waitAll(call goja.FunctionCall) goja.Value {
	const op = "riot.result"
	var keys []workunit.Key
	b.rt.ForOf(call.Argument(0), func(v goja.Value) bool {
		keys = append(keys, b.parseID(op, v))
		return true
	})
	return b.rt.NewArray(b.results(op, keys)...)
}

// results waits for the children keys, giving up the slot while any is
// unfinished, and returns their results, or throws the first failure in
// the order of keys: a WorkunitError, as a master gets.
func (b *binding) results(op string, keys []workunit.Key) []any {
	h := b.host(op)
	waiting := false
	for _, k := range keys {
		if !h.Finished(k) {
			waiting = true
			break
		}
	}
	if waiting {
		if err := b.sb.Secede(); err != nil {
			b.sb.Throw("RangeError", "%s: %v: this worker's workunits that wait for their children are at the most it allows "+
				"(riot-worker --max-waiting-parents); wait for children in fewer workunits at once, or raise the bound", op, err)
		}
		h.Secede()
	}
	ctx := b.sb.Context()
	outs := make([]*workunit.Outcome, len(keys))
	errs := make([]error, len(keys))
	for i, k := range keys {
		outs[i], errs[i] = h.Wait(ctx, k)
	}
	if waiting {
		h.Rejoin()
		if err := b.sb.Rejoin(); err != nil && ctx.Err() == nil {
			b.sb.Interrupt(err)
			return b.undefined(len(keys))
		}
	}
	if ctx.Err() != nil {
		// The workunit was stopped (its time limit, a revoke) while it
		// waited: it fails as its context says, at its next instruction
		// (an exception thrown here could be caught, or end the
		// workunit before the interrupt is seen).
		b.sb.Interrupt(context.Cause(ctx))
		return b.undefined(len(keys))
	}
	res := make([]any, len(keys))
	for i, k := range keys {
		if errs[i] != nil && outs[i] == nil {
			b.sb.Throw(refusalName(errs[i]), "%s: workunit %s: %v", op, k.Short(), errs[i])
		}
		o := outs[i]
		if o.Status == workunit.StatusError {
			panic(b.workunitError(k, o))
		}
		v, err := b.sb.Decode(o.Result)
		if err != nil {
			b.sb.Throw("Error", "%s: workunit %s: its result does not decode: %v", op, k.Short(), err)
		}
		res[i] = v
	}
	return res
}

// undefined returns n undefined results, for a wait whose workunit was
// stopped.
func (b *binding) undefined(n int) []any {
	res := make([]any, n)
	for i := range res {
		res[i] = goja.Undefined()
	}
	return res
}

// workunitError makes the WorkunitError thrown for a failed child, as the
// master makes it: its message names the workunit and the worker, and its
// cause is the error the child threw, rebuilt with its name, message and
// stack.
func (b *binding) workunitError(key workunit.Key, o *workunit.Outcome) *goja.Object {
	rt := b.rt
	werr := o.Err
	if werr == nil {
		werr = &workunit.Error{Kind: workunit.Internal, Name: "Error", Message: "the tracker gave no error"}
	}
	cause := b.rebuildError(werr)
	worker := werr.Worker
	if worker == "" {
		worker = o.Worker
	}
	where := "workunit " + key.Short()
	switch n := len(werr.Attempts); {
	case n > 1 && worker != "":
		where += fmt.Sprintf(" failed %d attempts, the last on worker %s", n, worker)
	case n > 1:
		where += fmt.Sprintf(" failed %d attempts", n)
	case worker != "":
		where += " failed on worker " + worker
	default:
		where += " failed"
	}
	msg := where + ": " + (&workunit.Error{Name: werr.Name, Message: werr.Message}).Error()
	props := rt.NewObject()
	if len(werr.Attempts) > 0 {
		as := make([]any, len(werr.Attempts))
		for i, a := range werr.Attempts {
			ao := rt.NewObject()
			_ = ao.Set("worker", a.Worker)
			_ = ao.Set("name", a.Name)
			_ = ao.Set("message", a.Message)
			as[i] = ao
		}
		_ = props.Set("attempts", rt.NewArray(as...))
	}
	_ = props.Set("cause", cause)
	_ = props.Set("workunit", key.String())
	_ = props.Set("worker", worker)
	_ = props.Set("kind", werr.Kind.String())
	ctor, _ := goja.AssertConstructor(rt.Get("riot").(*goja.Object).Get("WorkunitError"))
	e, err := ctor(nil, rt.ToValue(msg), props)
	if err != nil {
		panic(err)
	}
	// The child's stack goes on with the parent's: a parent that fails
	// with this error carries both to its master.
	if werr.Stack != "" {
		if st := e.Get("stack"); st != nil && goja.IsString(st) {
			_ = e.DefineDataProperty("stack", rt.ToValue(strings.TrimRight(st.String(), "\n")+"\nCaused by: "+werr.Stack), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
	}
	return e
}

// rebuildError makes a JavaScript error from a workunit's: the same
// constructor when it is a built-in one, else an Error with that name.
func (b *binding) rebuildError(werr *workunit.Error) goja.Value {
	if werr.Kind == workunit.Thrown && werr.Name == "" && werr.Value != nil {
		if v, err := b.sb.Decode(werr.Value); err == nil {
			return v
		}
	}
	ctor := b.in.ErrorCtors[werr.Name]
	if ctor == nil {
		ctor = b.in.ErrorCtors["Error"]
	}
	e, err := ctor(nil, b.rt.ToValue(werr.Message))
	if err != nil {
		panic(err)
	}
	if _, builtin := b.in.ErrorCtors[werr.Name]; !builtin && werr.Name != "" {
		_ = e.DefineDataProperty("name", b.rt.ToValue(werr.Name), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	if werr.Stack != "" {
		_ = e.DefineDataProperty("stack", b.rt.ToValue(werr.Stack), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return e
}
