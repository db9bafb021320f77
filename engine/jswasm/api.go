package jswasm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/dop251/goja"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/riot-go/riot/engine"
)

// pageSize is the size of a WebAssembly memory page.
const pageSize = 65536

// maxPages is the most pages a 32-bit memory has.
const maxPages = 65536

// classesProgram is classesJS compiled, once per process: a program
// compiled per sandbox was kept by the classes it made, in every idle
// realm. (Its name is "", as rt.RunString gave it.)
var classesProgram = sync.OnceValues(func() (*goja.Program, error) { return goja.Compile("", classesJS, false) })

// classesJS makes the error classes, real Error subclasses.
const classesJS = `(function () {
	'use strict';
	const make = (name) => {
		const C = ({[name]: class extends Error {}})[name];
		Object.defineProperty(C.prototype, 'name', {value: name, writable: true, configurable: true});
		return C;
	};
	return [make('CompileError'), make('LinkError'), make('RuntimeError')];
})()`

// errJSThrew unwinds wasm when a JavaScript import threw: the exception
// itself waits in wasmSandbox.pending.
var errJSThrew = errors.New("a JavaScript import threw")

// wasmSandbox is one sandbox's WebAssembly global and what it made.
type wasmSandbox struct {
	b  *Binding
	sb *engine.Sandbox
	rt *goja.Runtime

	// key is the hidden symbol by which the objects of this API hold
	// their Go side.
	key *goja.Symbol

	moduleProto, instanceProto, memoryProto, globalProto *goja.Object
	compileError, linkError, runtimeError                *goja.Object

	// pending is the exception of a JavaScript import that threw, thrown
	// again once wasm has unwound.
	pending any

	// mems are the memories JavaScript sees, by wazero's memory, so that
	// a memory has one Memory object; their buffers are checked after
	// every call into wasm (a grow in wasm detaches the old buffer).
	memMu sync.Mutex
	mems  map[api.Memory]weak.Pointer[memoryObj]

	// live are the wazero modules this sandbox made and has not closed:
	// closed with the sandbox, or when JavaScript no longer holds them.
	mu     sync.Mutex
	live   map[api.Module]struct{}
	closed bool
}

// moduleObj is a WebAssembly.Module's Go side.
type moduleObj struct{ c *compiled }

// instanceObj is a WebAssembly.Instance's Go side: its module, the wazero
// modules it is made of (its own, its import shims and host functions),
// and the instances whose exports it imported, which must outlive it.
type instanceObj struct {
	c       *compiled
	mod     api.Module
	exports *goja.Object
	keep    []any
}

// funcObj is an exported function's Go side.
type funcObj struct {
	owner *instanceObj
	mod   api.Module
	name  string
	fn    api.Function
	typ   funcType
	stack []uint64
	busy  bool
}

// memoryObj is a WebAssembly.Memory's Go side.
type memoryObj struct {
	owner any // what holds the memory's module alive: an *instanceObj or a holder
	mod   api.Module
	name  string
	mem   api.Memory
	lim   limits
	obj   *goja.Object
	ab    goja.ArrayBuffer
	has   bool
	abLen int
	abPtr *byte
}

// globalObj is a WebAssembly.Global's Go side.
type globalObj struct {
	owner any
	mod   api.Module
	name  string
	g     api.Global
	typ   globalType
}

// holder is a module riot made for a Memory or a Global made in
// JavaScript.
type holder struct{ mod api.Module }

