package capture

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dop251/goja/parser"
)

// DefaultHook is the name of the global hook function that instrumented scripts
// call when Options.Hook is empty.
const DefaultHook = "__riot_capture"

// Options configures Instrument.
type Options struct {
	// Hook is the name of the global function the rewritten script calls to
	// register each function it creates (see the package documentation for the
	// contract). It must be an ASCII identifier that the script itself neither
	// declares nor uses. Empty means DefaultHook.
	Hook string
	// Prefix is text without line breaks that the caller puts before the
	// script (a module's wrapper function), parsed with it but not part of
	// the original: positions (Func columns, Insertions, syntax errors)
	// leave it out, and Script.Insertions count it as inserted text.
	Prefix string
}

// Kind says what syntax created a function.
type Kind int

// The kinds of function a script can create.
const (
	// KindFunction is a function declaration or function expression,
	// including async functions and generators.
	KindFunction Kind = iota
	// KindArrow is an arrow function.
	KindArrow
	// KindClass is a class declaration or class expression. Its Source is the
	// whole class; its Free and Globals cover every part of it.
	KindClass
	// KindMethod is a method of an object literal or a class (not the class
	// constructor, which is the class itself).
	KindMethod
	// KindGetter is a getter of an object literal or a class.
	KindGetter
	// KindSetter is a setter of an object literal or a class.
	KindSetter
)

