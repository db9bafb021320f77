package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"weak"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/gpu"
)

// The JavaScript side of riot's GPU support (docs/gpu.md, "JavaScript"):
// the seed's procedures in camelCase (deviceCount, deviceResources,
// resourcesDevice, currentDeviceResources, resourcesSync,
// withDeviceResources, RaftError), and device arrays, matrix products and
// kernels on a resources' stream. Every call that can wait passes the
// running workunit's context to package gpu, so a time limit or an
// interrupt ends the wait. Every *gpu.Error is thrown as a RaftError whose
// message names the procedure the script called.

// gpuClassesJS makes the classes of the GPU bindings. RaftError is a real
// Error subclass; the other three only give their objects a name, a
// prototype and instanceof: their objects are made by the Go bindings,
// and calling them throws.
const gpuClassesJS = `(function () {
	'use strict';
	class RaftError extends Error {
		constructor(message, options) {
			super(message);
			const o = Object(options ?? {});
			const kind = o.kind === undefined ? 'logic' : o.kind;
			if (kind !== 'logic' && kind !== 'out-of-memory') {
				throw new TypeError("RaftError: kind must be 'logic' or 'out-of-memory', not " + String(kind));
			}
			this.kind = kind;
			this.op = o.op === undefined ? '' : String(o.op);
			this.code = o.code === undefined ? 0 : Number(o.code);
		}
	}
	Object.defineProperty(RaftError.prototype, 'name', {value: 'RaftError', writable: true, configurable: true});
	const made = (name, how) => {
		const C = function () {
			throw new TypeError(name + ' objects are made by ' + how + ', not by a constructor');
		};
		Object.defineProperty(C, 'name', {value: name});
		Object.defineProperty(C.prototype, Symbol.toStringTag, {value: name, configurable: true});
		return C;
	};
	return [
		RaftError,
		made('DeviceResources', 'deviceResources({device}) and currentDeviceResources(device)'),
		made('DeviceArray', 'deviceArray(data, options) and deviceZeros(shape, options)'),
		made('DeviceKernel', 'compileKernel(source, name, options)'),
	];
})()`

// workerGPUs returns the getter of riot.worker.gpus: a frozen array of the
// device ordinals that the worker gave the running workunit
// (Request.GPUs), or of every device of Options.GPU when the request gave
// none. riot.worker is made once per realm, so the array is made at call
// time, once per workunit.
func workerGPUs(rl *realm) func(goja.FunctionCall) goja.Value {
	var (
		last *run
		arr  *goja.Object
	)
	return func(goja.FunctionCall) goja.Value {
		if rl.cur != nil && rl.cur == last {
			return arr
		}
		gpus := rl.gpus()
		items := make([]any, len(gpus))
		for i, g := range gpus {
			items[i] = g
		}
		a := rl.rt.NewArray(items...)
		if _, err := rl.in.ObjectFreeze(goja.Undefined(), a); err != nil {
			panic(err)
		}
		last, arr = rl.cur, a
		return a
	}
}

// gpus returns the devices of the running workunit: Request.GPUs, or
// every device of Options.GPU when the request gave none.
func (rl *realm) gpus() []int {
	if rl.cur != nil && len(rl.cur.gpus) > 0 {
		return rl.cur.gpus
	}
	var all []int
	if rl.eng.opts.GPU != nil {
		for i := range rl.eng.opts.GPU.DeviceCount() {
			all = append(all, i)
		}
	}
	return all
}

// gpuBinding is one realm's GPU globals and what they hold: the default
// resources per device, and weak references to every resources object
// the realm made, which are released when the realm is dropped.
type gpuBinding struct {
	rl  *realm
	drv *gpu.Driver // nil: no GPUs

	raftError                       goja.Constructor
	resProto, arrProto, kernelProto *goja.Object

	defaults map[int]*resHandle // currentDeviceResources, by device
	made     []weak.Pointer[gpu.Resources]
	pruned   int // len(made) after the last pruning
}

