package capture

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fw is the expectation for one function, selected by its Name or, when
// sel starts with "@", by the start of its Source.
type fw struct {
	sel     string
	free    []string
	globals []string
	// reason, when set, must be contained in Reason and the function must
	// not be shippable; otherwise it must be shippable.
	reason string
}

func findFunc(t *testing.T, s *Script, sel string) Func {
	t.Helper()
	var found []Func
	for _, f := range s.Funcs {
		if strings.HasPrefix(sel, "@") && strings.HasPrefix(f.Source[f.HeaderLen:], sel[1:]) || f.Name == sel {
			found = append(found, f)
		}
	}
	require.Len(t, found, 1, "selector %q in %+v", sel, s.Funcs)
	return found[0]
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestInstrument_FreeVariables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		funcs []fw
	}{
		{"var hoisting is function-scoped", `
			function f() { g(); if (c) { var x = 1 } function g() { return x + y } }
			var y = 2;`,
			[]fw{{sel: "f", free: []string{"y"}, globals: []string{"c"}}, {sel: "g", free: []string{"x", "y"}}}},
		{"var declared after use at top level", `const f = () => v; var v;`,
			[]fw{{sel: "f", free: []string{"v"}}}},
		{"let and const are block-scoped", `
			{ let b = 2; var f = () => b }
			const g = () => b;`,
			[]fw{{sel: "f", free: []string{"b"}}, {sel: "g", globals: []string{"b"}}}},
		{"for-loop head bindings", `
			const n = 3, fs = [];
			for (let i = 0; i < n; i++) fs.push(() => i + n);
			for (const x of fs) fs.push(function () { return x });
			for (let k in fs) (() => k)();
			for (var v = 0; v < 1; v++) (() => v)();`,
			[]fw{{sel: "@() => i", free: []string{"i", "n"}}, {sel: "@function () { return x", free: []string{"x"}},
				{sel: "@() => k", free: []string{"k"}}, {sel: "@() => v", free: []string{"v"}}}},
		{"for-of source sees the loop binding", `for (const a of (() => a)()) ;`,
			[]fw{{sel: "@() => a", free: []string{"a"}}}},
		{"function declarations in blocks are block-scoped", `
			{ function h() { return 1 } var inner = () => h }
			const u = () => h;`,
			[]fw{{sel: "inner", free: []string{"h"}}, {sel: "u", globals: []string{"h"}}}},
		{"parameters, destructuring, defaults and rest", `
			let z = 1, y = 2;
			const f = (a, { b, c: [d] = [a] }, e = b + z, ...r) => a + b + d + e + r + y;
			function g({ [key]: k, ...others } = dflt, [m, , ...ns] = []) { return k + others + m + ns }`,
			[]fw{{sel: "f", free: []string{"z", "y"}}, {sel: "g", globals: []string{"key", "dflt"}}}},
		{"defaults do not see the body's vars", `
			function f(a = () => w) { var w = 1; return a }`,
			[]fw{{sel: "f", globals: []string{"w"}}, {sel: "@() => w", globals: []string{"w"}}}},
		{"catch parameters", `
			const dflt = 0;
			try { } catch ({ message: m, code = dflt }) { var f = () => m + code }
			try { } catch (e) { var g = () => e } finally { var h = () => e }`,
			[]fw{{sel: "f", free: []string{"m", "code"}}, {sel: "g", free: []string{"e"}}, {sel: "h", globals: []string{"e"}}}},
		{"named function expressions bind their name inside only", `
			const f = function fib(n) { return n < 2 ? n : fib(n - 1) + f.calls };
			const g = () => fib;`,
			[]fw{{sel: "fib", free: []string{"f"}}, {sel: "g", globals: []string{"fib"}}}},
		{"class names", `
			class A { m() { return A } static s() { return B } }
			const B = class Inner { n() { return Inner + B } };`,
			[]fw{{sel: "A", free: []string{"B"}}, {sel: "m", free: []string{"A"}}, {sel: "s", free: []string{"B"}},
				{sel: "Inner", free: []string{"B"}}, {sel: "n", free: []string{"Inner", "B"}}}},
		{"class heritage, fields and static blocks", `
			const base = Object, init = 1, key = 'k';
			const C = class extends base { [key] = init; static { let local = init; this.s = local } }`,
			[]fw{{sel: "C", free: []string{"base", "key", "init"}}}},
		{"labels are not variables", `
			function f() { outer: for (;;) { inner: while (x) { continue outer } break outer } }`,
			[]fw{{sel: "f", globals: []string{"x"}}}},
		{"property keys and member access", `
			const f = () => a.b + ({ b: 1 }).b + ({ c }).c + ({ [d]: 1 }) + e?.f.g + ({ h() {} });`,
			[]fw{{sel: "f", globals: []string{"a", "c", "d", "e"}}, {sel: "h"}}},
		{"typeof and assignment", `
			let count = 0;
			const inc = () => { count += 1; count++; [count] = [count]; ({ count } = { count }); return typeof missing };`,
			[]fw{{sel: "inc", free: []string{"count"}, globals: []string{"missing"}}}},
		{"template literals, tags, optional chaining and spread", `
			const f = () => ` + "`${a}-${tag`x${b}`}`" + ` + a?.[c]?.(d) + [...e] + g(...h) + ({ ...i });`,
			[]fw{{sel: "f", globals: []string{"a", "tag", "b", "c", "d", "e", "g", "h", "i"}}}},
		{"generators and async functions", `
			const k = 1;
			function* gen() { yield k; yield* other() }
			async function af() { await gen(); for (const x of xs) await x }
			const aa = async (p) => await p + k;`,
			[]fw{{sel: "gen", free: []string{"k"}, globals: []string{"other"}},
				{sel: "af", free: []string{"gen"}, globals: []string{"xs"}}, {sel: "aa", free: []string{"k"}}}},
		{"nested functions", `
			const y = 1;
			function outer() { const x = 2; return function inner() { return () => x + y + z } }
			var z;`,
			[]fw{{sel: "outer", free: []string{"y", "z"}}, {sel: "inner", free: []string{"x", "y", "z"}},
				{sel: "@() => x", free: []string{"x", "y", "z"}}}},
		{"shadowing at every level", `
			let s = 0;
			function a(s) { return function b() { let s = 1; return () => s } }
			function c() { return s }
			function d() { { let s; } return s }`,
			[]fw{{sel: "a"}, {sel: "b"}, {sel: "@() => s", free: []string{"s"}}, {sel: "c", free: []string{"s"}}, {sel: "d", free: []string{"s"}}}},
		{"globals undefined NaN Infinity unless shadowed", `
			const f = () => [undefined, NaN, Infinity, Math.PI, console];
			function g(undefined) { return () => undefined }`,
			[]fw{{sel: "f", globals: []string{"undefined", "NaN", "Infinity", "Math", "console"}},
				{sel: "g"}, {sel: "@() => undefined", free: []string{"undefined"}}}},
		{"recursion and mutual recursion", `
			function fact(n) { return n ? n * fact(n - 1) : 1 }
			function even(n) { return n ? odd(n - 1) : true }
			function odd(n) { return n ? even(n - 1) : false }`,
			[]fw{{sel: "fact", free: []string{"fact"}}, {sel: "even", free: []string{"odd"}}, {sel: "odd", free: []string{"even"}}}},
		{"unicode and escaped identifiers", `
			const café = 1;
			const f = () => caf\u00e9 + café + ` + "\\u{62}" + `;
			let b;`,
			[]fw{{sel: "f", free: []string{"café", "b"}}}},
		{"arguments", `
			function own() { return arguments.length }
			function host() { return () => arguments[0] }
			const top = () => arguments;
			function param(arguments) { return () => arguments.length }
			function dflt(a = arguments[1]) { return a }
			function dfltArrow(a = () => arguments[1]) { return a }`,
			[]fw{{sel: "own"}, {sel: "host"}, {sel: "@() => arguments[0]", reason: "uses `arguments` of an enclosing function"},
				{sel: "top", globals: []string{"arguments"}}, {sel: "param"},
				{sel: "@() => arguments.length", free: []string{"arguments"}},
				{sel: "dflt"}, {sel: "dfltArrow"}, {sel: "@() => arguments[1]", reason: "uses `arguments` of an enclosing function"}}},
		{"this, super and new.target", `
			function own() { return this.x }
			function host() { return () => this.x }
			const top = () => this;
			const o = { m() { return super.m() }, n() { return () => super.n() } };
			function nt() { return () => new.target }`,
			[]fw{{sel: "own"}, {sel: "host"}, {sel: "@() => this.x", reason: "uses `this` of an enclosing function"},
				{sel: "top", reason: "uses `this` of the script's top level"},
				{sel: "m", reason: "uses `super`"}, {sel: "n", reason: "uses `super`"},
				{sel: "@() => super.n", reason: "uses `super` of an enclosing method"},
				{sel: "nt"}, {sel: "@() => new.target", reason: "uses `new.target`"}}},
		{"class bodies provide this and super", `
			class A extends B { constructor() { super(); this.f = () => this } g = () => super.x; static s = this; }
			class K { [this.k]() {} }`,
			[]fw{{sel: "A", globals: []string{"B"}}, {sel: "@() => this", reason: "uses `this` of an enclosing function"},
				{sel: "g", reason: "uses `super` of an enclosing class field"},
				{sel: "K", reason: "uses `this` of the script's top level"}}},
		{"private names", `
			class A { #x = 1; m() { return () => this.#x } static has(o) { return #x in o } }`,
			[]fw{{sel: "A"}, {sel: "m", reason: "uses private name #x"}, {sel: "@() => this.#x", reason: "uses private name #x"},
				{sel: "has", reason: "uses private name #x"}}},
		{"with is not shippable", `
			const o = {};
			function f() { with (o) { return p } }
			function g() { return function inner() { with (o) {} } }
			with (o) { var h = () => q }`,
			[]fw{{sel: "f", free: []string{"o"}, globals: []string{"p"}, reason: "with"},
				{sel: "g", free: []string{"o"}, reason: "with"}, {sel: "inner", free: []string{"o"}, reason: "with"},
				{sel: "h", globals: []string{"q"}, reason: "inside a `with`"}}},
		{"eval is not shippable unless shadowed", `
			function f() { return eval('1') }
			function g() { return () => eval('2') }
			function h(eval) { return eval('3') }
			const ind = (0, eval);`,
			[]fw{{sel: "f", globals: []string{"eval"}, reason: "calls eval"}, {sel: "g", globals: []string{"eval"}, reason: "calls eval"},
				{sel: "@() => eval", globals: []string{"eval"}, reason: "calls eval"}, {sel: "h"}}},
		{"getters and setters are not shippable", `
			const o = { get a() { return 1 }, set a(v) {} };
			class C { get b() { return 2 } static set c(v) {} }`,
			[]fw{{sel: "@get a", reason: "is a getter"}, {sel: "@set a", reason: "is a setter"},
				{sel: "@get b", reason: "is a getter"}, {sel: "@set c", reason: "is a setter"}, {sel: "C"}}},
		{"class constructor is the class", `
			const k = 1;
			class P { constructor(a) { this.a = a + k } }`,
			[]fw{{sel: "P", free: []string{"k"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Instrument("test.js", tc.src, Options{})
			require.NoError(t, err)
			for _, want := range tc.funcs {
				f := findFunc(t, s, want.sel)
				assert.Equal(t, want.free, nilIfEmpty(f.Free), "free of %s", want.sel)
				assert.Equal(t, want.globals, nilIfEmpty(f.Globals), "globals of %s", want.sel)
				if want.reason == "" {
					assert.True(t, f.Shippable, "%s: %s", want.sel, f.Reason)
				} else {
					assert.False(t, f.Shippable, want.sel)
					assert.Contains(t, f.Reason, want.reason, want.sel)
				}
			}
		})
	}
}

func TestInstrument_SourceAndPosition(t *testing.T) {
	t.Parallel()
	src := "const a = 1;\n" + // line 1
		"function decl(x) { return x }\n" + // line 2
		"  const arrow = (x) => (x + a);\n" + // line 3
		"const o = { async am(y) { return y }, *gm() {}, 'a-b'(z) {}, delete() {}, cost() { return cost },\n" + // line 4
		"  get acc() { return 1 } };\n" + // line 5
		"class K extends Object { static async sm() {} #pm() {} }\n" + // line 6
		"const fe = async function () {};\n" + // line 7
		"const nested = x => y => (x,\n y);\n" + // lines 8-9
		"const obj2 = { [k]() { return 10 } };\n" + // line 10
		"let cost;"
	s, err := Instrument("test.js", src, Options{})
	require.NoError(t, err)
	tests := []struct {
		sel          string
		source       string
		headerLen    int
		line, column int
		kind         Kind
		registered   bool
	}{
		{"decl", "function decl(x) { return x }", 0, 2, 1, KindFunction, true},
		{"arrow", "(x) => (x + a)", 0, 3, 17, KindArrow, true},
		{"am", "async function am(y) { return y }", len("async function am"), 4, 21, KindMethod, true},
		{"gm", "function* gm() {}", len("function* gm"), 4, 42, KindMethod, true},
		{"a-b", "function(z) {}", len("function"), 4, 54, KindMethod, true},
		{"delete", "function() {}", len("function"), 4, 68, KindMethod, true},
		{"cost", "function(y) { return cost }", 0, 0, 0, KindMethod, true}, // checked below
		{"acc", "get acc() { return 1 }", 0, 5, 3, KindGetter, false},
		{"K", "class K extends Object { static async sm() {} #pm() {} }", 0, 6, 1, KindClass, true},
		{"sm", "async function sm() {}", len("async function sm"), 6, 41, KindMethod, true},
		{"#pm", "function() {}", len("function"), 6, 50, KindMethod, false},
		{"fe", "async function () {}", 0, 7, 12, KindFunction, true},
		{"nested", "x => y => (x,\n y)", 0, 8, 16, KindArrow, true},
		{"@y => (x", "y => (x,\n y)", 0, 8, 21, KindArrow, true},
		{"@() { return 10", "function() { return 10 }", len("function"), 10, 19, KindMethod, false},
	}
	for _, tc := range tests {
		f := findFunc(t, s, tc.sel)
		if tc.sel == "cost" {
			assert.Equal(t, "function() { return cost }", f.Source, "a method whose body means an outer variable of its name ships unnamed")
			continue
		}
		assert.Equal(t, tc.source, f.Source, tc.sel)
		assert.Equal(t, tc.headerLen, f.HeaderLen, tc.sel)
		assert.Equal(t, tc.line, f.Line, "line of %s", tc.sel)
		assert.Equal(t, tc.column, f.Column, "column of %s", tc.sel)
		assert.Equal(t, tc.kind, f.Kind, tc.sel)
		assert.Equal(t, tc.registered, f.Registered, "%s: %s", tc.sel, f.Reason)
		// The original text is where Line and Column say.
		lines := strings.Split(src, "\n")
		assert.True(t, strings.HasPrefix(lines[f.Line-1][f.Column-1:], strings.SplitN(f.Source[f.HeaderLen:], "\n", 2)[0]), tc.sel)
		// Every Source parses as an expression (accessors excepted).
		if f.Kind != KindGetter && f.Kind != KindSetter {
			_, err := parser.ParseFile(nil, "", "("+f.Source+")", 0)
			assert.NoError(t, err, tc.sel)
		}
	}
	for i, f := range s.Funcs {
		assert.Equal(t, i, f.ID)
	}
}

func TestInstrument_IDsAndParents(t *testing.T) {
	t.Parallel()
	s, err := Instrument("test.js", `function a() { return () => function b() {} }
class C { m() { return { n() {} } } }`, Options{})
	require.NoError(t, err)
	var got []string
	for _, f := range s.Funcs {
		got = append(got, f.Kind.String()+":"+f.Name)
		if f.Parent >= 0 {
			got[len(got)-1] += "<" + s.Funcs[f.Parent].Name
		}
	}
	assert.Equal(t, []string{"function:a", "arrow:<a", "function:b<", "class:C", "method:m<C", "method:n<m"}, got)
}

func TestInstrument_RegistrationForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"arrow keeps its inferred name", `const f = x => x;`, `const f = H(0,null,{f:x => x}.f);`},
		{"parameter default is not named by goja", `function g(p = () => 1) {}`, `void H(0,null,g);function g(p = H(1,null,() => 1)) {}`},
		{"getter reads free variables", `let a; const f = () => a;`, `let a; const f = H(0,()=>[a],{f:() => a}.f);`},
		{"new callee is parenthesised", `new function () {}`, `new (H(0,null,function () {}))`},
		{"hoisted after directives", "'use strict'\nfunction f() {}", "'use strict';void H(0,null,f);'use strict';\nfunction f() {}"},
		{"hoisted in a function body", "function g() { \"use strict\"\n function h() {} }",
			"void H(0,null,g);function g() { \"use strict\";void H(1,null,h);\n function h() {} }"},
		{"object methods wrap the literal", `o = { a() {}, b() {} }`, `o = H(0,null,H(1,null,{ a() {}, b() {} },"b"),"a")`},
		{"class registers from a static block", `let B; class A extends B { m() {} }`, `let B; class A extends B {static{H(0,()=>[B],this);H(1,null,this,"prototype","m");} m() {} }`},
		{"computed value key is not wrapped", `o = { [k]: () => 1 }`, `o = { [k]: () => 1 }`},
		{"replaced method is not registered", `o = { a() {}, a: 1 }`, `o = { a() {}, a: 1 }`},
		{"string key names", `o = { 'x y': () => 1, 2: function () {}, __proto__: () => 3 }`,
			`o = { 'x y': H(0,null,{'x y':() => 1}['x y']), 2: H(1,null,{2:function () {}}[2]), __proto__: H(2,null,() => 3) }`},
		{"__proto__ binding", `var __proto__ = () => 1;`, `var __proto__ = H(0,null,{["__proto__"]:() => 1}["__proto__"]);`},
		{"after a hashbang line", "#!/usr/bin/env riot\nfunction f() {}", "#!/usr/bin/env riot\nvoid H(0,null,f);function f() {}"},
		{"if body declaration is not registered", `if (a) function f() {}`, `if (a) function f() {}`},
		{"switch registers in every clause", `switch (x) { case 1: f(); default: function f() {} }`,
			`switch (x) { case 1:void H(0,null,f); f(); default:void H(0,null,f); function f() {} }`},
		{"block and static block declarations", `{ function f() {} } class C { static { function g() {} } }`,
			`{void H(0,null,f); function f() {} } class C {static{H(1,null,this);} static {void H(2,null,g); function g() {} } }`},
		{"computed class field value is not wrapped", `class C { [k] = () => 1 }`, `class C {static{H(0,null,this);} [k] = () => 1 }`},
		{"yield captured is not registered", `var yield = 1; function f() { return yield }`, `var yield = 1; function f() { return yield }`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Instrument("test.js", tc.src, Options{Hook: "H"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.Source)
		})
	}
}

