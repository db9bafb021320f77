package jsgpu

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"unsafe"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/gpu"
)

// Device arrays, matrix products and kernels for workunits: the part of
// the GPU bindings that does work on a resources' stream (docs/gpu.md).

// maxDims bounds the nesting of a JavaScript array given as data.
const maxDims = 32

// arrHandle is a DeviceArray: a *gpu.Array, the DeviceResources it
// belongs to, and its JavaScript object, which shows shape and dtype.
type arrHandle struct {
	res   *resHandle
	a     *gpu.Array
	obj   *goja.Object
	shape *goja.Object // frozen
	freed bool         // by free() or arrayFree()
}

// Get implements goja.DynamicObject.
func (h *arrHandle) Get(key string) goja.Value {
	switch key {
	case "shape":
		return h.shape
	case "dtype":
		return h.res.b.rt.ToValue(h.a.DType().String())
	}
	return nil
}

// Set implements goja.DynamicObject: the object is read-only.
func (h *arrHandle) Set(string, goja.Value) bool { return false }

// Has implements goja.DynamicObject.
func (h *arrHandle) Has(key string) bool { return key == "shape" || key == "dtype" }

// Delete implements goja.DynamicObject.
func (h *arrHandle) Delete(key string) bool { return !h.Has(key) }

// Keys implements goja.DynamicObject.
func (h *arrHandle) Keys() []string { return []string{"shape", "dtype"} }

func (b *gpuBinding) wrapArray(res *resHandle, a *gpu.Array) *arrHandle {
	shape := a.Shape()
	items := make([]any, len(shape))
	for i, d := range shape {
		items[i] = d
	}
	h := &arrHandle{res: res, a: a, shape: b.rt.NewArray(items...)}
	if _, err := b.in.ObjectFreeze(goja.Undefined(), h.shape); err != nil {
		panic(err)
	}
	h.obj = b.rt.NewDynamicObject(h)
	if err := h.obj.SetPrototype(b.arrProto); err != nil {
		panic(err)
	}
	return h
}

// arrArg reads a DeviceArray argument.
func (b *gpuBinding) arrArg(name, what string, v goja.Value) *arrHandle {
	if h, ok := b.handle(v).(*arrHandle); ok {
		return h
	}
	b.sb.Throw("TypeError", "%s: %s must be a DeviceArray (from deviceArray, deviceZeros or matMul), not %s", name, what, b.describe(v))
	return nil
}

// hostData is the numbers of a JavaScript array or typed array, in the
// element type the source suggests: float32 for a Float32Array or an
// array of Float32Array rows, float64 for anything else.
type hostData struct {
	f32   []float32 // when isF32
	f64   []float64 // otherwise
	isF32 bool
	shape []int
}

func (d *hostData) len() int {
	if d.isF32 {
		return len(d.f32)
	}
	return len(d.f64)
}

func (d *hostData) float32s() []float32 {
	if d.isF32 {
		return d.f32
	}
	return narrow(d.f64)
}

func narrow(f []float64) []float32 {
	out := make([]float32, len(f))
	for i, v := range f {
		out[i] = float32(v)
	}
	return out
}

func (d *hostData) float64s() []float64 {
	if !d.isF32 {
		return d.f64
	}
	out := make([]float64, len(d.f32))
	for i, v := range d.f32 {
		out[i] = float64(v)
	}
	return out
}

