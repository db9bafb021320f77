package jsvalue

import (
	"fmt"
	"math/big"
	"reflect"
	"strconv"

	"github.com/dop251/goja"
)

// Intrinsics are built-in functions and prototypes of one runtime, taken
// before any workunit runs, so that the codec and the bindings work the same
// however a workunit has rewritten the globals.
type Intrinsics struct {
	ObjectProto    *goja.Object
	ArrayProto     *goja.Object
	DataViewProto  *goja.Object
	WeakMapProto   *goja.Object
	WeakSetProto   *goja.Object
	TypedArrayTag  goja.Callable // get %TypedArray%.prototype[@@toStringTag]
	TypedBuffer    goja.Callable // get %TypedArray%.prototype.buffer
	TypedOffset    goja.Callable // get %TypedArray%.prototype.byteOffset
	TypedLength    goja.Callable // get %TypedArray%.prototype.length
	ViewBuffer     goja.Callable // get DataView.prototype.buffer
	ViewOffset     goja.Callable // get DataView.prototype.byteOffset
	ViewLength     goja.Callable // get DataView.prototype.byteLength
	MapForEach     goja.Callable
	SetForEach     goja.Callable
	MapSet         goja.Callable
	SetAdd         goja.Callable
	DateGetTime    goja.Callable
	RegExpSource   goja.Callable
	RegExpFlags    goja.Callable
	ObjectFreeze   goja.Callable
	IsFrozen       goja.Callable
	PromiseThen    goja.Callable
	NewMap         goja.Constructor
	NewSet         goja.Constructor
	NewDate        goja.Constructor
	NewRegExp      goja.Constructor
	NewDataView    goja.Constructor
	TypedCtors     map[string]goja.Constructor // by constructor name
	ErrorCtors     map[string]goja.Constructor // Error, TypeError, ...
	ErrorProtos    map[string]*goja.Object     // prototypes of the built-in error constructors, by name
	StringValueOf  goja.Callable
	JSONStringify  goja.Callable
	StringRepeat   goja.Callable
	StringPadStart goja.Callable
	StringPadEnd   goja.Callable
	ObjectKeys     goja.Callable // Object.keys, whose keys keep lone surrogates
	ReflectGet     goja.Callable
	OwnData        goja.Callable // (o, k) => whether o has an own data property k
	DefineData     goja.Callable // (o, k, v): define an own enumerable, writable, configurable property
	// ArrayValues is Array.prototype.values, which is also
	// Array.prototype[Symbol.iterator]; ArrayIterProto is
	// %ArrayIteratorPrototype% and ArrayIterNext its next (see Items).
	ArrayValues    goja.Value
	ArrayIterProto *goja.Object
	ArrayIterNext  goja.Value
	// unclonable names the objects that structured clone refuses and that
	// look like plain objects from outside (generators, iterators), by the
	// goja type behind them.
	unclonable map[reflect.Type]string
	// wrapperType is the goja type behind wrapper objects of primitives
	// (a Symbol object among them).
	wrapperType reflect.Type
	// dense tells a plain dense array from goja's fields, without reading
	// its keys.
	dense denseArrays
}

// denseArrays reads goja's own bookkeeping of an array held as a dense
// list (its elements, how many are there, how many are not plain
// writable, enumerable data, and its named properties) to tell, in
// constant time, that an array has no holes and no properties but its
// elements and length: the case that a CBOR array holds. When goja keeps
// an array another way, or a goja that changed hides these fields, ok is
// false and the encoder reads the array's keys instead.
type denseArrays struct {
	t                                           reflect.Type // *goja.arrayObject
	values, length, objCount, props, propValues []int
	baseProps                                   int // the named properties of [] ("length")
}

// DenseArray returns the length of array o and true when o has every
// element from 0 to its length as a plain data property and no other
// property but length, telling so in constant time; false means that o
// has holes or other properties, or that this cannot be told without
// reading its keys.
func (in *Intrinsics) DenseArray(o *goja.Object) (int, bool) { return in.dense.plain(o) }

func newDenseArrays(sample *goja.Object) denseArrays {
	t := implType(sample)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return denseArrays{}
	}
	d := denseArrays{t: t}
	for _, f := range []struct {
		name string
		idx  *[]int
		kind reflect.Kind
	}{
		{"values", &d.values, reflect.Slice}, {"length", &d.length, reflect.Uint32}, {"objCount", &d.objCount, reflect.Int},
		{"propNames", &d.props, reflect.Slice}, {"propValueCount", &d.propValues, reflect.Int},
	} {
		sf, ok := t.Elem().FieldByName(f.name)
		if !ok || sf.Type.Kind() != f.kind {
			return denseArrays{}
		}
		*f.idx = sf.Index
	}
	d.baseProps = reflect.ValueOf(sample).Elem().Field(implField).Elem().Elem().FieldByIndex(d.props).Len()
	if n, ok := d.plain(sample); !ok || n != 0 {
		return denseArrays{}
	}
	return d
}

