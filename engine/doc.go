// Package engine evaluates riot workunits in goja sandboxes.
//
// An Engine has a number of slots; each slot evaluates one workunit at a
// time in a goja runtime of its own, which only that slot's goroutine
// touches. Workunits of different realms (jobs, masters) never share a
// runtime: a slot keeps a few runtimes, one per realm, and makes a fresh one
// when a workunit ran away.
//
// # What a workunit sees
//
// The ECMAScript built-ins, and: console (log, info, warn, error, debug,
// trace, assert, dir; captured per workunit and returned with its result,
// up to Options.MaxConsoleBytes), performance.now(), sleep(seconds) (blocks
// the workunit; its time limit interrupts it), setTimeout, setInterval,
// clearTimeout, clearInterval and queueMicrotask (they run while the
// workunit waits for its promise, and none outlives it), riot.worker
// (name, slot, gpus), and the GPU bindings of docs/gpu.md (deviceCount,
// deviceResources, ...; without a GPU they say why there is none). Nothing
// else: no file system, network, process, environment
// or require of host modules (a call workunit's require reaches only the
// modules shipped with it).
//
// # Kinds of workunit
//
//   - eval: a script; its completion value is the result.
//   - call: a CommonJS module given by the hash of its blob, an export name
//     and arguments. The module's top level runs once per runtime.
//   - fn: a function given by its source and the values of its free
//     variables (see value.Function), and arguments.
//
// A result that is a promise is waited for. Results, arguments and captured
// values travel as value documents (package value, docs/values.md), decoded
// straight into the runtime. A captured value stored as a blob is decoded
// once per runtime, frozen, and shared by the workunits that use it.
//
// # Limits
//
// Each workunit has a time limit (Options.Timeout or Request.Timeout), a
// call-stack depth limit, bounds on its result and console output, and,
// when Options.MemoryLimit is set, a guard that interrupts every running
// workunit once the heap passes the limit. A workunit that passes a limit
// fails with a *workunit.Error naming the limit; the engine goes on serving,
// and the slot's next workunit gets a clean runtime.
//
// # Usage
//
//	eng, err := engine.New(engine.Options{Slots: 4, Timeout: time.Minute})
//	if err != nil { ... }
//	defer eng.Close()
//	res, err := eng.Eval(ctx, "[1, 2, 3].map(x => x * 2)")
//	var werr *workunit.Error
//	if errors.As(err, &werr) { ... werr.Name, werr.Message, werr.Stack ... }
//	v, err := res.Decode() // []any{2.0, 4.0, 6.0}
//
// The caller's duties:
//
//  1. Close the Engine when done; it releases every runtime.
//  2. Pass a context to Run: it bounds the wait for a slot and the
//     evaluation. Canceling it fails the workunit with kind Canceled.
//  3. Give Request.Blobs when a Spec refers to modules or blob values; the
//     engine checks each blob's hash.
//  4. Treat Result.Value as owned by the caller and the Engine as safe for
//     concurrent use.
package engine
