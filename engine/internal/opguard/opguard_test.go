package opguard

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guardedRuntime is a runtime with the guard, whose throw makes errors of
// the runtime's own classes.
func guardedRuntime(t *testing.T, dynamic bool) *goja.Runtime {
	t.Helper()
	rt := goja.New()
	throw := func(name, format string, args ...any) {
		ctor, ok := goja.AssertConstructor(rt.Get(name))
		require.True(t, ok, name)
		obj, err := ctor(nil, rt.ToValue(fmt.Sprintf(format, args...)))
		require.NoError(t, err)
		panic(obj)
	}
	require.NoError(t, Install(rt, throw, dynamic))
	return rt
}

// result runs src, compiled by compile, and describes what came of it: the
// value's type and string, or the thrown error's name and message.
func result(rt *goja.Runtime, compile func(name, src string) (*goja.Program, error), src string) string {
	prg, err := compile("t.js", src)
	if err != nil {
		return "compile: " + err.Error()
	}
	v, err := rt.RunProgram(prg)
	if err != nil {
		var ex *goja.Exception
		if ok := asException(err, &ex); ok {
			if o, isObj := ex.Value().(*goja.Object); isObj {
				return "throw " + o.Get("name").String() + ": " + o.Get("message").String()
			}
			return "throw " + ex.Value().String()
		}
		return "error: " + err.Error()
	}
	return typeOf(v) + " " + v.String()
}

func asException(err error, ex **goja.Exception) bool {
	e, ok := err.(*goja.Exception)
	*ex = e
	return ok
}

func typeOf(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case v.ExportType() == bigIntType:
		return "bigint"
	}
	return fmt.Sprintf("%T", v.Export())
}

func plainCompile(name, src string) (*goja.Program, error) { return goja.Compile(name, src, false) }

