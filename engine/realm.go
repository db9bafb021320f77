package engine

import (
	"container/list"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// realm is one goja runtime with riot's globals, and what it keeps between
// workunits of one realm: module instances, function factories and decoded
// blob values. It is used by one goroutine at a time (its slot's).
type realm struct {
	key    string
	eng    *Engine
	slotID int
	rt     *goja.Runtime
	in     *intrinsics
	origin time.Time // performance.now() counts from here

	modules   map[blob.Hash]*moduleInstance
	factories map[string]*factory
	blobVals  map[blob.Hash]*list.Element
	blobLRU   list.List // of *blobValue, most recent first

	enc *encoder
	dec *decoder

	// cur is the workunit running now, for the bindings. It is set and
	// read on the realm's goroutine only.
	cur *run

	// closers release what the realm holds outside the Go heap (GPU
	// resources); close runs them when the realm is dropped.
	closers []func()

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

// factory makes instances of one captured function.
type factory struct {
	make  goja.Callable
	plain *goja.Object // the one instance of a function with no free variables
}

type blobValue struct {
	hash blob.Hash
	v    goja.Value
}

// workerBindings are the globals a workunit sees besides the built-ins.
var workerBindings = []func(*realm) error{bindConsole, bindTimers, bindPerformance, bindRiot, bindStringLimits, bindGPU}

func newRealm(eng *Engine, slotID int, key string) (*realm, error) {
	return newRealmWith(eng, slotID, key, workerBindings)
}

// newRealmWith makes a runtime with the given bindings: a worker's, or a
// master's (master.go).
func newRealmWith(eng *Engine, slotID int, key string, bindings []func(*realm) error) (*realm, error) {
	rt := goja.New()
	rt.SetMaxCallStackSize(eng.opts.MaxCallStackSize)
	in, err := loadIntrinsics(rt)
	if err != nil {
		return nil, err
	}
	rl := &realm{
		key:       key,
		eng:       eng,
		slotID:    slotID,
		rt:        rt,
		in:        in,
		origin:    time.Now(),
		modules:   make(map[blob.Hash]*moduleInstance),
		factories: make(map[string]*factory),
		blobVals:  make(map[blob.Hash]*list.Element),
	}
	rl.enc = newEncoder(rt, in, encodeOptions{root: "result", dest: "back to the master", limit: eng.opts.MaxResultBytes})
	rl.dec = newDecoder(rt, in, rl, rl)
	for _, bind := range bindings {
		if err := bind(rl); err != nil {
			return nil, err
		}
	}
	return rl, nil
}

// internalFile names the scripts riot runs in a runtime itself; stacks
// leave their frames out.
const internalFile = "riot:internal"

// setFunc puts a Go function on obj under name, with its JavaScript name set
// so that stack traces show it.
func (rl *realm) setFunc(obj *goja.Object, name string, fn func(goja.FunctionCall) goja.Value) error {
	f := rl.rt.ToValue(fn).(*goja.Object)
	if err := f.DefineDataProperty("name", rl.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	return obj.Set(name, f)
}

// export is one entry of an export table: a Go function and the name it
// goes by in JavaScript. Bindings are installed from slices of them, never
// by ranging over a map, so that every runtime lists its properties in
// one order: a workunit's result must not depend on which runtime ran it.
type export struct {
	name string
	fn   func(goja.FunctionCall) goja.Value
}

// setFuncs puts the functions of table on obj, in order.
func (rl *realm) setFuncs(obj *goja.Object, table []export) error {
	for _, e := range table {
		if err := rl.setFunc(obj, e.name, e.fn); err != nil {
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
func (rl *realm) throw(name, format string, args ...any) {
	ctor := rl.in.errorCtors[name]
	if ctor == nil {
		ctor = rl.in.errorCtors["Error"]
	}
	obj, err := ctor(nil, rl.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
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
		args, err := rl.dec.decodeArgs(spec.Payload)
		if err != nil {
			return nil, invalid("fn workunit: payload: %v", err)
		}
		if len(args) == 0 {
			return nil, invalid("fn workunit: payload holds no function")
		}
		fn, ok := goja.AssertFunction(args[0])
		if !ok {
			return nil, invalid("fn workunit: payload starts with %s, not a function", describe(args[0]))
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
		args, err := rl.dec.decodeArgs(spec.Payload)
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
		return nil, invalid("module %s exports %s, not an object", inst.path, describe(exports))
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
		return nil, invalid("export %q of module %s is %s, not a function", name, inst.path, describe(v))
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

func (rl *realm) fetchBlob(h blob.Hash) ([]byte, error) {
	if rl.cur == nil || rl.cur.blobs == nil {
		return nil, fmt.Errorf("blob %s is not available: the request gave no blob source", h.Short())
	}
	data, err := rl.cur.blobs.Blob(rl.cur.ctx, h)
	if err != nil {
		return nil, err
	}
	if blob.Sum(data) != h {
		return nil, fmt.Errorf("blob %s: the bytes given do not match the hash", h.Short())
	}
	return data, nil
}

// blobValue implements blobResolver: a blob's value is decoded once per
// realm, frozen, and shared by the workunits that refer to it.
func (rl *realm) blobValue(h blob.Hash) (goja.Value, error) {
	if el, ok := rl.blobVals[h]; ok {
		rl.blobLRU.MoveToFront(el)
		return el.Value.(*blobValue).v, nil
	}
	data, err := rl.fetchBlob(h)
	if err != nil {
		return nil, err
	}
	// A blob is a document of its own, with its own object indexes.
	d := newDecoder(rl.rt, rl.in, rl, rl)
	v, err := d.decodeValue(data)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h.Short(), err)
	}
	rl.freeze(v, make(map[*goja.Object]bool))
	rl.blobVals[h] = rl.blobLRU.PushFront(&blobValue{hash: h, v: v})
	for rl.blobLRU.Len() > rl.eng.opts.BlobCacheSize {
		old := rl.blobLRU.Back()
		rl.blobLRU.Remove(old)
		delete(rl.blobVals, old.Value.(*blobValue).hash)
	}
	return v, nil
}

// freeze makes a shared blob value read-only where JavaScript allows:
// objects and arrays, deeply. (Maps, Sets and typed arrays cannot be
// frozen; docs/engine.md says so.)
func (rl *realm) freeze(v goja.Value, seen map[*goja.Object]bool) {
	o, ok := v.(*goja.Object)
	if !ok || seen[o] {
		return
	}
	seen[o] = true
	switch rl.in.classify(o) {
	case kindArray:
		n := int(o.Get("length").ToInteger())
		for i := 0; i < n; i++ {
			rl.freeze(o.Get(itoa(i)), seen)
		}
	case kindPlain:
		for _, k := range o.Keys() {
			rl.freeze(o.Get(k), seen)
		}
	default:
		return
	}
	_, _ = rl.in.objectFreeze(goja.Undefined(), o)
}

// makeFunction implements funcMaker: it calls the function's factory with
// the free variables' values as arguments. The factory is compiled once per
// engine and made once per realm; a function without free variables is made
// once per realm and shared.
func (rl *realm) makeFunction(source string, names []string, self []bool, vals []goja.Value, pos funcPos) (*goja.Object, error) {
	var params, lets []string
	var args []goja.Value
	for i, n := range names {
		if self[i] {
			lets = append(lets, n)
		} else {
			params = append(params, n)
			args = append(args, vals[i])
		}
	}
	var b strings.Builder
	b.WriteString("(function (" + strings.Join(params, ", ") + ") {")
	if len(lets) > 0 {
		b.WriteString(" let " + strings.Join(lets, ", ") + ";")
	}
	b.WriteString(" return ")
	for _, n := range lets {
		b.WriteString(n + " = ")
	}
	b.WriteString("(")
	f, err := rl.factory(b.String(), source, "\n); })", names, pos, len(params) == 0 && len(lets) == 0)
	if err != nil {
		return nil, err
	}
	if f.plain != nil {
		return f.plain, nil
	}
	v, err := f.make(goja.Undefined(), args...)
	if err != nil {
		return nil, err
	}
	return rl.checkFunction(v, pos)
}

// makeCyclicFunction implements funcMaker: the factory declares the free
// variables and returns the function with a setter for them.
func (rl *realm) makeCyclicFunction(source string, names []string, pos funcPos) (*goja.Object, func([]goja.Value) error, error) {
	var suffix strings.Builder
	suffix.WriteString("\n), function (" + envParam + ") {")
	for i, n := range names {
		fmt.Fprintf(&suffix, " %s = %s[%d];", n, envParam, i)
	}
	suffix.WriteString(" }]; })")
	prefix := "(function () { let " + strings.Join(names, ", ") + "; return [("
	f, err := rl.factory(prefix, source, suffix.String(), names, pos, false)
	if err != nil {
		return nil, nil, err
	}
	pair, err := f.make(goja.Undefined())
	if err != nil {
		return nil, nil, err
	}
	po := pair.(*goja.Object)
	fn, err := rl.checkFunction(po.Get("0"), pos)
	if err != nil {
		return nil, nil, err
	}
	set, _ := goja.AssertFunction(po.Get("1"))
	return fn, func(vals []goja.Value) error {
		_, err := set(goja.Undefined(), rl.rt.NewArray(toAny(vals)...))
		return err
	}, nil
}

func (rl *realm) checkFunction(v goja.Value, pos funcPos) (*goja.Object, error) {
	if o, ok := v.(*goja.Object); ok {
		if _, ok := goja.AssertFunction(o); ok {
			return o, nil
		}
	}
	return nil, invalid("captured source from %s:%d is %s, not a function", pos.file, pos.line, describe(v))
}

func toAny(vals []goja.Value) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

const envParam = "__riot_env"

// factory returns the realm's factory for prefix+source+suffix, compiling
// it (once per engine) and running it (once per realm) on first use. The
// source is padded so that it sits at its own line and column in its file.
// When plain, the factory takes nothing and its one function is kept.
func (rl *realm) factory(prefix, source, suffix string, names []string, pos funcPos, plain bool) (*factory, error) {
	key := prefix + "\x00" + suffix + "\x00" + pos.file + "\x00" + strconv.Itoa(pos.line) + "\x00" + strconv.Itoa(pos.column) + "\x00" + source
	if f, ok := rl.factories[key]; ok {
		return f, nil
	}
	for _, n := range names {
		if !isIdentifier(n) || n == envParam || reservedWords[n] {
			return nil, invalid("captured function from %s:%d: %q cannot be a free variable's name", pos.file, pos.line, n)
		}
	}
	file := pos.file
	if file == "" {
		file = "fn"
	}
	var b strings.Builder
	b.WriteString(prefix)
	if pos.line > 1 {
		b.WriteString(strings.Repeat("\n", pos.line-1))
		if pos.column > 1 {
			b.WriteString(strings.Repeat(" ", pos.column-1))
		}
	} else if pad := pos.column - 1 - b.Len(); pad > 0 {
		b.WriteString(strings.Repeat(" ", pad))
	}
	b.WriteString(source)
	b.WriteString(suffix)
	prg, err := rl.eng.cache.compile(file, b.String())
	if err != nil {
		return nil, err
	}
	fv, err := rl.rt.RunProgram(prg)
	if err != nil {
		return nil, err
	}
	mk, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, invalid("captured function from %s:%d does not compile to a factory", pos.file, pos.line)
	}
	f := &factory{make: mk}
	if plain {
		v, err := mk(goja.Undefined())
		if err != nil {
			return nil, err
		}
		if f.plain, err = rl.checkFunction(v, pos); err != nil {
			return nil, err
		}
	}
	rl.factories[key] = f
	return f, nil
}

// reservedWords cannot name a variable in strict or sloppy code.
var reservedWords = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true,
	"if": true, "import": true, "in": true, "instanceof": true, "new": true, "null": true,
	"return": true, "super": true, "switch": true, "this": true, "throw": true, "true": true,
	"try": true, "typeof": true, "var": true, "void": true, "while": true, "with": true,
	"let": true, "static": true, "yield": true, "await": true, "arguments": true, "eval": true,
}

// run is one workunit's evaluation: its context, console and timers.
type run struct {
	ctx        context.Context
	gpus       []int  // Request.GPUs: the devices the worker gave the workunit
	workerName string // Request.WorkerName: riot.worker.name, when set
	cancel     context.CancelCauseFunc
	blobs      blob.Source
	console    console
	timers     timers
}
