package engine

import (
	"strconv"
	"strings"

	"github.com/dop251/goja"
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
			rl.print(level, rl.format(call.Arguments))
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
				text += ": " + rl.format(call.Arguments)
			}
			var b strings.Builder
			b.WriteString(text)
			writeFrames(&b, rl.rt.CaptureCallStack(0, nil))
			rl.print(LevelError, b.String())
			return goja.Undefined()
		}},
		{"assert", func(call goja.FunctionCall) goja.Value {
			if call.Argument(0).ToBoolean() {
				return goja.Undefined()
			}
			text := "Assertion failed"
			if len(call.Arguments) > 1 {
				text += ": " + rl.format(call.Arguments[1:])
			}
			rl.print(LevelError, text)
			return goja.Undefined()
		}},
		{"dir", func(call goja.FunctionCall) goja.Value {
			rl.print(LevelLog, inspect(rl, call.Argument(0), inspectOptions{}))
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

// format formats console arguments as Node's util.format: a first string
// argument may hold %s, %d, %i, %f, %j, %o, %O, %c and %%; the remaining
// arguments are appended, strings as they are and other values inspected.
func (rl *realm) format(args []goja.Value) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	rest := args
	if goja.IsString(args[0]) {
		f := args[0].String()
		rest = args[1:]
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c != '%' || i+1 == len(f) {
				b.WriteByte(c)
				continue
			}
			verb := f[i+1]
			if verb == '%' {
				b.WriteByte('%')
				i++
				continue
			}
			if !strings.ContainsRune("sdifjoOc", rune(verb)) || len(rest) == 0 {
				b.WriteByte(c)
				continue
			}
			a := rest[0]
			rest = rest[1:]
			i++
			switch verb {
			case 's':
				if goja.IsString(a) {
					b.WriteString(a.String())
				} else {
					b.WriteString(inspect(rl, a, inspectOptions{depth: 1}))
				}
			case 'd', 'i':
				n := a.ToFloat()
				if verb == 'i' {
					n = float64(int64(n))
				}
				b.WriteString(formatNumber(n))
			case 'f':
				b.WriteString(formatNumber(a.ToFloat()))
			case 'j':
				b.WriteString(jsonOf(rl, a))
			case 'o', 'O':
				b.WriteString(inspect(rl, a, inspectOptions{}))
			case 'c':
				// CSS: ignored, as Node does.
			}
		}
	}
	for _, a := range rest {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if goja.IsString(a) {
			b.WriteString(a.String())
		} else {
			b.WriteString(inspect(rl, a, inspectOptions{}))
		}
	}
	return b.String()
}

func jsonOf(rl *realm, v goja.Value) string {
	var out string
	if ex := rl.rt.Try(func() {
		j := rl.rt.Get("JSON").(*goja.Object)
		stringify, _ := goja.AssertFunction(j.Get("stringify"))
		r, err := stringify(j, v)
		if err != nil {
			out = "[" + err.Error() + "]"
			return
		}
		out = r.String()
	}); ex != nil {
		return "[Circular]"
	}
	return out
}
