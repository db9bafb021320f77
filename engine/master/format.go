package master

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/dop251/goja"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// FormatValue returns the text that riot-worker eval prints for a result:
// JSON when the value can be written as JSON without losing anything (null,
// booleans, finite numbers other than -0, strings, arrays and plain objects,
// without cycles), and otherwise the readable form console.log prints, at
// any depth (docs/engine.md, "Printing values"). isJSON says which.
func FormatValue(data []byte) (text string, isJSON bool, err error) {
	st, err := engine.NewStandalone(context.Background(), engine.StandaloneOptions{})
	if err != nil {
		return "", false, err
	}
	defer st.Close()
	rt, in := st.Runtime(), st.Intrinsics()
	v, err := st.Decode(data)
	if err != nil {
		return "", false, fmt.Errorf("engine: format: %w", err)
	}
	if jsonSafe(in, v, nil) {
		if ex := rt.Try(func() {
			var s goja.Value
			s, err = in.JSONStringify(goja.Undefined(), v)
			if err == nil {
				text = s.String()
			}
		}); ex != nil {
			err = ex
		}
		return text, err == nil, err
	}
	return inspect.Inspect(rt, in, v, inspect.Options{Depth: -1, MaxItems: 1000}), false, nil
}

// jsonSafe reports whether JSON.stringify would write v exactly.
func jsonSafe(in *jsvalue.Intrinsics, v goja.Value, ancestors []*goja.Object) bool {
	switch {
	case v == nil || goja.IsUndefined(v):
		return false
	case goja.IsNull(v), goja.IsString(v):
		return true
	case goja.IsNumber(v):
		f := v.ToFloat()
		return !math.IsNaN(f) && !math.IsInf(f, 0) && !(f == 0 && math.Signbit(f))
	}
	if v.ExportType().Kind() == reflect.Bool {
		return true
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	for _, a := range ancestors {
		if a == o {
			return false
		}
	}
	ancestors = append(ancestors, o)
	switch in.Classify(o) {
	case jsvalue.KindArray:
		n, dense := in.DenseArray(o)
		if o.Prototype() != in.ArrayProto || !dense {
			// Holes and other properties: JSON has neither.
			return false
		}
		for i := 0; i < n; i++ {
			if !jsonSafe(in, o.Get(jsvalue.Index(i)), ancestors) {
				return false
			}
		}
		return true
	case jsvalue.KindPlain:
		if o.Prototype() != in.ObjectProto {
			return false
		}
		for _, k := range o.Keys() {
			if !jsonSafe(in, o.Get(k), ancestors) {
				return false
			}
		}
		return true
	}
	return false
}
