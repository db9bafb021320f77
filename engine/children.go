package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine/capture"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// Host returns the running workunit's Request.Host (nil outside a
// workunit, or when its request gave none): a worker's handle on the
// workunit's lease, through which engine/jschild submits children.
func (sb *Sandbox) Host() any {
	if sb.rl.cur != nil {
		return sb.rl.cur.host
	}
	return nil
}

// Spec returns the running workunit's spec (nil outside a workunit).
func (sb *Sandbox) Spec() *workunit.Spec {
	if sb.rl.cur != nil {
		return sb.rl.cur.spec
	}
	return nil
}

// EncodeArgs encodes args as an argument list (a call workunit's
// payload), as EncodeCall encodes a function's arguments, and returns the
// blobs it refers to.
func (sb *Sandbox) EncodeArgs(what string, args []goja.Value) ([]byte, []blob.Hash, error) {
	enc := sb.childEncoder(what)
	enc.BeginArgs(len(args))
	for _, a := range args {
		if err := enc.ValueOrBlob(a); err != nil {
			return nil, nil, err
		}
	}
	return enc.TakeBytes(), slices.Clone(enc.Blobs()), nil
}

// Secede gives up the running workunit's slot while it waits for work
// done elsewhere (its children): another workunit may run meanwhile, in a
// slot of its own; Rejoin takes it back before the script goes on. Past
// Options.MaxSeceded waiting at once, it returns an error wrapping
// ErrTooManySeceded and the workunit keeps its slot. Outside an engine's
// run (a standalone sandbox) both do nothing.
func (sb *Sandbox) Secede() error {
	r := sb.rl.cur
	if r == nil || sb.rl.eng.permits == nil {
		return nil
	}
	return sb.rl.eng.secede(r)
}

// Rejoin takes back the slot the running workunit gave up with Secede,
// waiting until one is free; it fails when the workunit's context ends
// first (its time limit, a stop).
func (sb *Sandbox) Rejoin() error {
	r := sb.rl.cur
	if r == nil || sb.rl.eng.permits == nil {
		return nil
	}
	return sb.rl.eng.rejoin(r.ctx, r)
}

// ErrNotShippable is what EncodeCall's error wraps for a function that a
// workunit cannot send on: one it made itself that has free variables.
var ErrNotShippable = errors.New("engine: the function cannot be sent")

// EncodeCall encodes fn and args as the payload of a fn workunit (the
// array [fn, ...args], see workunit.Spec), to submit as a child of the
// running workunit. A workunit can send on a function it received (its
// own function, an argument, a captured variable, and the functions they
// hold), with the values its free variables were given; a function made
// by the code of a received function whose source calls riot (the
// engine instruments that source as the master does a job script), with
// its free variables' current values; and a function without free
// variables of its own (it may use globals). Another is an error
// wrapping ErrNotShippable that names its free variables. what
// names the caller in messages ("riot.doWork"). It returns the payload
// and the blobs it refers to: a value the workunit decoded from a blob
// (a large captured value) goes on as that blob, as it came, without the
// changes the workunit made to its copy.
func (sb *Sandbox) EncodeCall(what string, fn goja.Value, args []goja.Value) ([]byte, []blob.Hash, error) {
	enc := sb.childEncoder(what)
	enc.BeginArgs(1 + len(args))
	if err := enc.Encode(fn); err != nil {
		return nil, nil, err
	}
	for _, a := range args {
		if err := enc.ValueOrBlob(a); err != nil {
			return nil, nil, err
		}
	}
	return enc.TakeBytes(), slices.Clone(enc.Blobs()), nil
}

// childEncoder returns an encoder of a child's payload: functions by
// their captures (captured), and the values the workunit decoded from
// blobs as those blobs again (a large captured value goes on as the
// blob it came as, not inline: as it came, without the changes this
// workunit made to its copy).
func (sb *Sandbox) childEncoder(what string) *jsvalue.Encoder {
	rl := sb.rl
	var byObj map[*goja.Object]blob.Hash
	if r := rl.cur; r != nil && len(r.blobVals) > 0 {
		byObj = make(map[*goja.Object]blob.Hash, len(r.blobVals))
		for h, v := range r.blobVals {
			if o, ok := v.(*goja.Object); ok {
				byObj[o] = h
			}
		}
	}
	return jsvalue.NewEncoder(rl.rt, rl.in, jsvalue.EncodeOptions{Root: "args", Dest: "to a worker",
		Capture: func(o *goja.Object) (*jsvalue.CapturedFunc, error) { return rl.captured(what, o) },
		Blob: func(o *goja.Object) (blob.Hash, bool, error) {
			h, ok := byObj[o]
			return h, ok, nil
		}})
}

// notShippable is an error that wraps ErrNotShippable with a message of
// its own.
type notShippable struct{ msg string }

func (e *notShippable) Error() string { return e.msg }
func (e *notShippable) Unwrap() error { return ErrNotShippable }

func unshippable(format string, args ...any) error {
	return &notShippable{msg: fmt.Sprintf(format, args...)}
}

// captured is the capture hook of EncodeCall.
func (rl *realm) captured(what string, o *goja.Object) (*jsvalue.CapturedFunc, error) {
	if cf, reason, ok := rl.fns.Captured(o); ok {
		if cf == nil {
			name := o.Get("name").String()
			if name == "" {
				name = "(anonymous)"
			}
			return nil, unshippable("%s: function %s cannot be sent: %s", what, name, reason)
		}
		return cf, nil
	}
	src := o.String()
	name := o.Get("name").String()
	if name == "" {
		name = "(anonymous)"
	}
	if strings.Contains(src, "[native code]") {
		return nil, unshippable("%s: %s is a built-in function, which cannot be sent", what, name)
	}
	s, err := capture.Instrument("workunit", "("+src+"\n)", capture.Options{})
	if err != nil || len(s.Funcs) == 0 {
		return nil, unshippable("%s: the source of function %s does not parse alone, so it cannot be sent", what, name)
	}
	f := s.Funcs[0]
	if !f.Shippable {
		return nil, unshippable("%s: function %s cannot be sent: %s", what, name, f.Reason)
	}
	// Alone, the function's free variables look like globals: those the
	// global object lacks are variables of the scopes it was made in.
	free := f.Free
	global := rl.rt.GlobalObject()
	for _, g := range f.Globals {
		if global.Get(g) == nil {
			free = append(free, g)
		}
	}
	if len(free) > 0 {
		return nil, unshippable("%s in a workunit takes a function the workunit received (its own function, an argument, "+
			"a captured variable), one made by a received function that calls riot itself, or one without free variables; "+
			"function %s was made by code that does not call riot, and uses %s: pass them as arguments, or use riot.doWorkEval",
			what, name, strings.Join(free, ", "))
	}
	return &jsvalue.CapturedFunc{Source: src, File: "workunit", Line: 1, Column: 1, Strict: f.Strict}, nil
}
