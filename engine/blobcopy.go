package engine

import (
	"github.com/dop251/goja"

	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/value"
)

// flatKind is the shape of a blob value that holds only primitives, which
// a realm copies for each workunit without decoding it again.
type flatKind uint8

const (
	notFlat    flatKind = iota
	flatArray           // an array of primitives
	flatSet             // a Set of primitives
	flatObject          // a plain object whose properties are primitives
)

// flatValue copies a flat blob value: its primitives (and an object's
// keys), taken from a first decoding of the blob. Primitives are immutable,
// so every copy shares them; only the container is new.
type flatValue struct {
	kind flatKind
	keys []string
	vals []any // goja.Values, as Runtime.NewArray takes them
}

// flatKindOf reports whether a value document (one that decodes) is an
// array, a Set or a plain object of primitives only: numbers, strings,
// BigInts, booleans, null and undefined, with object keys as plain text.
func flatKindOf(data []byte) flatKind {
	r := cbor.NewReader(data)
	h, err := r.Next()
	if err != nil {
		return notFlat
	}
	kind, n := notFlat, h.Arg
	switch h.Major {
	case cbor.MajorArray:
		kind = flatArray
	case cbor.MajorMap:
		kind = flatObject
	case cbor.MajorTag:
		if h.Arg != value.TagSet {
			return notFlat
		}
		if h, err = r.Next(); err != nil || h.Major != cbor.MajorArray {
			return notFlat
		}
		kind, n = flatSet, h.Arg
	default:
		return notFlat
	}
	for range n {
		if kind == flatObject {
			k, err := r.Next()
			if err != nil || k.Major != cbor.MajorText {
				return notFlat
			}
			if _, err := r.Bytes(k.Arg); err != nil {
				return notFlat
			}
		}
		if !primitiveItem(r) {
			return notFlat
		}
	}
	if r.Remaining() != 0 {
		return notFlat
	}
	return kind
}

// primitiveItem reads the next item and reports whether it is a primitive.
func primitiveItem(r *cbor.Reader) bool {
	h, err := r.Next()
	if err != nil {
		return false
	}
	switch h.Major {
	case cbor.MajorUint, cbor.MajorNeg, cbor.MajorSimple:
		return true
	case cbor.MajorText:
		_, err := r.Bytes(h.Arg)
		return err == nil
	case cbor.MajorTag:
		switch h.Arg {
		case value.TagPosBignum, value.TagNegBignum, value.TagUTF16:
			_, err := r.ByteString()
			return err == nil
		}
	}
	return false
}

// flatTemplate takes the primitives of v, a value of the given kind just
// decoded (no workunit has seen it yet).
func (rl *realm) flatTemplate(kind flatKind, v goja.Value) *flatValue {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil
	}
	f := &flatValue{kind: kind}
	switch kind {
	case flatArray:
		n := int(o.Get("length").ToInteger())
		f.vals = make([]any, n)
		for i := range n {
			f.vals[i] = o.Get(jsvalue.Index(i))
		}
	case flatSet:
		collect := rl.rt.ToValue(func(c goja.FunctionCall) goja.Value {
			f.vals = append(f.vals, c.Argument(0))
			return goja.Undefined()
		})
		if _, err := rl.in.SetForEach(o, collect); err != nil {
			return nil
		}
	case flatObject:
		f.keys = o.Keys()
		f.vals = make([]any, len(f.keys))
		for i, k := range f.keys {
			f.vals[i] = o.Get(k)
		}
	default:
		return nil
	}
	return f
}

// copy makes a new value from the template, as decoding the blob would.
func (f *flatValue) copy(rl *realm) (goja.Value, error) {
	switch f.kind {
	case flatArray:
		return rl.rt.NewArray(f.vals...), nil
	case flatSet:
		set, err := rl.in.NewSet(nil)
		if err != nil {
			return nil, err
		}
		for _, v := range f.vals {
			if _, err := rl.in.SetAdd(set, v.(goja.Value)); err != nil {
				return nil, err
			}
		}
		return set, nil
	default:
		o := rl.rt.NewObject()
		for i, k := range f.keys {
			if err := o.DefineDataProperty(k, f.vals[i].(goja.Value), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, err
			}
		}
		return o, nil
	}
}
