package engine

import (
	"fmt"
	"math/big"
	"reflect"
	"strconv"

	"github.com/dop251/goja"
)

// intrinsics are built-in functions and prototypes of one runtime, taken
// before any workunit runs, so that the codec and the bindings work the same
// however a workunit has rewritten the globals.
type intrinsics struct {
	objectProto    *goja.Object
	arrayProto     *goja.Object
	dataViewProto  *goja.Object
	weakMapProto   *goja.Object
	weakSetProto   *goja.Object
	typedArrayTag  goja.Callable // get %TypedArray%.prototype[@@toStringTag]
	typedBuffer    goja.Callable // get %TypedArray%.prototype.buffer
	typedOffset    goja.Callable // get %TypedArray%.prototype.byteOffset
	typedLength    goja.Callable // get %TypedArray%.prototype.length
	viewBuffer     goja.Callable // get DataView.prototype.buffer
	viewOffset     goja.Callable // get DataView.prototype.byteOffset
	viewLength     goja.Callable // get DataView.prototype.byteLength
	mapForEach     goja.Callable
	setForEach     goja.Callable
	mapSet         goja.Callable
	setAdd         goja.Callable
	dateGetTime    goja.Callable
	regexpSource   goja.Callable
	regexpFlags    goja.Callable
	objectFreeze   goja.Callable
	isFrozen       goja.Callable
	promiseThen    goja.Callable
	newMap         goja.Constructor
	newSet         goja.Constructor
	newDate        goja.Constructor
	newRegExp      goja.Constructor
	newDataView    goja.Constructor
	typedCtors     map[string]goja.Constructor // by constructor name
	errorCtors     map[string]goja.Constructor // Error, TypeError, ...
	errorProtos    map[string]*goja.Object     // prototypes of the built-in error constructors, by name
	stringValueOf  goja.Callable
	jsonStringify  goja.Callable
	stringRepeat   goja.Callable
	stringPadStart goja.Callable
	stringPadEnd   goja.Callable
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

func loadIntrinsics(rt *goja.Runtime) (*intrinsics, error) {
	in := &intrinsics{
		typedCtors:  make(map[string]goja.Constructor, len(typedNames)),
		errorCtors:  make(map[string]goja.Constructor, len(errorNames)),
		errorProtos: make(map[string]*goja.Object, len(errorNames)),
	}
	// One script reads every intrinsic the engine needs, so that a typo
	// fails loudly at startup, not in the middle of a workunit.
	v, err := rt.RunScript(internalFile, `(function () {
		const getter = (o, k) => Object.getOwnPropertyDescriptor(o, k).get;
		const TA = Object.getPrototypeOf(Uint8Array.prototype);
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
		];
	})()`)
	if err != nil {
		return nil, fmt.Errorf("engine: reading intrinsics: %w", err)
	}
	var items []goja.Value
	arr := v.(*goja.Object)
	n := int(arr.Get("length").ToInteger())
	for i := 0; i < n; i++ {
		items = append(items, arr.Get(itoa(i)))
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
	in.objectProto, in.arrayProto, in.dataViewProto, in.weakMapProto, in.weakSetProto = obj(0), obj(1), obj(2), obj(3), obj(4)
	in.typedArrayTag, in.typedBuffer, in.typedOffset, in.typedLength = fn(5), fn(6), fn(7), fn(8)
	in.viewBuffer, in.viewOffset, in.viewLength = fn(9), fn(10), fn(11)
	in.mapForEach, in.setForEach, in.mapSet, in.setAdd = fn(12), fn(13), fn(14), fn(15)
	in.dateGetTime, in.regexpSource, in.regexpFlags = fn(16), fn(17), fn(18)
	in.objectFreeze, in.isFrozen, in.promiseThen = fn(19), fn(20), fn(21)
	in.newMap, in.newSet, in.newDate, in.newRegExp, in.newDataView = ctor(22), ctor(23), ctor(24), ctor(25), ctor(26)
	in.stringRepeat, in.stringPadStart, in.stringPadEnd = fn(27), fn(28), fn(29)
	in.stringValueOf, in.jsonStringify = fn(30), fn(31)
	for _, name := range typedNames {
		c, ok := goja.AssertConstructor(rt.Get(name))
		if !ok {
			return nil, fmt.Errorf("engine: %s is not a constructor", name)
		}
		in.typedCtors[name] = c
	}
	for _, name := range errorNames {
		g := rt.Get(name)
		c, ok := goja.AssertConstructor(g)
		if !ok {
			return nil, fmt.Errorf("engine: %s is not a constructor", name)
		}
		in.errorCtors[name] = c
		if p, ok := g.(*goja.Object).Get("prototype").(*goja.Object); ok {
			in.errorProtos[name] = p
		}
	}
	return in, nil
}

func itoa(i int) string {
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
