package jsvalue

import (
	"reflect"

	"github.com/dop251/goja"
)

// Kind is what kind of object a value is, as structured clone sees it.
type Kind uint8

const (
	KindPlain Kind = iota
	KindFunction
	KindArray
	KindDate
	KindRegExp
	KindError
	KindBoxed // new String(...), new Number(...), new Boolean(...)
	KindMap
	KindSet
	KindArrayBuffer
	KindTyped
	KindDataView
	KindPromise
	KindProxy
	KindWeakMap
	KindWeakSet
)

// Classify tells an object's kind from its internal class and export type,
// which scripts cannot change, and for DataViews and weak collections from
// the prototype they were made with.
func (in *Intrinsics) Classify(o *goja.Object) Kind {
	if _, ok := goja.AssertFunction(o); ok {
		return KindFunction
	}
	switch o.ClassName() {
	case "Array":
		return KindArray
	case "Date":
		return KindDate
	case "RegExp":
		return KindRegExp
	case "Error":
		return KindError
	case "String", "Number", "Boolean":
		return KindBoxed
	}
	switch t := o.ExportType(); t {
	case typeMapExport:
		return KindMap
	case typeSetExport:
		return KindSet
	case typeArrayBuffer:
		return KindArrayBuffer
	case typePromiseExport:
		return KindPromise
	case typeProxyExport:
		return KindProxy
	case typeBigIntExport:
		return KindBoxed
	default:
		if t != nil && t.Kind() == reflect.Slice {
			if _, ok := in.TypedName(o); ok {
				return KindTyped
			}
		}
	}
	switch o.Prototype() {
	case in.DataViewProto:
		if _, err := in.ViewBuffer(o); err == nil {
			return KindDataView
		}
	case in.WeakMapProto:
		return KindWeakMap
	case in.WeakSetProto:
		return KindWeakSet
	}
	return KindPlain
}

// Unbox returns the primitive inside a boxed primitive.
func (in *Intrinsics) Unbox(rt *goja.Runtime, o *goja.Object) goja.Value {
	if o.ClassName() == "String" {
		if v, err := in.StringValueOf(o); err == nil {
			return v
		}
	}
	return rt.ToValue(o.Export())
}

// TypedName returns the constructor name of a typed array
// ("Float64Array"), and false for any other object.
func (in *Intrinsics) TypedName(o *goja.Object) (string, bool) {
	v, err := in.TypedArrayTag(o)
	if err != nil || v == nil || goja.IsUndefined(v) {
		return "", false
	}
	return v.String(), true
}

// IsPromise reports whether v is a Promise.
func IsPromise(v goja.Value) bool {
	o, ok := v.(*goja.Object)
	return ok && o.ExportType() == typePromiseExport
}

// Describe names a value's type for error messages: "undefined", "a
// string", "an object".
func Describe(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	case goja.IsString(v):
		return "a string"
	case goja.IsNumber(v):
		return "a number"
	case goja.IsBigInt(v):
		return "a bigint"
	}
	if o, ok := v.(*goja.Object); ok {
		if _, ok := goja.AssertFunction(o); ok {
			return "a function"
		}
		if o.ClassName() == "Array" {
			return "an array"
		}
		return "an object"
	}
	return "a " + v.ExportType().String()
}

// Unclonable names an object that Classify takes for a plain object but
// that structured clone refuses, having internal state that its properties
// do not show: "a generator", "an Array Iterator", "a Symbol object", "an
// arguments object". It returns false for a plain object.
func (in *Intrinsics) Unclonable(o *goja.Object) (string, bool) {
	if o.ClassName() == "Arguments" {
		return "an arguments object", true
	}
	t := implType(o)
	if what, ok := in.unclonable[t]; ok {
		return what, true
	}
	if t == in.wrapperType && o.ExportType() != typeBigIntExport {
		// The only wrapper Classify leaves as plain: a Symbol's.
		return "a Symbol object", true
	}
	return "", false
}