// Everything the operators do with values of a sane size, the guarded
// ones do alike: results, conversions in order, errors, and the
// assignment forms with their targets.
func TestGuard_SameAsTheOperators(t *testing.T) {
	t.Parallel()
	cases := []string{
		`2n ** 10n`, `(-3n) ** 3n`, `(-3n) ** 4n`, `0n ** 0n`, `0n ** 5n`, `1n ** (2n ** 70n)`, `(-1n) ** (2n ** 70n + 1n)`,
		`let y = 10; 2 ** y`, `let y = 0.5; 2 ** y`, `let a = '3', b = 2; a ** b`, `let a = 2n, b = -1n; a ** b`,
		`let a = 2n, b = 2; a ** b`, `let a = 2, b = 2n; a ** b`,
		`let a = 1n, b = 100n; a << b`, `let a = -5n, b = 1n; a >> b`, `let a = 5n, b = -2n; a >> b`,
		`let a = 5n, b = -1n; a << b`, `let a = 1, b = 33; a << b`, `let a = -1, b = 31; a >> b`,
		`let a = 7, b = 2; a << b >> b`, `let a = 2.9, b = 3.7; a << b`, `let a = -2.9, b = 1; a >> b`,
		`let a = 2 ** 40 + 5, b = 1; a << b`, `let a = -(2 ** 53) + 3, b = 33; a << b`, `let a = 1e300, b = 2; a >> b`,
		`let a = NaN, b = Infinity; a << b`, `let a = 5, b = -1; a << b`, `let a = 0x7fffffff, b = 1; a << b`,
		`let a = -0, b = 0; 1 / (a << b)`, `let a = 6, b = 2 ** 32 + 1; a >> b`, `let a = -(2 ** 31), b = 31; a >> b`,
		`let a = 3.5e9, b = 0; a >> b`, `let a = -3.5e9, b = 0; a << b`, `let a = '8', b = 1; a >> b`, `let a = true, b = 3; a << b`, `let a = 1n, b = 3n; (a << b) ** b`,
		`let a = 2n ** 100n, b = 64n; a >> b`,
		`let a = {valueOf() { return 3n }}, b = 2n; a ** b`,
		`let log = []; let a = {valueOf() { log.push('a'); return 2n }}, b = {valueOf() { log.push('b'); return 3n }}; [a ** b, log.join('')].join()`,
		`let a = {[Symbol.toPrimitive](h) { return h === 'number' ? 4 : 0 }}, b = 2; a ** b`,
		`let a = {valueOf() { return {} }, toString() { return '5' }}, b = 2; a ** b`,
		`let a = Object.create(null), b = 2n; a ** b`,
		`let log = []; let a = Symbol(), b = {valueOf() { log.push('b'); return 1n }}; try { a ** b } catch (e) { log.push(e.name) } log.join()`,
		`let log = []; let a = {valueOf() { log.push('a'); return Symbol() }}, b = {valueOf() { log.push('b'); return 1n }}; try { a << b } catch (e) { log.push(e.name) } log.join()`,
		`let log = []; let a = 1n, b = {valueOf() { log.push('b'); return Symbol() }}; try { a >> b } catch (e) { log.push(e.name) } log.join()`,
		`let x = 3n, y = 4n; x **= y; x`, `let x = 1n, y = 70n; x <<= y; x`, `let x = -9n, y = 2n; x >>= y; x`,
		`let o = {p: 2n}, y = 5n; o.p **= y; o.p`, `let o = {p: 2n}, k = 'p', y = 3n; o[k] <<= y; o.p`,
		`let n = 0, o = {p: 2n}, y = 3n; function f() { n++; return o } f().p **= y; [o.p, n].join()`,
		`let n = 0, o = {p: 5n}, y = 1n; function k() { n++; return 'p' } o[k()] >>= y; [o.p, n].join()`,
		`class A { #x = 2n; f(y) { this.#x **= y; return this.#x } } new A().f(3n)`,
		`class A { #x = 2n; static f(a, y) { a.#x <<= y; return a.#x } } A.f(new A(), 4n)`,
		`class A { #x = 2n; static g(a) { return a } static f(a, y) { A.g(a).#x **= y; return a.#x } } A.f(new A(), 5n)`,
		`class B { get v() { return this._v } set v(x) { this._v = x } } class C extends B { f(y) { super.v **= y; return this._v } } let c = new C(); c._v = 3n; c.f(3n)`,
		`'use strict'; const c = 2n; let y = 2n; c **= y`,
		`let s = Symbol('s'), o = {[s]: 2n}, y = 3n; o[s] **= y; o[s]`,
		`let o = Object.freeze({p: 2n}); function k() { return 'p' } o[k()] **= 2n; o.p`,
		`let o = {get p() { return 2n }}; function f() { return o } f().p <<= 2n; o.p`,
		`let log = []; let o = {get p() { return 3n }, set p(v) { log.push(String(v)) }}; function f() { return o } f().p **= 2n; log.join()`,
		`'use strict'; let o = Object.freeze({p: 2n}); function k() { return 'p' } try { o[k()] **= 2n; 'no' } catch (e) { e.name }`,
		`function f() { 'use strict'; let o = Object.freeze({p: 2n}); function k() { return 'p' } try { o[k()] **= 2n; return 'no' } catch (e) { return e.name } } f()`,
		`function f() { 'use strict'; return () => { let o = Object.freeze({p: 2n}); function k() { return 'p' } try { o[k()] **= 2n; return 'no' } catch (e) { return e.name } } } f()()`,
		`class C { static f() { let o = Object.freeze({p: 2n}); function k() { return 'p' } try { o[k()] **= 2n; return 'no' } catch (e) { return e.name } } } C.f()`,
		`function f() { 'use strict' } let o = Object.freeze({p: 2n}); function k() { return 'p' } try { o[k()] **= 2n; 'no' } catch (e) { e.name }`,
		`String.prototype.x = 2n; let s = 'str'; function k() { return 'x' } s[k()] **= 2n; [s.x, typeof s].join()`,
		`'use strict'; String.prototype.x = 2n; let s = 'str'; function k() { return 'x' } try { s[k()] **= 2n; 'no' } catch (e) { e.name }`,
		`'use strict'; Object.defineProperty(String.prototype, 'x', {get() { return typeof this === 'string' ? 2n : 3n }, set(v) {}}); let s = 'str'; function k() { return 'x' } s[k()] **= 2n; s.x`,
		`let y = 2n; (2n) ** y`, `let y = 3n; 2n ** y ** 2n`,
		`let f = (a, b) => a ** b; f(3n, 3n)`,
		`let a = 2n, b = 3n; a ** b === 8n`,
	}
	// Where goja's own message is not Node's, the guard says what Node says.
	node := map[string]string{
		`let a = 2n, b = -1n; a ** b`:                 "throw RangeError: Exponent must be non-negative",
		`let a = Object.create(null), b = 2n; a ** b`: "throw TypeError: Cannot convert object to primitive value",
	}
	for _, src := range cases {
		want, ok := node[src]
		if !ok {
			want = result(goja.New(), plainCompile, src)
		}
		got := result(guardedRuntime(t, true), Compile, src)
		assert.Equal(t, want, got, src)
	}
}