func install(sb *engine.Sandbox, b *Binding) error {
	rt := sb.Runtime()
	ws := &wasmSandbox{b: b, sb: sb, rt: rt, key: goja.NewSymbol("riot.wasm"),
		mems: map[api.Memory]weak.Pointer[memoryObj]{}, live: map[api.Module]struct{}{}}
	sb.OnClose(ws.close)
	prg, err := classesProgram()
	if err != nil {
		return fmt.Errorf("jswasm: the error classes: %w", err)
	}
	v, err := rt.RunProgram(prg)
	if err != nil {
		return fmt.Errorf("jswasm: the error classes: %w", err)
	}
	var classes []*goja.Object
	if err := rt.ExportTo(v, &classes); err != nil || len(classes) != 3 {
		return fmt.Errorf("jswasm: the error classes gave %v", v)
	}
	ws.compileError, ws.linkError, ws.runtimeError = classes[0], classes[1], classes[2]

	W := rt.NewObject()
	if err := W.DefineDataPropertySymbol(goja.SymToStringTag, rt.ToValue("WebAssembly"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	if err := sb.SetFuncs(W, []engine.Func{
		{Name: "validate", Fn: ws.validate},
		{Name: "compile", Fn: ws.compileAsync},
		{Name: "instantiate", Fn: ws.instantiateAsync},
	}); err != nil {
		return err
	}
	ctor := func(name string, fn func(goja.ConstructorCall) *goja.Object, methods []engine.Func) (*goja.Object, *goja.Object, error) {
		C := rt.ToValue(fn).(*goja.Object)
		if err := C.DefineDataProperty("name", rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return nil, nil, err
		}
		P := rt.NewObject()
		if err := C.DefineDataProperty("prototype", P, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
			return nil, nil, err
		}
		if err := P.DefineDataProperty("constructor", C, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return nil, nil, err
		}
		if err := P.DefineDataPropertySymbol(goja.SymToStringTag, rt.ToValue("WebAssembly."+name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return nil, nil, err
		}
		if err := sb.SetFuncs(P, methods); err != nil {
			return nil, nil, err
		}
		return C, P, W.DefineDataProperty(name, C, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	var Module *goja.Object
	if Module, ws.moduleProto, err = ctor("Module", ws.newModule, nil); err != nil {
		return err
	}
	if err := sb.SetFuncs(Module, []engine.Func{
		{Name: "imports", Fn: ws.moduleImports},
		{Name: "exports", Fn: ws.moduleExports},
	}); err != nil {
		return err
	}
	var Instance *goja.Object
	if Instance, ws.instanceProto, err = ctor("Instance", ws.newInstance, nil); err != nil {
		return err
	}
	_ = Instance
	if _, ws.memoryProto, err = ctor("Memory", ws.newMemory, []engine.Func{{Name: "grow", Fn: ws.memoryGrow}}); err != nil {
		return err
	}
	if err := ws.accessor(ws.memoryProto, "buffer", ws.memoryBuffer, nil); err != nil {
		return err
	}
	if _, ws.globalProto, err = ctor("Global", ws.newGlobal, []engine.Func{{Name: "valueOf", Fn: ws.globalGet}}); err != nil {
		return err
	}
	if err := ws.accessor(ws.globalProto, "value", ws.globalGet, ws.globalSet); err != nil {
		return err
	}
	if err := ws.accessor(ws.instanceProto, "exports", func(call goja.FunctionCall) goja.Value {
		return ws.instanceOf(call.This).exports
	}, nil); err != nil {
		return err
	}
	for _, e := range []struct {
		name string
		C    *goja.Object
	}{{"CompileError", ws.compileError}, {"LinkError", ws.linkError}, {"RuntimeError", ws.runtimeError}} {
		if err := W.DefineDataProperty(e.name, e.C, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	return rt.GlobalObject().DefineDataProperty("WebAssembly", W, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// accessor defines an accessor property on obj.
func (ws *wasmSandbox) accessor(obj *goja.Object, name string, get, set func(goja.FunctionCall) goja.Value) error {
	g := ws.rt.ToValue(get)
	var s goja.Value
	if set != nil {
		s = ws.rt.ToValue(set)
	}
	return obj.DefineAccessorProperty(name, g, s, goja.FLAG_TRUE, goja.FLAG_TRUE)
}

// close closes what the sandbox made (the engine dropped it).
func (ws *wasmSandbox) close() {
	ws.mu.Lock()
	mods := ws.live
	ws.live, ws.closed = nil, true
	ws.mu.Unlock()
	for m := range mods {
		closeModule(m)
	}
}

// track records modules the sandbox made, to be closed with it, and
// closes them when owner is no longer reachable.
func (ws *wasmSandbox) track(owner any, mods ...api.Module) {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		for _, m := range mods {
			closeModule(m)
		}
		return
	}
	for _, m := range mods {
		ws.live[m] = struct{}{}
	}
	ws.mu.Unlock()
	release := func(mods []api.Module) {
		ws.mu.Lock()
		for _, m := range mods {
			delete(ws.live, m)
		}
		ws.mu.Unlock()
		for _, m := range mods {
			closeModule(m)
		}
		if ws.b.onRelease != nil {
			ws.b.onRelease(len(mods))
		}
	}
	switch o := owner.(type) {
	case *instanceObj:
		runtime.AddCleanup(o, release, mods)
	case *holder:
		runtime.AddCleanup(o, release, mods)
	}
}

// closeModule closes m without freeing its memory. A module that imports
// a memory holds the exporter's memory itself, and wazero frees a memory
// (drops riot's allocator from it, racing with any other close of the
// same memory) when any module that holds it closes: an instance dropped
// while its memory's Memory object lives would leave that memory growing
// uncounted. Memories are riot's Go slices (see allocator), which the
// garbage collector frees once no module or buffer refers to them, so m
// lets go of its memory before it closes. (m's MemoryInstance is an
// exported field of wazero's module type, set here through reflection.)
func closeModule(m api.Module) {
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("MemoryInstance"); f.IsValid() && f.CanSet() {
			f.SetZero()
		}
	}
	_ = m.Close(context.Background())
}

// throwClass throws a new instance of class C with message.
func (ws *wasmSandbox) throwClass(C *goja.Object, format string, args ...any) {
	e, err := ws.rt.New(C, ws.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	panic(e)
}

// hide puts the Go side of a JavaScript object on it.
func (ws *wasmSandbox) hide(obj *goja.Object, v any) {
	if err := obj.DefineDataPropertySymbol(ws.key, ws.rt.ToValue(v), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
}

// hidden returns the Go side of v, or nil.
func (ws *wasmSandbox) hidden(v goja.Value) any {
	obj, ok := v.(*goja.Object)
	if !ok {
		return nil
	}
	h := obj.GetSymbol(ws.key)
	if h == nil {
		return nil
	}
	return h.Export()
}

func (ws *wasmSandbox) moduleOf(v goja.Value, what string) *moduleObj {
	if m, ok := ws.hidden(v).(*moduleObj); ok {
		return m
	}
	panic(ws.rt.NewTypeError("%s: not a WebAssembly.Module", what))
}

func (ws *wasmSandbox) instanceOf(v goja.Value) *instanceObj {
	if m, ok := ws.hidden(v).(*instanceObj); ok {
		return m
	}
	panic(ws.rt.NewTypeError("not a WebAssembly.Instance"))
}

func (ws *wasmSandbox) memoryOf(v goja.Value) *memoryObj {
	if m, ok := ws.hidden(v).(*memoryObj); ok {
		return m
	}
	panic(ws.rt.NewTypeError("not a WebAssembly.Memory"))
}

func (ws *wasmSandbox) globalOf(v goja.Value) *globalObj {
	if m, ok := ws.hidden(v).(*globalObj); ok {
		return m
	}
	panic(ws.rt.NewTypeError("not a WebAssembly.Global"))
}

// bytesOf returns the bytes of a BufferSource (an ArrayBuffer, a typed
// array or a DataView), without a copy.
func (ws *wasmSandbox) bytesOf(v goja.Value, what string) []byte {
	obj, ok := v.(*goja.Object)
	if ok {
		if ab, ok := obj.Export().(goja.ArrayBuffer); ok {
			return ab.Bytes()
		}
		if b, ok := ws.viewBytes(obj); ok {
			return b
		}
	}
	panic(ws.rt.NewTypeError("%s: the module's bytes must be an ArrayBuffer or a typed array (a Uint8Array), not %s", what, describe(v)))
}

// elemSize is the size of the elements of typed arrays, by their tag.
var elemSize = map[string]int64{"Int8Array": 1, "Uint8Array": 1, "Uint8ClampedArray": 1, "Int16Array": 2, "Uint16Array": 2,
	"Float16Array": 2, "Int32Array": 4, "Uint32Array": 4, "Float32Array": 4, "Float64Array": 8, "BigInt64Array": 8, "BigUint64Array": 8}

// viewBytes returns the bytes a typed array or a DataView views, read
// with the built-in getters (whatever the script did to the prototypes).
func (ws *wasmSandbox) viewBytes(obj *goja.Object) ([]byte, bool) {
	in := ws.sb.Intrinsics()
	var bufv, offv goja.Value
	var n int64
	if tag, err := in.TypedArrayTag(obj); err == nil && !goja.IsUndefined(tag) {
		size, ok := elemSize[tag.String()]
		lv, err1 := in.TypedLength(obj)
		b, err2 := in.TypedBuffer(obj)
		o, err3 := in.TypedOffset(obj)
		if !ok || err1 != nil || err2 != nil || err3 != nil {
			return nil, false
		}
		bufv, offv, n = b, o, lv.ToInteger()*size
	} else {
		b, err1 := in.ViewBuffer(obj)
		o, err2 := in.ViewOffset(obj)
		lv, err3 := in.ViewLength(obj)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, false
		}
		bufv, offv, n = b, o, lv.ToInteger()
	}
	ab, ok := bufv.Export().(goja.ArrayBuffer)
	if !ok {
		return nil, false
	}
	b, off := ab.Bytes(), offv.ToInteger()
	if off < 0 || n < 0 || off+n > int64(len(b)) {
		return nil, false
	}
	return b[off : off+n], true
}

// describe names a value's type for an error message.
func describe(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if obj, ok := v.(*goja.Object); ok {
		if c, ok := obj.Get("constructor").(*goja.Object); ok {
			if n := c.Get("name"); n != nil && n.String() != "" {
				return "a " + n.String()
			}
		}
		return "an object"
	}
	return "a " + v.ExportType().String()
}

// compileBytes compiles a module, or throws a CompileError.
func (ws *wasmSandbox) compileBytes(code []byte) *compiled {
	c, err := ws.b.compile(ws.sb.Context(), code)
	if err != nil {
		ws.throwClass(ws.compileError, "WebAssembly.Module(): %s", wazeroMessage(err))
	}
	return c
}

// wazeroMessage is the first line of a wazero error, without its prefix.
func wazeroMessage(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimPrefix(s, "wasm error: ")
}

func (ws *wasmSandbox) validate(call goja.FunctionCall) goja.Value {
	code := ws.bytesOf(call.Argument(0), "WebAssembly.validate")
	_, err := ws.b.compile(ws.sb.Context(), code)
	return ws.rt.ToValue(err == nil)
}

// makeModule makes a WebAssembly.Module object of c.
func (ws *wasmSandbox) makeModule(c *compiled) *goja.Object {
	obj := ws.rt.NewObject()
	if err := obj.SetPrototype(ws.moduleProto); err != nil {
		panic(err)
	}
	ws.hide(obj, &moduleObj{c: c})
	return obj
}

func (ws *wasmSandbox) newModule(call goja.ConstructorCall) *goja.Object {
	c := ws.compileBytes(ws.bytesOf(call.Argument(0), "WebAssembly.Module"))
	ws.hide(call.This, &moduleObj{c: c})
	return nil
}

// promise runs f now and returns a promise of its value, rejected with
// what it throws. An interrupt is not caught: it goes on stopping the
// script.
func (ws *wasmSandbox) promise(f func() goja.Value) goja.Value {
	p, resolve, reject := ws.rt.NewPromise()
	var v goja.Value
	if thrown, ok := catch(func() { v = f() }); ok {
		if err := reject(thrown); err != nil {
			panic(err)
		}
	} else if err := resolve(v); err != nil {
		panic(err)
	}
	return ws.rt.ToValue(p)
}

// catch runs f and returns the JavaScript value it threw, if any.
func catch(f func()) (thrown goja.Value, ok bool) {
	defer func() {
		if x := recover(); x != nil {
			switch e := x.(type) {
			case *goja.Exception:
				thrown, ok = e.Value(), true
			case goja.Value:
				thrown, ok = e, true
			default:
				panic(x)
			}
		}
	}()
	f()
	return nil, false
}

func (ws *wasmSandbox) compileAsync(call goja.FunctionCall) goja.Value {
	return ws.promise(func() goja.Value {
		return ws.makeModule(ws.compileBytes(ws.bytesOf(call.Argument(0), "WebAssembly.compile")))
	})
}

func (ws *wasmSandbox) instantiateAsync(call goja.FunctionCall) goja.Value {
	return ws.promise(func() goja.Value {
		if m, ok := ws.hidden(call.Argument(0)).(*moduleObj); ok {
			return ws.instantiate(m.c, call.Argument(1))
		}
		c := ws.compileBytes(ws.bytesOf(call.Argument(0), "WebAssembly.instantiate"))
		res := ws.rt.NewObject()
		_ = res.Set("module", ws.makeModule(c))
		_ = res.Set("instance", ws.instantiate(c, call.Argument(1)))
		return res
	})
}

func (ws *wasmSandbox) moduleImports(call goja.FunctionCall) goja.Value {
	m := ws.moduleOf(call.Argument(0), "WebAssembly.Module.imports")
	var list []any
	for _, im := range m.c.info.imports {
		list = append(list, map[string]any{"module": im.module, "name": im.name, "kind": kindName(im.kind)})
	}
	return ws.rt.ToValue(ws.plain(list))
}

func (ws *wasmSandbox) moduleExports(call goja.FunctionCall) goja.Value {
	m := ws.moduleOf(call.Argument(0), "WebAssembly.Module.exports")
	var list []any
	for _, ex := range m.c.info.exports {
		list = append(list, map[string]any{"name": ex.name, "kind": kindName(ex.kind)})
	}
	return ws.rt.ToValue(ws.plain(list))
}

// plain makes JavaScript arrays of plain objects from descriptors, their
// keys in a fixed order.
func (ws *wasmSandbox) plain(list []any) *goja.Object {
	arr := make([]any, 0, len(list))
	for _, it := range list {
		d := it.(map[string]any)
		o := ws.rt.NewObject()
		for _, k := range []string{"module", "name", "kind"} {
			if v, ok := d[k]; ok {
				_ = o.Set(k, v)
			}
		}
		arr = append(arr, o)
	}
	return ws.rt.NewArray(arr...)
}

func (ws *wasmSandbox) newInstance(call goja.ConstructorCall) *goja.Object {
	m := ws.moduleOf(call.Argument(0), "WebAssembly.Instance")
	return ws.instantiate(m.c, call.Argument(1))
}

// source is where one import comes from: a wazero module and its export.
type source struct {
	mod   api.Module
	field string
}

// instantiate makes an Instance of c with the given imports object.
func (ws *wasmSandbox) instantiate(c *compiled, importObj goja.Value) *goja.Object {
	rt := ws.rt
	info := c.info
	inst := &instanceObj{c: c}
	for _, l := range info.memories {
		ws.checkAlloc(uint64(l.min) * pageSize)
	}
	var imports *goja.Object
	if len(info.imports) > 0 {
		o, ok := importObj.(*goja.Object)
		if !ok {
			panic(rt.NewTypeError("WebAssembly.Instance: the module has imports, and the imports argument must be an object, not %s", describe(importObj)))
		}
		imports = o
	}
	// Each import's source, in order; JavaScript functions go into one
	// host module.
	srcs := make([]source, len(info.imports))
	var hostFns []int // indexes into info.imports
	for i, im := range info.imports {
		modv := imports.Get(im.module)
		mo, ok := modv.(*goja.Object)
		if !ok {
			panic(rt.NewTypeError("WebAssembly.Instance: import module %q must be an object, not %s", im.module, describe(modv)))
		}
		v := mo.Get(im.name)
		where := fmt.Sprintf("import %q.%q", im.module, im.name)
		switch im.kind {
		case kindFunc:
			if f, ok := ws.hidden(v).(*funcObj); ok {
				srcs[i] = source{f.mod, f.name}
				inst.keep = append(inst.keep, f.owner)
				continue
			}
			if _, ok := goja.AssertFunction(v); !ok {
				ws.throwClass(ws.linkError, "WebAssembly.Instance: %s must be a function, not %s", where, describe(v))
			}
			hostFns = append(hostFns, i)
		case kindMemory:
			m, ok := ws.hidden(v).(*memoryObj)
			if !ok {
				ws.throwClass(ws.linkError, "WebAssembly.Instance: %s must be a WebAssembly.Memory, not %s", where, describe(v))
			}
			srcs[i] = source{m.mod, m.name}
			inst.keep = append(inst.keep, m.owner)
		case kindGlobal:
			g, ok := ws.hidden(v).(*globalObj)
			if !ok {
				if im.global.mutable {
					ws.throwClass(ws.linkError, "WebAssembly.Instance: %s is a mutable global, and must be a WebAssembly.Global, not %s", where, describe(v))
				}
				if _, isObj := v.(*goja.Object); isObj || goja.IsUndefined(v) {
					ws.throwClass(ws.linkError, "WebAssembly.Instance: %s must be a number, a BigInt or a WebAssembly.Global, not %s", where, describe(v))
				}
				g = ws.makeGlobal(im.global, ws.toWasm(v, im.global.val))
			}
			srcs[i] = source{g.mod, g.name}
			inst.keep = append(inst.keep, g.owner)
		case kindTable:
			ws.throwClass(ws.linkError, "WebAssembly.Instance: %s is a table: riot's WebAssembly (wazero) cannot give a module a table from JavaScript", where)
		default:
			ws.throwClass(ws.linkError, "WebAssembly.Instance: %s is a %s, which riot's WebAssembly does not import", where, kindName(im.kind))
		}
	}
	var made []api.Module
	fail := func(C *goja.Object, format string, args ...any) {
		for _, m := range made {
			closeModule(m)
		}
		ws.throwClass(C, format, args...)
	}
	ctx := ws.sb.Context()
	if len(hostFns) > 0 {
		hb := ws.b.rt.NewHostModuleBuilder(fmt.Sprintf("riot.js.%d", ws.b.seq.Add(1)))
		for k, i := range hostFns {
			im := info.imports[i]
			fn, _ := goja.AssertFunction(imports.Get(im.module).(*goja.Object).Get(im.name))
			name := fmt.Sprintf("f%d", k)
			hb.NewFunctionBuilder().WithGoModuleFunction(ws.hostFunc(fn, im.fn), apiTypes(im.fn.params), apiTypes(im.fn.results)).
				WithName(im.name).Export(name)
			srcs[i] = source{nil, name}
		}
		hc, err := hb.Compile(ctx)
		if err != nil {
			fail(ws.linkError, "WebAssembly.Instance: the imported functions: %s", wazeroMessage(err))
		}
		hm, err := ws.b.rt.InstantiateModule(ctx, hc, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			_ = hc.Close(ctx)
			fail(ws.linkError, "WebAssembly.Instance: the imported functions: %s", wazeroMessage(err))
		}
		runtime.AddCleanup(inst, func(hc wazero.CompiledModule) { _ = hc.Close(context.Background()) }, hc)
		made = append(made, hm)
		for _, i := range hostFns {
			srcs[i].mod = hm
		}
	}
	// One module per import module name: the source itself when it
	// gives every field under its own name, else a shim.
	byName := map[string]api.Module{}
	var order []string
	groups := map[string][]int{}
	for i, im := range info.imports {
		if _, ok := groups[im.module]; !ok {
			order = append(order, im.module)
		}
		groups[im.module] = append(groups[im.module], i)
	}
	for _, name := range order {
		idx := groups[name]
		direct := true
		for _, i := range idx {
			if srcs[i].mod != srcs[idx[0]].mod || srcs[i].field != info.imports[i].name {
				direct = false
			}
		}
		if direct {
			byName[name] = srcs[idx[0]].mod
			continue
		}
		var items []shimItem
		from := map[api.Module]string{}
		var fromMods []api.Module
		for _, i := range idx {
			s := srcs[i]
			key, ok := from[s.mod]
			if !ok {
				key = fmt.Sprint(len(fromMods))
				from[s.mod] = key
				fromMods = append(fromMods, s.mod)
			}
			items = append(items, shimItem{imp: info.imports[i], from: key, field: s.field})
		}
		sc, err := ws.b.compile(ctx, shimModule(items))
		if err != nil {
			fail(ws.linkError, "WebAssembly.Instance: import module %q: %s", name, wazeroMessage(err))
		}
		inst.keep = append(inst.keep, sc)
		rctx := experimental.WithImportResolver(ctx, func(n string) api.Module {
			for k, m := range fromMods {
				if n == fmt.Sprint(k) {
					return m
				}
			}
			return nil
		})
		sm, err := ws.b.rt.InstantiateModule(rctx, sc.cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			fail(ws.linkError, "WebAssembly.Instance: import module %q: %s", name, wazeroMessage(err))
		}
		made = append(made, sm)
		byName[name] = sm
	}
	ictx := experimental.WithImportResolver(ctx, func(n string) api.Module { return byName[n] })
	ictx = experimental.WithMemoryAllocator(ictx, ws.allocator())
	mod, err := ws.b.rt.InstantiateModule(ictx, c.cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if ws.pending != nil {
		p := ws.pending
		ws.pending = nil
		for _, m := range made {
			closeModule(m)
		}
		panic(p)
	}
	if err != nil {
		if ctx.Err() != nil {
			for _, m := range made {
				closeModule(m)
			}
			ws.sb.Interrupt(context.Cause(ctx))
			panic(rt.NewTypeError("WebAssembly.Instance: interrupted"))
		}
		var exit *sys.ExitError
		msg := err.Error()
		if errors.As(err, &exit) || strings.HasPrefix(msg, "start ") || strings.Contains(msg, "wasm error:") {
			fail(ws.runtimeError, "WebAssembly.Instance: %s", wazeroMessage(err))
		}
		fail(ws.linkError, "WebAssembly.Instance: %s", wazeroMessage(err))
	}
	made = append(made, mod)
	inst.mod = mod
	ws.track(inst, made...)

	exports := rt.NewObject()
	if err := exports.SetPrototype(nil); err != nil {
		panic(err)
	}
	for _, ex := range info.exports {
		var v goja.Value
		switch ex.kind {
		case kindFunc:
			v = ws.wrapFunc(inst, mod, ex.name)
		case kindMemory:
			v = ws.memoryObject(inst, mod, ex.name, mod.ExportedMemory(ex.name))
		case kindGlobal:
			g := mod.ExportedGlobal(ex.name)
			if g == nil {
				continue
			}
			v = ws.globalObject(&globalObj{owner: inst, mod: mod, name: ex.name, g: g, typ: globalTypeOf(g)})
		default:
			continue // tables and tags: not given to JavaScript
		}
		if err := exports.DefineDataProperty(ex.name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			panic(err)
		}
	}
	if _, err := ws.sb.Intrinsics().ObjectFreeze(goja.Undefined(), exports); err != nil {
		panic(err)
	}
	inst.exports = exports
	obj := rt.NewObject()
	if err := obj.SetPrototype(ws.instanceProto); err != nil {
		panic(err)
	}
	ws.hide(obj, inst)
	return obj
}

// globalTypeOf is the type of a wazero global.
func globalTypeOf(g api.Global) globalType {
	_, mut := g.(api.MutableGlobal)
	return globalType{val: g.Type(), mutable: mut}
}

// apiTypes converts value types.
func apiTypes(ts []byte) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	copy(out, ts)
	return out
}

// hostFunc is a wasm import that calls the JavaScript function fn, on the
// workunit's goroutine (wasm calls it from there).
func (ws *wasmSandbox) hostFunc(fn goja.Callable, t funcType) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
		if ws.pending != nil {
			panic(errJSThrew)
		}
		ws.syncMemories()
		args := make([]goja.Value, len(t.params))
		for i, p := range t.params {
			args[i] = ws.fromWasm(stack[i], p)
		}
		var res goja.Value
		var thrown any
		func() {
			defer func() {
				if x := recover(); x != nil {
					thrown = x
				}
			}()
			var err error
			res, err = fn(goja.Undefined(), args...)
			if err != nil {
				thrown = err
				return
			}
			ws.setResults(stack, res, t.results)
		}()
		if thrown != nil {
			ws.pending = thrown
			panic(errJSThrew)
		}
	})
}

// setResults writes a JavaScript function's result into a wasm stack.
func (ws *wasmSandbox) setResults(stack []uint64, res goja.Value, ts []byte) {
	switch len(ts) {
	case 0:
	case 1:
		stack[0] = ws.toWasm(res, ts[0])
	default:
		var vals []goja.Value
		if err := ws.rt.ExportTo(res, &vals); err != nil || len(vals) != len(ts) {
			panic(ws.rt.NewTypeError("a function that returns %d values to WebAssembly must return an array of as many", len(ts)))
		}
		for i, t := range ts {
			stack[i] = ws.toWasm(vals[i], t)
		}
	}
}

var (
	mask64 = new(big.Int).SetUint64(math.MaxUint64)
	two32  = math.Exp2(32)
)

// toWasm converts a JavaScript value to a wasm value of type t, as
// ToWebAssemblyValue does.
func (ws *wasmSandbox) toWasm(v goja.Value, t byte) uint64 {
	switch t {
	case typeI32:
		return uint64(toUint32(v.ToFloat()))
	case typeI64:
		var b *big.Int
		switch x := v.Export().(type) {
		case *big.Int:
			b = x
		case bool:
			b = big.NewInt(0)
			if x {
				b = big.NewInt(1)
			}
		case string:
			var ok bool
			if b, ok = new(big.Int).SetString(strings.TrimSpace(x), 0); !ok {
				ws.sb.Throw("SyntaxError", "Cannot convert %s to a BigInt", x)
			}
		default:
			panic(ws.rt.NewTypeError("Cannot convert %s to a BigInt: an i64 of WebAssembly is a BigInt in JavaScript", v.String()))
		}
		return new(big.Int).And(b, mask64).Uint64()
	case typeF32:
		return api.EncodeF32(float32(v.ToFloat()))
	case typeF64:
		return api.EncodeF64(v.ToFloat())
	}
	panic(ws.rt.NewTypeError("a WebAssembly value of type 0x%x cannot come from JavaScript in riot", t))
}

// toUint32 is ToUint32 of a number.
func toUint32(f float64) uint32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Mod(math.Trunc(f), two32)
	if f < 0 {
		f += two32
	}
	return uint32(f)
}

// fromWasm converts a wasm value of type t to JavaScript.
func (ws *wasmSandbox) fromWasm(x uint64, t byte) goja.Value {
	switch t {
	case typeI32:
		return ws.rt.ToValue(int32(uint32(x)))
	case typeI64:
		return ws.rt.ToValue(big.NewInt(int64(x)))
	case typeF32:
		return ws.rt.ToValue(float64(api.DecodeF32(x)))
	case typeF64:
		return ws.rt.ToValue(api.DecodeF64(x))
	}
	panic(ws.rt.NewTypeError("a WebAssembly value of type 0x%x cannot go to JavaScript in riot", t))
}

// wrapFunc makes the JavaScript function of an exported function.
func (ws *wasmSandbox) wrapFunc(inst *instanceObj, mod api.Module, name string) goja.Value {
	fn := mod.ExportedFunction(name)
	def := fn.Definition()
	f := &funcObj{owner: inst, mod: mod, name: name, fn: fn,
		typ: funcType{params: apiTypes(def.ParamTypes()), results: apiTypes(def.ResultTypes())}}
	f.stack = make([]uint64, max(len(f.typ.params), len(f.typ.results), 1))
	jsName := fmt.Sprint(def.Index())
	v := ws.rt.ToValue(func(call goja.FunctionCall) goja.Value { return ws.callFunc(f, call) })
	obj := v.(*goja.Object)
	_ = obj.DefineDataProperty("name", ws.rt.ToValue(jsName), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = obj.DefineDataProperty("length", ws.rt.ToValue(len(f.typ.params)), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	ws.hide(obj, f)
	return obj
}

// callFunc calls an exported function from JavaScript.
func (ws *wasmSandbox) callFunc(f *funcObj, call goja.FunctionCall) goja.Value {
	stack := f.stack
	if f.busy { // called again from inside itself, through JavaScript
		stack = make([]uint64, len(f.stack))
	} else {
		f.busy = true
		defer func() { f.busy = false }()
	}
	for i, t := range f.typ.params {
		stack[i] = ws.toWasm(call.Argument(i), t)
	}
	ctx := ws.sb.Context()
	err := f.fn.CallWithStack(ctx, stack)
	ws.syncMemories()
	if ws.pending != nil {
		p := ws.pending
		ws.pending = nil
		panic(p)
	}
	if err != nil {
		ws.wasmFailed(ctx, err)
	}
	switch len(f.typ.results) {
	case 0:
		return goja.Undefined()
	case 1:
		return ws.fromWasm(stack[0], f.typ.results[0])
	}
	vals := make([]any, len(f.typ.results))
	for i, t := range f.typ.results {
		vals[i] = ws.fromWasm(stack[i], t)
	}
	return ws.rt.NewArray(vals...)
}

// wasmFailed throws what a failed call into wasm means: the workunit's
// stop (its context ended: wazero closed the instance), or a trap as a
// RuntimeError.
func (ws *wasmSandbox) wasmFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		ws.sb.Interrupt(context.Cause(ctx))
		ws.throwClass(ws.runtimeError, "the workunit was stopped while WebAssembly ran (%v)", context.Cause(ctx))
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		ws.throwClass(ws.runtimeError, "the instance is closed (exit code %d)", exit.ExitCode())
	}
	ws.throwClass(ws.runtimeError, "%s", wazeroMessage(err))
}

// checkAlloc throws a RangeError when n bytes of wasm memory would pass
// the worker's memory limit.
func (ws *wasmSandbox) checkAlloc(n uint64) {
	if err := ws.sb.CheckAlloc(float64(n), "WebAssembly memory"); err != nil {
		ws.sb.Throw("RangeError", "%s", err.Error())
	}
}

// allocator makes the linear memories of the modules this sandbox
// instantiates: Go slices, which the memory guard counts, grown only
// when the worker's memory has room (else memory.grow gives -1).
func (ws *wasmSandbox) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capBytes, maxBytes uint64) experimental.LinearMemory {
		return &linearMemory{ws: ws, max: maxBytes}
	})
}

// linearMemory is a wasm memory's bytes.
type linearMemory struct {
	ws  *wasmSandbox
	buf []byte
	max uint64
}

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	if size > m.max {
		return nil
	}
	if m.buf != nil && m.ws.sb.CheckAlloc(float64(size), "WebAssembly memory") != nil {
		return nil
	}
	nb := make([]byte, size)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() { m.buf = nil }

// memoryObject returns the Memory object of mem, the same object for
// one memory while JavaScript holds it.
func (ws *wasmSandbox) memoryObject(owner any, mod api.Module, name string, mem api.Memory) *goja.Object {
	ws.memMu.Lock()
	wp, ok := ws.mems[mem]
	ws.memMu.Unlock()
	if ok {
		if m := wp.Value(); m != nil {
			return m.obj
		}
	}
	def := mem.Definition()
	l := limits{min: def.Min()}
	if mx, ok := def.Max(); ok {
		l.max, l.hasMax = mx, true
	}
	m := &memoryObj{owner: owner, mod: mod, name: name, mem: mem, lim: l}
	m.obj = ws.rt.NewObject()
	if err := m.obj.SetPrototype(ws.memoryProto); err != nil {
		panic(err)
	}
	ws.hide(m.obj, m)
	ws.remember(m)
	return m.obj
}

// remember lists a Memory object among those whose buffers syncMemories
// checks, until JavaScript no longer holds it.
func (ws *wasmSandbox) remember(m *memoryObj) {
	ws.memMu.Lock()
	ws.mems[m.mem] = weak.Make(m)
	ws.memMu.Unlock()
	runtime.AddCleanup(m, func(mem api.Memory) {
		ws.memMu.Lock()
		if wp, ok := ws.mems[mem]; ok && wp.Value() == nil {
			delete(ws.mems, mem)
		}
		ws.memMu.Unlock()
	}, m.mem)
}

func (ws *wasmSandbox) newMemory(call goja.ConstructorCall) *goja.Object {
	desc, ok := call.Argument(0).(*goja.Object)
	if !ok {
		panic(ws.rt.NewTypeError("WebAssembly.Memory: the argument must be a descriptor such as {initial: 1, maximum: 10}, not %s", describe(call.Argument(0))))
	}
	l := limits{min: ws.pages(desc.Get("initial"), "initial")}
	if mx := desc.Get("maximum"); mx != nil && !goja.IsUndefined(mx) {
		l.max, l.hasMax = ws.pages(mx, "maximum"), true
		if l.max < l.min {
			ws.sb.Throw("RangeError", "WebAssembly.Memory: the maximum (%d pages) is less than the initial size (%d)", l.max, l.min)
		}
	}
	if sh := desc.Get("shared"); sh != nil && sh.ToBoolean() {
		panic(ws.rt.NewTypeError("WebAssembly.Memory: shared memories are not supported in riot (a workunit has one thread)"))
	}
	ws.checkAlloc(uint64(l.min) * pageSize)
	ctx := ws.sb.Context()
	c, err := ws.b.compile(ctx, memoryModule(l))
	if err != nil {
		ws.sb.Throw("RangeError", "WebAssembly.Memory: %s", wazeroMessage(err))
	}
	mod, err := ws.b.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, ws.allocator()), c.cm,
		wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		ws.sb.Throw("RangeError", "WebAssembly.Memory: %s", wazeroMessage(err))
	}
	h := &holder{mod: mod}
	ws.track(h, mod)
	mem := mod.ExportedMemory("memory")
	m := &memoryObj{owner: h, mod: mod, name: "memory", mem: mem, lim: l, obj: call.This}
	ws.hide(call.This, m)
	ws.remember(m)
	return nil
}

