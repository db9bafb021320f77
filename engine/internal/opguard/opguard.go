// Package opguard keeps a workunit's BigInt operators from asking the Go
// runtime for more memory than any worker has.
//
// goja computes `**`, `<<` and `>>` on BigInts with math/big in one step,
// and no JavaScript interrupt reaches inside it: `2n ** (2n ** 40n)` asks
// for 128 GiB at once, and Go's "out of memory" is fatal, not a panic the
// engine could recover. A shift by 2^64 or more is worse: goja keeps only
// the low 64 bits of the amount, and `x >> (2n ** 64n)` gives back x.
//
// Compile therefore parses a workunit's source and, before goja compiles
// it, rewrites those operators (and `**=`, `<<=`, `>>=`) into calls of the
// guard that Install puts in each runtime: a hidden global named Name whose
// functions convert their operands as the operator would (ToPrimitive, in
// order), compute a BigInt result with math/big themselves when it is no
// larger than MaxBigIntBits, throw a RangeError ("Maximum BigInt size
// exceeded", as V8 says) when it would be, and leave every other case
// (numbers, mixed types and their TypeError) to the operator itself. The
// rewritten tree keeps every position, so errors and stacks point where
// they did. An operator whose right operand is a number literal (`x ** 2`,
// `h << 5`), or whose left one is (`1 << i`), cannot make a large BigInt
// and is left as it is; so is a source without `**`, `<<` or `>>`.
//
// Code made at run time goes through the same guard: Install replaces the
// global eval with one that compiles its argument with Compile and runs it
// in the global scope (so eval in a workunit is always indirect: it does not
// see the caller's local variables), and the Function, AsyncFunction and
// GeneratorFunction constructors with ones that compile their source the
// same way.
package opguard

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
)

// Name is the global through which rewritten code reaches the guard. A
// source that uses it itself is refused (ErrReservedName).
const Name = "__riot_guard"

// MaxBigIntBits is the largest BigInt, in bits, that a guarded operator
// makes: 2^26 (8 MiB, some 20 million decimal digits). V8's bound is 2^30,
// but math/big takes minutes for `**` near it, in a call no time limit
// interrupts; near 2^26 it takes seconds.
const MaxBigIntBits = 1 << 26

// ErrReservedName is returned (wrapped in a *goja.CompilerSyntaxError's
// message) when a source uses Name.
var ErrReservedName = errors.New("the name " + Name + " is reserved by riot")

// Needed reports whether src may hold an operator Compile rewrites.
func Needed(src string) bool {
	return strings.Contains(src, "**") || strings.Contains(src, "<<") || strings.Contains(src, ">>")
}

// Compile compiles src as goja.Compile(name, src, false) does, with the
// BigInt operators that could make a huge value rewritten into calls of the
// guard (see the package doc). The program must run in a runtime where
// Install has run.
func Compile(name, src string) (*goja.Program, error) {
	if !Needed(src) && !strings.Contains(src, Name) {
		return goja.Compile(name, src, false)
	}
	prg, err := goja.Parse(name, src)
	if err != nil {
		return nil, err
	}
	if err := Rewrite(prg); err != nil {
		return nil, &goja.CompilerSyntaxError{CompilerError: goja.CompilerError{
			Message: fmt.Sprintf("%s: %v", name, err),
		}}
	}
	return goja.CompileAST(prg, false)
}

// Rewrite rewrites, in place, the guarded operators of a parsed program.
func Rewrite(prg *ast.Program) error {
	w := &rewriter{seen: map[uintptr]bool{}}
	w.walk(reflect.ValueOf(prg))
	return w.err
}

var (
	astPkg   = reflect.TypeOf(ast.Program{}).PkgPath()
	exprType = reflect.TypeOf((*ast.Expression)(nil)).Elem()
)

type rewriter struct {
	seen map[uintptr]bool
	err  error
	// strict: the code being walked is strict mode code, where an
	// assignment that cannot be made throws (in sloppy code it does
	// nothing).
	strict bool
}

// walk visits v and every AST node below it, children first, and replaces
// each guarded expression it finds in the field or slice element that
// holds it.
func (w *rewriter) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != astPkg {
			return
		}
		// Declaration lists share nodes with the statements: visit each
		// node once.
		if p := v.Pointer(); w.seen[p] {
			return
		} else {
			w.seen[p] = true
		}
		if id, ok := v.Interface().(*ast.Identifier); ok && id.Name == Name {
			w.fail(id.Idx)
			return
		}
		outer := w.strict
		w.strict = w.strict || strictNode(v.Interface())
		w.walk(v.Elem())
		w.strict = outer
	case reflect.Struct:
		if v.Type().PkgPath() != astPkg {
			return
		}
		if v.CanAddr() {
			if id, ok := v.Addr().Interface().(*ast.Identifier); ok && id.Name == Name {
				w.fail(id.Idx)
				return
			}
		}
		for i := range v.NumField() {
			w.slot(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			w.slot(v.Index(i))
		}
	}
}

