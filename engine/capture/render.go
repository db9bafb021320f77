package capture

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
)

// insertion is text inserted into the original at offset at. Its text is
// rendered after the walk, when every function's free variables are known.
// Insertions at the same offset keep the order in which they were recorded:
// an enclosing construct's prefix before a nested one's, a nested suffix
// before the enclosing one's.
type insertion struct {
	at     int
	render func(*builder)
}

func (w *walker) insert(at int, render func(*builder)) {
	w.ins = append(w.ins, insertion{at: at, render: render})
}

// hoist registers a scope's function declarations at offset at, which
// follows the directive prologue when directive is not empty; echo, when not
// empty, is written after the registrations as a statement of its own.
func (w *walker) hoist(at int, directive string, decls []*ast.FunctionLiteral, echo string) {
	if len(decls) == 0 {
		return
	}
	w.insert(at, func(b *builder) {
		if b.hoisted(directive != "", decls) && echo != "" {
			b.WriteString(echo)
			b.WriteByte(';')
		}
	})
}

type builder struct {
	strings.Builder
	w *walker
}

// call writes `hook(id,getter,`.
func (b *builder) call(f *funcInfo) {
	b.WriteString(b.w.hook)
	b.WriteByte('(')
	b.WriteString(strconv.Itoa(f.id))
	b.WriteByte(',')
	if len(f.free) == 0 {
		b.WriteString("null")
	} else {
		b.WriteString("()=>[")
		b.WriteString(strings.Join(f.free, ","))
		b.WriteByte(']')
	}
	b.WriteByte(',')
}

func (b *builder) wrapPrefix(f *funcInfo) {
	if !f.registered {
		return
	}
	if f.parens {
		b.WriteByte('(')
	}
	b.call(f)
	if f.trickKey != "" {
		b.WriteByte('{')
		b.WriteString(f.trickKey)
		b.WriteByte(':')
	}
}

func (b *builder) wrapSuffix(f *funcInfo) {
	if !f.registered {
		return
	}
	if f.trickKey != "" {
		b.WriteByte('}')
		b.WriteString(f.trickAcc)
	}
	b.WriteByte(')')
	if f.parens {
		b.WriteByte(')')
	}
}

// hoisted writes the registrations of decls and reports whether it wrote any.
func (b *builder) hoisted(semi bool, decls []*ast.FunctionLiteral) bool {
	wrote := false
	for _, d := range decls {
		f := b.w.decls[d]
		if f == nil || !f.registered {
			continue
		}
		if semi {
			b.WriteByte(';')
			semi = false
		}
		b.WriteString("void ")
		b.call(f)
		b.WriteString(f.declName)
		b.WriteString(");")
		wrote = true
	}
	return wrote
}

func (b *builder) staticBlock(class *funcInfo, members []*funcInfo) {
	opened := false
	open := func() {
		if !opened {
			b.WriteString("static{")
			opened = true
		}
	}
	if class.registered {
		open()
		b.call(class)
		b.WriteString("this);")
	}
	for _, m := range members {
		if !m.registered {
			continue
		}
		open()
		b.call(m)
		b.WriteString("this")
		for _, p := range m.path {
			b.WriteByte(',')
			b.WriteString(p)
		}
		b.WriteString(");")
	}
	if opened {
		b.WriteByte('}')
	}
}

func (b *builder) objectPrefix(members []*funcInfo, parens bool) {
	n := 0
	for _, m := range members {
		if m.registered {
			n++
		}
	}
	if n > 0 && parens {
		b.WriteByte('(')
	}
	for _, m := range members {
		if m.registered {
			b.call(m)
		}
	}
}

func (b *builder) objectSuffix(members []*funcInfo, parens bool) {
	n := 0
	for i := len(members) - 1; i >= 0; i-- {
		m := members[i]
		if !m.registered {
			continue
		}
		n++
		for _, p := range m.path {
			b.WriteByte(',')
			b.WriteString(p)
		}
		b.WriteByte(')')
	}
	if n > 0 && parens {
		b.WriteByte(')')
	}
}

// finalize decides, once all free variables are known, which functions the
// rewrite registers.
func (w *walker) finalize() {
	for _, f := range w.funcs {
		switch f.reg {
		case regWrap, regHoist, regClass, regMember:
			f.registered = f.noReg == ""
		}
		if !f.registered {
			continue
		}
		if n := f.forbiddenFree(); n != "" {
			f.registered = false
			f.noReg = "it captures a variable named " + n + ", which the registration cannot read in every context"
		}
	}
}

// render returns the rewritten source.
func (w *walker) render() (string, []Insertion) {
	w.finalize()
	sort.SliceStable(w.ins, func(i, j int) bool { return w.ins[i].at < w.ins[j].at })
	b := &builder{w: w}
	b.Grow(len(w.t.src) + len(w.ins)*32)
	last := 0
	var spans []Insertion
	for _, in := range w.ins {
		b.WriteString(w.t.src[last:in.at])
		last = in.at
		n := b.Len()
		in.render(b)
		if d := b.Len() - n; d > 0 {
			if k := len(spans) - 1; k >= 0 && spans[k].At == in.at {
				spans[k].Len += d
			} else {
				spans = append(spans, Insertion{At: in.at, Len: d})
			}
		}
	}
	b.WriteString(w.t.src[last:])
	return b.String(), spans
}

// finish returns the public records.
func (w *walker) finish() []Func {
	out := make([]Func, len(w.funcs))
	for i, f := range w.funcs {
		g := Func{
			ID:         f.id,
			Parent:     -1,
			Kind:       f.kind,
			Name:       f.name,
			Free:       f.free,
			Globals:    f.globals,
			Shippable:  len(f.reasons) == 0,
			Registered: f.registered,
			Strict:     f.strict,
		}
		if f.parent != nil {
			g.Parent = f.parent.id
		}
		g.Reason = f.reason()
		start := f.start
		switch f.kind {
		case KindMethod:
			header := w.methodHeader(f)
			g.Source = header + w.t.src[f.paramStart:f.end]
			g.HeaderLen = len(header)
			start = f.paramStart
		default:
			g.Source = w.t.src[f.start:f.end]
		}
		g.Line, g.Column = w.t.position(start)
		out[i] = g
	}
	return out
}

// methodHeader is the text that turns a method's parameters and body into a
// function expression. The method's name is kept when it is a usable
// identifier that the body does not use to mean an outer variable (in a
// function expression the name would refer to the function itself).
func (w *walker) methodHeader(f *funcInfo) string {
	h := "function"
	if f.async {
		h = "async function"
	}
	if f.generator {
		h += "*"
	}
	if isIdentifier(f.name) && !isReserved(f.name) {
		_, free := f.freeSet[f.name]
		_, global := f.globalSet[f.name]
		if !free && !global {
			h += " " + f.name
		}
	}
	return h
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == utf8.RuneError {
			return false
		}
		if r == '$' || r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) {
			continue
		}
		if i > 0 && isIdentPart(r) {
			continue
		}
		return false
	}
	return true
}