// plain returns the length of array o and true when o is held densely,
// every element is there as a plain data property, and it has no named
// property but length.
func (d *denseArrays) plain(o *goja.Object) (int, bool) {
	if d.t == nil {
		return 0, false
	}
	f := reflect.ValueOf(o).Elem().Field(implField)
	if f.IsNil() || f.Elem().Type() != d.t {
		return 0, false
	}
	a := f.Elem().Elem()
	n := a.FieldByIndex(d.length).Uint()
	if uint64(a.FieldByIndex(d.values).Len()) != n || uint64(a.FieldByIndex(d.objCount).Int()) != n ||
		a.FieldByIndex(d.propValues).Int() != 0 || a.FieldByIndex(d.props).Len() != d.baseProps {
		return 0, false
	}
	return int(n), true
}

var (
	typeMapExport     = reflect.TypeOf([][2]any{})
	typeSetExport     = reflect.TypeOf([]any{})
	typeArrayBuffer   = reflect.TypeOf(goja.ArrayBuffer{})
	typePromiseExport = reflect.TypeOf((*goja.Promise)(nil))
	typeProxyExport   = reflect.TypeOf(goja.Proxy{})
	typeBigIntExport  = reflect.TypeOf((*big.Int)(nil))
)

// errorNames are the error constructors that the codec recreates by name;
// an error of another name comes back as an Error with that name.
var errorNames = []string{"Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError", "URIError", "AggregateError"}

var typedNames = []string{"Uint8Array", "Uint8ClampedArray", "Int8Array", "Uint16Array", "Int16Array", "Uint32Array", "Int32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"}

// InternalFile names the scripts riot runs in a runtime itself (reading
// the intrinsics, installing bindings); stacks leave their frames out.
const InternalFile = "riot:internal"

// LoadIntrinsics reads the intrinsics of rt. Call it before any script of
// a user runs there.
func LoadIntrinsics(rt *goja.Runtime) (in *Intrinsics, err error) {
	defer func() {
		// A built-in that is not what it should be (a goja that changed)
		// fails the runtime, not its caller.
		if x := recover(); x != nil {
			in, err = nil, fmt.Errorf("%v", x)
		}
	}()
	in = &Intrinsics{
		TypedCtors:  make(map[string]goja.Constructor, len(typedNames)),
		ErrorCtors:  make(map[string]goja.Constructor, len(errorNames)),
		ErrorProtos: make(map[string]*goja.Object, len(errorNames)),
	}
	// One script reads every intrinsic the engine needs, so that a typo
	// fails loudly at startup, not in the middle of a workunit.
	v, err := intrinsicsScript.Run(rt)
	if err != nil {
		return nil, fmt.Errorf("engine: reading intrinsics: %w", err)
	}
	var items []goja.Value
	arr := v.(*goja.Object)
	n := int(arr.Get("length").ToInteger())
	for i := 0; i < n; i++ {
		items = append(items, arr.Get(Index(i)))
	}
	obj := func(i int) *goja.Object { return items[i].(*goja.Object) }
	fn := func(i int) goja.Callable {
		f, ok := goja.AssertFunction(items[i])
		if !ok {
			panic(fmt.Sprintf("engine: intrinsic %d is not a function", i))
		}
		return f
	}
	ctor := func(i int) goja.Constructor {
		c, ok := goja.AssertConstructor(items[i])
		if !ok {
			panic(fmt.Sprintf("engine: intrinsic %d is not a constructor", i))
		}
		return c
	}
	in.ObjectProto, in.ArrayProto, in.DataViewProto, in.WeakMapProto, in.WeakSetProto = obj(0), obj(1), obj(2), obj(3), obj(4)
	in.TypedArrayTag, in.TypedBuffer, in.TypedOffset, in.TypedLength = fn(5), fn(6), fn(7), fn(8)
	in.ViewBuffer, in.ViewOffset, in.ViewLength = fn(9), fn(10), fn(11)
	in.MapForEach, in.SetForEach, in.MapSet, in.SetAdd = fn(12), fn(13), fn(14), fn(15)
	in.DateGetTime, in.RegExpSource, in.RegExpFlags = fn(16), fn(17), fn(18)
	in.ObjectFreeze, in.IsFrozen, in.PromiseThen = fn(19), fn(20), fn(21)
	in.NewMap, in.NewSet, in.NewDate, in.NewRegExp, in.NewDataView = ctor(22), ctor(23), ctor(24), ctor(25), ctor(26)
	in.StringRepeat, in.StringPadStart, in.StringPadEnd = fn(27), fn(28), fn(29)
	in.StringValueOf, in.JSONStringify = fn(30), fn(31)
	in.ObjectKeys, in.ReflectGet, in.OwnData, in.DefineData = fn(32), fn(33), fn(34), fn(35)
	in.unclonable = make(map[reflect.Type]string)
	for i, what := range [...]string{"a generator", "an Array Iterator", "a Map Iterator", "a Set Iterator", "a String Iterator", "a RegExp String Iterator"} {
		t := implType(obj(36 + i))
		if _, dup := in.unclonable[t]; dup || t == implType(in.ObjectProto) || t == implType(rt.NewObject()) {
			return nil, fmt.Errorf("engine: %s is not told apart from other objects", what)
		}
		in.unclonable[t] = what
	}
	in.wrapperType = implType(obj(42))
	in.ArrayValues, in.ArrayIterProto, in.ArrayIterNext = items[43], obj(37).Prototype(), items[44]
	if _, ok := goja.AssertFunction(in.ArrayIterNext); !ok || in.ArrayIterProto == nil || !in.ArrayProto.GetSymbol(goja.SymIterator).SameAs(in.ArrayValues) {
		return nil, fmt.Errorf("engine: the array iterator is not what it should be")
	}
	in.dense = newDenseArrays(rt.NewArray())
	for _, name := range typedNames {
		c, ok := goja.AssertConstructor(rt.Get(name))
		if !ok {
			return nil, fmt.Errorf("engine: %s is not a constructor", name)
		}
		in.TypedCtors[name] = c
	}
	for _, name := range errorNames {
		g := rt.Get(name)
		c, ok := goja.AssertConstructor(g)
		if !ok {
			return nil, fmt.Errorf("engine: %s is not a constructor", name)
		}
		in.ErrorCtors[name] = c
		if p, ok := g.(*goja.Object).Get("prototype").(*goja.Object); ok {
			in.ErrorProtos[name] = p
		}
	}
	return in, nil
}