// hostData reads data: a Float32Array or Float64Array (copied as its
// bytes), another numeric typed array, or an array of numbers, nested
// (rows of equal length, or typed arrays) for more dimensions.
func (b *gpuBinding) hostData(name, what string, v goja.Value) *hostData {
	o, ok := v.(*goja.Object)
	if ok {
		switch b.in.Classify(o) {
		case jsvalue.KindTyped:
			tn, _ := b.in.TypedName(o)
			switch tn {
			case "Float32Array":
				raw := b.typedBytes(name, what, o, 4)
				f := make([]float32, len(raw)/4)
				if len(f) > 0 {
					copy(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(raw)), raw)
				}
				return &hostData{f32: f, isF32: true, shape: []int{len(f)}}
			case "Float64Array":
				raw := b.typedBytes(name, what, o, 8)
				f := make([]float64, len(raw)/8)
				if len(f) > 0 {
					copy(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(raw)), raw)
				}
				return &hostData{f64: f, shape: []int{len(f)}}
			}
		case jsvalue.KindArray:
		default:
			ok = false
		}
	}
	if !ok {
		b.sb.Throw("TypeError", "%s: %s must be an array or a typed array of numbers, not %s", name, what, b.describe(v))
	}
	d := &hostData{}
	// The shape is that of the first element at each level; flatten checks
	// that every other element agrees.
	for cur := goja.Value(o); len(d.shape) < maxDims; {
		n, ok := b.arrayLike(name, what, cur)
		if !ok {
			break
		}
		d.shape = append(d.shape, n)
		if n == 0 {
			break
		}
		cur = cur.(*goja.Object).Get("0")
	}
	total := 1
	for _, n := range d.shape {
		total *= n
	}
	d.f64 = make([]float64, 0, total)
	d.isF32 = len(d.shape) > 1 // until a row is not a Float32Array
	b.flatten(name, what, o, 0, d)
	if d.isF32 {
		d.f32, d.f64 = narrow(d.f64), nil
	}
	return d
}

// arrayLike returns the length of an array or numeric typed array.
func (b *gpuBinding) arrayLike(name, what string, v goja.Value) (int, bool) {
	o, ok := v.(*goja.Object)
	if !ok {
		return 0, false
	}
	switch b.in.Classify(o) {
	case jsvalue.KindArray:
	case jsvalue.KindTyped:
		if tn, _ := b.in.TypedName(o); strings.HasPrefix(tn, "Big") {
			b.sb.Throw("TypeError", "%s: %s holds a %s; give numbers, not bigints", name, what, tn)
		}
	default:
		return 0, false
	}
	n := o.Get("length").ToFloat()
	if n > math.MaxInt32 {
		b.sb.Throw("RangeError", "%s: %s is too long (%s items)", name, what, inspect.FormatNumber(n))
	}
	return int(n), true
}

// flatten appends the numbers of v, which is at nesting level depth,
// checking that it has the shape d.shape[depth:].
func (b *gpuBinding) flatten(name, path string, v goja.Value, depth int, d *hostData) {
	if depth == len(d.shape) {
		if !goja.IsNumber(v) {
			b.sb.Throw("TypeError", "%s: %s is %s, not a number", name, path, b.describe(v))
		}
		d.f64 = append(d.f64, v.ToFloat())
		return
	}
	n, ok := b.arrayLike(name, path, v)
	switch {
	case !ok:
		b.sb.Throw("TypeError", "%s: %s is %s, not an array of %d items (the data is not rectangular)", name, path, b.describe(v), d.shape[depth])
	case n != d.shape[depth]:
		b.sb.Throw("TypeError", "%s: %s has %d items, not %d (the data is not rectangular)", name, path, n, d.shape[depth])
	}
	o := v.(*goja.Object)
	if depth == len(d.shape)-1 && d.isF32 {
		tn, _ := b.in.TypedName(o)
		d.isF32 = tn == "Float32Array"
	}
	for i := range n {
		b.flatten(name, path+"["+jsvalue.Index(i)+"]", o.Get(jsvalue.Index(i)), depth+1, d)
	}
}

