package engine

import (
	"fmt"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// bindNativeStops makes JSON.stringify stop when its workunit is stopped.
// An interrupt takes effect at the next JavaScript step, and the built-in
// JSON.stringify takes none: of a deeply nested value it takes time that
// grows with the square of the depth (minutes for a depth of 10⁵), and
// a time limit did not end it. The wrapper gives it a replacer of Go that
// returns each value as it is, which changes nothing in its output (a
// replacer function of the workunit's own, or an array of keys, is left
// alone: the first is JavaScript, which an interrupt stops, the second
// is not covered). The replacer is called for each value: once the run
// is stopped, it calls a JavaScript function, which raises the interrupt
// in the stringify's place.
//
// Other built-ins that run long (a regular expression that backtracks,
// String() of a long or deep array, a sort of a large array) are not
// covered here: a run that does not return after its stop is abandoned
// (Options.AbandonAfter).
func bindNativeStops(rl *realm) error {
	json, ok := rl.rt.GlobalObject().Get("JSON").(*goja.Object)
	if !ok {
		return fmt.Errorf("engine: no JSON object to wrap")
	}
	fn, ok := json.Get("stringify").(*goja.Object)
	if !ok {
		return fmt.Errorf("engine: JSON.stringify is not an object")
	}
	orig, ok := fn.Export().(func(goja.FunctionCall) goja.Value)
	if !ok {
		return fmt.Errorf("engine: JSON.stringify is not a native function (%T)", fn.Export())
	}
	isArray, ok := goja.AssertFunction(rl.rt.GlobalObject().Get("Array").(*goja.Object).Get("isArray"))
	if !ok {
		return fmt.Errorf("engine: Array.isArray is not a function")
	}
	v, err := emptyFunctionScript.Run(rl.rt)
	if err != nil {
		return err
	}
	step, _ := goja.AssertFunction(v)
	replacer := rl.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		if r := rl.cur; r != nil && r.stopped.Load() {
			// The stop interrupted the runtime: the function's first step
			// raises it.
			if _, err := step(goja.Undefined()); err != nil {
				panic(err)
			}
		}
		return call.Argument(1)
	})
	stringify := func(call goja.FunctionCall) goja.Value {
		rep := call.Argument(1)
		if !ownReplacer(rep, isArray) {
			rep = replacer
		}
		return orig(goja.FunctionCall{This: call.This, Arguments: []goja.Value{call.Argument(0), rep, call.Argument(2)}})
	}
	w := rl.rt.ToValue(stringify).(*goja.Object)
	if err := w.DefineDataProperty("name", rl.rt.ToValue("stringify"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	if err := w.DefineDataProperty("length", rl.rt.ToValue(3), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return err
	}
	return json.DefineDataProperty("stringify", w, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// ownReplacer reports whether JSON.stringify's replacer argument v is one
// it uses: a function or an array. Any other value it ignores.
func ownReplacer(v goja.Value, isArray goja.Callable) bool {
	o, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	if _, ok := goja.AssertFunction(o); ok {
		return true
	}
	is, err := isArray(goja.Undefined(), o)
	return err != nil || is.ToBoolean()
}

// emptyFunctionScript makes the function whose first step raises a stop.
var emptyFunctionScript = jsvalue.NewScript("(function () {})")