// pages reads a number of pages of a descriptor.
func (ws *wasmSandbox) pages(v goja.Value, what string) uint32 {
	if v == nil || goja.IsUndefined(v) {
		panic(ws.rt.NewTypeError("WebAssembly.Memory: the descriptor's %s is missing", what))
	}
	f := v.ToFloat()
	if math.IsNaN(f) || f < 0 || f > maxPages {
		ws.sb.Throw("RangeError", "WebAssembly.Memory: %s must be a number of pages from 0 to %d, not %s", what, maxPages, v.String())
	}
	return uint32(f)
}

// buffer returns the ArrayBuffer over a memory's bytes, made again (the
// old one detached) when the memory grew.
func (ws *wasmSandbox) buffer(m *memoryObj) goja.ArrayBuffer {
	buf, _ := m.mem.Read(0, m.mem.Size())
	var p *byte
	if len(buf) > 0 {
		p = &buf[0]
	}
	if m.has && len(buf) == m.abLen && p == m.abPtr {
		return m.ab
	}
	if m.has {
		m.ab.Detach()
	}
	m.ab = ws.rt.NewArrayBuffer(buf)
	m.has, m.abLen, m.abPtr = true, len(buf), p
	return m.ab
}

// syncMemories detaches the buffers of memories that grew in wasm.
func (ws *wasmSandbox) syncMemories() {
	ws.memMu.Lock()
	defer ws.memMu.Unlock()
	for _, wp := range ws.mems {
		if m := wp.Value(); m != nil && m.has && int(m.mem.Size()) != m.abLen {
			m.ab.Detach()
			m.has = false
		}
	}
}