// typedBytes returns the bytes a typed array views.
func (b *gpuBinding) typedBytes(name, what string, o *goja.Object, size int) []byte {
	in := b.in
	buf, err1 := in.TypedBuffer(o)
	off, err2 := in.TypedOffset(o)
	n, err3 := in.TypedLength(o)
	if err1 != nil || err2 != nil || err3 != nil {
		b.sb.Throw("TypeError", "%s: %s cannot be read", name, what)
	}
	data := buf.(*goja.Object).Export().(goja.ArrayBuffer).Bytes()
	start, end := int(off.ToInteger()), int(off.ToInteger())+int(n.ToInteger())*size
	if start < 0 || end > len(data) {
		b.sb.Throw("TypeError", "%s: %s views bytes its buffer does not have (a detached buffer?)", name, what)
	}
	return data[start:end]
}

// typedArray returns a new Float32Array or Float64Array holding f, without
// a copy.
func (b *gpuBinding) typedArray(ctor string, raw []byte) goja.Value {
	rt := b.rt
	ta, err := b.in.TypedCtors[ctor](nil, rt.ToValue(rt.NewArrayBuffer(raw)))
	if err != nil {
		panic(err)
	}
	return ta
}

// dtypeOption reads options.dtype.
func (b *gpuBinding) dtypeOption(name string, v goja.Value, def gpu.DType) gpu.DType {
	if v == nil || goja.IsUndefined(v) {
		return def
	}
	if goja.IsString(v) {
		switch v.String() {
		case "float32":
			return gpu.Float32
		case "float64":
			return gpu.Float64
		case "bf16":
			return gpu.BFloat16
		case "f16":
			return gpu.Float16
		}
		b.sb.Throw("TypeError", "%s: options.dtype must be 'float32', 'float64', 'bf16' or 'f16', not %s", name, inspect.Quote(v.String()))
	}
	b.sb.Throw("TypeError", "%s: options.dtype must be 'float32', 'float64', 'bf16' or 'f16', not %s", name, b.describe(v))
	return 0
}

// shapeArg reads a shape: an array of integers ≥ 0, or one integer.
func (b *gpuBinding) shapeArg(name, what string, v goja.Value) []int {
	if goja.IsNumber(v) {
		return []int{b.dimArg(name, what, v)}
	}
	o, ok := v.(*goja.Object)
	if !ok || b.in.Classify(o) != jsvalue.KindArray {
		b.sb.Throw("TypeError", "%s: %s must be an array of integers, not %s", name, what, b.describe(v))
	}
	n := int(o.Get("length").ToInteger())
	if n > maxDims {
		b.sb.Throw("RangeError", "%s: %s has %d dimensions; at most %d are allowed", name, what, n, maxDims)
	}
	shape := make([]int, n)
	total := 1.0
	for i := range shape {
		shape[i] = b.dimArg(name, what+"["+jsvalue.Index(i)+"]", o.Get(jsvalue.Index(i)))
		total *= float64(shape[i])
	}
	if total > 1<<48 {
		b.sb.Throw("RangeError", "%s: %s %s is too large", name, what, shapeString(shape))
	}
	return shape
}

