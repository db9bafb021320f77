package engine

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// realm is one goja runtime with riot's globals, and what it keeps between
// workunits of one realm: module instances, function factories and the
// bytes of blob values (checked against their hashes). It is used by one
// run at a time, on that run's goroutine; between runs it waits in the
// engine's idle runtimes (runtimePool), for a run of its realm on any
// slot.
type realm struct {
	key    string
	eng    *Engine
	rt     *goja.Runtime
	in     *jsvalue.Intrinsics
	origin time.Time // performance.now() counts from here
	sb     *Sandbox  // the realm as bindings see it
	sink   ConsoleSink

	modules  map[blob.Hash]*moduleInstance
	blobData map[blob.Hash]*list.Element
	blobLRU  list.List // of *blobBytes, most recent first: blobs whose hashes were checked

	fns *jsvalue.Functions // function factories, for the decoders
	enc *jsvalue.Encoder
	dec *jsvalue.Decoder

	// cur is the workunit running now, for the bindings. It is set and
	// read on the realm's goroutine only.
	cur *run

	// pool is the realm's place among the engine's idle runtimes while it
	// waits there (runtimePool).
	pool poolLinks

	// closers release what the realm's bindings hold outside the Go heap
	// (GPU resources: Sandbox.OnClose); close runs them when the realm is
	// dropped.
	closers []func()

	// sets shares flat Sets between a worker realm's workunits (nil in a
	// job script's realm).
	sets *sharedSets

	// mu guards running, the run the runtime runs (nil: none), which
	// interrupt and interruptRun read from other goroutines.
	mu      sync.Mutex
	running *run
}

type moduleInstance struct {
	path     string
	module   *goja.Object
	requires map[string]blob.Hash
}

type blobBytes struct {
	hash blob.Hash
	data []byte
	// flat copies the blob's value without decoding it, when it holds
	// only primitives (nil otherwise); looked says that the realm looked.
	flat   *flatValue
	looked bool
	// set is the realm's shared copy of a flat Set (sharedSets), and
	// setWritten says a workunit changed it.
	set        *goja.Object
	setWritten bool
	// own says the bytes are the realm's alone, given away by the source
	// (blob.Taker) and not kept: one workunit's value is made over them.
	own bool
}

// workerGlobals are riot's globals of a workunit's sandbox, besides the
// built-ins; Options.Bindings come after them.
var workerGlobals = []func(*realm) error{bindOpGuard, bindConsole, bindTimers, bindPerformance, bindWeb, bindRiot, bindStringLimits, bindAllocLimits, bindNativeStops}

// newRealm makes a sandbox of the engine for a workunit of realm key: its
// console output is kept per workunit (Result.Console).
func newRealm(eng *Engine, key string) (*realm, error) {
	rl, err := makeRealm(eng, key, nil, workerGlobals, eng.opts.Bindings)
	if err != nil {
		return nil, err
	}
	// riot is frozen once the bindings added theirs (engine/jschild).
	if riot, ok := rl.rt.Get("riot").(*goja.Object); ok {
		if _, err := rl.in.ObjectFreeze(goja.Undefined(), riot); err != nil {
			rl.close()
			return nil, err
		}
	}
	rl.rt.SetPromiseRejectionTracker(rl.trackRejection)
	if err := rl.installSharedSets(); err != nil {
		return nil, err
	}
	return rl, nil
}

// trackRejection keeps the running workunit's promises that were rejected
// with no handler, in order, until one is attached.
func (rl *realm) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	r := rl.cur
	if r == nil {
		return
	}
	r.unhandled.Track(p, op)
}