// bindGPU installs the GPU globals (see docs/gpu.md) and registers the
// release of the realm's resources when the realm is dropped.
func bindGPU(rl *realm) error {
	b := &gpuBinding{rl: rl, drv: rl.eng.opts.GPU, defaults: make(map[int]*resHandle)}
	v, err := rl.rt.RunScript(jsvalue.InternalFile, gpuClassesJS)
	if err != nil {
		return fmt.Errorf("engine: gpu classes: %w", err)
	}
	classes := v.(*goja.Object)
	ctorAt := func(i int) *goja.Object { return classes.Get(jsvalue.Index(i)).(*goja.Object) }
	raft, resCtor, arrCtor, kernelCtor := ctorAt(0), ctorAt(1), ctorAt(2), ctorAt(3)
	b.raftError, _ = goja.AssertConstructor(raft)
	b.resProto = resCtor.Get("prototype").(*goja.Object)
	b.arrProto = arrCtor.Get("prototype").(*goja.Object)
	b.kernelProto = kernelCtor.Get("prototype").(*goja.Object)

	type fn = func(goja.FunctionCall) goja.Value
	type named[T any] struct {
		name string
		v    T
	}
	// Slices, not maps, so that every runtime lists its globals in one
	// order.
	for _, g := range []named[*goja.Object]{
		{"RaftError", raft}, {"DeviceResources", resCtor}, {"DeviceArray", arrCtor}, {"DeviceKernel", kernelCtor},
	} {
		if err := rl.rt.Set(g.name, g.v); err != nil {
			return err
		}
	}
	for _, g := range []named[fn]{
		{"deviceCount", b.deviceCount},
		{"deviceInfo", b.deviceInfo},
		{"deviceResources", b.deviceResources},
		{"resourcesDevice", b.resourcesDevice},
		{"currentDeviceResources", b.currentDeviceResources},
		{"resourcesSync", b.resourcesSync},
		{"resourcesRelease", b.resourcesRelease},
		{"withDeviceResources", b.withDeviceResources},
		{"deviceArray", b.deviceArray},
		{"deviceZeros", b.deviceZeros},
		{"arrayToHost", b.arrayToHost},
		{"arrayFromHost", b.arrayFromHost},
		{"arrayFree", b.arrayFree},
		{"matMul", b.matMul},
		{"gemm", b.gemm},
		{"compileKernel", b.compileKernel},
		{"launchKernel", b.launchKernel},
	} {
		if err := rl.rt.Set(g.name, b.native(g.name, g.v)); err != nil {
			return err
		}
	}
	protos := []struct {
		proto   *goja.Object
		methods []named[fn]
		getters []named[fn]
	}{
		{b.resProto, []named[fn]{{"toString", b.resourcesString}}, []named[fn]{{"released", b.resourcesReleased}}},
		{b.arrProto,
			[]named[fn]{{"toHost", b.arrayToHostMethod}, {"fromHost", b.arrayFromHostMethod}, {"free", b.arrayFreeMethod}, {"toString", b.arrayString}},
			[]named[fn]{{"length", b.arrayLength}, {"device", b.arrayDevice}, {"resources", b.arrayResources}, {"freed", b.arrayFreed}}},
		{b.kernelProto, []named[fn]{{"toString", b.kernelString}}, []named[fn]{{"source", b.kernelSource}, {"options", b.kernelOptions}}},
	}
	for _, p := range protos {
		for _, m := range p.methods {
			if err := p.proto.DefineDataProperty(m.name, b.native(m.name, m.v), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				return err
			}
		}
		for _, g := range p.getters {
			if err := p.proto.DefineAccessorProperty(g.name, b.native("get "+g.name, g.v), nil, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				return err
			}
		}
	}
	for _, o := range []*goja.Object{resCtor, arrCtor, kernelCtor, b.resProto, b.arrProto, b.kernelProto} {
		if _, err := rl.in.ObjectFreeze(goja.Undefined(), o); err != nil {
			return err
		}
	}
	rl.closers = append(rl.closers, b.close)
	return nil
}

// close releases every resources object the realm made that is still
// open, the defaults included; their arrays go with them.
func (b *gpuBinding) close() {
	for _, w := range b.made {
		if r := w.Value(); r != nil {
			if err := r.Close(); err != nil {
				b.rl.eng.opts.Logger.Warn("engine: releasing a dropped runtime's GPU resources", "device", r.Device(), "error", err)
			}
		}
	}
	b.made, b.pruned = nil, 0
	clear(b.defaults)
}

// track remembers r for close, weakly: resources that a script drops are
// still released by the collector (package gpu's backstop).
func (b *gpuBinding) track(r *gpu.Resources) {
	if len(b.made) >= 2*b.pruned+16 {
		b.made = slices.DeleteFunc(b.made, func(w weak.Pointer[gpu.Resources]) bool {
			r := w.Value()
			return r == nil || r.Closed()
		})
		b.pruned = len(b.made)
	}
	b.made = append(b.made, weak.Make(r))
}

// ctx is the running workunit's context: its time limit, its interrupt
// and its caller's context end every wait of a GPU call.
func (b *gpuBinding) ctx() context.Context {
	if b.rl.cur != nil {
		return b.rl.cur.ctx
	}
	return context.Background()
}