// A BigInt past 2^30 bits is a RangeError before any memory is asked for,
// whatever form the operator takes; a shift by 2^64 or more is computed,
// not cut to its low 64 bits.
func TestGuard_HugeBigInts(t *testing.T) {
	t.Parallel()
	tooLarge := "throw RangeError: Maximum BigInt size exceeded (** and shifts in a workunit make BigInts of at most 2^26 bits)"
	cases := []struct{ src, want string }{
		{`let y = 2n ** 40n; 2n ** y`, tooLarge},
		{`let y = 2n ** 17n; (2n ** 1000n) ** y`, tooLarge},
		{`let y = 2n ** 26n; 2n ** y`, tooLarge},
		{`let y = 42342000n; 3n ** y`, tooLarge},
		{`let y = 2n ** 20n; (2n ** y).toString(16).length`, "int64 262145"},
		{`let y = 2n ** 20n; (3n ** y) % 1000n`, "bigint " + new(big.Int).Mod(new(big.Int).Exp(big.NewInt(3), big.NewInt(1<<20), nil), big.NewInt(1000)).String()},
		{`let y = 2n ** 40n; 1n << y`, tooLarge},
		{`let y = 2n ** 53n; 1n << y`, tooLarge},
		{`let y = -(2n ** 40n); 1n >> y`, tooLarge},
		{`let x = 3n, y = 2n ** 40n; x **= y`, tooLarge},
		{`let o = {p: 3n}, y = 2n ** 40n; o.p <<= y`, tooLarge},
		{`let n = 0, o = {p: 3n}, y = 2n ** 40n; (n++, o).p **= y`, tooLarge},
		{`class A { #x = 2n; static g(a) { return a } static f(a, y) { A.g(a).#x **= y } } A.f(new A(), 2n ** 26n)`, tooLarge},
		{`let x = 12345n, y = 2n ** 64n; x >> y`, "bigint 0"},
		{`let x = -12345n, y = 2n ** 64n; x >> y`, "bigint -1"},
		{`let x = 12345n, y = 2n ** 64n + 1n; x >> y`, "bigint 0"},
		{`let x = 12345n, y = -(2n ** 64n); x << y`, "bigint 0"},
		{`let y = 2n ** 25n; (1n << y).toString(16).length`, "int64 8388609"},
		{`let y = 2n ** 26n; 1n << y`, tooLarge},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, result(guardedRuntime(t, true), Compile, c.src), c.src)
	}
}

