package capture

import (
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
)

// walker analyses one program and collects the insertions of the rewrite.
// It is used once, by one goroutine.
type walker struct {
	t     *text
	hook  string
	funcs []*funcInfo
	cur   *scope
	ins   []insertion
	err   error

	withDepth int
	// strict says that the code being walked is strict: under a 'use
	// strict' directive (the script's or an enclosing function's) or in a
	// class.
	strict bool
	// parens holds the expressions that are the leftmost part of a `new`
	// callee: wrapping them needs parentheses.
	parens map[ast.Node]bool
	// decls maps function declarations to their records, filled as the walk
	// reaches them; shadowed holds declarations that a later one of the
	// same name in the same scope replaces.
	decls    map[*ast.FunctionLiteral]*funcInfo
	shadowed map[*ast.FunctionLiteral]bool
}

func newWalker(src, hook string) *walker {
	return &walker{
		t:        newText(src),
		hook:     hook,
		parens:   map[ast.Node]bool{},
		decls:    map[*ast.FunctionLiteral]*funcInfo{},
		shadowed: map[*ast.FunctionLiteral]bool{},
	}
}

func (w *walker) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// off converts a goja position (1-based) into a 0-based offset.
func off(i file.Idx) int { return int(i) - 1 }

func (w *walker) program(p *ast.Program) {
	root := &scope{prov: provThis, provWhat: "the script's top level"}
	w.cur = root
	w.strict = hasUseStrict(p.Body)
	w.declareVars(root, p.Body)
	decls := w.declareLexical(root, p.Body)
	start := 0
	if strings.HasPrefix(w.t.src, "#!") {
		// A hashbang line is a comment: registrations go on the next line.
		start = len(w.t.src)
		if len(w.t.lines) > 1 {
			start = w.t.lines[1]
		}
	}
	at, last := w.prologueEnd(p.Body, start)
	// The script's completion value would be the registration's (undefined)
	// instead of the last directive's if nothing after it produced a value:
	// the registrations repeat the directive as a plain statement.
	echo := ""
	if !hasLineTerminator(last) {
		echo = last
	}
	w.hoist(at, last, decls, echo)
	for _, st := range p.Body {
		w.stmt(st)
	}
}

// declareVars declares in s every var-scoped name in list (not entering
// nested functions or classes).
func (w *walker) declareVars(s *scope, list []ast.Statement) {
	for _, st := range list {
		w.declareVarsStmt(s, st)
	}
}

func (w *walker) declareVarsStmt(s *scope, st ast.Statement) {
	switch st := st.(type) {
	case *ast.VariableStatement:
		for _, b := range st.List {
			w.declarePattern(s, b.Target)
		}
	case *ast.BlockStatement:
		w.declareVars(s, st.List)
	case *ast.IfStatement:
		w.declareVarsStmt(s, st.Consequent)
		if st.Alternate != nil {
			w.declareVarsStmt(s, st.Alternate)
		}
	case *ast.ForStatement:
		if init, ok := st.Initializer.(*ast.ForLoopInitializerVarDeclList); ok {
			for _, b := range init.List {
				w.declarePattern(s, b.Target)
			}
		}
		w.declareVarsStmt(s, st.Body)
	case *ast.ForInStatement:
		if v, ok := st.Into.(*ast.ForIntoVar); ok {
			w.declarePattern(s, v.Binding.Target)
		}
		w.declareVarsStmt(s, st.Body)
	case *ast.ForOfStatement:
		if v, ok := st.Into.(*ast.ForIntoVar); ok {
			w.declarePattern(s, v.Binding.Target)
		}
		w.declareVarsStmt(s, st.Body)
	case *ast.WhileStatement:
		w.declareVarsStmt(s, st.Body)
	case *ast.DoWhileStatement:
		w.declareVarsStmt(s, st.Body)
	case *ast.LabelledStatement:
		w.declareVarsStmt(s, st.Statement)
	case *ast.WithStatement:
		w.declareVarsStmt(s, st.Body)
	case *ast.TryStatement:
		w.declareVars(s, st.Body.List)
		if st.Catch != nil {
			w.declareVars(s, st.Catch.Body.List)
		}
		if st.Finally != nil {
			w.declareVars(s, st.Finally.List)
		}
	case *ast.SwitchStatement:
		for _, c := range st.Body {
			w.declareVars(s, c.Consequent)
		}
	}
}

// declarePattern declares every name a binding target binds.
func (w *walker) declarePattern(s *scope, target ast.Expression) {
	switch t := target.(type) {
	case *ast.Identifier:
		w.declare(s, t.Name.String(), bindPlain)
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				w.declare(s, p.Name.Name.String(), bindPlain)
			case *ast.PropertyKeyed:
				w.declarePattern(s, p.Value)
			}
		}
		if t.Rest != nil {
			w.declarePattern(s, t.Rest)
		}
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				w.declarePattern(s, e)
			}
		}
		if t.Rest != nil {
			w.declarePattern(s, t.Rest)
		}
	case *ast.AssignExpression:
		w.declarePattern(s, t.Left)
	}
}

