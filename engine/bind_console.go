package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
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

// consoleState is what console keeps between calls of one workunit (of a
// job script, in a standalone sandbox): counters, timers and the group
// indentation. It starts afresh with each workunit, so that no workunit
// sees another's.
type consoleState struct {
	owner  *run
	counts map[string]int
	timers map[string]time.Time
	indent string
}

// of returns the state of the run r, reset when r is not the run that
// used it last.
func (st *consoleState) of(r *run) *consoleState {
	if st.owner != r || st.counts == nil {
		*st = consoleState{owner: r, counts: make(map[string]int), timers: make(map[string]time.Time)}
	}
	return st
}

// groupIndent is how much console.group indents, as Node's
// groupIndentation.
const groupIndent = "  "

// maxConsoleLabels bounds the labels of console.count and console.time a
// workunit may keep at once, so that a loop of new labels cannot fill the
// memory.
const maxConsoleLabels = 10000

// bindConsole installs console: log, info, warn, error, debug, trace,
// assert, dir, table, time, timeEnd, timeLog, count, countReset, group,
// groupCollapsed and groupEnd, formatting their arguments as Node's
// util.format does, and printing to the realm's sink. It is the one
// console of riot: a workunit's and a job script's.
func bindConsole(rl *realm) error {
	con := rl.rt.NewObject()
	v, err := hasOwnScript.Run(rl.rt)
	if err != nil {
		return err
	}
	own, _ := goja.AssertFunction(v)
	var state consoleState
	st := func() *consoleState { return state.of(rl.cur) }
	// print indents text by the group's indentation, every line of it,
	// as Node does, and prints it.
	print := func(level workunit.Level, text string) {
		if ind := st().indent; ind != "" {
			text = ind + strings.ReplaceAll(text, "\n", "\n"+ind)
		}
		rl.sink.Print(level, text)
	}
	method := func(level workunit.Level) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			print(level, inspect.Format(rl.rt, rl.in, call.Arguments))
			return goja.Undefined()
		}
	}
	label := func(call goja.FunctionCall) string {
		if v := call.Argument(0); !goja.IsUndefined(v) {
			return v.String()
		}
		return "default"
	}
	warn := func(format string, args ...any) {
		print(workunit.LevelWarn, "Warning: "+fmt.Sprintf(format, args...))
	}
	timeLog := func(name string, end bool) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			l := label(call)
			s := st()
			start, ok := s.timers[l]
			if !ok {
				warn("No such label '%s' for console.%s()", l, name)
				return goja.Undefined()
			}
			args := []goja.Value{rl.rt.ToValue("%s: %s"), rl.rt.ToValue(l), rl.rt.ToValue(formatDuration(time.Since(start)))}
			if end {
				delete(s.timers, l)
			} else if len(call.Arguments) > 1 {
				args = append(args, call.Arguments[1:]...)
			}
			print(workunit.LevelLog, inspect.Format(rl.rt, rl.in, args))
			return goja.Undefined()
		}
	}
	group := func(call goja.FunctionCall) goja.Value {
		if len(call.Arguments) > 0 {
			print(workunit.LevelLog, inspect.Format(rl.rt, rl.in, call.Arguments))
		}
		st().indent += groupIndent
		return goja.Undefined()
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
			print(workunit.LevelError, b.String())
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
			print(workunit.LevelError, text)
			return goja.Undefined()
		}},
		{"dir", func(call goja.FunctionCall) goja.Value {
			print(workunit.LevelLog, inspect.Inspect(rl.rt, rl.in, call.Argument(0), inspect.Options{}))
			return goja.Undefined()
		}},
		{"table", func(call goja.FunctionCall) goja.Value {
			data := call.Argument(0)
			props := call.Argument(1)
			var columns []string
			if !goja.IsUndefined(props) {
				p, ok := props.(*goja.Object)
				if !ok || p.ClassName() != "Array" {
					rl.throw("TypeError", "console.table: the properties argument must be an array of column names; it is %s", jsvalue.Describe(props))
				}
				columns = tableColumns(p)
			}
			o, ok := data.(*goja.Object)
			if !ok {
				print(workunit.LevelLog, inspect.Format(rl.rt, rl.in, call.Arguments[:1]))
				return goja.Undefined()
			}
			print(workunit.LevelLog, consoleTable(rl, own, o, columns, !goja.IsUndefined(props)))
			return goja.Undefined()
		}},
		{"time", func(call goja.FunctionCall) goja.Value {
			l := label(call)
			s := st()
			if _, ok := s.timers[l]; ok {
				warn("Label '%s' already exists for console.time()", l)
				return goja.Undefined()
			}
			if len(s.timers) >= maxConsoleLabels {
				warn("console.time('%s'): %d timers are running, the most a workunit may have; end some with console.timeEnd()", l, maxConsoleLabels)
				return goja.Undefined()
			}
			s.timers[l] = time.Now()
			return goja.Undefined()
		}},
		{"timeEnd", timeLog("timeEnd", true)},
		{"timeLog", timeLog("timeLog", false)},
		{"count", func(call goja.FunctionCall) goja.Value {
			l := label(call)
			s := st()
			n, ok := s.counts[l]
			if !ok && len(s.counts) >= maxConsoleLabels {
				warn("console.count('%s'): %d labels are counted, the most a workunit may have; reset some with console.countReset()", l, maxConsoleLabels)
				return goja.Undefined()
			}
			s.counts[l] = n + 1
			print(workunit.LevelLog, l+": "+strconv.Itoa(n+1))
			return goja.Undefined()
		}},
		{"countReset", func(call goja.FunctionCall) goja.Value {
			l := label(call)
			s := st()
			if _, ok := s.counts[l]; !ok {
				warn("Count for '%s' does not exist", l)
				return goja.Undefined()
			}
			delete(s.counts, l)
			return goja.Undefined()
		}},
		{"group", group},
		{"groupCollapsed", group},
		{"groupEnd", func(goja.FunctionCall) goja.Value {
			s := st()
			s.indent = s.indent[:max(len(s.indent)-len(groupIndent), 0)]
			return goja.Undefined()
		}},
	}); err != nil {
		return err
	}
	return rl.rt.Set("console", con)
}