// String returns the kind's name in lower case.
func (k Kind) String() string {
	switch k {
	case KindFunction:
		return "function"
	case KindArrow:
		return "arrow"
	case KindClass:
		return "class"
	case KindMethod:
		return "method"
	case KindGetter:
		return "getter"
	case KindSetter:
		return "setter"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Script is an instrumented script. It is immutable once returned and safe
// for concurrent use.
type Script struct {
	// File is the file name given to Instrument.
	File string
	// Source is the rewritten script. Every token of the original is on the
	// same line as before: the rewrite only inserts text within lines.
	Source string
	// Funcs describes every function the script can create, indexed by ID, in
	// the order their text starts in the source (outer before inner).
	Funcs []Func
	// Insertions are the texts the rewrite inserted, in order of offset:
	// with them a position in Source maps back to the original (a source
	// map of the original carries over to Source).
	Insertions []Insertion

	// lines are the offsets of the original's line starts.
	lines []int
}

// OriginalColumn gives the 1-based column in the original of the 1-based
// column col of line line of Source (lines are the same in both). A
// position inside inserted text gives the original position the text was
// inserted before.
func (s *Script) OriginalColumn(line, col int) int {
	if line < 1 || line > len(s.lines) || col < 1 {
		return col
	}
	start := s.lines[line-1]
	end := math.MaxInt
	if line < len(s.lines) {
		end = s.lines[line]
	}
	g := col - 1
	i := sort.Search(len(s.Insertions), func(i int) bool { return s.Insertions[i].At >= start })
	shift := 0
	for ; i < len(s.Insertions) && s.Insertions[i].At < end; i++ {
		in := s.Insertions[i]
		at := in.At - start + shift // where the insertion starts in Source's line
		if g < at {
			break
		}
		if g < at+in.Len {
			return in.At - start + 1
		}
		shift += in.Len
	}
	return g - shift + 1
}

// RemapStack rewrites the positions file:line:column in text (a stack
// trace) that point into Source to the original's columns.
func (s *Script) RemapStack(text string) string {
	if len(s.Insertions) == 0 || !strings.Contains(text, s.File+":") {
		return text
	}
	re := regexp.MustCompile(`(^|[\s(])` + regexp.QuoteMeta(s.File) + `:(\d+):(\d+)`)
	return re.ReplaceAllStringFunc(text, func(m string) string {
		sub := re.FindStringSubmatch(m)
		line, _ := strconv.Atoi(sub[2])
		col, _ := strconv.Atoi(sub[3])
		return fmt.Sprintf("%s%s:%d:%d", sub[1], s.File, line, s.OriginalColumn(line, col))
	})
}

// Insertion is text that the rewrite inserted into the original: Len bytes
// before the byte at offset At of the original.
type Insertion struct {
	At, Len int
}

// Func describes one function (or class) in the script: the text to ship and
// the variables it needs.
type Func struct {
	// ID is the function's index in Script.Funcs and the id the hook receives.
	ID int
	// Parent is the ID of the innermost function or class whose text contains
	// this one, or -1 at the script's top level. Methods have their class as
	// parent.
	Parent int
	// Kind says what syntax created the function.
	Kind Kind
	// Name is the name the function has at run time when it is known
	// statically: its own name, a method's key, or the name an anonymous
	// function takes from the variable, parameter, property or field it is
	// assigned to (const f = () => 1 is named "f"). Empty otherwise.
	Name string
	// Source is a JavaScript expression, taken from the original text, that
	// evaluates to an equivalent function; evaluate it in parentheses. For a
	// method, the first HeaderLen bytes are synthesized ("function f",
	// "async function f", "function* f"; the name is left out when it is not
	// a usable identifier or the body refers to an outer variable of the same
	// name). For a getter or setter it is the original text, which is not an
	// expression (they are not shippable).
	Source string
	// HeaderLen is the number of bytes at the start of Source that are not in
	// the original file (only methods have a header).
	HeaderLen int
	// Line and Column (1-based; columns count bytes as goja does) locate
	// Source[HeaderLen:] in the original file.
	Line, Column int
	// Free lists, in order of first use, the variables the function uses
	// that are bound elsewhere in the script: in an enclosing function, block,
	// catch clause, class or at the script's top level. The hook's getter
	// returns their current values in this order. A function declaration
	// that calls itself lists its own name (it is bound in the enclosing
	// scope).
	Free []string
	// Globals lists, in order of first use, the free names bound nowhere in
	// the script (Math, console, undefined, implicit globals): they are left
	// to the global scope of whatever runs the function.
	Globals []string
	// Shippable reports whether the function can run elsewhere given Source
	// and the values of Free. When false, Reason says why.
	Shippable bool
	// Reason explains why the function is not shippable, or, for a
	// shippable one, why it is not registered; several reasons are joined
	// with "; ".
	Reason string
	// Registered reports whether the rewritten script passes the function to
	// the hook when it creates it. A function that is not registered cannot
	// be recognised at run time.
	Registered bool
	// Strict reports whether the function stands in strict code: under a
	// 'use strict' directive of the script or of an enclosing function, or
	// in a class. Run elsewhere it must be made strict, as Source alone may
	// not say it (its own directive, if it has one, is in Source).
	Strict bool
}

// SyntaxError reports a script that goja's parser rejects.
type SyntaxError struct {
	// File is the file name given to Instrument.
	File string
	// Line and Column (1-based) locate the first error.
	Line, Column int
	// Message is the parser's message for the first error.
	Message string
	// Err is the parser's error (a parser.ErrorList with every error).
	Err error
}

// Error returns "capture: file:line:column: message".
func (e *SyntaxError) Error() string {
	file := e.File
	if file == "" {
		file = "<script>"
	}
	return fmt.Sprintf("capture: %s:%d:%d: %s", file, e.Line, e.Column, e.Message)
}

// Unwrap returns the parser's error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// ErrReservedName is returned (wrapped) when the script declares or uses the
// hook's name.
var ErrReservedName = errors.New("capture: script uses the hook's reserved name")

// Instrument parses src, a script (not an ES module; a CommonJS module body
// without a top-level return is a script too), analyses the free variables of
// every function in it and returns it rewritten so that each function is
// registered with the hook as it is created. file names the script in errors
// and positions. Instrument does not run the script.
func Instrument(file, src string, opts Options) (*Script, error) {
	hook := opts.Hook
	if hook == "" {
		hook = DefaultHook
	}
	if !isASCIIIdent(hook) || isReserved(hook) {
		return nil, fmt.Errorf("capture: hook name %q is not an ASCII identifier", hook)
	}
	if strings.ContainsAny(opts.Prefix, "\r\n\u2028\u2029") {
		return nil, fmt.Errorf("capture: the prefix holds a line break")
	}
	p := len(opts.Prefix)
	orig := src
	src = opts.Prefix + src
	prog, err := parser.ParseFile(nil, file, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			first := list[0]
			col := first.Position.Column
			if first.Position.Line == 1 && col > p {
				col -= p
			}
			return nil, &SyntaxError{File: file, Line: first.Position.Line, Column: col, Message: first.Message, Err: err}
		}
		return nil, fmt.Errorf("capture: parse %s: %w", file, err)
	}
	w := newWalker(src, hook)
	w.program(prog)
	if w.err != nil {
		return nil, w.err
	}
	out, spans := w.render()
	funcs := w.finish()
	if p > 0 {
		// The prefix and what was inserted into it or just after it are
		// one insertion before the original's first byte.
		adj := []Insertion{{At: 0, Len: p}}
		for _, in := range spans {
			if in.At <= p {
				adj[0].Len += in.Len
				continue
			}
			adj = append(adj, Insertion{At: in.At - p, Len: in.Len})
		}
		spans = adj
		for i := range funcs {
			if funcs[i].Line == 1 {
				funcs[i].Column = max(funcs[i].Column-p, 1)
			}
		}
	}
	src = orig
	lines := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			lines = append(lines, i+1)
		}
	}
	return &Script{File: file, Source: out, Insertions: spans, Funcs: funcs, lines: lines}, nil
}

func isASCIIIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '$' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// isReserved reports whether s cannot name a function in strict code (or is
// a literal); a method whose key is one of them ships without a name.
func isReserved(s string) bool {
	switch s {
	case "break", "case", "catch", "class", "const", "continue", "debugger", "default",
		"delete", "do", "else", "export", "extends", "false", "finally", "for", "function",
		"if", "import", "in", "instanceof", "new", "null", "return", "super", "switch",
		"this", "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield",
		"let", "static", "implements", "interface", "package", "private", "protected",
		"public", "await", "enum", "arguments", "eval":
		return true
	}
	return false
}