func (ws *wasmSandbox) memoryBuffer(call goja.FunctionCall) goja.Value {
	m := ws.memoryOf(call.This)
	return ws.rt.ToValue(ws.buffer(m))
}

func (ws *wasmSandbox) memoryGrow(call goja.FunctionCall) goja.Value {
	m := ws.memoryOf(call.This)
	f := call.Argument(0).ToFloat()
	if math.IsNaN(f) || f < 0 || f > maxPages {
		panic(ws.rt.NewTypeError("WebAssembly.Memory.grow: the number of pages must be from 0 to %d, not %s", maxPages, call.Argument(0).String()))
	}
	delta := uint32(f)
	cur := m.mem.Size() / pageSize
	mx := uint32(maxPages)
	if m.lim.hasMax {
		mx = m.lim.max
	}
	if uint64(cur)+uint64(delta) > uint64(mx) {
		ws.sb.Throw("RangeError", "WebAssembly.Memory.grow: %d pages more would pass the memory's maximum of %d pages (it has %d)", delta, mx, cur)
	}
	ws.checkAlloc(uint64(cur+delta) * pageSize)
	prev, ok := m.mem.Grow(delta)
	if !ok {
		ws.sb.Throw("RangeError", "WebAssembly.Memory.grow: could not grow the memory by %d pages (it has %d)", delta, cur)
	}
	if m.has {
		m.ab.Detach()
		m.has = false
	}
	return ws.rt.ToValue(prev)
}

