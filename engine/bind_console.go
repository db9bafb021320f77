package engine

import (
	"strconv"
	"strings"

	"github.com/dop251/goja"
	"github.com/riot-go/riot/engine/internal/inspect"
)

// console keeps one workunit's console output, up to a size; the rest is
// counted and dropped.
type console struct {
	lines   []ConsoleLine
	size    int
	max     int
	dropped int
}

func (c *console) add(level Level, text string) {
	if c.size+len(text) > c.max {
		c.dropped += len(text)
		return
	}
	c.size += len(text)
	c.lines = append(c.lines, ConsoleLine{Level: level, Text: text})
}

// finish returns the lines, with a last line that says how much was
// dropped, if anything was.
func (c *console) finish() []ConsoleLine {
	if c.dropped > 0 {
		c.lines = append(c.lines, ConsoleLine{Level: LevelWarn, Text: "[riot: " + strconv.Itoa(c.dropped) +
			" bytes of console output dropped past the limit of " + strconv.Itoa(c.max) + " bytes]"})
	}
	return c.lines
}

// bindConsole installs console: log, info, warn, error, debug, trace,
// assert and dir, formatting their arguments as Node's util.format does.
func bindConsole(rl *realm) error {
	con := rl.rt.NewObject()
	method := func(level Level) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			rl.print(level, inspect.Format(rl.rt, rl.in, call.Arguments))
			return goja.Undefined()
		}
	}
	if err := rl.setFuncs(con, []export{
		{"log", method(LevelLog)},
		{"info", method(LevelInfo)},
		{"warn", method(LevelWarn)},
		{"error", method(LevelError)},
		{"debug", method(LevelDebug)},
		{"trace", func(call goja.FunctionCall) goja.Value {
			text := "Trace"
			if len(call.Arguments) > 0 {
				text += ": " + inspect.Format(rl.rt, rl.in, call.Arguments)
			}
			var b strings.Builder
			b.WriteString(text)
			inspect.WriteFrames(&b, rl.rt.CaptureCallStack(0, nil))
			rl.print(LevelError, b.String())
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
			rl.print(LevelError, text)
			return goja.Undefined()
		}},
		{"dir", func(call goja.FunctionCall) goja.Value {
			rl.print(LevelLog, inspect.Inspect(rl.rt, rl.in, call.Argument(0), inspect.Options{}))
			return goja.Undefined()
		}},
	}); err != nil {
		return err
	}
	return rl.rt.Set("console", con)
}

// print records a console line for the running workunit. Output outside a
// workunit (none is possible today) is dropped.
func (rl *realm) print(level Level, text string) {
	if rl.cur != nil {
		rl.cur.console.add(level, text)
	}
}
