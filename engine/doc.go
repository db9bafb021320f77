// Package engine evaluates riot workunits in goja sandboxes: how a
// workunit runs.
//
// An Engine has a number of slots; each slot evaluates one workunit at a
// time in a goja runtime, which only that run's goroutine touches.
// Workunits of different realms (jobs, masters) never share a runtime: the
// engine keeps idle runtimes keyed by realm, for any slot
// (Options.IdleRuntimes, Options.IdleRuntimeBytes), and makes a fresh one
// when a workunit ran away.
//
// # What a workunit sees
//
// The ECMAScript built-ins, and: console (log, info, warn, error, debug,
// trace, assert, dir, table, time, timeLog, timeEnd, count, countReset,
// group, groupCollapsed, groupEnd, as Node's; captured per workunit and
// returned with its result, up to Options.MaxConsoleBytes; its counters,
// timers and group level start afresh with each workunit), the globals of
// the web platform that Node has (structuredClone, through the codec that
// carries values between master and workers; TextEncoder and TextDecoder,
// UTF-8 only; URL and URLSearchParams, the WHATWG parser; atob and btoa;
// crypto.getRandomValues and crypto.randomUUID; DOMException, which they
// throw; all built when a workunit first touches one of them, see
// docs/engine.md), performance.now(), sleep(seconds) (blocks
// the workunit; its time limit interrupts it), setTimeout, setInterval,
// clearTimeout, clearInterval and queueMicrotask (they run while the
// workunit waits for its promise, and none outlives it), riot.worker
// (name, slot, gpus), and the globals of Options.Bindings: on a worker,
// the GPU bindings of docs/gpu.md (package engine/jsgpu: deviceCount,
// deviceResources, ...; without a GPU they say why there is none),
// WebAssembly (package engine/jswasm: Module, Instance, Memory, ...), and
// the riot functions that submit child workunits (package engine/jschild:
// riot.doWork, riot.waitUntilDone and the rest, through the worker's
// Request.Host). Nothing else: no file system, network, process, environment
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
// straight into the runtime. A captured value stored as a blob is fetched
// and checked once per runtime, and decoded for each workunit that uses it:
// each has its own copy, whose changes never reach another workunit.
//
// # Waiting with the slot given up
//
// A workunit that waits for work done elsewhere (its children) may give
// up its slot (Sandbox.Secede) and take one back when it
// runs again (Rejoin): Options.Slots bounds the workunits that evaluate
// at once, not the runtimes. A slot whose permit comes while every slot
// is held by a waiting workunit is made for the purpose, with runtimes of
// its own; Options.MaxSeceded bounds the workunits that wait so at once.
// A waiting workunit keeps its runtime and its time limit runs on.
//
// # Limits
//
// Each workunit has a time limit (Options.Timeout or Request.Timeout), a
// call-stack depth limit, bounds on its result and console output, and,
// when Options.MemoryLimit is set, a guard that interrupts every running
// workunit once the heap passes the limit. A workunit that passes a limit
// fails with a *workunit.Error naming the limit; the engine goes on serving,
// and the slot's next workunit gets a clean runtime. A stopped workunit
// that does not return (a long built-in call) is abandoned after
// Options.AbandonAfter: its caller gets its failure, and the slot goes on
// with a fresh runtime while the stuck goroutine runs on (Engine.Stuck).
// Every source the engine runs is compiled through a guard of the BigInt
// operators (package engine/internal/opguard): `**` and the shifts refuse
// a result of more than 2^26 bits with a RangeError, and in a workunit eval
// and the function constructors compile through the same guard (eval is
// therefore always indirect).
//
// # Bindings: the seam
//
// Everything a workunit sees beyond the sandbox itself is installed
// through one seam: a Binding (Install(*Sandbox) error; BindingFunc adapts
// a function) in Options.Bindings, installed in order into every sandbox
// the engine makes, after riot's own globals. The *Sandbox a binding gets
// is the runtime as a binding needs it, and no more:
//
//   - Runtime and Intrinsics: the goja runtime, and its built-ins as they
//     were before any user script ran;
//   - Context: the running workunit's context, which every wait of a
//     binding must end with; GPUs: the devices it was given;
//   - Throw, to throw a JavaScript error from a Go function; Interrupt, to
//     stop the script when a wait ended with Context;
//   - OnClose, to release what the binding holds when the engine drops
//     the sandbox; Logger;
//   - SetFuncs, to install functions from an ordered export table (Func),
//     so that every sandbox lists its properties in one order;
//   - Decode, DecodeArgs, FetchModule and WorkunitError, riot's value
//     documents and errors in the runtime.
//
// The engine knows no network and no GPU: it lists the host's device
// ordinals as riot.worker.gpus (Options.GPUs, Request.GPUs) and nothing
// more. A plain New gives workunits no GPU globals; workers install
// jsgpu.Binding (with their driver, or nil for none) so that workunits see
// the same globals on every worker.
//
// NewStandalone makes a sandbox outside any Engine, for one script that
// runs as long as it likes on one goroutine, with its console printing to
// a ConsoleSink of its owner's and its timers run by its owner's event
// loop: the master runs job scripts in one (package engine/master).
//
// # Layout
//
//   - engine: the sandbox (this package): Engine, slots, realms, limits
//     and the memory guard, the compile cache, console, timers,
//     performance, the web globals, riot.worker, string limits, failures as
//     *workunit.Error, the seam and standalone sandboxes.
//   - engine/jsgpu: the GPU bindings over package gpu.
//   - engine/jschild: the riot functions of a workunit that submit
//     children, over a Host the worker implements.
//   - engine/jswasm: WebAssembly over wazero.
//   - engine/master: job scripts: the riot object, the client objects,
//     require, the capture hook, and FormatValue.
//   - engine/capture: the free-variable analysis that lets the master
//     ship closures.
//   - engine/internal/jsvalue: the JavaScript side of the value codec,
//     the function factories, the intrinsics and classify.
//   - engine/internal/inspect: Node's util.inspect and util.format, and
//     V8-style stacks.
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
//  5. Give Bindings that are safe to install into several sandboxes at
//     once (one per slot), and close what they use (a GPU driver) after
//     the engine.
package engine