// globalObject makes the Global object of g.
func (ws *wasmSandbox) globalObject(g *globalObj) *goja.Object {
	obj := ws.rt.NewObject()
	if err := obj.SetPrototype(ws.globalProto); err != nil {
		panic(err)
	}
	ws.hide(obj, g)
	return obj
}

// makeGlobal makes a global in a holder module.
func (ws *wasmSandbox) makeGlobal(t globalType, bits uint64) *globalObj {
	ctx := ws.sb.Context()
	c, err := ws.b.compile(ctx, globalModule(t, bits))
	if err != nil {
		panic(ws.rt.NewTypeError("WebAssembly.Global: %s", wazeroMessage(err)))
	}
	mod, err := ws.b.rt.InstantiateModule(ctx, c.cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		panic(ws.rt.NewTypeError("WebAssembly.Global: %s", wazeroMessage(err)))
	}
	h := &holder{mod: mod}
	ws.track(h, mod)
	return &globalObj{owner: h, mod: mod, name: "global", g: mod.ExportedGlobal("global"), typ: t}
}

func (ws *wasmSandbox) newGlobal(call goja.ConstructorCall) *goja.Object {
	desc, ok := call.Argument(0).(*goja.Object)
	if !ok {
		panic(ws.rt.NewTypeError("WebAssembly.Global: the first argument must be a descriptor such as {value: 'i32', mutable: true}, not %s", describe(call.Argument(0))))
	}
	var t globalType
	switch s := desc.Get("value"); {
	case s == nil:
		panic(ws.rt.NewTypeError("WebAssembly.Global: the descriptor's value (its type: 'i32', 'i64', 'f32' or 'f64') is missing"))
	default:
		switch s.String() {
		case "i32":
			t.val = typeI32
		case "i64":
			t.val = typeI64
		case "f32":
			t.val = typeF32
		case "f64":
			t.val = typeF64
		default:
			panic(ws.rt.NewTypeError("WebAssembly.Global: the value type must be 'i32', 'i64', 'f32' or 'f64', not %q", s.String()))
		}
	}
	if m := desc.Get("mutable"); m != nil {
		t.mutable = m.ToBoolean()
	}
	var bits uint64
	if v := call.Argument(1); !goja.IsUndefined(v) {
		bits = ws.toWasm(v, t.val)
	}
	g := ws.makeGlobal(t, bits)
	ws.hide(call.This, g)
	return nil
}

func (ws *wasmSandbox) globalGet(call goja.FunctionCall) goja.Value {
	g := ws.globalOf(call.This)
	return ws.fromWasm(g.g.Get(), g.typ.val)
}

func (ws *wasmSandbox) globalSet(call goja.FunctionCall) goja.Value {
	g := ws.globalOf(call.This)
	mg, ok := g.g.(api.MutableGlobal)
	if !ok {
		panic(ws.rt.NewTypeError("WebAssembly.Global: the global is immutable"))
	}
	mg.Set(ws.toWasm(call.Argument(0), g.typ.val))
	return goja.Undefined()
}
