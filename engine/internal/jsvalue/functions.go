package jsvalue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/capture"
	"github.com/riot-go/riot/workunit"
)

// Functions makes the captured functions a Decoder meets into live
// functions of one runtime (docs/values.md, "Functions"). It keeps one
// factory per function source and position: the factory is compiled once
// (by compile, which may share programs between runtimes) and run once per
// runtime; a function without free variables is made once and shared. It
// is used on the runtime's goroutine only.
type Functions struct {
	rt        *goja.Runtime
	compile   func(name, src string) (*goja.Program, error)
	factories map[string]*factory
	// made are the functions made since Forget (plain, those without free
	// variables, are kept for good, as their factories keep them): what
	// Captured knows, so that a workunit can send a function it received
	// on to a child.
	made  map[*goja.Object]madeFunc
	plain map[*goja.Object]*CapturedFunc
	// scripts are the instrumented factories (see instrument), by the
	// index their hook gives; reg is the private symbol under which the
	// hook registers the functions they make.
	scripts []*capture.Script
	reg     *goja.Symbol
}

// instrumentedHook is the name of the capture hook inside an instrumented
// factory: a parameter of the wrapper that gives each factory its own.
const instrumentedHook = "__riot_capture"

// instrument rewrites a factory's text with the capture pass (package
// engine/capture), as the master instruments a job script, when the
// function's source calls riot (riot.doWork and the rest): the functions
// it makes as it runs register themselves, with a getter of their free
// variables, so that the workunit can send them to children (Captured).
// It returns the text to compile, the text unchanged when the source does
// not call riot or cannot be instrumented.
func (fs *Functions) instrument(file, source, text string) string {
	if !strings.Contains(source, "riot.") {
		return text
	}
	s, err := capture.Instrument(file, text, capture.Options{Hook: instrumentedHook})
	if err != nil {
		return text
	}
	if fs.reg == nil {
		fs.reg = goja.NewSymbol("riot.capture")
	}
	k := len(fs.scripts)
	fs.scripts = append(fs.scripts, s)
	// The hook is the wrapper's parameter, so that no global names it.
	return "(function (" + instrumentedHook + ") { return " + s.Source + "\n})(" + hookArg + "(" + strconv.Itoa(k) + "))"
}

// hookArg is the global through which an instrumented factory gets its
// hook (installHook).
const hookArg = "__riot_capture_hook"