// implField is the index of goja.Object's field that holds what kind of
// object it is, whose dynamic type tells apart the objects that scripts
// cannot: a generator from a plain object.
var implField = func() int {
	f, ok := reflect.TypeFor[goja.Object]().FieldByName("self")
	if !ok {
		return -1
	}
	return f.Index[0]
}()

// implType returns the goja type behind o, or nil when this goja keeps it
// elsewhere (LoadIntrinsics then fails).
func implType(o *goja.Object) reflect.Type {
	if implField < 0 {
		return nil
	}
	f := reflect.ValueOf(o).Elem().Field(implField)
	if f.Kind() != reflect.Interface || f.IsNil() {
		return nil
	}
	return f.Elem().Type()
}

// Index returns the property name of array index i.
func Index(i int) string {
	if i >= 0 && i < len(smallInts) {
		return smallInts[i]
	}
	return strconv.Itoa(i)
}

// smallInts holds the property names of the first array indexes; it is
// filled once at init and never written again.
var smallInts = func() []string {
	s := make([]string, 1024)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// intrinsicsScript reads every intrinsic LoadIntrinsics keeps.
var intrinsicsScript = NewScript(`(function () {
		const getter = (o, k) => Object.getOwnPropertyDescriptor(o, k).get;
		const TA = Object.getPrototypeOf(Uint8Array.prototype);
		const gopd = Object.getOwnPropertyDescriptor, apply = Reflect.apply, hasOwn = Object.prototype.hasOwnProperty;
		const defineProperty = Object.defineProperty;
		return [
			Object.prototype, Array.prototype, DataView.prototype, WeakMap.prototype, WeakSet.prototype,
			getter(TA, Symbol.toStringTag), getter(TA, 'buffer'), getter(TA, 'byteOffset'), getter(TA, 'length'),
			getter(DataView.prototype, 'buffer'), getter(DataView.prototype, 'byteOffset'), getter(DataView.prototype, 'byteLength'),
			Map.prototype.forEach, Set.prototype.forEach, Map.prototype.set, Set.prototype.add,
			Date.prototype.getTime, getter(RegExp.prototype, 'source'), getter(RegExp.prototype, 'flags'),
			Object.freeze, Object.isFrozen, Promise.prototype.then,
			Map, Set, Date, RegExp, DataView,
			String.prototype.repeat, String.prototype.padStart, String.prototype.padEnd,
			String.prototype.valueOf, JSON.stringify,
			Object.keys, Reflect.get,
			(o, k) => { const d = gopd(o, k); return d !== undefined && apply(hasOwn, d, ['value']); },
			(o, k, v) => { defineProperty(o, k, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true }); },
			(function* () {})(), [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
			''[Symbol.iterator](), /x/g[Symbol.matchAll](''), Object(Symbol()),
			Array.prototype.values, Object.getPrototypeOf([][Symbol.iterator]()).next,
		];
	})()`)