// Code made at run time is guarded too: eval (always indirect) and every
// function constructor; they still behave as the built-ins do otherwise.
func TestGuard_CodeMadeAtRunTime(t *testing.T) {
	t.Parallel()
	tooLarge := "throw RangeError: Maximum BigInt size exceeded (** and shifts in a workunit make BigInts of at most 2^26 bits)"
	cases := []struct{ src, want string }{
		{`eval('2n ** (2n ** 40n)')`, tooLarge},
		{`(0, eval)('1n << (2n ** 40n)')`, tooLarge},
		{`globalThis['ev' + 'al']('let y = 2n ** 40n; 2n ** y')`, tooLarge},
		{`new Function('a', 'b', 'return a ** b')(2n, 2n ** 40n)`, tooLarge},
		{`Function('a, b', 'return a << b')(1n, 2n ** 40n)`, tooLarge},
		{`(function () {}).constructor('return 2n ** (2n ** 40n)')()`, tooLarge},
		{`Object.getPrototypeOf(function* () {}).constructor('yield 2n ** (2n ** 40n)')().next()`, tooLarge},
		{`let r; Object.getPrototypeOf(async function () {}).constructor('return 2n ** (2n ** 40n)')().catch(e => r = e.name); r`, "undefined undefined"},
		{`eval('1 + 2')`, "int64 3"},
		{`eval(42)`, "int64 42"},
		{`eval.name + ' ' + eval.length`, "string eval 1"},
		{`var g = 5; (function () { var g = 6; return eval('g') })()`, "int64 5"},
		{`eval('let z = 2n, w = 5n; z ** w')`, "bigint 32"},
		{`new Function('a', 'b', 'return a ** b')(3, 2)`, "int64 9"},
		{`Function.prototype.constructor === Function && (function(){}).constructor === Function`, "bool true"},
		{`Function.name + ' ' + Function.length + ' ' + (Function.prototype === Object.getPrototypeOf(Function('')))`, "string Function 1 true"},
		{`new Function('return this')() === globalThis`, "bool true"},
		{`Function('x', 'return x')` + `.toString()`, "string function anonymous(x\n) {\nreturn x\n}"},
		{`class F extends Function {} new F('return 7') instanceof F`, "bool true"},
		{`Object.getPrototypeOf(async function () {}).constructor.name`, "string AsyncFunction"},
		{`eval('}')`, "throw SyntaxError: SyntaxError: <eval>: Line 1:1 Unexpected token } (and 1 more errors)"},
	}
	for _, c := range cases {
		got := result(guardedRuntime(t, true), Compile, c.src)
		if strings.HasPrefix(c.want, "throw SyntaxError") {
			assert.True(t, strings.HasPrefix(got, "throw SyntaxError"), "%s: %s", c.src, got)
			continue
		}
		assert.Equal(t, c.want, got, c.src)
	}
}

// Without dynamic, eval and the constructors are the built-ins.
func TestGuard_NotDynamic(t *testing.T) {
	t.Parallel()
	rt := guardedRuntime(t, false)
	assert.Equal(t, "int64 6", result(rt, Compile, `var g = 5; (function () { var g = 6; return eval('g') })()`))
}

// The guard's name is refused in a source, and the rewrite keeps
// positions: an error on a line after a guarded operator points where it
// did.
func TestGuard_NameAndPositions(t *testing.T) {
	t.Parallel()
	got := result(guardedRuntime(t, true), Compile, "let a = 2n, b = 3n; a ** b; __riot_guard.pow = null")
	assert.Contains(t, got, "reserved by riot")
	// also in a source without the operators
	got = result(guardedRuntime(t, true), Compile, "function f(__riot_guard) { return 1 }")
	assert.Contains(t, got, "reserved by riot")
	assert.Equal(t, "string __riot_guard", result(guardedRuntime(t, true), Compile, "'__riot_guard' // __riot_guard"), "a string or a comment may hold it")

	pc := regexp.MustCompile(`\(\d+\)`) // goja's program counter, which the engine drops
	stack := func(rt *goja.Runtime, compile func(string, string) (*goja.Program, error), src string) string {
		prg, err := compile("t.js", src)
		require.NoError(t, err)
		_, err = rt.RunProgram(prg)
		var ex *goja.Exception
		require.True(t, asException(err, &ex))
		return pc.ReplaceAllString(ex.Value().(*goja.Object).Get("stack").String(), "")
	}
	src := "let a = 2n, b = 3n\nlet c = a ** b\nlet d = (a << b) + c; let e = 1n;  e **= b; throw new Error('here')"
	assert.Equal(t, stack(goja.New(), plainCompile, src), stack(guardedRuntime(t, true), Compile, src))

	got = stack(guardedRuntime(t, true), Compile, "let a = 2n\nlet b = 2n ** 40n\nfunction f() {\n  return a ** b }\nf()")
	lines := strings.Split(got, "\n")
	require.GreaterOrEqual(t, len(lines), 4, got)
	assert.Contains(t, lines[1], FramePrefix, "the guard's own frame, which the engine drops")
	assert.Equal(t, "\tat f (t.js:4:10)", lines[2], "then the operator's line and column")
	assert.Equal(t, "\tat t.js:5:2", lines[3])
}

// A source without the operators is compiled as it is.
func TestGuard_Needed(t *testing.T) {
	t.Parallel()
	assert.False(t, Needed("a + b * c > 1 < 2"))
	assert.True(t, Needed("a ** b"))
	assert.True(t, Needed("a >> b"))
	assert.True(t, Needed("a << b"))
}