// shapeString writes a shape as JavaScript does: [2, 3].
func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = jsvalue.Index(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (b *gpuBinding) dimArg(name, what string, v goja.Value) int {
	if v == nil || goja.IsUndefined(v) {
		b.sb.Throw("TypeError", "%s: %s must be an integer, not undefined", name, what)
	}
	d := b.intArg(name, what, v, 0)
	if d < 0 {
		b.sb.Throw("RangeError", "%s: %s must be ≥ 0, not %d", name, what, d)
	}
	return d
}

func (b *gpuBinding) deviceArray(call goja.FunctionCall) goja.Value {
	const name = "deviceArray"
	d := b.hostData(name, "data", call.Argument(0))
	o := b.optionsArg(name, call.Argument(1))
	def := gpu.Float64
	if d.isF32 {
		def = gpu.Float32
	}
	dtype := b.dtypeOption(name, field(o, "dtype"), def)
	shape := d.shape
	if sv := field(o, "shape"); !goja.IsUndefined(sv) {
		shape = b.shapeArg(name, "options.shape", sv)
		total := 1
		for _, n := range shape {
			total *= n
		}
		if total != d.len() {
			b.sb.Throw("RangeError", "%s: options.shape %s holds %d elements, the data %d", name, shapeString(shape), total, d.len())
		}
	}
	h := b.resourcesOption(name, o)
	var (
		a   *gpu.Array
		err error
	)
	switch dtype {
	case gpu.Float64:
		a, err = gpu.NewArray(b.ctx(), h.r, d.float64s(), shape...)
	default: // float32, or a 16-bit type made from float32 on the device
		a, err = gpu.NewArrayOf(b.ctx(), h.r, dtype, d.float32s(), shape...)
	}
	if err != nil {
		b.fail(name, err)
	}
	return b.wrapArray(h, a).obj
}

func (b *gpuBinding) deviceZeros(call goja.FunctionCall) goja.Value {
	const name = "deviceZeros"
	shape := b.shapeArg(name, "shape", call.Argument(0))
	if len(shape) == 0 {
		b.sb.Throw("RangeError", "%s: shape must have at least one dimension", name)
	}
	o := b.optionsArg(name, call.Argument(1))
	dtype := b.dtypeOption(name, field(o, "dtype"), gpu.Float64)
	h := b.resourcesOption(name, o)
	a, err := h.r.Zeros(b.ctx(), dtype, shape...)
	if err != nil {
		b.fail(name, err)
	}
	return b.wrapArray(h, a).obj
}

// toHost copies the array to a new Float32Array (for float32, bf16 and
// f16 arrays) or Float64Array, after everything queued on its stream has
// run.
func (b *gpuBinding) toHost(name string, h *arrHandle) goja.Value {
	n := h.a.Len()
	if h.a.DType() != gpu.Float64 {
		f := make([]float32, n)
		if err := gpu.CopyToHost(b.ctx(), h.a, f); err != nil {
			b.fail(name, err)
		}
		var raw []byte
		if n > 0 {
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*n)
		}
		return b.typedArray("Float32Array", raw)
	}
	f := make([]float64, n)
	if err := gpu.CopyToHost(b.ctx(), h.a, f); err != nil {
		b.fail(name, err)
	}
	var raw []byte
	if n > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 8*n)
	}
	return b.typedArray("Float64Array", raw)
}

// fromHost queues a copy of data (as many numbers as the array holds)
// into the array.
func (b *gpuBinding) fromHost(name string, h *arrHandle, v goja.Value) goja.Value {
	d := b.hostData(name, "data", v)
	if d.len() != h.a.Len() {
		b.sb.Throw("RangeError", "%s: the array holds %d elements, the data %d", name, h.a.Len(), d.len())
	}
	var err error
	if h.a.DType() != gpu.Float64 {
		err = gpu.CopyFromHost(b.ctx(), h.a, d.float32s())
	} else {
		err = gpu.CopyFromHost(b.ctx(), h.a, d.float64s())
	}
	if err != nil {
		b.fail(name, err)
	}
	return h.obj
}

func (b *gpuBinding) free(name string, h *arrHandle) goja.Value {
	if err := h.a.Free(); err != nil {
		b.fail(name, err)
	}
	h.freed = true
	return goja.Undefined()
}

func (b *gpuBinding) arrayToHost(call goja.FunctionCall) goja.Value {
	return b.toHost("arrayToHost", b.arrArg("arrayToHost", "the argument", call.Argument(0)))
}

func (b *gpuBinding) arrayFromHost(call goja.FunctionCall) goja.Value {
	h := b.arrArg("arrayFromHost", "the first argument", call.Argument(0))
	return b.fromHost("arrayFromHost", h, call.Argument(1))
}

func (b *gpuBinding) arrayFree(call goja.FunctionCall) goja.Value {
	return b.free("arrayFree", b.arrArg("arrayFree", "the argument", call.Argument(0)))
}