// formatDuration writes an elapsed time as Node's console.timeEnd does:
// "1.234ms", "1.234s", "1:02.345 (m:ss.mmm)", "1:02:03.456 (h:mm:ss.mmm)".
func formatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 1000 {
		return trimFixed(ms) + "ms"
	}
	if ms < 60*1000 {
		return strconv.FormatFloat(ms/1000, 'f', 3, 64) + "s"
	}
	total := d.Round(time.Millisecond)
	h := int(total / time.Hour)
	m := int(total % time.Hour / time.Minute)
	sec := int(total % time.Minute / time.Second)
	milli := int(total % time.Second / time.Millisecond)
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d.%03d (h:mm:ss.mmm)", h, m, sec, milli)
	}
	return fmt.Sprintf("%d:%02d.%03d (m:ss.mmm)", m, sec, milli)
}

// trimFixed writes f with at most three decimals, as Number(f.toFixed(3)).
func trimFixed(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

// tableColumns returns the names of the columns console.table was given.
func tableColumns(p *goja.Object) []string {
	n := p.Get("length").ToInteger()
	var names []string
	for i := int64(0); i < n && i < maxTableCells; i++ {
		names = append(names, p.Get(strconv.FormatInt(i, 10)).String())
	}
	return names
}

// hasOwnScript gives (o, k) => whether o has an own property k, with the
// realm's Object.prototype.hasOwnProperty as it was made. It is compiled
// once: a program compiled per realm was kept by the function it made, in
// every idle realm.
var hasOwnScript = jsvalue.NewScript("(() => { const has = Object.prototype.hasOwnProperty; return (o, k) => has.call(o, k) })()")