// A compound assignment to a private field of an expression's value is
// bounded by its result, as every other form is: repeated, it cannot build
// a BigInt past MaxBigIntBits. A regression test: only its right operand
// was bounded (a shift of at most 2^24, an exponent of at most 64), so a
// loop of such shifts went past the bound, and `**= 64n` from a BigInt of
// 2^24 bits asked math/big for 2^30 bits, and once more for 2^36 (8 GiB),
// in one call that no interrupt reaches. It still does what the operator
// does, in the order of the other member forms (the right operand before
// the field is read).
func TestGuard_PrivateFieldOfAnExpression(t *testing.T) {
	t.Parallel()
	tooLarge := "throw RangeError: Maximum BigInt size exceeded (** and shifts in a workunit make BigInts of at most 2^26 bits)"
	huge := []string{
		`class A { #x = 1n; static g(a) { return a } static f(a, y) { for (let i = 0; i < 5; i++) A.g(a).#x <<= y; return a.#x.toString(16).length } } A.f(new A(), 1n << 24n)`,
		`class A { #x = 1n; static g(a) { return a } static f(a, y) { for (let i = 0; i < 5; i++) A.g(a).#x >>= y; return a.#x.toString(16).length } } A.f(new A(), -(1n << 24n))`,
		`class A { #x = 1n << (1n << 20n); static g(a) { return a } static f(a, y) { A.g(a).#x **= y } } A.f(new A(), 64n)`,
	}
	for _, src := range huge {
		assert.Equal(t, tooLarge, result(guardedRuntime(t, true), Compile, src), src)
	}
	same := []string{
		`class A { #x = 3n; static g(a) { return a } static f(a, y) { let r = (A.g(a).#x **= y); return [r, a.#x].join() } } A.f(new A(), 3n)`,
		`class A { #x = 3n; static g(a) { return a } static f(a, y) { A.g(a).#x <<= y; A.g(a).#x >>= 1n; return a.#x } } A.f(new A(), 70n)`,
		`class A { static #x = 5n; static g() { return A } static f(y) { A.g().#x **= y; return A.#x } } A.f(2n)`,
		`class A { #x = 2n; static g(a) { return a } static f(a, y) { A.g(a).#x **= y; return a.#x } } try { A.f({}, 2n) } catch (e) { e.name }`,
		`class A { #x = 2n; static g(a) { return a } static f(a, y) { A.g(a).#x **= y; return a.#x } } try { A.f(new A(), 2) } catch (e) { e.name + ': ' + e.message }`,
		`class A { #x = 2; static g(a) { return a } static f(a, y) { A.g(a).#x **= y; A.g(a).#x <<= y; return a.#x } } A.f(new A(), 3)`,
		`class A { #x = 2n; static g(a) { return a } async f(y) { A.g(this).#x **= await y; return this.#x } } let r; new A().f(Promise.resolve(5n)).then(v => r = v); r`,
		`class A { #x = 2n; static g(a) { return a } *f(y) { A.g(this).#x **= yield y; return this.#x } } let it = new A().f(1n); it.next(); String(it.next(4n).value)`,
		`class A { #x = 2n; m(y) { const g = () => this; g().#x **= y; return (() => { g().#x <<= y; return this.#x })() } } new A().m(2n)`,
	}
	for _, src := range same {
		assert.Equal(t, result(goja.New(), plainCompile, src), result(guardedRuntime(t, true), Compile, src), src)
	}
	got := result(guardedRuntime(t, true), Compile,
		`let log = []; class A { #x = 2n; static g(a) { log.push('g'); return a } static f(a) { A.g(a).#x **= (log.push('y'), 3n); return [a.#x, log].join() } } A.f(new A())`)
	assert.Equal(t, "string 8,g,y", got, "the object, then the right operand")
	got = result(guardedRuntime(t, true), Compile,
		`class A { #x = 2n; static g(a) { return a } static f(a, y) { A.g(a).#x **= A.g(a).#x **= y; return a.#x } } A.f(new A(), 2n)`)
	assert.Equal(t, "bigint 256", got, "the field read after the right operand (the operator: 16n)")
}
