// Package inspect writes JavaScript values and stacks as text, the way
// Node and V8 do: util.inspect (Inspect: what console.log prints for
// objects and what riot-worker eval prints for results that are not
// JSON), util.format (Format: console's arguments, with %s, %d, %j, %o
// and the rest), and V8-style stacks ("Name: message" and
// "    at fn (file:line:column)" lines) made from goja's frames and
// messages.
//
// It serves the engine's sandboxes (console, the errors of failed
// workunits), the master (its console, a job script's uncaught
// exception, riot-worker eval's printing) and the GPU bindings (numbers
// and strings in their messages).
//
// # Usage
//
//	text := inspect.Inspect(rt, js, v, inspect.Options{})      // console.log(v)
//	line := inspect.Format(rt, js, call.Arguments)              // console.log(...args)
//	stack := inspect.StackString("TypeError", msg, frames, 10) // at most 10 frames
//
// The caller's duties: call Inspect and Format on the goroutine of the
// runtime the values belong to, with that runtime's intrinsics
// (jsvalue.LoadIntrinsics). Both run no user code but getters, and
// catch what those throw.
package inspect