func unlabel(st ast.Statement) ast.Statement {
	for {
		l, ok := st.(*ast.LabelledStatement)
		if !ok {
			return st
		}
		st = l.Statement
	}
}

// declareLexical declares in s the let, const, class and function
// declarations made directly in list, and returns the function declarations.
// Function declarations are block-scoped everywhere, as in strict code (and
// as goja binds them); duplicates are marked so that only the last one, the
// one the name refers to, is registered.
func (w *walker) declareLexical(s *scope, list []ast.Statement) []*ast.FunctionLiteral {
	var decls []*ast.FunctionLiteral
	for _, st := range list {
		switch st := unlabel(st).(type) {
		case *ast.LexicalDeclaration:
			for _, b := range st.List {
				w.declarePattern(s, b.Target)
			}
		case *ast.ClassDeclaration:
			if st.Class.Name != nil {
				w.declare(s, st.Class.Name.Name.String(), bindPlain)
			}
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				w.declare(s, st.Function.Name.Name.String(), bindPlain)
				decls = append(decls, st.Function)
			}
		}
	}
	last := map[string]*ast.FunctionLiteral{}
	for _, d := range decls {
		last[d.Name.Name.String()] = d
	}
	for _, d := range decls {
		if last[d.Name.Name.String()] != d {
			w.shadowed[d] = true
		}
	}
	return decls
}

// hasUseStrict reports whether the directive prologue of a body holds a
// 'use strict' directive (written without escapes, as the language
// requires).
func hasUseStrict(list []ast.Statement) bool {
	for _, st := range list {
		es, ok := st.(*ast.ExpressionStatement)
		if !ok {
			return false
		}
		lit, ok := es.Expression.(*ast.StringLiteral)
		if !ok {
			return false
		}
		if lit.Literal == "'use strict'" || lit.Literal == `"use strict"` {
			return true
		}
	}
	return false
}

// prologueEnd returns where registrations go in a body whose code starts at
// def: after the directive prologue if there is one, and then the text of
// the last directive (a ';' must precede the registrations, as the last
// directive may lack its semicolon).
func (w *walker) prologueEnd(list []ast.Statement, def int) (int, string) {
	at, last := def, ""
	for _, st := range list {
		es, ok := st.(*ast.ExpressionStatement)
		if !ok {
			break
		}
		lit, ok := es.Expression.(*ast.StringLiteral)
		if !ok {
			break
		}
		at = w.t.afterClosers(off(lit.Idx) + len(lit.Literal))
		last = w.t.src[off(lit.Idx) : off(lit.Idx)+len(lit.Literal)]
	}
	return at, last
}

func (w *walker) stmts(list []ast.Statement) {
	for _, st := range list {
		w.stmt(st)
	}
}

func (w *walker) stmt(st ast.Statement) {
	switch st := st.(type) {
	case *ast.BlockStatement:
		w.block(st)
	case *ast.ExpressionStatement:
		w.expr(st.Expression)
	case *ast.VariableStatement:
		for _, b := range st.List {
			w.binding(b)
		}
	case *ast.LexicalDeclaration:
		for _, b := range st.List {
			w.binding(b)
		}
	case *ast.FunctionDeclaration:
		w.funcDecl(st.Function, regHoist)
	case *ast.ClassDeclaration:
		w.class(st.Class, nameCtx{})
	case *ast.IfStatement:
		w.expr(st.Test)
		w.ifBody(st.Consequent)
		if st.Alternate != nil {
			w.ifBody(st.Alternate)
		}
	case *ast.ForStatement:
		w.forStmt(st)
	case *ast.ForInStatement:
		w.forInto(st.Into, st.Source, st.Body)
	case *ast.ForOfStatement:
		w.forInto(st.Into, st.Source, st.Body)
	case *ast.WhileStatement:
		w.expr(st.Test)
		w.stmt(st.Body)
	case *ast.DoWhileStatement:
		w.stmt(st.Body)
		w.expr(st.Test)
	case *ast.ReturnStatement:
		if st.Argument != nil {
			w.expr(st.Argument)
		}
	case *ast.ThrowStatement:
		w.expr(st.Argument)
	case *ast.TryStatement:
		w.block(st.Body)
		if c := st.Catch; c != nil {
			saved := w.cur
			if c.Parameter != nil {
				s := w.push(w.cur.owner)
				w.declarePattern(s, c.Parameter)
				w.bindTarget(c.Parameter)
			}
			w.block(c.Body)
			w.cur = saved
		}
		if st.Finally != nil {
			w.block(st.Finally)
		}
	case *ast.SwitchStatement:
		w.switchStmt(st)
	case *ast.LabelledStatement:
		w.stmt(st.Statement)
	case *ast.WithStatement:
		w.expr(st.Object)
		w.markUpTo(nil, false, "contains a `with` statement")
		w.withDepth++
		w.stmt(st.Body)
		w.withDepth--
	}
	// BranchStatement (labels are not variables), EmptyStatement,
	// DebuggerStatement: nothing to do.
}