func (b *gpuBinding) arrayToHostMethod(call goja.FunctionCall) goja.Value {
	return b.toHost("arrayToHost", b.arrArg("DeviceArray.prototype.toHost", "this", call.This))
}

func (b *gpuBinding) arrayFromHostMethod(call goja.FunctionCall) goja.Value {
	h := b.arrArg("DeviceArray.prototype.fromHost", "this", call.This)
	return b.fromHost("arrayFromHost", h, call.Argument(0))
}

func (b *gpuBinding) arrayFreeMethod(call goja.FunctionCall) goja.Value {
	return b.free("arrayFree", b.arrArg("DeviceArray.prototype.free", "this", call.This))
}

func (b *gpuBinding) arrayResources(call goja.FunctionCall) goja.Value {
	return b.arrArg("DeviceArray.prototype.resources", "this", call.This).res.obj
}

func (b *gpuBinding) arrayDevice(call goja.FunctionCall) goja.Value {
	return b.rt.ToValue(b.arrArg("DeviceArray.prototype.device", "this", call.This).res.r.Device())
}

func (b *gpuBinding) arrayLength(call goja.FunctionCall) goja.Value {
	return b.rt.ToValue(b.arrArg("DeviceArray.prototype.length", "this", call.This).a.Len())
}

func (b *gpuBinding) arrayFreed(call goja.FunctionCall) goja.Value {
	h := b.arrArg("DeviceArray.prototype.freed", "this", call.This)
	return b.rt.ToValue(h.freed || h.res.r.Closed())
}

func (b *gpuBinding) arrayString(call goja.FunctionCall) goja.Value {
	h := b.arrArg("DeviceArray.prototype.toString", "this", call.This)
	return b.rt.ToValue(fmt.Sprintf("[DeviceArray %v %s on device %d]", h.a.DType(), shapeString(h.a.Shape()), h.res.r.Device()))
}

// opResources returns the resources an operation on arrays runs on:
// options.resources, or else those of the first array.
func (b *gpuBinding) opResources(name string, o *goja.Object, first *arrHandle) *resHandle {
	if rv := field(o, "resources"); !goja.IsUndefined(rv) {
		return b.resArg(name, "options.resources", rv)
	}
	return first.res
}

func (b *gpuBinding) matMul(call goja.FunctionCall) goja.Value {
	const name = "matMul"
	x := b.arrArg(name, "a", call.Argument(0))
	y := b.arrArg(name, "b", call.Argument(1))
	o := b.optionsArg(name, call.Argument(2))
	opt := gpu.ProductOptions{TF32: b.boolOption(name, o, "tf32")}
	res := b.opResources(name, o, x)
	c, err := res.r.MatMulWith(b.ctx(), opt, x.a, y.a)
	if err != nil {
		b.fail(name, err)
	}
	return b.wrapArray(res, c).obj
}

func (b *gpuBinding) gemm(call goja.FunctionCall) goja.Value {
	const name = "gemm"
	x := b.arrArg(name, "a", call.Argument(0))
	y := b.arrArg(name, "b", call.Argument(1))
	c := b.arrArg(name, "c", call.Argument(2))
	o := b.optionsArg(name, call.Argument(3))
	transA := b.boolOption(name, o, "transA")
	transB := b.boolOption(name, o, "transB")
	alpha := b.numberOption(name, o, "alpha", 1)
	beta := b.numberOption(name, o, "beta", 0)
	opt := gpu.ProductOptions{TF32: b.boolOption(name, o, "tf32")}
	res := b.opResources(name, o, c)
	if err := res.r.GemmWith(b.ctx(), opt, transA, transB, alpha, x.a, y.a, beta, c.a); err != nil {
		b.fail(name, err)
	}
	return c.obj
}

