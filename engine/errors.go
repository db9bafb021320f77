package engine

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// invalid returns the error of a malformed workunit.
func invalid(format string, args ...any) *workunit.Error {
	return &workunit.Error{Kind: workunit.Invalid, Name: "WorkunitError", Message: fmt.Sprintf(format, args...)}
}

// failure turns what a workunit's evaluation returned into the
// *workunit.Error its caller gets, and says whether the realm must be
// dropped because the workunit ran away or the engine failed.
func (rl *realm) failure(ctx context.Context, err error) (*workunit.Error, bool) {
	var (
		werr *workunit.Error
		ie   *goja.InterruptedError
		so   *goja.StackOverflowError
		ex   *goja.Exception
		se   *goja.CompilerSyntaxError
		un   *jsvalue.UnsendableError
		rj   *rejection
		ie2  *internalError
		syn  *cbor.SyntaxError
	)
	// A workunit stopped from outside fails as such, whatever error the
	// stop surfaced as (a blob fetch or a decode cut short).
	if cause := context.Cause(ctx); cause != nil && !errors.As(err, &so) && !errors.As(err, &ex) {
		var frames []goja.StackFrame
		if errors.As(err, &ie) {
			frames = ie.Stack()
		}
		return causeError(ctx, cause, frames), true
	}
	switch {
	case errors.As(err, &so):
		return &workunit.Error{Kind: workunit.StackLimit, Name: "RangeError",
			Message: fmt.Sprintf("Maximum call stack size exceeded (the limit is %d frames)", rl.eng.opts.MaxCallStackSize),
			Stack:   inspect.StackString("RangeError", "Maximum call stack size exceeded", so.Stack(), 10)}, true
	case errors.As(err, &ie):
		cause, _ := ie.Value().(error)
		return causeError(ctx, cause, ie.Stack()), true
	case errors.As(err, &rj):
		return rl.thrown(rj.value, nil), false
	case errors.As(err, &ex):
		return rl.thrown(ex.Value(), ex.Stack()), false
	case errors.As(err, &se):
		msg, stack := inspect.SyntaxError(se)
		return &workunit.Error{Kind: workunit.Thrown, Name: "SyntaxError", Message: msg, Stack: stack}, false
	case errors.As(err, &un):
		return &workunit.Error{Kind: workunit.Unsendable, Name: "DataCloneError", Message: un.Path("result") + ": " + un.Msg}, false
	case errors.Is(err, jsvalue.ErrTooLarge):
		if name := rl.eng.opts.ResultLimitName; name != "" {
			return &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError",
				Message: fmt.Sprintf("result: larger than %s, %s", formatBytes(uint64(rl.eng.opts.MaxResultBytes)), name)}, false
		}
		return &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError",
			Message: fmt.Sprintf("the result is larger than the limit of %s", formatBytes(uint64(rl.eng.opts.MaxResultBytes)))}, false
	case errors.As(err, &werr):
		return werr, false
	case errors.As(err, &ie2):
		rl.eng.opts.Logger.Error("engine: panic while evaluating a workunit", "panic", ie2.panic, "stack", string(ie2.stack))
		return &workunit.Error{Kind: workunit.Internal, Name: "InternalError", Message: ie2.Error()}, true
	case errors.As(err, &syn):
		return invalid("%v", err), false
	}
	if cause := context.Cause(ctx); cause != nil {
		return causeError(ctx, cause, nil), true
	}
	return &workunit.Error{Kind: workunit.Internal, Name: "InternalError", Message: err.Error()}, true
}