// fail throws err into the script as the error of the procedure name:
// a *gpu.Error as a RaftError, a JavaScript exception as itself. A call
// that ended because the workunit was stopped (time limit, interrupt)
// interrupts the script instead, as sleep does. It never returns.
func (b *gpuBinding) fail(name string, err error) {
	rl := b.rl
	var (
		ex *goja.Exception
		ie *goja.InterruptedError
		so *goja.StackOverflowError
		ge *gpu.Error
	)
	if errors.As(err, &ie) || errors.As(err, &so) {
		panic(err) // uncatchable: goes on to the workunit's end
	}
	if rl.cur != nil && rl.cur.ctx.Err() != nil {
		rl.interrupt(context.Cause(rl.cur.ctx))
		panic(stopped{})
	}
	switch {
	case errors.As(err, &ex):
		panic(ex)
	case errors.As(err, &ge):
		panic(b.raft(name, ge))
	}
	rl.throw("Error", "%s: %v", name, err)
}

// stopped is the panic of a binding whose wait ended because the
// workunit was stopped; guard turns it into a return, after which the
// interrupt that fail set takes effect at the script's next instruction.
// (An exception thrown instead could unwind to the workunit's end before
// the interrupt is seen, and the workunit would fail with it rather than
// with its time limit.)
type stopped struct{}

// guard wraps a binding so that fail's stopped panic returns undefined.
func guard(f func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) (ret goja.Value) {
		defer func() {
			if x := recover(); x != nil {
				if _, ok := x.(stopped); !ok {
					panic(x)
				}
				ret = goja.Undefined()
			}
		}()
		return f(call)
	}
}

// native makes a guarded Go function with the given name, which stack
// traces show.
func (b *gpuBinding) native(name string, f func(goja.FunctionCall) goja.Value) *goja.Object {
	o := b.rl.rt.ToValue(guard(f)).(*goja.Object)
	if err := o.DefineDataProperty("name", b.rl.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
	return o
}

// raft returns the RaftError of ge, named after the procedure name:
// "deviceResources: no device 4 among 1".
func (b *gpuBinding) raft(name string, ge *gpu.Error) *goja.Object {
	rt := b.rl.rt
	msg := ge.Error()
	if ge.Op != name {
		msg = name + strings.TrimPrefix(msg, ge.Op)
	}
	opts := rt.NewObject()
	_ = opts.Set("kind", ge.Kind.String())
	_ = opts.Set("op", name)
	_ = opts.Set("code", ge.Code)
	obj, err := b.raftError(nil, rt.ToValue(msg), opts)
	if err != nil {
		panic(err)
	}
	return obj
}

// noDriver is the error of asking for a device when the engine has no
// driver at all: the same message a driver with no devices gives.
func noDriver(op string, device int) error {
	return &gpu.Error{Op: op, Kind: gpu.Logic, Err: fmt.Errorf("no device %d among 0", device)}
}

// defaultDevice is the device of a call that names none: the first device
// the worker gave the running workunit (Request.GPUs, riot.worker.gpus[0]),
// so that a workunit submitted with {gpus: n} follows its placement without
// naming a device; 0 when the workunit was given none.
func (b *gpuBinding) defaultDevice() int {
	if b.rl.cur != nil && len(b.rl.cur.gpus) > 0 {
		return b.rl.cur.gpus[0]
	}
	return 0
}

func (b *gpuBinding) count() int {
	if b.drv == nil {
		return 0
	}
	return b.drv.DeviceCount()
}

// --- arguments ---

// optionsArg returns an options argument as an object, or nil when it is
// undefined or null.
func (b *gpuBinding) optionsArg(name string, v goja.Value) *goja.Object {
	if isNothing(v) {
		return nil
	}
	o, ok := v.(*goja.Object)
	if !ok || b.rl.in.Classify(o) != jsvalue.KindPlain || b.handle(o) != nil {
		b.rl.throw("TypeError", "%s: options must be an object, not %s", name, b.describe(v))
	}
	return o
}

// field returns an option, undefined when there are no options.
func field(o *goja.Object, key string) goja.Value {
	if o == nil {
		return goja.Undefined()
	}
	if v := o.Get(key); v != nil {
		return v
	}
	return goja.Undefined()
}

func isNothing(v goja.Value) bool {
	return v == nil || goja.IsUndefined(v) || goja.IsNull(v)
}

// intArg reads an integer argument or option; undefined gives def.
func (b *gpuBinding) intArg(name, what string, v goja.Value, def int) int {
	if v == nil || goja.IsUndefined(v) {
		return def
	}
	if !goja.IsNumber(v) {
		b.rl.throw("TypeError", "%s: %s must be an integer, not %s", name, what, b.describe(v))
	}
	f := v.ToFloat()
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		b.rl.throw("TypeError", "%s: %s must be an integer, not %s", name, what, inspect.FormatNumber(f))
	}
	if math.Abs(f) > 1<<53 {
		b.rl.throw("RangeError", "%s: %s is out of range: %s", name, what, inspect.FormatNumber(f))
	}
	return int(f)
}

