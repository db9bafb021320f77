package jsgpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"weak"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/gpu"
)

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

// Binding returns the GPU bindings of docs/gpu.md over drv's devices, for
// engine.Options.Bindings (with engine.Options.GPUs = Ordinals(drv)). A nil
// drv means no GPUs: the globals are there, deviceCount() is 0 and every
// request for a device is a RaftError ("deviceResources: no device 0
// among 0"). The caller opens the driver and closes it after the engine;
// the bindings release what each sandbox made when the engine drops it.
func Binding(drv *gpu.Driver) engine.Binding {
	return engine.BindingFunc(func(sb *engine.Sandbox) error { return install(sb, drv) })
}

// Ordinals returns the ordinals of drv's devices, 0 to DeviceCount()-1:
// what riot.worker.gpus lists for a workunit given no devices. It is nil
// for a nil driver or one without devices.
func Ordinals(drv *gpu.Driver) []int {
	if drv == nil {
		return nil
	}
	var all []int
	for i := range drv.DeviceCount() {
		all = append(all, i)
	}
	return all
}

// gpuBinding is one sandbox's GPU globals and what they hold: the default
// resources per device, and weak references to every resources object
// the sandbox made, which are released when the sandbox is dropped.
type gpuBinding struct {
	sb  *engine.Sandbox
	rt  *goja.Runtime
	in  *jsvalue.Intrinsics
	drv *gpu.Driver // nil: no GPUs

	raftError                       goja.Constructor
	resProto, arrProto, kernelProto *goja.Object

	defaults map[int]*resHandle // currentDeviceResources, by device
	made     []weak.Pointer[gpu.Resources]
	pruned   int // len(made) after the last pruning
}

// install installs the GPU globals (see docs/gpu.md) and registers the
// release of the sandbox's resources when the sandbox is dropped.
func install(sb *engine.Sandbox, drv *gpu.Driver) error {
	b := &gpuBinding{sb: sb, rt: sb.Runtime(), in: sb.Intrinsics(), drv: drv, defaults: make(map[int]*resHandle)}
	v, err := gpuClassesScript.Run(b.rt)
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
		if err := b.rt.Set(g.name, g.v); err != nil {
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
		if err := b.rt.Set(g.name, b.native(g.name, g.v)); err != nil {
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
		if _, err := b.in.ObjectFreeze(goja.Undefined(), o); err != nil {
			return err
		}
	}
	sb.OnClose(b.close)
	return nil
}

// close releases every resources object the sandbox made that is still
// open, the defaults included; their arrays go with them.
func (b *gpuBinding) close() {
	for _, w := range b.made {
		if r := w.Value(); r != nil {
			if err := r.Close(); err != nil {
				b.sb.Logger().Warn("engine: releasing a dropped runtime's GPU resources", "device", r.Device(), "error", err)
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
func (b *gpuBinding) ctx() context.Context { return b.sb.Context() }

// fail throws err into the script as the error of the procedure name:
// a *gpu.Error as a RaftError, a JavaScript exception as itself. A call
// that ended because the workunit was stopped (time limit, interrupt)
// interrupts the script instead, as sleep does. It never returns.
func (b *gpuBinding) fail(name string, err error) {
	var (
		ex *goja.Exception
		ie *goja.InterruptedError
		so *goja.StackOverflowError
		ge *gpu.Error
	)
	if errors.As(err, &ie) || errors.As(err, &so) {
		panic(err) // uncatchable: goes on to the workunit's end
	}
	if ctx := b.ctx(); ctx.Err() != nil {
		b.sb.Interrupt(context.Cause(ctx))
		panic(stopped{})
	}
	switch {
	case errors.As(err, &ex):
		panic(ex)
	case errors.As(err, &ge):
		panic(b.raft(name, ge))
	}
	b.sb.Throw("Error", "%s: %v", name, err)
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
	o := b.rt.ToValue(guard(f)).(*goja.Object)
	if err := o.DefineDataProperty("name", b.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
	return o
}

// raft returns the RaftError of ge, named after the procedure name:
// "deviceResources: no device 4 among 1".
func (b *gpuBinding) raft(name string, ge *gpu.Error) *goja.Object {
	rt := b.rt
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
// the worker gave the running workunit (engine.Request.GPUs,
// riot.worker.gpus[0]), so that a workunit submitted with {gpus: n}
// follows its placement without naming a device; the host's first device
// when the workunit was given none, and 0 when there are none.
func (b *gpuBinding) defaultDevice() int {
	if gpus := b.sb.GPUs(); len(gpus) > 0 {
		return gpus[0]
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
	if !ok || b.in.Classify(o) != jsvalue.KindPlain || b.handle(o) != nil {
		b.sb.Throw("TypeError", "%s: options must be an object, not %s", name, b.describe(v))
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
		b.sb.Throw("TypeError", "%s: %s must be an integer, not %s", name, what, b.describe(v))
	}
	f := v.ToFloat()
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		b.sb.Throw("TypeError", "%s: %s must be an integer, not %s", name, what, inspect.FormatNumber(f))
	}
	if math.Abs(f) > 1<<53 {
		b.sb.Throw("RangeError", "%s: %s is out of range: %s", name, what, inspect.FormatNumber(f))
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
	b.sb.Throw("TypeError", "%s: %s must be a DeviceResources (from deviceResources or currentDeviceResources), not %s", name, what, b.describe(v))
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
				b.sb.Throw("RangeError", "%s: options.resources are on device %d, options.device is %d", name, h.r.Device(), d)
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
		return h.b.rt.ToValue(h.r.Device())
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
	h.obj = b.rt.NewDynamicObject(h)
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

// current returns the sandbox's default resources on device, making them on
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
	return b.rt.ToValue(b.count())
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
	o := b.rt.NewObject()
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
	return b.rt.ToValue(h.r.Device())
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
	h := b.resArg(name, "the first argument", call.Argument(0))
	fn, ok := goja.AssertFunction(call.Argument(1))
	if !ok {
		b.sb.Throw("TypeError", "%s: the second argument must be a function, not %s", name, b.describe(call.Argument(1)))
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
	v, err := b.in.PromiseThen(p, b.native("", onValue), b.native("", onError))
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
	return b.rt.ToValue(s)
}

func (b *gpuBinding) resourcesReleased(call goja.FunctionCall) goja.Value {
	h := b.resArg("DeviceResources.prototype.released", "this", call.This)
	return b.rt.ToValue(h.r.Closed())
}

// gpuClassesScript is gpuClassesJS, compiled once.
var gpuClassesScript = jsvalue.NewScript(gpuClassesJS)