func (b *gpuBinding) boolOption(name string, o *goja.Object, key string) bool {
	v := field(o, key)
	if goja.IsUndefined(v) {
		return false
	}
	if t := v.ExportType(); t == nil || t.Kind() != reflect.Bool {
		b.sb.Throw("TypeError", "%s: options.%s must be a boolean, not %s", name, key, b.describe(v))
	}
	return v.ToBoolean()
}

func (b *gpuBinding) numberOption(name string, o *goja.Object, key string, def float64) float64 {
	v := field(o, key)
	if goja.IsUndefined(v) {
		return def
	}
	if !goja.IsNumber(v) {
		b.sb.Throw("TypeError", "%s: options.%s must be a number, not %s", name, key, b.describe(v))
	}
	return v.ToFloat()
}

// --- kernels ---

// kernelHandle is a DeviceKernel: a compiled kernel's source, name and
// NVRTC options. Its JavaScript object shows its name.
type kernelHandle struct {
	b   *gpuBinding
	k   gpu.Kernel
	obj *goja.Object
}

// Get implements goja.DynamicObject.
func (h *kernelHandle) Get(key string) goja.Value {
	if key == "name" {
		return h.b.rt.ToValue(h.k.Name)
	}
	return nil
}

// Set implements goja.DynamicObject: the object is read-only.
func (h *kernelHandle) Set(string, goja.Value) bool { return false }

// Has implements goja.DynamicObject.
func (h *kernelHandle) Has(key string) bool { return key == "name" }

// Delete implements goja.DynamicObject.
func (h *kernelHandle) Delete(key string) bool { return key != "name" }

// Keys implements goja.DynamicObject.
func (h *kernelHandle) Keys() []string { return []string{"name"} }

func (b *gpuBinding) kernelArg(name, what string, v goja.Value) *kernelHandle {
	if h, ok := b.handle(v).(*kernelHandle); ok {
		return h
	}
	b.sb.Throw("TypeError", "%s: %s must be a DeviceKernel (from compileKernel), not %s", name, what, b.describe(v))
	return nil
}

func (b *gpuBinding) stringArg(name, what string, v goja.Value) string {
	if !goja.IsString(v) {
		b.sb.Throw("TypeError", "%s: %s must be a string, not %s", name, what, b.describe(v))
	}
	return v.String()
}

// compileKernel compiles source with NVRTC (cached by package gpu by a hash
// of the source and options) and loads the kernel name on the device of
// options.resources (or options.device's default resources), so that a
// compile error surfaces here, with NVRTC's log.
func (b *gpuBinding) compileKernel(call goja.FunctionCall) goja.Value {
	const name = "compileKernel"
	k := gpu.Kernel{
		Source: b.stringArg(name, "source", call.Argument(0)),
		Name:   b.stringArg(name, "name", call.Argument(1)),
	}
	if k.Name == "" {
		b.sb.Throw("TypeError", "%s: name must name the kernel's extern \"C\" __global__ function, not be empty", name)
	}
	o := b.optionsArg(name, call.Argument(2))
	if ov := field(o, "options"); !goja.IsUndefined(ov) {
		oo, ok := ov.(*goja.Object)
		if !ok || b.in.Classify(oo) != jsvalue.KindArray {
			b.sb.Throw("TypeError", "%s: options.options must be an array of strings, not %s", name, b.describe(ov))
		}
		for i := range int(oo.Get("length").ToInteger()) {
			k.Options = append(k.Options, b.stringArg(name, "options.options["+jsvalue.Index(i)+"]", oo.Get(jsvalue.Index(i))))
		}
	}
	h := b.resourcesOption(name, o)
	if err := h.r.LoadKernel(b.ctx(), k); err != nil {
		b.fail(name, err)
	}
	kh := &kernelHandle{b: b, k: k}
	kh.obj = b.rt.NewDynamicObject(kh)
	if err := kh.obj.SetPrototype(b.kernelProto); err != nil {
		panic(err)
	}
	return kh.obj
}