// slot walks what f holds and, when f holds an expression to guard,
// replaces it.
func (w *rewriter) slot(f reflect.Value) {
	switch f.Kind() {
	case reflect.Interface:
		if f.IsNil() {
			return
		}
		w.walk(f.Elem())
		if !f.CanSet() {
			return
		}
		e, ok := f.Interface().(ast.Expression)
		if !ok {
			return
		}
		if r := guarded(e, w.strict); r != nil && reflect.TypeOf(r).AssignableTo(f.Type()) {
			f.Set(reflect.ValueOf(r))
		}
	case reflect.Pointer, reflect.Struct, reflect.Slice:
		w.walk(f)
	}
}

// strictNode reports whether node begins strict mode code: a program or a
// function whose body begins with the directive "use strict", or a class
// (all of whose parts are strict).
func strictNode(node any) bool {
	switch n := node.(type) {
	case *ast.Program:
		return useStrict(n.Body)
	case *ast.FunctionLiteral:
		return n.Body != nil && useStrict(n.Body.List)
	case *ast.ArrowFunctionLiteral:
		b, ok := n.Body.(*ast.BlockStatement)
		return ok && useStrict(b.List)
	case *ast.ClassLiteral:
		return true
	}
	return false
}

// useStrict reports whether the directive prologue of body (its leading
// string literal statements) holds "use strict", as goja reads it.
func useStrict(body []ast.Statement) bool {
	for _, st := range body {
		es, ok := st.(*ast.ExpressionStatement)
		if !ok {
			return false
		}
		lit, ok := es.Expression.(*ast.StringLiteral)
		if !ok {
			return false
		}
		if lit.Literal == `"use strict"` || lit.Literal == `'use strict'` {
			return true
		}
	}
	return false
}

func (w *rewriter) fail(at file.Idx) {
	if w.err == nil {
		w.err = fmt.Errorf("offset %d: %w", int(at)-1, ErrReservedName)
	}
}

// The guard's functions, by the operator they stand for.
var opNames = map[token.Token]string{
	token.EXPONENT:    "pow",
	token.SHIFT_LEFT:  "shl",
	token.SHIFT_RIGHT: "shr",
}

// guarded returns the expression that replaces e, or nil to leave it;
// strict: e is strict mode code.
func guarded(e ast.Expression, strict bool) ast.Expression {
	switch e := e.(type) {
	case *ast.BinaryExpression:
		fn, ok := opNames[e.Operator]
		if !ok || harmless(e.Operator, e.Left, e.Right) {
			return nil
		}
		return call(e.Idx0(), e.Idx1(), fn, e.Left, e.Right)
	case *ast.AssignExpression:
		fn, ok := opNames[e.Operator]
		if !ok || harmless(e.Operator, nil, e.Right) {
			return nil
		}
		return guardAssign(e, fn, strict)
	}
	return nil
}

// harmless reports whether op on these operands cannot make a large
// BigInt: one operand is a number literal (a BigInt and a number throw a
// TypeError), or the shift amount is a small BigInt literal.
func harmless(op token.Token, left, right ast.Expression) bool {
	if isNumberLiteral(left) || isNumberLiteral(right) {
		return true
	}
	if op != token.EXPONENT {
		if n, ok := right.(*ast.NumberLiteral); ok {
			if b, ok := n.Value.(*big.Int); ok && b.IsInt64() && b.Int64() <= 1<<16 && b.Int64() >= -(1<<16) {
				return true
			}
		}
	}
	return false
}

func isNumberLiteral(e ast.Expression) bool {
	n, ok := e.(*ast.NumberLiteral)
	if !ok {
		return false
	}
	_, isBig := n.Value.(*big.Int)
	return !isBig
}