// makeRealm makes a runtime with riot's globals (globals) and then
// bindings, in order. Its console writes to sink; nil keeps each
// workunit's output with its result.
func makeRealm(eng *Engine, key string, sink ConsoleSink, globals []func(*realm) error, bindings []Binding) (*realm, error) {
	rt := goja.New()
	rt.SetMaxCallStackSize(eng.opts.MaxCallStackSize)
	in, err := jsvalue.LoadIntrinsics(rt)
	if err != nil {
		return nil, err
	}
	rl := &realm{
		key:      key,
		eng:      eng,
		rt:       rt,
		in:       in,
		origin:   time.Now(),
		sink:     sink,
		modules:  make(map[blob.Hash]*moduleInstance),
		blobData: make(map[blob.Hash]*list.Element),
	}
	if rl.sink == nil {
		rl.sink = runConsole{rl}
	}
	rl.sb = &Sandbox{rl: rl}
	rl.fns = jsvalue.NewFunctions(rt, eng.cache.compile)
	rl.enc = jsvalue.NewEncoder(rt, in, jsvalue.EncodeOptions{Root: "result", Dest: "back to the master", Limit: eng.opts.MaxResultBytes})
	rl.dec = jsvalue.NewDecoder(rt, in, rl.fns, rl)
	for _, install := range globals {
		if err := install(rl); err != nil {
			rl.close()
			return nil, err
		}
	}
	for _, b := range bindings {
		if err := rl.sb.install(b); err != nil {
			rl.close()
			return nil, err
		}
	}
	return rl, nil
}