func (b *gpuBinding) kernelString(call goja.FunctionCall) goja.Value {
	h := b.kernelArg("DeviceKernel.prototype.toString", "this", call.This)
	return b.rt.ToValue("[DeviceKernel " + h.k.Name + "]")
}

func (b *gpuBinding) kernelSource(call goja.FunctionCall) goja.Value {
	return b.rt.ToValue(b.kernelArg("DeviceKernel.prototype.source", "this", call.This).k.Source)
}

func (b *gpuBinding) kernelOptions(call goja.FunctionCall) goja.Value {
	h := b.kernelArg("DeviceKernel.prototype.options", "this", call.This)
	items := make([]any, len(h.k.Options))
	for i, s := range h.k.Options {
		items[i] = s
	}
	a := b.rt.NewArray(items...)
	if _, err := b.in.ObjectFreeze(goja.Undefined(), a); err != nil {
		panic(err)
	}
	return a
}

// launchKernel queues kernel on a stream: launchKernel(kernel, {grid,
// block, shared, resources, device}, ...args). grid and block are a
// number, [x, y, z] or {x, y, z}; args are DeviceArrays and numbers with
// their C type ({f32: x}, {f64: x}, {i32: n}, {i64: n}, or a bigint for
// an i64). It runs on config.resources, or else on the resources of the
// first array argument, or else on config.device's default resources.
func (b *gpuBinding) launchKernel(call goja.FunctionCall) goja.Value {
	const name = "launchKernel"
	k := b.kernelArg(name, "the first argument", call.Argument(0))
	cv := call.Argument(1)
	if isNothing(cv) {
		b.sb.Throw("TypeError", "%s: the second argument must be the launch configuration, {grid, block}, not %s", name, b.describe(cv))
	}
	o := b.optionsArg(name, cv)
	cfg := gpu.LaunchConfig{
		Grid:  b.dim3Arg(name, "config.grid", field(o, "grid")),
		Block: b.dim3Arg(name, "config.block", field(o, "block")),
	}
	shared := b.intArg(name, "config.shared", field(o, "shared"), 0)
	if shared < 0 || shared > math.MaxUint32 {
		b.sb.Throw("RangeError", "%s: config.shared must be a byte count from 0 to %d, not %d", name, uint32(math.MaxUint32), shared)
	}
	cfg.SharedMem = uint32(shared)
	var (
		args  []any
		first *arrHandle
	)
	if len(call.Arguments) > 2 {
		for i, v := range call.Arguments[2:] {
			a, arr := b.kernelValue(name, i+1, v)
			if arr != nil && first == nil {
				first = arr
			}
			args = append(args, a)
		}
	}
	var res *resHandle
	switch {
	case !goja.IsUndefined(field(o, "resources")):
		res = b.resourcesOption(name, o)
	case first != nil && goja.IsUndefined(field(o, "device")):
		res = first.res
	default:
		res = b.resourcesOption(name, o)
	}
	if err := res.r.Launch(b.ctx(), k.k, cfg, args...); err != nil {
		b.fail(name, err)
	}
	return goja.Undefined()
}

