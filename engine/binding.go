package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// A Binding installs globals into a sandbox: the GPU bindings
// (engine/jsgpu), a job script's riot object (engine/master). An engine
// installs Options.Bindings into every sandbox it makes, in order, after
// riot's own globals; a standalone sandbox installs
// StandaloneOptions.Bindings.
//
// Install runs once per sandbox, on the goroutine that will run it, before
// any workunit's code. It may keep sb and call its methods later, from the
// Go functions it installs. An error fails the making of the sandbox, and
// with it the workunit that needed it.
type Binding interface {
	Install(sb *Sandbox) error
}

// BindingFunc is a function that is a Binding.
type BindingFunc func(sb *Sandbox) error

// Install calls f(sb).
func (f BindingFunc) Install(sb *Sandbox) error { return f(sb) }

// Func is one entry of an export table: a Go function and the name
// JavaScript knows it by. Bindings install their functions from slices of
// them (Sandbox.SetFuncs), never by ranging over a map, so that every
// sandbox lists its properties in one order: a workunit's result must not
// depend on which sandbox ran it.
type Func struct {
	Name string
	Fn   func(goja.FunctionCall) goja.Value
}

// Sandbox is one goja runtime that the engine made, with riot's globals,
// as a binding sees it: the runtime, the workunit running in it, and the
// hooks a binding needs. A sandbox runs one workunit at a time, on one
// goroutine; its methods are for that goroutine, except Interrupt.
type Sandbox struct {
	rl *realm
}

// Runtime returns the goja runtime.
func (sb *Sandbox) Runtime() *goja.Runtime { return sb.rl.rt }

// Intrinsics returns the runtime's built-in functions and prototypes, read
// before any script of a user ran: what a binding uses to tell a typed
// array from a look-alike, or to freeze an object, whatever a workunit did
// to the globals. Its type is riot's own (engine/internal/jsvalue): the
// bindings in this module use it in full.
func (sb *Sandbox) Intrinsics() *jsvalue.Intrinsics { return sb.rl.in }

// Context returns the context of the workunit running now: it ends when
// the workunit passes its time limit, is stopped or its caller gives up.
// Every wait of a binding must end with it. Outside a workunit it is
// context.Background().
func (sb *Sandbox) Context() context.Context {
	if sb.rl.cur != nil {
		return sb.rl.cur.ctx
	}
	return context.Background()
}

// GPUs returns the ordinals of the GPU devices the running workunit was
// given (Request.GPUs), or, when it was given none, every device of the
// host: what the workunit sees as riot.worker.gpus. It is empty when
// there are none.
func (sb *Sandbox) GPUs() []int { return sb.rl.gpus() }

// Throw throws a new JavaScript error into the script that called the Go
// function now running: an instance of the built-in constructor name
// (Error, TypeError, RangeError, ...; for another name, such as
// DataCloneError, an Error with that name as its own property), with the
// message format and args give. It panics, as goja expects of a Go
// function that throws, and never returns: call it only from a function
// that JavaScript called.
func (sb *Sandbox) Throw(name, format string, args ...any) {
	sb.rl.throw(name, format, args...)
}

// Interrupt stops the script running in the sandbox, if any, at its next
// instruction, with cause: it cannot catch it, and its workunit fails as
// one stopped from outside (a time limit, an ended context). A binding
// whose wait ended with Context calls it with context.Cause, so that the
// workunit fails as its context says. It may be called from any goroutine.
func (sb *Sandbox) Interrupt(cause error) { sb.rl.interrupt(cause) }

// CheckAlloc says whether an allocation of n bytes for what (a name for
// the message: "WebAssembly.Memory") fits in the worker's memory, as the
// engine checks new ArrayBuffer(n): nil when it does, else an error whose
// message is the RangeError the engine would throw, naming the size and
// the limit. Allocations under 1 MiB always fit (the memory guard sees
// them). It may collect garbage; call it from the sandbox's goroutine.
func (sb *Sandbox) CheckAlloc(n float64, what string) error {
	if msg := sb.rl.allocRefusal(n, what); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// OnClose registers fn to run when the engine drops the sandbox (the
// engine closes, the slot replaces the runtime, a workunit ran away), to
// release what the binding holds outside the Go heap. Functions run last
// registered first.
func (sb *Sandbox) OnClose(fn func()) { sb.rl.closers = append(sb.rl.closers, fn) }

// Logger returns the engine's logger.
func (sb *Sandbox) Logger() *slog.Logger { return sb.rl.eng.opts.Logger }

// SetFuncs puts the functions of table on obj, in order, each with its
// JavaScript name set so that stack traces show it.
func (sb *Sandbox) SetFuncs(obj *goja.Object, table []Func) error {
	return sb.rl.setFuncs(obj, table)
}

// Decode decodes a value document (package value) into the runtime. The
// functions it holds are made in the runtime; the blobs it refers to come
// from the running workunit's Request.Blobs (Standalone.SetBlobs in a
// standalone sandbox), each decoded once per workunit (in a standalone
// sandbox, once per SetBlobs): the workunit's own copy.
func (sb *Sandbox) Decode(data []byte) (goja.Value, error) { return sb.rl.dec.DecodeValue(data) }

// DecodeOwned decodes a value document as Decode does, from bytes that the
// caller gives away (a result fetched for it alone): its ArrayBuffers and
// typed arrays are made over data's bytes, not copies. The caller must not
// use data again.
func (sb *Sandbox) DecodeOwned(data []byte) (goja.Value, error) {
	return sb.rl.dec.DecodeOwnedValue(data)
}

// DecodeArgs decodes a value document that is an array, an argument list,
// and returns its items, as Decode does.
func (sb *Sandbox) DecodeArgs(data []byte) ([]goja.Value, error) { return sb.rl.dec.DecodeArgs(data) }

// FetchModule returns the module (a call workunit's CommonJS module) of
// blob h, from the same blobs as Decode, its hash checked.
func (sb *Sandbox) FetchModule(h blob.Hash) (*workunit.Module, error) { return sb.rl.fetchModule(h) }

// WorkunitError returns the error of a workunit that threw v (or whose
// promise was rejected with v), as the engine reports it: an Error's name,
// message and stack, or for another value its readable form and the value
// itself, encoded. frames are where it was thrown, for a value that
// carries no stack of its own.
func (sb *Sandbox) WorkunitError(v goja.Value, frames []goja.StackFrame) *workunit.Error {
	return sb.rl.thrown(v, frames)
}

// install installs b into the sandbox. A panic in Install fails the
// sandbox, as an error would: it must not reach the engine's caller.
func (sb *Sandbox) install(b Binding) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("engine: installing a binding: panic: %v", x)
		}
	}()
	return b.Install(sb)
}