// setFunc puts a Go function on obj under name, with its JavaScript name set
// so that stack traces show it.
func (rl *realm) setFunc(obj *goja.Object, name string, fn func(goja.FunctionCall) goja.Value) error {
	f := rl.rt.ToValue(fn).(*goja.Object)
	if err := f.DefineDataProperty("name", rl.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	return obj.Set(name, f)
}

// setFuncs puts the functions of table on obj, in order.
func (rl *realm) setFuncs(obj *goja.Object, table []Func) error {
	for _, e := range table {
		if err := rl.setFunc(obj, e.Name, e.Fn); err != nil {
			return err
		}
	}
	return nil
}

// close releases what the realm holds. The realm is not used again.
func (rl *realm) close() {
	for i := len(rl.closers) - 1; i >= 0; i-- {
		rl.closers[i]()
	}
	rl.closers = nil
}

// throw panics with a new JavaScript error of the given constructor name,
// which is how a Go binding throws into the calling script.
// A name with no built-in constructor (DataCloneError) is an Error with
// that name as its own property.
func (rl *realm) throw(name, format string, args ...any) {
	ctor := rl.in.ErrorCtors[name]
	builtin := ctor != nil
	if !builtin {
		ctor = rl.in.ErrorCtors["Error"]
	}
	obj, err := ctor(nil, rl.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	if !builtin {
		if err := obj.DefineDataProperty("name", rl.rt.ToValue(name), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			panic(err)
		}
	}
	panic(obj)
}

// interrupt stops the running workunit, if any, with cause. It may be
// called from any goroutine.
func (rl *realm) interrupt(cause error) {
	rl.mu.Lock()
	if rl.running != nil {
		rl.rt.Interrupt(cause)
	}
	rl.mu.Unlock()
}

// interruptRun interrupts the runtime if it runs r. A stop that comes late
// (a timer that fired as r ended, a revoke) must not interrupt the next
// workunit of the runtime.
func (rl *realm) interruptRun(r *run, cause error) {
	rl.mu.Lock()
	if rl.running == r {
		rl.rt.Interrupt(cause)
	}
	rl.mu.Unlock()
}

// setRunning records the run the runtime runs; nil when it runs none.
func (rl *realm) setRunning(r *run) {
	rl.mu.Lock()
	rl.running = r
	rl.mu.Unlock()
	if r == nil {
		// No interrupt can come after running is false, so clearing here
		// leaves the runtime clean for the next workunit.
		rl.rt.ClearInterrupt()
	}
}

// evalSpec runs a workunit's code and returns its value, unsettled.
func (rl *realm) evalSpec(spec *workunit.Spec) (goja.Value, error) {
	switch spec.Kind {
	case workunit.Eval:
		name := spec.Name
		if name == "" {
			name = "eval"
		}
		prg, err := rl.eng.cache.compile(name, spec.Source)
		if err != nil {
			return nil, err
		}
		return rl.rt.RunProgram(prg)
	case workunit.Fn:
		args, err := rl.dec.DecodeArgs(spec.Payload)
		if err != nil {
			return nil, invalid("fn workunit: payload: %v", err)
		}
		if len(args) == 0 {
			return nil, invalid("fn workunit: payload holds no function")
		}
		fn, ok := goja.AssertFunction(args[0])
		if !ok {
			return nil, invalid("fn workunit: payload starts with %s, not a function", jsvalue.Describe(args[0]))
		}
		return fn(goja.Undefined(), args[1:]...)
	case workunit.Call:
		inst, err := rl.loadModule(spec.Module)
		if err != nil {
			return nil, err
		}
		exports := inst.module.Get("exports")
		f, err := rl.export(inst, exports, spec.Export)
		if err != nil {
			return nil, err
		}
		args, err := rl.dec.DecodeArgs(spec.Payload)
		if err != nil {
			return nil, invalid("call workunit: arguments: %v", err)
		}
		return f(exports, args...)
	}
	return nil, invalid("unknown workunit kind %d", spec.Kind)
}

func (rl *realm) export(inst *moduleInstance, exports goja.Value, name string) (goja.Callable, error) {
	obj, ok := exports.(*goja.Object)
	if !ok {
		return nil, invalid("module %s exports %s, not an object", inst.path, jsvalue.Describe(exports))
	}
	v := obj.Get(name)
	if v == nil || goja.IsUndefined(v) {
		if f, ok := goja.AssertFunction(obj); ok && name == "default" {
			return f, nil
		}
		return nil, invalid("module %s has no export %q (it exports: %s)", inst.path, name, strings.Join(obj.Keys(), ", "))
	}
	f, ok := goja.AssertFunction(v)
	if !ok {
		return nil, invalid("export %q of module %s is %s, not a function", name, inst.path, jsvalue.Describe(v))
	}
	return f, nil
}

// loadModule returns the instance of the module blob h in this realm,
// running its top level the first time. A module that requires itself, or
// a module being loaded, gets its exports as they are so far, as CommonJS
// does.
func (rl *realm) loadModule(h blob.Hash) (*moduleInstance, error) {
	if inst, ok := rl.modules[h]; ok {
		return inst, nil
	}
	mod, err := rl.fetchModule(h)
	if err != nil {
		return nil, err
	}
	wrapper := "(function (exports, require, module, __filename, __dirname) {" + mod.Source + "\n})"
	prg, err := rl.eng.cache.compile(mod.Path, wrapper)
	if err != nil {
		return nil, err
	}
	fv, err := rl.rt.RunProgram(prg)
	if err != nil {
		return nil, err
	}
	fn, _ := goja.AssertFunction(fv)
	module := rl.rt.NewObject()
	exports := rl.rt.NewObject()
	_ = module.Set("exports", exports)
	_ = module.Set("id", mod.Path)
	_ = module.Set("filename", mod.Path)
	inst := &moduleInstance{path: mod.Path, module: module, requires: mod.Requires}
	rl.modules[h] = inst
	dir := "."
	if i := strings.LastIndexByte(mod.Path, '/'); i >= 0 {
		dir = mod.Path[:i]
	}
	require := rl.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		spec := call.Argument(0).String()
		dep, ok := inst.requires[spec]
		if !ok {
			rl.throw("Error", "require(%q) in %s: no such module was shipped with this workunit (workers have no file system; a master ships the modules that a module requires with string literals)", spec, mod.Path)
		}
		di, err := rl.loadModule(dep)
		if err != nil {
			if jsErr, ok := err.(*goja.Exception); ok {
				panic(jsErr.Value())
			}
			rl.throw("Error", "require(%q) in %s: %v", spec, mod.Path, err)
		}
		return di.module.Get("exports")
	})
	if _, err := fn(exports, exports, require, module, rl.rt.ToValue(mod.Path), rl.rt.ToValue(dir)); err != nil {
		delete(rl.modules, h)
		return nil, err
	}
	return inst, nil
}