// dim3Arg reads a grid or block size: a positive integer, an array of one
// to three, or an object {x, y, z} (y and z default to 1).
func (b *gpuBinding) dim3Arg(name, what string, v goja.Value) gpu.Dim3 {
	dim := func(w string, v goja.Value, def int) uint32 {
		n := b.intArg(name, w, v, def)
		if n < 1 || n > math.MaxUint32 {
			b.sb.Throw("RangeError", "%s: %s must be a positive integer below 2^32, not %d", name, w, n)
		}
		return uint32(n)
	}
	if goja.IsNumber(v) {
		return gpu.Dim3{X: dim(what, v, 1), Y: 1, Z: 1}
	}
	o, ok := v.(*goja.Object)
	if !ok {
		b.sb.Throw("TypeError", "%s: %s must be a number, [x, y, z] or {x, y, z}, not %s", name, what, b.describe(v))
	}
	if b.in.Classify(o) == jsvalue.KindArray {
		n := int(o.Get("length").ToInteger())
		if n < 1 || n > 3 {
			b.sb.Throw("RangeError", "%s: %s must have one to three sizes, not %d", name, what, n)
		}
		d := gpu.Dim3{Y: 1, Z: 1}
		for i, p := range []*uint32{&d.X, &d.Y, &d.Z}[:n] {
			*p = dim(what+"["+jsvalue.Index(i)+"]", o.Get(jsvalue.Index(i)), 1)
		}
		return d
	}
	if xv := o.Get("x"); xv == nil || goja.IsUndefined(xv) {
		b.sb.Throw("TypeError", "%s: %s.x is missing", name, what)
	}
	return gpu.Dim3{X: dim(what+".x", o.Get("x"), 1), Y: dim(what+".y", o.Get("y"), 1), Z: dim(what+".z", o.Get("z"), 1)}
}

// kernelTypes are the C types a number argument can be given, by key.
var kernelTypes = []string{"f32", "f64", "i32", "i64"}

// kernelValue converts kernel argument i (from 1): a DeviceArray, a
// bigint (int64), or a number typed as {f32: x}, {f64: x}, {i32: n} or
// {i64: n}.
func (b *gpuBinding) kernelValue(name string, i int, v goja.Value) (any, *arrHandle) {
	what := "kernel argument " + jsvalue.Index(i)
	if h, ok := b.handle(v).(*arrHandle); ok {
		return h.a, h
	}
	if goja.IsBigInt(v) {
		return b.int64Of(name, what, v), nil
	}
	if goja.IsNumber(v) {
		x := inspect.FormatNumber(v.ToFloat())
		b.sb.Throw("TypeError", "%s: %s is a plain number (%s); give its C type: {f32: %s}, {f64: %s}, {i32: %s} or {i64: %s}", name, what, x, x, x, x, x)
	}
	o, ok := v.(*goja.Object)
	if ok && b.in.Classify(o) == jsvalue.KindPlain && b.handle(o) == nil {
		if keys := o.Keys(); len(keys) == 1 {
			x := o.Get(keys[0])
			w := what + "." + keys[0]
			switch keys[0] {
			case "f32":
				return float32(b.floatOf(name, w, x)), nil
			case "f64":
				return b.floatOf(name, w, x), nil
			case "i32":
				n := b.int64Of(name, w, x)
				if n < math.MinInt32 || n > math.MaxInt32 {
					b.sb.Throw("RangeError", "%s: %s is out of the range of an int32: %d", name, w, n)
				}
				return int32(n), nil
			case "i64":
				return b.int64Of(name, w, x), nil
			}
		}
	}
	b.sb.Throw("TypeError", "%s: %s must be a DeviceArray, a bigint or a typed number ({%s}: x), not %s", name, what, strings.Join(kernelTypes, ", "), b.describe(v))
	return nil, nil
}

func (b *gpuBinding) floatOf(name, what string, v goja.Value) float64 {
	if !goja.IsNumber(v) {
		b.sb.Throw("TypeError", "%s: %s must be a number, not %s", name, what, b.describe(v))
	}
	return v.ToFloat()
}

func (b *gpuBinding) int64Of(name, what string, v goja.Value) int64 {
	if goja.IsBigInt(v) {
		n, _ := v.Export().(*big.Int)
		if n == nil || !n.IsInt64() {
			b.sb.Throw("RangeError", "%s: %s is out of the range of an int64: %s", name, what, v.String())
		}
		return n.Int64()
	}
	if !goja.IsNumber(v) {
		b.sb.Throw("TypeError", "%s: %s must be an integer, not %s", name, what, b.describe(v))
	}
	return int64(b.intArg(name, what, v, 0))
}
