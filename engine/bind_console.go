package engine

import (
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/workunit"
)

// ConsoleSink receives what a sandbox's console prints: one call per
// console call, formatted as Node formats it. log, info, warn, error and
// debug print at their own level, trace and assert (when it fails) at
// LevelError, dir at LevelLog. An engine's sandboxes keep each workunit's
// lines with its result (Result.Console, up to MaxConsoleBytes); a job
// script's console writes them to its standard output and error
// (engine/master).
type ConsoleSink interface {
	Print(level workunit.Level, text string)
}

// runConsole is the console sink of an engine's sandboxes: it keeps the
// running workunit's lines in its run. Output outside a workunit (none is
// possible today) is dropped.
type runConsole struct{ rl *realm }

func (c runConsole) Print(level workunit.Level, text string) {
	if c.rl.cur != nil {
		c.rl.cur.console.add(level, text)
	}
}

// console keeps one workunit's console output, encoded as it goes, up to
// an encoded size (each line's level and heads count, so that a loop of
// empty lines is bounded too); the rest is counted and dropped.
type console struct {
	lines        workunit.ConsoleBuilder
	max          int
	dropped      int // bytes of text
	droppedLines int
	// print is Request.Print: it hears each line kept, as it is kept.
	print func(level workunit.Level, text string)
}

// lineCost bounds what a line adds to the encoded console beside its
// text: an array head, the level ("debug" at most) and the text's head.
const lineCost = 1 + 6 + 9

func (c *console) add(level workunit.Level, text string) {
	if c.droppedLines > 0 || c.lines.Size()+lineCost+len(text) > c.max {
		c.dropped += len(text)
		c.droppedLines++
		return
	}
	c.lines.Add(level, text)
	if c.print != nil {
		c.print(level, text)
	}
}

// finish returns the output, with a last line that says how much was
// dropped, if anything was.
func (c *console) finish() workunit.Console {
	if c.droppedLines > 0 {
		lines := " lines ("
		if c.droppedLines == 1 {
			lines = " line ("
		}
		c.lines.Add(workunit.LevelWarn, "[riot: "+strconv.Itoa(c.droppedLines)+lines+strconv.Itoa(c.dropped)+
			" bytes) of console output dropped past the limit of "+strconv.Itoa(c.max)+" bytes]")
	}
	return c.lines.Console()
}

// bindConsole installs console: log, info, warn, error, debug, trace,
// assert and dir, formatting their arguments as Node's util.format does,
// and printing to the realm's sink. It is the one console of riot: a
// workunit's and a job script's.
func bindConsole(rl *realm) error {
	con := rl.rt.NewObject()
	method := func(level workunit.Level) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			rl.sink.Print(level, inspect.Format(rl.rt, rl.in, call.Arguments))
			return goja.Undefined()
		}
	}
	if err := rl.setFuncs(con, []Func{
		{"log", method(workunit.LevelLog)},
		{"info", method(workunit.LevelInfo)},
		{"warn", method(workunit.LevelWarn)},
		{"error", method(workunit.LevelError)},
		{"debug", method(workunit.LevelDebug)},
		{"trace", func(call goja.FunctionCall) goja.Value {
			text := "Trace"
			if len(call.Arguments) > 0 {
				text += ": " + inspect.Format(rl.rt, rl.in, call.Arguments)
			}
			var b strings.Builder
			b.WriteString(text)
			inspect.WriteFrames(&b, rl.rt.CaptureCallStack(0, nil))
			rl.sink.Print(workunit.LevelError, b.String())
			return goja.Undefined()
		}},
		{"assert", func(call goja.FunctionCall) goja.Value {
			if call.Argument(0).ToBoolean() {
				return goja.Undefined()
			}
			text := "Assertion failed"
			if len(call.Arguments) > 1 {
				text += ": " + inspect.Format(rl.rt, rl.in, call.Arguments[1:])
			}
			rl.sink.Print(workunit.LevelError, text)
			return goja.Undefined()
		}},
		{"dir", func(call goja.FunctionCall) goja.Value {
			rl.sink.Print(workunit.LevelLog, inspect.Inspect(rl.rt, rl.in, call.Argument(0), inspect.Options{}))
			return goja.Undefined()
		}},
	}); err != nil {
		return err
	}
	return rl.rt.Set("console", con)
}