func (rl *realm) fetchModule(h blob.Hash) (*workunit.Module, error) {
	data, err := rl.fetchBlob(h)
	if err != nil {
		return nil, invalid("module %s: %v", h.Short(), err)
	}
	var m workunit.Module
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, invalid("module %s: %v", h.Short(), err)
	}
	return &m, nil
}

// OwnBlobBytes is the size from which a realm decodes a blob value in
// place, over its bytes, when its source gives them away (blob.Taker: a
// worker's cache, for a blob larger than it keeps), rather than keep the
// bytes and decode a copy.
const OwnBlobBytes = 1 << 20

// takeBlob returns blob h as fetchBlob does, and whether the bytes are the
// realm's own (a blob.Taker source gave them away).
func (rl *realm) takeBlob(h blob.Hash) ([]byte, bool, error) {
	var t blob.Taker
	ok := rl.cur != nil
	if ok {
		t, ok = rl.cur.blobs.(blob.Taker)
	}
	if !ok {
		data, err := rl.fetchBlob(h)
		return data, false, err
	}
	data, own, err := t.Take(rl.cur.ctx, h)
	if err != nil {
		return nil, false, err
	}
	if _, checked := rl.cur.blobs.(blob.Checked); !checked && blob.Sum(data) != h {
		return nil, false, fmt.Errorf("blob %s: the bytes given do not match the hash", h.Short())
	}
	return data, own, nil
}

func (rl *realm) fetchBlob(h blob.Hash) ([]byte, error) {
	if rl.cur == nil || rl.cur.blobs == nil {
		return nil, fmt.Errorf("blob %s is not available: the request gave no blob source", h.Short())
	}
	data, err := rl.cur.blobs.Blob(rl.cur.ctx, h)
	if err != nil {
		return nil, err
	}
	if _, checked := rl.cur.blobs.(blob.Checked); !checked && blob.Sum(data) != h {
		return nil, fmt.Errorf("blob %s: the bytes given do not match the hash", h.Short())
	}
	return data, nil
}

// BlobValue implements jsvalue.BlobResolver: each workunit gets a copy of a
// blob's value of its own, decoded from the blob's bytes when it first
// refers to the blob, so that what it changes in the value stays in it and
// never reaches the next workunit. The references of one workunit to one
// blob are one object, as they were on the master. The realm keeps the
// bytes (BlobCacheSize blobs), checked against the hash once.
func (rl *realm) BlobValue(h blob.Hash) (goja.Value, error) {
	r := rl.cur
	if r == nil {
		return nil, fmt.Errorf("blob %s is not available: no workunit is running", h.Short())
	}
	if v, ok := r.blobVals[h]; ok {
		return v, nil
	}
	b, err := rl.blobBytesOf(h)
	if err != nil {
		return nil, err
	}
	var v goja.Value
	if b.set != nil && rl.sets.changed(b) {
		// Changed since (through a reference a workunit kept in a global,
		// say): it is no longer the blob's value.
		rl.sets.forget(b)
	}
	switch {
	case b.set != nil:
		v = b.set
		r.shared = append(r.shared, b)
	case b.flat != nil:
		if v, err = b.flat.copy(rl); err != nil {
			return nil, fmt.Errorf("blob %s: %w", h.Short(), err)
		}
		if b.flat.kind == flatSet && rl.sets != nil {
			rl.sets.share(b, v.(*goja.Object))
			r.shared = append(r.shared, b)
		}
	case b.own:
		// Bytes nobody else has: the workunit's value is made over them
		// (a typed array's buffer is the fetched bytes), in memory once.
		d := jsvalue.NewDecoder(rl.rt, rl.in, rl.fns, rl)
		data := b.data
		b.data = nil
		if v, err = d.DecodeOwnedValue(data); err != nil {
			return nil, fmt.Errorf("blob %s: %w", h.Short(), err)
		}
	default:
		// A blob is a document of its own, with its own object indexes.
		d := jsvalue.NewDecoder(rl.rt, rl.in, rl.fns, rl)
		if v, err = d.DecodeValue(b.data); err != nil {
			return nil, fmt.Errorf("blob %s: %w", h.Short(), err)
		}
		if !b.looked {
			b.looked = true
			if kind := flatKindOf(b.data); kind != notFlat {
				b.flat = rl.flatTemplate(kind, v)
			}
		}
	}
	if r.blobVals == nil {
		r.blobVals = make(map[blob.Hash]goja.Value)
	}
	r.blobVals[h] = v
	return v, nil
}