// causeError is the error of a workunit stopped from outside: its time
// limit, the memory guard, or its caller's context.
func causeError(ctx context.Context, cause error, frames []goja.StackFrame) *workunit.Error {
	var tl *timeLimitError
	var ml *memoryLimitError
	switch {
	case errors.As(cause, &tl):
		return &workunit.Error{Kind: workunit.TimeLimit, Name: "TimeoutError", Message: tl.Error(),
			Stack: inspect.StackString("TimeoutError", tl.Error(), frames, 10)}
	case errors.As(cause, &ml):
		return &workunit.Error{Kind: workunit.MemoryLimit, Name: "OutOfMemoryError", Message: ml.Error() + "; the workunit was interrupted",
			Stack: inspect.StackString("OutOfMemoryError", ml.Error(), frames, 10)}
	}
	if cause == nil {
		cause = ctx.Err()
	}
	msg := "the workunit was canceled"
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Message: msg}
}

// thrown converts a thrown (or rejected) JavaScript value. An Error object
// gives its name, message and stack; another value gives its readable form
// as the message, and itself, encoded, as Value: at most
// Options.MaxThrownBytes of it, else the message says that it was not sent.
func (rl *realm) thrown(v goja.Value, frames []goja.StackFrame) *workunit.Error {
	werr := &workunit.Error{Kind: workunit.Thrown}
	o, isObj := v.(*goja.Object)
	if isObj && rl.in.Classify(o) == jsvalue.KindError {
		rl.rt.Try(func() {
			werr.Name = inspect.SafeString(o.Get("name"))
			werr.Message = inspect.SafeString(o.Get("message"))
			werr.Stack = inspect.NormalizeStack(inspect.SafeString(o.Get("stack")))
		})
		if werr.Stack == "" {
			werr.Stack = inspect.StackString(werr.Name, werr.Message, frames, 0)
		}
		return werr
	}
	werr.Message = "Uncaught " + inspect.Inspect(rl.rt, rl.in, v, inspect.Options{})
	data, err := rl.encodeThrown(v)
	switch {
	case err == nil:
		werr.Value = data
	case errors.Is(err, jsvalue.ErrTooLarge):
		// The note stays when the message is cut.
		note := fmt.Sprintf(" (the thrown value is not sent: its encoding is larger than %s)",
			formatBytes(uint64(rl.eng.opts.MaxThrownBytes)))
		werr.Message = cutText(werr.Message, rl.eng.opts.MaxErrorBytes-len(note)) + note
	}
	werr.Stack = inspect.StackString("", werr.Message, frames, 0)
	return werr
}

func (rl *realm) encodeThrown(v goja.Value) (data []byte, err error) {
	enc := jsvalue.NewEncoder(rl.rt, rl.in, jsvalue.EncodeOptions{Root: "error", Dest: "back to the master", Limit: rl.eng.opts.MaxThrownBytes})
	if ex := rl.rt.Try(func() { data, err = enc.EncodeValue(v) }); ex != nil {
		return nil, ex
	}
	return append([]byte(nil), data...), err
}

// cutError returns werr with its name, message and stack cut to at most
// max bytes each (a copy when anything is cut), each with a note of
// how much was cut: the message and the name keep their start, the stack
// its start and its end (the innermost frames are last).
func cutError(werr *workunit.Error, max int) *workunit.Error {
	if len(werr.Name) <= max && len(werr.Message) <= max && len(werr.Stack) <= max {
		return werr
	}
	cp := *werr
	cp.Name = cutText(cp.Name, max)
	cp.Message = cutText(cp.Message, max)
	if len(cp.Stack) > max {
		head := validPrefix(cp.Stack, (max-cutNote)/2)
		tail := validSuffix(cp.Stack, (max-cutNote)/2)
		cp.Stack = head + fmt.Sprintf("\n    ... [%d bytes cut] ...\n", len(cp.Stack)-len(head)-len(tail)) + tail
	}
	return &cp
}

// cutNote is the most bytes cutText's note takes.
const cutNote = 40

// cutText cuts s to at most max bytes, at a character's boundary, with a
// note of how many bytes it cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := validPrefix(s, max-cutNote)
	return head + fmt.Sprintf("... [%d more bytes cut]", len(s)-len(head))
}

// validPrefix returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence.
func validPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validSuffix returns the longest suffix of s of at most n bytes that does
// not start inside a UTF-8 sequence.
func validSuffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