// handle returns the Go object behind one of the bindings' objects, or nil.
func (b *gpuBinding) handle(v goja.Value) any {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil
	}
	switch h := o.Export().(type) {
	case *resHandle:
		if h.b == b {
			return h
		}
	case *arrHandle:
		if h.res.b == b {
			return h
		}
	case *kernelHandle:
		if h.b == b {
			return h
		}
	}
	return nil
}

// describe names a value's type for messages, the bindings' objects by
// their class.
func (b *gpuBinding) describe(v goja.Value) string {
	switch b.handle(v).(type) {
	case *resHandle:
		return "a DeviceResources"
	case *arrHandle:
		return "a DeviceArray"
	case *kernelHandle:
		return "a DeviceKernel"
	}
	return jsvalue.Describe(v)
}

// resArg reads a DeviceResources argument.
func (b *gpuBinding) resArg(name, what string, v goja.Value) *resHandle {
	if h, ok := b.handle(v).(*resHandle); ok {
		return h
	}
	b.rl.throw("TypeError", "%s: %s must be a DeviceResources (from deviceResources or currentDeviceResources), not %s", name, what, b.describe(v))
	return nil
}

// resourcesOption returns the resources named by options.resources, or
// else the default resources of options.device (defaultDevice when
// absent).
func (b *gpuBinding) resourcesOption(name string, o *goja.Object) *resHandle {
	rv, dv := field(o, "resources"), field(o, "device")
	if !goja.IsUndefined(rv) {
		h := b.resArg(name, "options.resources", rv)
		if !goja.IsUndefined(dv) {
			if d := b.intArg(name, "options.device", dv, 0); d != h.r.Device() {
				b.rl.throw("RangeError", "%s: options.resources are on device %d, options.device is %d", name, h.r.Device(), d)
			}
		}
		return h
	}
	return b.current(name, b.intArg(name, "options.device", dv, b.defaultDevice()))
}

// --- resources ---

// resHandle is a DeviceResources: a *gpu.Resources and its JavaScript
// object, which shows one property, device.
type resHandle struct {
	b   *gpuBinding
	r   *gpu.Resources
	obj *goja.Object
}

// Get implements goja.DynamicObject.
func (h *resHandle) Get(key string) goja.Value {
	if key == "device" {
		return h.b.rl.rt.ToValue(h.r.Device())
	}
	return nil
}

// Set implements goja.DynamicObject: the object is read-only.
func (h *resHandle) Set(string, goja.Value) bool { return false }

// Has implements goja.DynamicObject.
func (h *resHandle) Has(key string) bool { return key == "device" }

// Delete implements goja.DynamicObject.
func (h *resHandle) Delete(key string) bool { return key != "device" }

// Keys implements goja.DynamicObject.
func (h *resHandle) Keys() []string { return []string{"device"} }

func (b *gpuBinding) wrapResources(r *gpu.Resources) *resHandle {
	h := &resHandle{b: b, r: r}
	h.obj = b.rl.rt.NewDynamicObject(h)
	if err := h.obj.SetPrototype(b.resProto); err != nil {
		panic(err)
	}
	b.track(r)
	return h
}

// newResources makes resources on device for the procedure name.
func (b *gpuBinding) newResources(name string, device int) *resHandle {
	if b.drv == nil {
		b.fail(name, noDriver(name, device))
	}
	r, err := b.drv.NewResources(b.ctx(), device)
	if err != nil {
		b.fail(name, err)
	}
	return b.wrapResources(r)
}

// current returns the realm's default resources on device, making them on
// first use and again after they were released.
func (b *gpuBinding) current(name string, device int) *resHandle {
	if h := b.defaults[device]; h != nil && !h.r.Closed() {
		return h
	}
	h := b.newResources(name, device)
	b.defaults[device] = h
	return h
}

func (b *gpuBinding) deviceCount(goja.FunctionCall) goja.Value {
	return b.rl.rt.ToValue(b.count())
}