// blobBytesOf returns blob h, from the realm's recent blobs or fetched and
// checked.
func (rl *realm) blobBytesOf(h blob.Hash) (*blobBytes, error) {
	if el, ok := rl.blobData[h]; ok {
		rl.blobLRU.MoveToFront(el)
		return el.Value.(*blobBytes), nil
	}
	data, own, err := rl.takeBlob(h)
	if err != nil {
		return nil, err
	}
	b := &blobBytes{hash: h, data: data}
	if own && len(data) > OwnBlobBytes && flatKindOf(data) == notFlat {
		// Too large for the worker to keep (its cache gave it away): the
		// realm does not keep it either, and decodes it in place. The
		// next workunit that needs it fetches it again.
		b.own = true
		return b, nil
	}
	rl.blobData[h] = rl.blobLRU.PushFront(b)
	for rl.blobLRU.Len() > rl.eng.opts.BlobCacheSize {
		old := rl.blobLRU.Back()
		rl.blobLRU.Remove(old)
		delete(rl.blobData, old.Value.(*blobBytes).hash)
		if rl.sets != nil {
			rl.sets.forget(old.Value.(*blobBytes))
		}
	}
	return b, nil
}

// run is one workunit's evaluation: its context, console and timers.
type run struct {
	ctx        context.Context
	host       any    // Request.Host
	gpus       []int  // Request.GPUs: the devices the worker gave the workunit
	workerName string // Request.WorkerName: riot.worker.name, when set
	cancel     context.CancelCauseFunc
	blobs      blob.Source
	// blobVals are the blob values this workunit decoded: its own copies
	// (realm.BlobValue).
	blobVals map[blob.Hash]goja.Value
	console  console
	timers   timers
	// unhandled are the promises rejected with no handler yet
	// (realm.trackRejection): when the workunit ends, the first one
	// fails it, as an unhandled rejection ends a Node process.
	unhandled Rejections
	// shared are the blobs whose shared Set this workunit was given
	// (sharedSets), settled when it ends.
	shared []*blobBytes

	// rl and spec are what is evaluated (run.evaluate), data and err what
	// it gave, start when it started. state says where the run is
	// (runSetup...); stopped says it was stopped, and the abandon wait
	// started (armAbandon), after which takeover ends the run for its
	// caller: through exec, the executor that evaluates it, or, when the
	// caller's goroutine evaluates it (exec nil), with onAbandon
	// (Request.Abandoned). unwatch stops the watch of the caller's
	// context.
	rl      *realm
	spec    *workunit.Spec
	data    blob.Parts
	err     error
	start   time.Time
	state   atomic.Int32
	stopped atomic.Bool
	// permit says whether the run holds its permit (permitHeld...).
	permit    atomic.Int32
	slot      *slot
	exec      *executor
	onAbandon func(*Result, error)
	unwatch   func() bool
}