func TestInstrument_Errors(t *testing.T) {
	t.Parallel()
	_, err := Instrument("bad.js", "let a = 1;\nlet b = (;\n", Options{})
	var se *SyntaxError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "bad.js", se.File)
	assert.Equal(t, 2, se.Line)
	assert.Equal(t, 10, se.Column)
	assert.Contains(t, err.Error(), "bad.js:2:10")
	assert.True(t, strings.HasPrefix(err.Error(), "capture: "))

	_, err = Instrument("x.js", "var __riot_capture = 1;", Options{})
	assert.ErrorIs(t, err, ErrReservedName)
	_, err = Instrument("x.js", "__riot_capture(1)", Options{})
	assert.ErrorIs(t, err, ErrReservedName)
	_, err = Instrument("x.js", "1", Options{Hook: "not valid"})
	assert.Error(t, err)
	_, err = Instrument("x.js", "return 1", Options{})
	assert.Error(t, err, "a top-level return is not accepted")
}

// Insertions say exactly what the rewrite inserted: taking them out of
// Source gives the original back, and none holds a line break.
func TestInstrument_Insertions(t *testing.T) {
	src := "'use strict';\nconst a = 1, f = (x) => x + a;\nfunction g() { return {m() { return a; }}; }\nclass C { static s() {} }\nswitch (a) { case 1: function h() {} }\n"
	s, err := Instrument("job.js", src, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, s.Insertions)
	var b strings.Builder
	last, shift := 0, 0
	for i, in := range s.Insertions {
		if i > 0 {
			assert.Greater(t, in.At, s.Insertions[i-1].At, "one insertion per offset, in order")
		}
		assert.Equal(t, src[last:in.At], s.Source[last+shift:in.At+shift], "original text before insertion %d", i)
		b.WriteString(src[last:in.At])
		assert.NotContains(t, s.Source[in.At+shift:in.At+shift+in.Len], "\n")
		last = in.At
		shift += in.Len
	}
	b.WriteString(src[last:])
	assert.Equal(t, src[last:], s.Source[last+shift:])
	assert.Equal(t, src, b.String())
	assert.Equal(t, len(src)+shift, len(s.Source))
}

