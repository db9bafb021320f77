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

// DefaultMaxPrintBytes is the least text FormatValue may write for a
// result; a result of n encoded bytes may write up to 8·n.
const DefaultMaxPrintBytes = 16 << 20

// FormatValue returns the text that riot-worker eval prints for a result:
// JSON when the value can be written as JSON without losing anything (null,
// booleans, finite numbers other than -0, strings, arrays and plain objects,
// without cycles) in at most the bound below, and otherwise the readable
// form console.log prints, as Node's REPL shows results: two levels deep,
// at most 1000 items of an array, Map or Set and 10000 characters of a
// string inside it (docs/engine.md, "Printing values"). isJSON says which.
//
// The text is bounded, whatever the value's shape: at most
// DefaultMaxPrintBytes or 8 times the encoded size, whichever is more (a
// graph of shared references, such as 40 levels of [a, a], takes a few
// bytes to send and would print as 2^40 leaves); past it the readable form
// stops writing, and ends with a note of what it cut. FormatValue stops
// when ctx ends, with ctx's error.
func FormatValue(ctx context.Context, data []byte) (text string, isJSON bool, err error) {
	st, err := engine.NewStandalone(ctx, engine.StandaloneOptions{})
	if err != nil {
		return "", false, err
	}
	defer st.Close()
	rt, in := st.Runtime(), st.Intrinsics()
	v, err := st.Decode(data)
	if err != nil {
		return "", false, fmt.Errorf("engine: format: %w", err)
	}
	limit := max(DefaultMaxPrintBytes, 8*len(data))
	w := &jsonWalk{ctx: ctx, in: in, left: limit}
	safe := w.safe(v, nil)
	if w.canceled {
		return "", false, fmt.Errorf("engine: format: %w", ctx.Err())
	}
	if safe {
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
	text, err = inspect.InspectContext(ctx, rt, in, v, inspect.Options{MaxItems: 1000, MaxBytes: limit})
	if err != nil {
		return "", false, fmt.Errorf("engine: format: %w", err)
	}
	return text, false, nil
}

// jsonWalk says whether JSON.stringify would write a value exactly, in at
// most left bytes (about), and stops when ctx ends.
type jsonWalk struct {
	ctx      context.Context
	in       *jsvalue.Intrinsics
	left     int // bytes of JSON text still allowed
	steps    int
	canceled bool
}

// safe reports whether JSON.stringify would write v exactly, within w's
// budget.
func (w *jsonWalk) safe(v goja.Value, ancestors []*goja.Object) bool {
	if w.steps++; w.steps%1024 == 0 && w.ctx.Err() != nil {
		w.canceled = true
	}
	if w.canceled || w.left < 0 {
		return false
	}
	in := w.in
	switch {
	case v == nil || goja.IsUndefined(v):
		return false
	case goja.IsNull(v):
		w.left -= 4
		return true
	case goja.IsString(v):
		w.left -= len(v.String()) + 2
		return w.left >= 0
	case goja.IsNumber(v):
		f := v.ToFloat()
		w.left -= 8
		return !math.IsNaN(f) && !math.IsInf(f, 0) && !(f == 0 && math.Signbit(f))
	}
	if v.ExportType().Kind() == reflect.Bool {
		w.left -= 5
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
	w.left -= 2
	switch in.Classify(o) {
	case jsvalue.KindArray:
		n, dense := in.DenseArray(o)
		if o.Prototype() != in.ArrayProto || !dense {
			// Holes and other properties: JSON has neither.
			return false
		}
		for i := 0; i < n; i++ {
			w.left--
			if !w.safe(o.Get(jsvalue.Index(i)), ancestors) {
				return false
			}
		}
		return true
	case jsvalue.KindPlain:
		if o.Prototype() != in.ObjectProto {
			return false
		}
		for _, k := range o.Keys() {
			w.left -= len(k) + 4
			if !w.safe(o.Get(k), ancestors) {
				return false
			}
		}
		return true
	}
	return false
}