// installHook defines the global that gives instrumented factories their
// hooks: hook k registers, on each function factory k's source makes, the
// function's id and the getter of its free variables.
func (fs *Functions) installHook() error {
	if fs.rt.GlobalObject().Get(hookArg) != nil {
		return nil
	}
	return fs.rt.GlobalObject().DefineDataProperty(hookArg, fs.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		k := c.Argument(0).ToInteger()
		return fs.rt.ToValue(func(call goja.FunctionCall) goja.Value {
			val := call.Argument(2)
			target, ok := val.(*goja.Object)
			if !ok {
				return val
			}
			for _, p := range call.Arguments[3:] {
				next, ok := target.Get(p.String()).(*goja.Object)
				if !ok {
					return val
				}
				target = next
			}
			reg := fs.rt.NewArray(k, call.Argument(0), call.Argument(1))
			_ = target.DefineDataPropertySymbol(fs.reg, reg, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
			return val
		})
	}), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// registered returns the source and current free variables of fn, a
// function an instrumented factory's code made, or the reason it cannot
// be sent.
func (fs *Functions) registered(fn *goja.Object) (*CapturedFunc, string, bool) {
	if fs.reg == nil {
		return nil, "", false
	}
	reg, ok := fn.GetSymbol(fs.reg).(*goja.Object)
	if !ok {
		return nil, "", false
	}
	k, id := int(reg.Get("0").ToInteger()), int(reg.Get("1").ToInteger())
	if k < 0 || k >= len(fs.scripts) || id < 0 || id >= len(fs.scripts[k].Funcs) {
		return nil, "", false
	}
	s := fs.scripts[k]
	f := &s.Funcs[id]
	if !f.Shippable {
		return nil, f.Reason, true
	}
	var vals []goja.Value
	if g, ok := goja.AssertFunction(reg.Get("2")); ok {
		arr, err := g(goja.Undefined())
		if err != nil {
			return nil, "it uses a free variable before it is defined", true
		}
		ao := arr.(*goja.Object)
		vals = make([]goja.Value, len(f.Free))
		for i := range vals {
			vals[i] = ao.Get(Index(i))
		}
	}
	col := max(f.Column-f.HeaderLen, 1)
	return &CapturedFunc{Source: f.Source, Names: f.Free, Values: vals, File: s.File, Line: f.Line, Column: col, Strict: f.Strict}, "", true
}

// Captured returns the source and free variables of fn, when fn is a
// function these Functions made (since the last Forget, or one without
// free variables), whose free variables' values are those it was made
// with (and fn itself for a function that refers to itself), or one that
// the code of such a function made, when its source calls riot (see
// instrument), whose free variables' values are their current ones. For
// the latter, a function that cannot be sent (it uses this of an
// enclosing function, say) gives a nil CapturedFunc and the reason. ok is
// false for a function it knows nothing of.
func (fs *Functions) Captured(fn *goja.Object) (cf *CapturedFunc, reason string, ok bool) {
	if m, ok := fs.made[fn]; ok {
		vals := make([]goja.Value, len(m.names))
		for i := range vals {
			if m.self != nil && m.self[i] {
				vals[i] = fn
			} else {
				vals[i] = m.vals[i]
			}
		}
		return &CapturedFunc{Source: m.source, Names: m.names, Values: vals, File: m.pos.file, Line: m.pos.line, Column: m.pos.column, Strict: m.pos.strict}, "", true
	}
	if cf, ok := fs.plain[fn]; ok {
		return cf, "", true
	}
	return fs.registered(fn)
}

// Forget drops what Captured knows of the functions with free variables
// made so far (a workunit's, when it ends).
func (fs *Functions) Forget() { clear(fs.made) }

// madeFunc is what Captured needs of a function made with free
// variables: kept by value, with the decoder's slices as they are, so
// that remembering a function costs no allocation.
type madeFunc struct {
	source string
	names  []string
	self   []bool // nil: none is the function itself
	vals   []goja.Value
	pos    funcPos
}

// remember records fn, made from source with free variables names (their
// values vals, but where self says the function itself), for Captured.
func (fs *Functions) remember(fn *goja.Object, source string, names []string, self []bool, vals []goja.Value, pos funcPos) {
	if fs.made == nil {
		fs.made = make(map[*goja.Object]madeFunc)
	}
	fs.made[fn] = madeFunc{source: source, names: names, self: self, vals: vals, pos: pos}
}

// rememberPlain records fn, made once from source without free variables.
func (fs *Functions) rememberPlain(fn *goja.Object, source string, pos funcPos) {
	if _, ok := fs.plain[fn]; ok {
		return
	}
	if fs.plain == nil {
		fs.plain = make(map[*goja.Object]*CapturedFunc)
	}
	fs.plain[fn] = &CapturedFunc{Source: source, File: pos.file, Line: pos.line, Column: pos.column, Strict: pos.strict}
}

// NewFunctions returns the function maker of rt; compile compiles a
// factory's source under a file name.
func NewFunctions(rt *goja.Runtime, compile func(name, src string) (*goja.Program, error)) *Functions {
	return &Functions{rt: rt, compile: compile, factories: make(map[string]*factory)}
}

// factory makes instances of one captured function.
type factory struct {
	make  goja.Callable
	plain *goja.Object // the one instance of a function with no free variables
}

// invalid returns the error of a malformed workunit.
func invalid(format string, args ...any) *workunit.Error {
	return &workunit.Error{Kind: workunit.Invalid, Name: "WorkunitError", Message: fmt.Sprintf(format, args...)}
}

// makeFunction makes a captured function: it calls the function's factory
// with the free variables' values as arguments; a variable marked self is
// the function itself. The factory is compiled once and
// made once per runtime; a function without free variables is made once
// per runtime and shared.
func (fs *Functions) makeFunction(source string, names []string, self []bool, vals []goja.Value, pos funcPos) (*goja.Object, error) {
	var params, lets []string
	var args []goja.Value
	for i, n := range names {
		if self[i] {
			lets = append(lets, n)
		} else {
			params = append(params, n)
			args = append(args, vals[i])
		}
	}
	var b strings.Builder
	b.WriteString("(function (" + strings.Join(params, ", ") + ") {")
	if pos.strict {
		b.WriteString(useStrict)
	}
	if len(lets) > 0 {
		b.WriteString(" let " + strings.Join(lets, ", ") + ";")
	}
	b.WriteString(" return ")
	for _, n := range lets {
		b.WriteString(n + " = ")
	}
	b.WriteString("(")
	f, err := fs.factory(b.String(), source, "\n); })", names, pos, len(params) == 0 && len(lets) == 0)
	if err != nil {
		return nil, err
	}
	if f.plain != nil {
		fs.rememberPlain(f.plain, source, pos)
		return f.plain, nil
	}
	v, err := f.make(goja.Undefined(), args...)
	if err != nil {
		return nil, err
	}
	fn, err := fs.checkFunction(v, pos)
	if err != nil {
		return nil, err
	}
	fs.remember(fn, source, names, self, vals, pos)
	return fn, nil
}

// makeCyclicFunction makes a captured function before its variables'
// values are known: the factory declares the free variables and returns
// the function with a setter for them, setEnv.
func (fs *Functions) makeCyclicFunction(source string, names []string, pos funcPos) (*goja.Object, func([]goja.Value) error, error) {
	var suffix strings.Builder
	suffix.WriteString("\n), function (" + envParam + ") {")
	for i, n := range names {
		fmt.Fprintf(&suffix, " %s = %s[%d];", n, envParam, i)
	}
	suffix.WriteString(" }]; })")
	prefix := "(function () {"
	if pos.strict {
		prefix += useStrict
	}
	prefix += " let " + strings.Join(names, ", ") + "; return [("
	f, err := fs.factory(prefix, source, suffix.String(), names, pos, false)
	if err != nil {
		return nil, nil, err
	}
	pair, err := f.make(goja.Undefined())
	if err != nil {
		return nil, nil, err
	}
	po := pair.(*goja.Object)
	fn, err := fs.checkFunction(po.Get("0"), pos)
	if err != nil {
		return nil, nil, err
	}
	set, _ := goja.AssertFunction(po.Get("1"))
	return fn, func(vals []goja.Value) error {
		_, err := set(goja.Undefined(), fs.rt.NewArray(toAny(vals)...))
		if err == nil {
			fs.remember(fn, source, names, nil, vals, pos)
		}
		return err
	}, nil
}

func (fs *Functions) checkFunction(v goja.Value, pos funcPos) (*goja.Object, error) {
	if o, ok := v.(*goja.Object); ok {
		if _, ok := goja.AssertFunction(o); ok {
			return o, nil
		}
	}
	return nil, invalid("captured source from %s:%d is %s, not a function", pos.file, pos.line, Describe(v))
}

func toAny(vals []goja.Value) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}

