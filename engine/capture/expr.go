package capture

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// nameCtx describes an expression position where an anonymous function takes
// its name from the surrounding syntax (NamedEvaluation: `const f = () => 1`
// names the arrow "f"). A wrapped function would lose that name, so the
// rewrite keeps it by wrapping {key: E}access instead of E, which names E the
// same way in goja, at compile time (stack traces) and at run time (.name).
type nameCtx struct {
	name     string // the name the function gets
	key      string // JS property key text naming it
	access   string // JS member access reading it back
	computed bool   // named by a computed key at run time: cannot be kept
}

func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}

// identName is the naming context of a binding or reference identifier.
func (w *walker) identName(id *ast.Identifier) nameCtx {
	name := id.Name.String()
	if name == "__proto__" {
		return nameCtx{name: name, key: `["__proto__"]`, access: `["__proto__"]`}
	}
	raw := w.t.src[off(id.Idx):w.t.identEnd(off(id.Idx))]
	return nameCtx{name: name, key: raw, access: "." + raw}
}

func (w *walker) targetName(target ast.Expression) nameCtx {
	if id, ok := target.(*ast.Identifier); ok {
		return w.identName(id)
	}
	return nameCtx{}
}

// keyInfo returns the property key a non-computed key denotes, a JS
// expression evaluating to it, and the text that writes it as a key.
func (w *walker) keyInfo(key ast.Expression) (name, expr, raw string, ok bool) {
	switch k := key.(type) {
	case *ast.StringLiteral:
		name = k.Value.String()
		raw = w.t.src[off(k.Idx) : off(k.Idx)+len(k.Literal)]
		quoted := raw != "" && (raw[0] == '\'' || raw[0] == '"')
		if !quoted || hasLineTerminator(raw) {
			expr = jsString(name)
		} else {
			expr = raw
		}
		if hasLineTerminator(raw) {
			raw = expr
		}
		return name, expr, raw, true
	case *ast.NumberLiteral:
		return numberKey(k.Value), k.Literal, k.Literal, true
	case *ast.PrivateIdentifier:
		name = "#" + k.Name.String()
		return name, jsString(name), jsString(name), true
	}
	return "", "", "", false
}