func (b *gpuBinding) deviceInfo(call goja.FunctionCall) goja.Value {
	const name = "deviceInfo"
	d := b.intArg(name, "device", call.Argument(0), b.defaultDevice())
	if b.drv == nil {
		b.fail(name, noDriver(name, d))
	}
	info, err := b.drv.Device(d)
	if err != nil {
		b.fail(name, err)
	}
	o := b.rl.rt.NewObject()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"device", info.Ordinal}, {"name", info.Name}, {"totalMemory", float64(info.TotalMemory)},
		{"major", info.Major}, {"minor", info.Minor}, {"memoryPools", info.MemoryPools},
	} {
		_ = o.Set(kv.k, kv.v)
	}
	return o
}

func (b *gpuBinding) deviceResources(call goja.FunctionCall) goja.Value {
	const name = "deviceResources"
	o := b.optionsArg(name, call.Argument(0))
	d := b.intArg(name, "options.device", field(o, "device"), b.defaultDevice())
	return b.newResources(name, d).obj
}

func (b *gpuBinding) resourcesDevice(call goja.FunctionCall) goja.Value {
	h := b.resArg("resourcesDevice", "the argument", call.Argument(0))
	return b.rl.rt.ToValue(h.r.Device())
}

func (b *gpuBinding) currentDeviceResources(call goja.FunctionCall) goja.Value {
	const name = "currentDeviceResources"
	return b.current(name, b.intArg(name, "device", call.Argument(0), b.defaultDevice())).obj
}

func (b *gpuBinding) resourcesSync(call goja.FunctionCall) goja.Value {
	const name = "resourcesSync"
	h := b.resArg(name, "the argument", call.Argument(0))
	if err := h.r.Sync(b.ctx()); err != nil {
		b.fail(name, err)
	}
	return goja.Undefined()
}

func (b *gpuBinding) resourcesRelease(call goja.FunctionCall) goja.Value {
	const name = "resourcesRelease"
	h := b.resArg(name, "the argument", call.Argument(0))
	if err := h.r.Close(); err != nil {
		b.fail(name, err)
	}
	return goja.Undefined()
}

// withDeviceResources calls fn(r) and releases r when fn returns or
// throws, or, when fn returns a promise, when the promise settles. It
// returns fn's value (or a promise of it) and rethrows what fn threw.
func (b *gpuBinding) withDeviceResources(call goja.FunctionCall) goja.Value {
	const name = "withDeviceResources"
	rl := b.rl
	h := b.resArg(name, "the first argument", call.Argument(0))
	fn, ok := goja.AssertFunction(call.Argument(1))
	if !ok {
		rl.throw("TypeError", "%s: the second argument must be a function, not %s", name, b.describe(call.Argument(1)))
	}
	released := false
	defer func() {
		if !released { // a Go panic on its way through
			_ = h.r.Close()
		}
	}()
	ret, fnErr := fn(goja.Undefined(), h.obj)
	if p, ok := ret.(*goja.Object); ok && fnErr == nil && jsvalue.IsPromise(p) {
		released = true // by the promise
		return b.releaseWhenSettled(h, p)
	}
	released = true
	closeErr := h.r.Close()
	if fnErr != nil {
		b.fail(name, fnErr)
	}
	if closeErr != nil {
		b.fail(name, closeErr)
	}
	return ret
}

// releaseWhenSettled returns p.then(release and pass the value on,
// release and rethrow).
func (b *gpuBinding) releaseWhenSettled(h *resHandle, p *goja.Object) goja.Value {
	release := func() {
		if err := h.r.Close(); err != nil {
			b.fail("withDeviceResources", err)
		}
	}
	onValue := func(call goja.FunctionCall) goja.Value {
		release()
		return call.Argument(0)
	}
	onError := func(call goja.FunctionCall) goja.Value {
		release()
		panic(call.Argument(0))
	}
	v, err := b.rl.in.PromiseThen(p, b.native("", onValue), b.native("", onError))
	if err != nil {
		_ = h.r.Close()
		b.fail("withDeviceResources", err)
	}
	return v
}

func (b *gpuBinding) resourcesString(call goja.FunctionCall) goja.Value {
	h := b.resArg("DeviceResources.prototype.toString", "this", call.This)
	s := fmt.Sprintf("[DeviceResources device %d]", h.r.Device())
	if h.r.Closed() {
		s = fmt.Sprintf("[DeviceResources device %d, released]", h.r.Device())
	}
	return b.rl.rt.ToValue(s)
}

func (b *gpuBinding) resourcesReleased(call goja.FunctionCall) goja.Value {
	h := b.resArg("DeviceResources.prototype.released", "this", call.This)
	return b.rl.rt.ToValue(h.r.Closed())
}