const envParam = "__riot_env"

// useStrict makes a factory strict code, and so the function it makes: a
// function that was strict where it was written is strict on the worker.
const useStrict = " 'use strict';"

// factory returns the runtime's factory for prefix+source+suffix, compiling
// it (once, by compile) and running it (once per runtime) on first use. The
// source is padded so that it sits at its own line and column in its file.
// When plain, the factory takes nothing and its one function is kept.
func (fs *Functions) factory(prefix, source, suffix string, names []string, pos funcPos, plain bool) (*factory, error) {
	key := prefix + "\x00" + suffix + "\x00" + pos.file + "\x00" + strconv.Itoa(pos.line) + "\x00" + strconv.Itoa(pos.column) + "\x00" + source
	if f, ok := fs.factories[key]; ok {
		return f, nil
	}
	for _, n := range names {
		if !IsIdentifier(n) || n == envParam || reservedWords[n] {
			return nil, invalid("captured function from %s:%d: %q cannot be a free variable's name", pos.file, pos.line, n)
		}
	}
	file := pos.file
	if file == "" {
		file = "fn"
	}
	var b strings.Builder
	b.WriteString(prefix)
	if pos.line > 1 {
		b.WriteString(strings.Repeat("\n", pos.line-1))
		if pos.column > 1 {
			b.WriteString(strings.Repeat(" ", pos.column-1))
		}
	} else if pad := pos.column - 1 - b.Len(); pad > 0 {
		b.WriteString(strings.Repeat(" ", pad))
	}
	b.WriteString(source)
	b.WriteString(suffix)
	text := fs.instrument(file, source, b.String())
	if len(fs.scripts) > 0 {
		if err := fs.installHook(); err != nil {
			return nil, err
		}
	}
	prg, err := fs.compile(file, text)
	if err != nil {
		return nil, err
	}
	fv, err := fs.rt.RunProgram(prg)
	if err != nil {
		return nil, err
	}
	mk, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, invalid("captured function from %s:%d does not compile to a factory", pos.file, pos.line)
	}
	f := &factory{make: mk}
	if plain {
		v, err := mk(goja.Undefined())
		if err != nil {
			return nil, err
		}
		if f.plain, err = fs.checkFunction(v, pos); err != nil {
			return nil, err
		}
	}
	fs.factories[key] = f
	return f, nil
}

// reservedWords cannot name a variable in strict or sloppy code.
var reservedWords = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true,
	"if": true, "import": true, "in": true, "instanceof": true, "new": true, "null": true,
	"return": true, "super": true, "switch": true, "this": true, "throw": true, "true": true,
	"try": true, "typeof": true, "var": true, "void": true, "while": true, "with": true,
	"let": true, "static": true, "yield": true, "await": true, "arguments": true, "eval": true,
}