// Columns in the rewritten source map back to the original's, in and
// around the text the rewrite inserted.
func TestOriginalColumn(t *testing.T) {
	src := "const a = function (x) { return x; }; const b = null; b.foo();\nlet c = 1;\n  const d = () => 2, e = () => 3; e.x.y;\n"
	s, err := Instrument("t.js", src, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, s.Insertions)
	gen := strings.Split(s.Source, "\n")
	orig := strings.Split(src, "\n")
	for line, want := range map[int]string{1: "b.foo", 2: "c = 1", 3: "e.x.y"} {
		gcol := strings.Index(gen[line-1], want) + 1
		ocol := strings.Index(orig[line-1], want) + 1
		require.Positive(t, gcol, "line %d of %q", line, s.Source)
		assert.Equal(t, ocol, s.OriginalColumn(line, gcol), "line %d", line)
	}
	// Every column of an original token maps to itself.
	for _, want := range []string{"const a", "function (x)", "return x", "const b", "= null;"} {
		gcol := strings.Index(gen[0], want) + 1
		assert.Equal(t, strings.Index(orig[0], want)+1, s.OriginalColumn(1, gcol), want)
	}
	assert.Equal(t, "TypeError: boom\n    at t.js:1:55\n    at other.js:1:84\n    at f (t.js:3:35)",
		s.RemapStack(fmt.Sprintf("TypeError: boom\n    at t.js:1:%d\n    at other.js:1:84\n    at f (t.js:3:%d)",
			strings.Index(gen[0], "b.foo")+1, strings.Index(gen[2], "e.x.y")+1)))
	// Out of range: unchanged.
	assert.Equal(t, 7, s.OriginalColumn(9, 7))
}