// numberKey approximates ToString of a numeric property key; it only serves
// to detect duplicate keys.
func numberKey(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

// keyName is the naming context of a property or class field key.
func (w *walker) keyName(key ast.Expression, classField bool) nameCtx {
	name, _, raw, ok := w.keyInfo(key)
	if !ok {
		return nameCtx{}
	}
	if name == "__proto__" {
		if !classField {
			return nameCtx{} // sets the prototype; no name is given
		}
		return nameCtx{name: name, key: `["__proto__"]`, access: `["__proto__"]`}
	}
	if _, isPrivate := key.(*ast.PrivateIdentifier); isPrivate {
		return nameCtx{name: name, key: raw, access: "[" + raw + "]"}
	}
	if _, isStr := key.(*ast.StringLiteral); isStr && raw != "" && raw[0] != '\'' && raw[0] != '"' {
		return nameCtx{name: name, key: raw, access: "." + raw}
	}
	return nameCtx{name: name, key: raw, access: "[" + raw + "]"}
}

func (w *walker) expr(e ast.Expression) { w.exprNamed(e, nameCtx{}) }

func (w *walker) exprNamed(e ast.Expression, nc nameCtx) {
	switch e := e.(type) {
	case nil:
	case *ast.Identifier:
		w.use(e.Name.String())
	case *ast.ThisExpression:
		w.useThis()
	case *ast.SuperExpression:
		w.useSuper()
	case *ast.MetaProperty:
		if e.Meta.Name == "new" && e.Property.Name == "target" {
			w.useNewTarget()
		}
	case *ast.PrivateIdentifier:
		w.usePrivate(e.Name.String())
	case *ast.PrivateDotExpression:
		w.expr(e.Left)
		w.usePrivate(e.Identifier.Name.String())
	case *ast.DotExpression:
		w.expr(e.Left)
	case *ast.BracketExpression:
		w.expr(e.Left)
		w.expr(e.Member)
	case *ast.CallExpression:
		if id, ok := e.Callee.(*ast.Identifier); ok && id.Name == "eval" {
			if s, _ := w.lookup("eval"); s == nil {
				w.markUpTo(nil, false, "calls eval")
			}
		}
		w.expr(e.Callee)
		for _, a := range e.ArgumentList {
			w.expr(a)
		}
	case *ast.NewExpression:
		w.parens[leftmost(e.Callee)] = true
		w.expr(e.Callee)
		for _, a := range e.ArgumentList {
			w.expr(a)
		}
	case *ast.FunctionLiteral:
		w.funcExpr(e, nc)
	case *ast.ArrowFunctionLiteral:
		w.arrow(e, nc)
	case *ast.ClassLiteral:
		w.class(e, nc)
	case *ast.ObjectLiteral:
		w.object(e)
	case *ast.ArrayLiteral:
		for _, v := range e.Value {
			w.expr(v)
		}
	case *ast.ObjectPattern, *ast.ArrayPattern:
		w.assignTarget(e)
	case *ast.AssignExpression:
		w.assignTarget(e.Left)
		named := nameCtx{}
		switch e.Operator {
		case token.ASSIGN, token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
			named = w.targetName(e.Left)
		}
		w.exprNamed(e.Right, named)
	case *ast.BinaryExpression:
		w.expr(e.Left)
		w.expr(e.Right)
	case *ast.ConditionalExpression:
		w.expr(e.Test)
		w.expr(e.Consequent)
		w.expr(e.Alternate)
	case *ast.SequenceExpression:
		for _, x := range e.Sequence {
			w.expr(x)
		}
	case *ast.UnaryExpression:
		w.expr(e.Operand)
	case *ast.AwaitExpression:
		w.expr(e.Argument)
	case *ast.YieldExpression:
		w.expr(e.Argument)
	case *ast.SpreadElement:
		w.expr(e.Expression)
	case *ast.OptionalChain:
		w.expr(e.Expression)
	case *ast.Optional:
		w.expr(e.Expression)
	case *ast.TemplateLiteral:
		if e.Tag != nil {
			w.expr(e.Tag)
		}
		for _, x := range e.Expressions {
			w.expr(x)
		}
	case *ast.RegExpLiteral:
		w.t.regex[off(e.Idx)] = off(e.Idx) + len(e.Literal)
	}
	// Other literals reference nothing.
}

// leftmost returns the expression a member, call or tagged-template chain
// starts with.
func leftmost(e ast.Expression) ast.Expression {
	for {
		switch n := e.(type) {
		case *ast.DotExpression:
			e = n.Left
		case *ast.PrivateDotExpression:
			e = n.Left
		case *ast.BracketExpression:
			e = n.Left
		case *ast.CallExpression:
			e = n.Callee
		case *ast.OptionalChain:
			e = n.Expression
		case *ast.Optional:
			e = n.Expression
		case *ast.TemplateLiteral:
			if n.Tag == nil {
				return e
			}
			e = n.Tag
		default:
			return e
		}
	}
}

// exprEnd returns the offset just after e's last token. Unlike goja's Idx1 it
// measures identifiers in the source (escapes, non-ASCII names) and postfix
// operators correctly; parentheses around e's last operand are still not
// included (the parser drops them).
func (w *walker) exprEnd(e ast.Expression) int {
	switch n := e.(type) {
	case *ast.Identifier:
		return w.t.identEnd(off(n.Idx))
	case *ast.PrivateIdentifier:
		return w.t.identEnd(off(n.Idx) + 1)
	case *ast.DotExpression:
		return w.t.identEnd(off(n.Identifier.Idx))
	case *ast.PrivateDotExpression:
		return w.t.identEnd(off(n.Identifier.Idx) + 1)
	case *ast.MetaProperty:
		return w.t.identEnd(off(n.Property.Idx))
	case *ast.UnaryExpression:
		if n.Postfix {
			return off(n.Idx) + 2
		}
		return w.exprEnd(n.Operand)
	case *ast.BinaryExpression:
		return w.exprEnd(n.Right)
	case *ast.AssignExpression:
		return w.exprEnd(n.Right)
	case *ast.ConditionalExpression:
		return w.exprEnd(n.Alternate)
	case *ast.SequenceExpression:
		return w.exprEnd(n.Sequence[len(n.Sequence)-1])
	case *ast.AwaitExpression:
		return w.exprEnd(n.Argument)
	case *ast.YieldExpression:
		if n.Argument != nil {
			return w.exprEnd(n.Argument)
		}
		return off(n.Yield) + len("yield")
	case *ast.ArrowFunctionLiteral:
		return w.arrowEnd(n)
	case *ast.SpreadElement:
		return w.exprEnd(n.Expression)
	case *ast.OptionalChain:
		return w.exprEnd(n.Expression)
	case *ast.Optional:
		return w.exprEnd(n.Expression)
	case *ast.NewExpression:
		if n.RightParenthesis != 0 {
			return off(n.RightParenthesis) + 1
		}
		return w.exprEnd(n.Callee)
	}
	return off(e.Idx1())
}

// arrowEnd returns the end of an arrow function's text, including the
// closing parentheses of any parenthesised tail of an expression body.
func (w *walker) arrowEnd(a *ast.ArrowFunctionLiteral) int {
	body, ok := a.Body.(*ast.ExpressionBody)
	if !ok {
		return off(a.Body.Idx1())
	}
	end := w.exprEnd(body.Expression)
	if j := w.t.skipSpace(end); j >= len(w.t.src) || w.t.src[j] != ')' {
		return end
	}
	for n := w.t.netParens(off(a.Start), end); n > 0; n-- {
		j := w.t.skipSpace(end)
		if j >= len(w.t.src) || w.t.src[j] != ')' {
			break
		}
		end = j + 1
	}
	return end
}

func (w *walker) newFunc(kind Kind, start int) *funcInfo {
	f := &funcInfo{id: len(w.funcs), parent: w.cur.owner, kind: kind, start: start, strict: w.strict}
	if w.withDepth > 0 {
		f.unship("is defined inside a `with` statement")
	}
	w.funcs = append(w.funcs, f)
	return f
}

// funcDecl walks a function declaration.
func (w *walker) funcDecl(fn *ast.FunctionLiteral, reg regKind) {
	f := w.newFunc(KindFunction, off(fn.Function))
	f.end = off(fn.Body.RightBrace) + 1
	f.async, f.generator = fn.Async, fn.Generator
	if fn.Name != nil {
		f.name = fn.Name.Name.String()
		f.declName = f.name
	}
	switch {
	case reg == regIfBody:
		f.noReg = "a function declaration that is the body of an if statement is not registered"
	case w.shadowed[fn]:
		reg = regShadow
		f.noReg = "a later declaration of the same name replaces it"
	}
	f.reg = reg
	w.decls[fn] = f
	w.function(fn, f, false, false)
}

// funcExpr walks a function expression and wraps it.
func (w *walker) funcExpr(fn *ast.FunctionLiteral, nc nameCtx) {
	f := w.newFunc(KindFunction, off(fn.Function))
	f.end = off(fn.Body.RightBrace) + 1
	f.async, f.generator = fn.Async, fn.Generator
	if fn.Name != nil {
		f.name = fn.Name.Name.String()
	} else {
		w.applyName(f, nc)
	}
	w.wrap(f, fn)
	w.function(fn, f, true, false)
	w.unwrap(f)
}

func (w *walker) applyName(f *funcInfo, nc nameCtx) {
	f.name = nc.name
	if nc.computed {
		f.noReg = "an anonymous function under a computed key is not registered (wrapping it would lose its name)"
		return
	}
	f.trickKey, f.trickAcc = nc.key, nc.access
}

// wrap registers f's expression by wrapping it: the prefix goes in now (so
// that it precedes the insertions of nested code at the same offset), the
// suffix in unwrap.
func (w *walker) wrap(f *funcInfo, node ast.Node) {
	if f.noReg == "" {
		f.reg = regWrap
	}
	f.parens = w.parens[node]
	w.insert(f.start, func(b *builder) { b.wrapPrefix(f) })
}

func (w *walker) unwrap(f *funcInfo) {
	w.insert(f.end, func(b *builder) { b.wrapSuffix(f) })
}

// function walks a function literal's parameters and body. f is the
// function's record, or nil for a class constructor, which belongs to its
// class. An expression's own name is bound inside it only.
func (w *walker) function(fn *ast.FunctionLiteral, f *funcInfo, isExpr, method bool) {
	saved := w.cur
	owner := f
	if owner == nil {
		owner = w.cur.owner
	}
	if isExpr && fn.Name != nil {
		s := w.push(owner)
		w.declare(s, fn.Name.Name.String(), bindPlain)
	}
	ps := w.push(owner)
	ps.prov, ps.provWhat = provThis|provNewTarget, "an enclosing function"
	if method {
		ps.prov |= provSuper
		ps.superMethod = f != nil
	}
	w.declare(ps, "arguments", bindArguments) // a parameter may shadow it
	w.params(ps, fn.ParameterList)
	w.body(fn.Body, owner)
	w.cur = saved
}

func (w *walker) params(s *scope, pl *ast.ParameterList) {
	for _, b := range pl.List {
		w.declarePattern(s, b.Target)
	}
	if pl.Rest != nil {
		w.declarePattern(s, pl.Rest)
	}
	for _, b := range pl.List {
		if _, plain := b.Target.(*ast.Identifier); plain && b.Initializer != nil {
			// goja does not name a function that is a parameter's default
			// value (patterns inside parameters are named as usual).
			w.expr(b.Initializer)
			continue
		}
		w.binding(b)
	}
	if pl.Rest != nil {
		w.bindTarget(pl.Rest)
	}
}

// body walks a function body: its var scope, with the hoisted registrations
// of its function declarations after the directive prologue.
func (w *walker) body(b *ast.BlockStatement, owner *funcInfo) {
	defer func(strict bool) { w.strict = strict }(w.strict)
	if hasUseStrict(b.List) {
		w.strict = true
	}
	s := w.push(owner)
	w.declareVars(s, b.List)
	decls := w.declareLexical(s, b.List)
	at, last := w.prologueEnd(b.List, off(b.LeftBrace)+1)
	w.hoist(at, last, decls, "")
	w.stmts(b.List)
}

func (w *walker) arrow(a *ast.ArrowFunctionLiteral, nc nameCtx) {
	f := w.newFunc(KindArrow, off(a.Start))
	f.async = a.Async
	w.applyName(f, nc)
	w.wrap(f, a)
	saved := w.cur
	ps := w.push(f)
	w.params(ps, a.ParameterList)
	switch body := a.Body.(type) {
	case *ast.BlockStatement:
		w.body(body, f)
	case *ast.ExpressionBody:
		w.expr(body.Expression)
	}
	w.cur = saved
	f.end = w.arrowEnd(a)
	w.unwrap(f)
}

// class walks a class. The class and its registrable methods are registered
// from a static block inserted at the start of the class body, which runs
// when the class is created, before any static field, and sees the class's
// own name and everything the class sees.
func (w *walker) class(cl *ast.ClassLiteral, nc nameCtx) {
	f := w.newFunc(KindClass, off(cl.Class))
	// A class, its heritage and its body are strict code.
	defer func(strict bool) { w.strict = strict }(w.strict)
	w.strict = true
	f.end = off(cl.RightBrace) + 1
	f.name = nc.name
	if cl.Name != nil {
		f.name = cl.Name.Name.String()
	}
	f.reg = regClass
	saved := w.cur
	cs := w.push(f)
	if cl.Name != nil {
		w.declare(cs, cl.Name.Name.String(), bindPlain)
	}
	for _, el := range cl.Body {
		var key ast.Expression
		switch el := el.(type) {
		case *ast.MethodDefinition:
			key = el.Key
		case *ast.FieldDefinition:
			key = el.Key
		}
		if p, ok := key.(*ast.PrivateIdentifier); ok {
			if cs.private == nil {
				cs.private = map[string]bool{}
			}
			cs.private[p.Name.String()] = true
		}
	}

	// The heritage is walked first: measuring it may need the regular
	// expressions inside it.
	if cl.SuperClass != nil {
		w.expr(cl.SuperClass)
	}
	open := off(cl.Class) + len("class")
	if cl.Name != nil {
		open = w.t.identEnd(off(cl.Name.Idx))
	}
	if cl.SuperClass != nil {
		open = w.exprEnd(cl.SuperClass)
	}
	open = w.t.skipClosers(open)
	var members []*funcInfo
	bodyFound := open < len(w.t.src) && w.t.src[open] == '{'
	if bodyFound {
		w.insert(open+1, func(b *builder) { b.staticBlock(f, members) })
	} else {
		f.noReg = "the class body was not found"
	}
	for i, el := range cl.Body {
		switch el := el.(type) {
		case *ast.MethodDefinition:
			if el.Computed {
				w.expr(el.Key)
			}
			name, expr, _, keyOK := w.keyInfo(el.Key)
			_, private := el.Key.(*ast.PrivateIdentifier)
			if !el.Static && !el.Computed && !private && name == "constructor" {
				w.function(el.Body, nil, false, true)
				continue
			}
			if el.Computed {
				name = ""
			}
			m := w.method(el.Body, el.Kind, name)
			switch {
			case m.reg == regNone:
			case el.Computed || !keyOK:
				m.noReg = "a method with a computed key is not registered"
			case private:
				m.unship("is a private method")
				m.noReg = "a private method is not registered"
			case w.classKeyReplaced(cl.Body[i+1:], name, el.Static):
				m.noReg = "a later element of the class with the same key replaces it"
			case !bodyFound:
				m.noReg = f.noReg
			default:
				m.reg = regMember
				m.path = []string{expr}
				if !el.Static {
					m.path = []string{`"prototype"`, expr}
				}
				members = append(members, m)
			}
			w.function(el.Body, m, false, true)
		case *ast.FieldDefinition:
			if el.Computed {
				w.expr(el.Key)
			}
			if el.Initializer != nil {
				saved := w.cur
				s := w.push(f)
				s.prov, s.provWhat = provThis|provSuper|provNewTarget, "an enclosing class field or static block"
				nc := nameCtx{computed: true}
				if !el.Computed {
					nc = w.keyName(el.Key, true)
				}
				w.exprNamed(el.Initializer, nc)
				w.cur = saved
			}
		case *ast.ClassStaticBlock:
			saved := w.cur
			s := w.push(f)
			s.prov, s.provWhat = provThis|provSuper|provNewTarget, "an enclosing class field or static block"
			w.declareVars(s, el.Block.List)
			decls := w.declareLexical(s, el.Block.List)
			w.hoist(off(el.Block.LeftBrace)+1, "", decls, "")
			w.stmts(el.Block.List)
			w.cur = saved
		}
	}
	w.cur = saved
}

// method creates the record of a method, getter or setter; it leaves
// registration (reg) to the caller, except for accessors, which are never
// shippable.
func (w *walker) method(fn *ast.FunctionLiteral, kind ast.PropertyKind, name string) *funcInfo {
	k := KindMethod
	switch kind {
	case ast.PropertyKindGet:
		k = KindGetter
	case ast.PropertyKindSet:
		k = KindSetter
	}
	m := w.newFunc(k, off(fn.Function))
	m.end = off(fn.Body.RightBrace) + 1
	m.paramStart = off(fn.ParameterList.Opening)
	m.async, m.generator = fn.Async, fn.Generator
	m.name = name
	m.reg = regMember
	if k != KindMethod {
		m.reg = regNone
		m.unship("is a " + k.String())
		m.noReg = "accessors are not registered"
	}
	return m
}

// classKeyReplaced reports whether a later method or accessor of the class
// may replace the one with the given key.
func (w *walker) classKeyReplaced(rest []ast.ClassElement, name string, static bool) bool {
	for _, el := range rest {
		md, ok := el.(*ast.MethodDefinition)
		if !ok || md.Static != static {
			continue
		}
		if md.Computed {
			return true
		}
		if n, _, _, _ := w.keyInfo(md.Key); n == name {
			return true
		}
	}
	return false
}

// object walks an object literal. Its methods are registered by wrapping the
// literal: hook(id, getter, {...}, key) registers obj[key] and returns obj.
func (w *walker) object(o *ast.ObjectLiteral) {
	var members []*funcInfo
	parens := w.parens[o]
	w.insert(off(o.LeftBrace), func(b *builder) { b.objectPrefix(members, parens) })
	for i, p := range o.Value {
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if p.Computed {
				w.expr(p.Key)
			}
			fn, isFn := p.Value.(*ast.FunctionLiteral)
			if p.Kind == ast.PropertyKindValue || !isFn {
				nc := nameCtx{computed: true}
				if !p.Computed {
					nc = w.keyName(p.Key, false)
				}
				w.exprNamed(p.Value, nc)
				continue
			}
			name, expr, _, keyOK := w.keyInfo(p.Key)
			if p.Computed {
				name = ""
			}
			m := w.method(fn, p.Kind, name)
			switch {
			case m.reg == regNone:
			case p.Computed || !keyOK:
				m.noReg = "a method with a computed key is not registered"
			case w.objectKeyReplaced(o.Value[i+1:], name):
				m.noReg = "a later property with the same key replaces it"
			default:
				m.path = []string{expr}
				members = append(members, m)
			}
			w.function(fn, m, false, true)
		case *ast.PropertyShort:
			w.use(p.Name.Name.String())
			if p.Initializer != nil {
				w.exprNamed(p.Initializer, w.identName(&p.Name))
			}
		case *ast.SpreadElement:
			w.expr(p.Expression)
		}
	}
	w.insert(off(o.RightBrace)+1, func(b *builder) { b.objectSuffix(members, parens) })
}

// objectKeyReplaced reports whether a later property of an object literal may
// replace the one with the given key.
func (w *walker) objectKeyReplaced(rest []ast.Property, name string) bool {
	for _, p := range rest {
		switch p := p.(type) {
		case *ast.SpreadElement:
			return true
		case *ast.PropertyKeyed:
			if p.Computed {
				return true
			}
			if n, _, _, _ := w.keyInfo(p.Key); n == name {
				return true
			}
		case *ast.PropertyShort:
			if p.Name.Name.String() == name {
				return true
			}
		}
	}
	return false
}