// guardAssign rewrites `target op= right`. A target that can be read again
// without a side effect (a name; this.x, super.x, o.x, o[k] and o.#x where o
// and k are names, this or literals) becomes `target = guard(target,
// right)`, exactly the operator's order. Another member target goes through
// the guard's set form, which gets, computes and sets in one call: its
// right operand is then evaluated before the property is read, and it
// is told whether the code is strict, which decides whether a property
// that cannot be set throws. A private
// field of another object goes through the private form, given two arrow
// functions made in place (inside the class, where the field's name means
// something) that read and write the field of their argument.
func guardAssign(e *ast.AssignExpression, fn string, strict bool) ast.Expression {
	at0, at1 := e.Idx0(), e.Idx1()
	if again, ok := reread(e.Left); ok {
		return &ast.AssignExpression{Operator: token.ASSIGN, Left: e.Left,
			Right: call(at0, at1, fn, again, e.Right)}
	}
	mode := &ast.BooleanLiteral{Idx: at0, Literal: "false"}
	if strict {
		mode.Literal, mode.Value = "true", true
	}
	switch t := e.Left.(type) {
	case *ast.DotExpression:
		key := &ast.StringLiteral{Idx: t.Identifier.Idx, Literal: `"` + string(t.Identifier.Name) + `"`, Value: t.Identifier.Name}
		return call(at0, at1, fn+"Set", t.Left, key, e.Right, mode)
	case *ast.BracketExpression:
		return call(at0, at1, fn+"Set", t.Left, t.Member, e.Right, mode)
	case *ast.PrivateDotExpression:
		get, set := privateAccess(t, at0)
		return call(at0, at1, fn+"Private", t.Left, get, set, e.Right)
	}
	return nil // not a target the parser gives a compound assignment
}

// privateAccess returns `(o) => o.#x` and `(o, v) => o.#x = v` for the
// private field of t, at the position at. Their parameter is named Name,
// which no source uses: it hides nothing.
func privateAccess(t *ast.PrivateDotExpression, at file.Idx) (get, set ast.Expression) {
	ident := func(name string) *ast.Identifier { return &ast.Identifier{Name: unistring.String(name), Idx: at} }
	field := func() *ast.PrivateDotExpression {
		return &ast.PrivateDotExpression{Left: ident(Name), Identifier: t.Identifier}
	}
	arrow := func(body ast.Expression, params ...string) *ast.ArrowFunctionLiteral {
		list := &ast.ParameterList{Opening: at, Closing: at}
		for _, p := range params {
			list.List = append(list.List, &ast.Binding{Target: ident(p)})
		}
		return &ast.ArrowFunctionLiteral{Start: at, ParameterList: list, Body: &ast.ExpressionBody{Expression: body},
			Source: "() => { [riot's guard] }"}
	}
	get = arrow(field(), Name)
	set = arrow(&ast.AssignExpression{Operator: token.ASSIGN, Left: field(), Right: ident("v")}, Name, "v")
	return get, set
}

// reread returns a copy of target to read it again, when that has no side
// effect.
func reread(target ast.Expression) (ast.Expression, bool) {
	switch t := target.(type) {
	case *ast.Identifier:
		c := *t
		return &c, true
	case *ast.DotExpression:
		if o, ok := pure(t.Left); ok {
			return &ast.DotExpression{Left: o, Identifier: t.Identifier}, true
		}
	case *ast.PrivateDotExpression:
		if o, ok := pure(t.Left); ok {
			return &ast.PrivateDotExpression{Left: o, Identifier: t.Identifier}, true
		}
	case *ast.BracketExpression:
		o, ok1 := pure(t.Left)
		k, ok2 := pure(t.Member)
		if ok1 && ok2 {
			return &ast.BracketExpression{Left: o, Member: k, LeftBracket: t.LeftBracket, RightBracket: t.RightBracket}, true
		}
	}
	return nil, false
}

// pure returns a copy of e when evaluating it has no side effect.
func pure(e ast.Expression) (ast.Expression, bool) {
	switch e := e.(type) {
	case *ast.Identifier:
		c := *e
		return &c, true
	case *ast.ThisExpression:
		c := *e
		return &c, true
	case *ast.SuperExpression:
		c := *e
		return &c, true
	case *ast.StringLiteral:
		c := *e
		return &c, true
	case *ast.NumberLiteral:
		c := *e
		return &c, true
	}
	return nil, false
}

// call makes `Name.fn(args...)` at the positions of the expression it
// replaces.
func call(at0, at1 file.Idx, fn string, args ...ast.Expression) *ast.CallExpression {
	return &ast.CallExpression{
		Callee: &ast.DotExpression{
			Left:       &ast.Identifier{Name: unistring.String(Name), Idx: at0},
			Identifier: ast.Identifier{Name: unistring.String(fn), Idx: at0},
		},
		LeftParenthesis:  at0,
		ArgumentList:     args,
		RightParenthesis: at1 - 1,
	}
}