func (w *walker) block(b *ast.BlockStatement) {
	saved := w.cur
	s := w.push(w.cur.owner)
	decls := w.declareLexical(s, b.List)
	w.hoist(off(b.LeftBrace)+1, "", decls, "")
	w.stmts(b.List)
	w.cur = saved
}

// ifBody walks the body of an if statement; a function declaration there
// (sloppy mode only) is treated as if it were in a block of its own.
func (w *walker) ifBody(st ast.Statement) {
	fd, ok := st.(*ast.FunctionDeclaration)
	if !ok {
		w.stmt(st)
		return
	}
	saved := w.cur
	s := w.push(w.cur.owner)
	if fd.Function.Name != nil {
		w.declare(s, fd.Function.Name.Name.String(), bindPlain)
	}
	w.funcDecl(fd.Function, regIfBody)
	w.cur = saved
}

func (w *walker) binding(b *ast.Binding) {
	w.bindTarget(b.Target)
	if b.Initializer != nil {
		w.exprNamed(b.Initializer, w.targetName(b.Target))
	}
}

func (w *walker) forStmt(st *ast.ForStatement) {
	saved := w.cur
	switch init := st.Initializer.(type) {
	case *ast.ForLoopInitializerLexicalDecl:
		s := w.push(w.cur.owner)
		for _, b := range init.LexicalDeclaration.List {
			w.declarePattern(s, b.Target)
		}
		for _, b := range init.LexicalDeclaration.List {
			w.binding(b)
		}
	case *ast.ForLoopInitializerVarDeclList:
		for _, b := range init.List {
			w.binding(b)
		}
	case *ast.ForLoopInitializerExpression:
		w.expr(init.Expression)
	}
	if st.Test != nil {
		w.expr(st.Test)
	}
	if st.Update != nil {
		w.expr(st.Update)
	}
	w.stmt(st.Body)
	w.cur = saved
}

func (w *walker) forInto(into ast.ForInto, source ast.Expression, body ast.Statement) {
	saved := w.cur
	switch into := into.(type) {
	case *ast.ForDeclaration:
		// The source is evaluated where the loop's bindings already exist
		// (in their temporal dead zone), so it resolves in the loop scope.
		s := w.push(w.cur.owner)
		w.declarePattern(s, into.Target)
		w.bindTarget(into.Target)
	case *ast.ForIntoVar:
		w.binding(into.Binding)
	case *ast.ForIntoExpression:
		w.assignTarget(into.Expression)
	}
	w.expr(source)
	w.stmt(body)
	w.cur = saved
}

func (w *walker) switchStmt(st *ast.SwitchStatement) {
	w.expr(st.Discriminant)
	saved := w.cur
	s := w.push(w.cur.owner)
	var all []ast.Statement
	for _, c := range st.Body {
		all = append(all, c.Consequent...)
	}
	decls := w.declareLexical(s, all)
	for _, c := range st.Body {
		var colon int
		if c.Test != nil {
			w.expr(c.Test)
			colon = w.t.skipClosers(w.exprEnd(c.Test))
		} else {
			colon = w.t.skipSpace(off(c.Case) + len("default"))
		}
		// Execution may enter the switch at any clause, so every clause
		// registers the switch's function declarations.
		if colon < len(w.t.src) && w.t.src[colon] == ':' {
			w.hoist(colon+1, "", decls, "")
		}
		w.stmts(c.Consequent)
	}
	w.cur = saved
}

// bindTarget walks the expressions inside a binding target (defaults and
// computed keys); the names it binds were declared by declarePattern.
func (w *walker) bindTarget(target ast.Expression) {
	switch t := target.(type) {
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				if p.Initializer != nil {
					w.exprNamed(p.Initializer, w.identName(&p.Name))
				}
			case *ast.PropertyKeyed:
				if p.Computed {
					w.expr(p.Key)
				}
				w.bindTarget(p.Value)
			}
		}
		if t.Rest != nil {
			w.bindTarget(t.Rest)
		}
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				w.bindTarget(e)
			}
		}
		if t.Rest != nil {
			w.bindTarget(t.Rest)
		}
	case *ast.AssignExpression:
		w.bindTarget(t.Left)
		w.exprNamed(t.Right, w.targetName(t.Left))
	}
}

// assignTarget walks the target of an assignment: identifiers in it are
// references (assigned to), member expressions are evaluated.
func (w *walker) assignTarget(target ast.Expression) {
	switch t := target.(type) {
	case *ast.Identifier:
		w.use(t.Name.String())
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				w.use(p.Name.Name.String())
				if p.Initializer != nil {
					w.exprNamed(p.Initializer, w.identName(&p.Name))
				}
			case *ast.PropertyKeyed:
				if p.Computed {
					w.expr(p.Key)
				}
				w.assignTarget(p.Value)
			}
		}
		if t.Rest != nil {
			w.assignTarget(t.Rest)
		}
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				w.assignTarget(e)
			}
		}
		if t.Rest != nil {
			w.assignTarget(t.Rest)
		}
	case *ast.AssignExpression:
		w.assignTarget(t.Left)
		w.exprNamed(t.Right, w.targetName(t.Left))
	default:
		w.expr(target)
	}
}
