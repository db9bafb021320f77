package capture

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// equivalenceScripts are non-trivial scripts whose completion value must be
// the same before and after instrumentation. They avoid Function.prototype.
// toString, which shows the inserted text inside nested functions.
var equivalenceScripts = map[string]string{
	"closures and names": `
		const k = 3;
		const add = (a, b = k) => a + b;
		let f = function () { return 1 };
		var g; g = () => 2;
		let h; h ||= function () {};
		const { d = () => 4 } = {};
		const [e = class {}] = [];
		function p(q = () => 5) { return q.name }
		const o = { m() { return 6 }, n: () => 7, 'x y': function () {}, 8: () => 8, [k]: () => 9,
			get acc() { return this.n() }, __proto__: { inherited() { return 10 } } };
		class C { fld = () => 11; static sf = function () {}; #pf = () => 12; pf() { return this.#pf } }
		const c = new C();
		[add(1), add.name, f.name, g.name, h.name, d.name, e.name, p(), p.name, o.m.name, o.n.name,
		 o['x y'].name, o[8].name, o[3].name, o[3](), o.acc, o.inherited(), c.fld.name, c.fld(),
		 C.sf.name, c.pf()(), c.pf().name, (() => {}).name, (function () {}).name]`,
	"loops and per-iteration bindings": `
		const fs = [];
		for (let i = 0; i < 3; i++) fs.push(() => i);
		for (var j = 0; j < 3; j++) fs.push(() => j);
		for (const x of [7, 8]) fs.push(function () { return x * 2 });
		for (const key in { a: 1, b: 2 }) fs.push(() => key);
		let n = 0;
		while (n < 2) { const m = n++; fs.push(() => m + 100); }
		fs.map(f => f())`,
	"hoisting, blocks and switch": `
		"use strict";
		const out = [before(), typeof later];
		function before() { return later() + 1 }
		function later() { return 41 }
		{ function inBlock() { return 'block' } out.push(inBlock()); }
		out.push(typeof inBlock);
		switch (out.length) {
		case 3: out.push(sw()); break;
		default: function sw() { return 'switch' }
		}
		label: for (let i = 0; i < 3; i++) { for (;;) { if (i === 1) continue label; break label; } }
		function dup() { return 1 }
		function dup() { return 2 }
		out.push(dup());
		out`,
	"classes": `
		class Base { constructor(x) { this.x = x } get double() { return this.x * 2 } static make() { return new this(1) } }
		class Derived extends Base { constructor() { super(5); this.y = () => super.double } tag() { return 'd' + this.x } }
		const Anon = class extends Base { m() { return super.double + 1 } };
		const d = new Derived();
		const a = new Anon(3);
		[d.double, d.y(), d.tag(), Base.make().x, a.m(), Derived.name, Anon.name, typeof Derived.make,
		 new (class { v = 9 })().v]`,
	"generators async destructuring spread": `
		function* gen(n) { for (let i = 0; i < n; i++) yield i * i }
		const arr = [...gen(4)];
		const { a, b: [c, ...rest], ...others } = { a: 1, b: [2, 3, 4], z: 5, w: 6 };
		const res = [];
		async function af(v) { await null; return v + 1 }
		af(1).then(v => res.push(v));
		const opt = { deep: { f() { return 'deep' } } };
		const tag = (s, ...v) => s.raw.join('|') + v.join(',');
		[arr, a, c, rest, others, opt?.deep?.f?.(), opt.missing?.f(), tag` + "`a${1}b${2}c`" + `,
		 ((x, y) => (x, y))(1, 2), typeof undefinedThing, res]`,
	"this arguments new.target": `
		function Ctor() { this.isNew = new.target === Ctor; this.arrow = () => this.isNew }
		function args() { return (() => arguments.length)() }
		const obj = { v: 4, m() { return [1, 2].map(x => x * this.v) } };
		[new Ctor().arrow(), args(1, 2, 3), obj.m(), new function () { this.q = 1 }().q,
		 new (function () { this.r = 2 })().r]`,
	"try catch and shadowing": `
		let x = 'outer';
		function shadow(x) { { let x = 'block'; var y = () => x; } return [x, y()] }
		let caught;
		try { throw new Error('boom') } catch ({ message }) { caught = () => message }
		try { null.f() } catch (e) { caught = [caught(), e instanceof TypeError] }
		[shadow('param'), caught, (function x() { return typeof x })(), x]`,
	"completion value of declarations only": `
		function a() {}
		class B {}`,
	"parenthesised and tricky arrows": `
		const f1 = x => (x + 1);
		const f2 = x => ((x) + (1));
		const f3 = (x) => (y) => ((x * y));
		const f4 = x => x++;
		let q = 1;
		const f5 = () => (q)++;
		const f6 = () => ` + "`(${q})`" + `;
		const f7 = () => /\)/.test(')') ? '(' : ')';
		const f8 = () => ({ a: 1 }).a;
		[f1(1), f2(2), f3(3)(4), f4(5), f5(), q, f6(), f7(), f8()]`,
	"naming positions": `
		function p({ a = () => 1 }, [b = () => 2], c = () => 3) { return [a.name, b.name, c.name] }
		var x, y, z;
		[x = () => 1] = [];
		({ y = () => 1 } = {});
		({ k: z = function () {} } = {});
		for (var [v = () => 1] of [[]]) ;
		let caught;
		try { throw {} } catch ({ e = () => 1 }) { caught = e.name }
		class K { ['c' + 1] = () => 1; static #sp = () => 1; 'a b' = () => 2; 5 = function () {}; static n() { return K.#sp.name } }
		const o = { ['k' + 1]: () => 1, [Symbol.iterator]() {} };
		var t; t += function () {};
		[p({}, []), x.name, y.name, z.name, v.name, caught, new K().c1.name, K.n(), new K()['a b'].name,
		 new K()[5].name, o.k1.name, typeof t, o[Symbol.iterator].name]`,
	"eval and with": `
		function ev() { var local = 5; return eval('local * 2') }
		var o = { p: 3 };
		function wi() { with (o) { return p + 1 } }
		[ev(), wi()]`,
}

func TestInstrument_BehaviourUnchanged(t *testing.T) {
	t.Parallel()
	for name, src := range equivalenceScripts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			orig := goja.New()
			want, err := orig.RunScript("test.js", src)
			require.NoError(t, err)

			rt, reg := newFakeRuntime(t, src)
			got, err := reg.run()
			require.NoError(t, err, "instrumented:\n%s", reg.script.Source)
			assert.Equal(t, resultString(orig, want), resultString(rt, got), "instrumented:\n%s", reg.script.Source)
			assert.Equal(t, strings.Count(src, "\n"), strings.Count(reg.script.Source, "\n"))
			assert.Positive(t, reg.calls)
		})
	}
}

func TestInstrument_GetterReadsCurrentValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"reassigned after creation", `let a = 1; const f = () => a; a = 2; __probe(f).free`, `[2]`},
		{"function declaration", `var n = 'x'; function f() { return n + m } let m = 'y'; n = 'z'; __probe(f).free`, `["z","y"]`},
		{"let loop gives each closure its own binding", `const fs = []; for (let i = 0; i < 3; i++) fs.push(() => i); fs.map(f => __probe(f).free[0])`, `[0,1,2]`},
		{"var loop shares one binding", `const fs = []; for (var i = 0; i < 3; i++) fs.push(() => i); fs.map(f => __probe(f).free[0])`, `[3,3,3]`},
		{"for-of const binding", `const fs = []; for (const s of ['a', 'b']) fs.push(function () { return s }); fs.map(f => __probe(f).free[0])`, `["a","b"]`},
		{"nested function sees outer changes", `function mk() { let c = 0; const g = () => c; c = 10; return g } __probe(mk()).free`, `[10]`},
		{"object method", `let base = 1; const o = { m(x) { return x + base } }; base = 5; [__probe(o.m).free, __probe(o.m).id >= 0]`, `[[5],true]`},
		{"class and its methods", `let unit = 'cm'; class L { static u() { return unit } len() { return 1 + unit } } unit = 'mm'; [__probe(L).free, __probe(L.u).free, __probe(L.prototype.len).free]`, `[["mm"],["mm"],["mm"]]`},
		{"captured object is live", `const o = { v: 1 }; const f = () => o.v; o.v = 7; __probe(f).free[0].v`, `7`},
		{"no free variables", `const f = x => x * 2; __probe(f).free`, `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt, reg := newFakeRuntime(t, tc.src)
			v, err := reg.run()
			require.NoError(t, err, "instrumented:\n%s", reg.script.Source)
			assert.Equal(t, tc.want, resultString(rt, v))
		})
	}
}

func TestInstrument_GetterTemporalDeadZoneThrows(t *testing.T) {
	t.Parallel()
	rt, reg := newFakeRuntime(t, `
		let r;
		function early() { return late }
		try { __probe(early) } catch (e) { r = e instanceof ReferenceError }
		const late = 1;
		[r, __probe(early).free[0]]`)
	v, err := reg.run()
	require.NoError(t, err)
	assert.Equal(t, `[true,1]`, resultString(rt, v))
}

func TestInstrument_HoistedRegisteredBeforeFirstUse(t *testing.T) {
	t.Parallel()
	rt, reg := newFakeRuntime(t, `
		"use strict"
		const ids = [__probe(top).id];
		function outer() {
			'use strict';
			const r = [__probe(inner).id];
			{ r.push(__probe(blockFn).id); function blockFn() {} }
			switch (1) { case 1: r.push(__probe(caseFn).id); break; default: function caseFn() {} }
			return r;
			function inner() {}
		}
		function top() {}
		ids.concat(outer())`)
	v, err := reg.run()
	require.NoError(t, err, "instrumented:\n%s", reg.script.Source)
	byName := map[string]int{}
	for _, f := range reg.script.Funcs {
		byName[f.Name] = f.ID
	}
	want := []int{byName["top"], byName["inner"], byName["blockFn"], byName["caseFn"]}
	var got []int
	require.NoError(t, rt.ExportTo(v, &got))
	assert.Equal(t, want, got)
}

var stackLine = regexp.MustCompile(`test\.js:(\d+):`)

func stackLines(s string) []string {
	var out []string
	for _, m := range stackLine.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestInstrument_StackLinesUnchanged(t *testing.T) {
	t.Parallel()
	src := `"use strict";
const helpers = {
	fail(msg) {
		throw new Error(msg);
	},
};
class Worker {
	run(n) {
		return [1, 2, 3].map((x) =>
			x === n ? helpers.fail('at ' + x) : x);
	}
}
function go() {
	const w = new Worker();
	return w.run(2);
}
go();
`
	_, origErr := goja.New().RunScript("test.js", src)
	require.Error(t, origErr)
	_, reg := newFakeRuntime(t, src)
	_, err := reg.run()
	require.Error(t, err)

	var origEx, ex *goja.Exception
	require.True(t, errors.As(origErr, &origEx))
	require.True(t, errors.As(err, &ex))
	want := stackLines(origEx.String())
	require.NotEmpty(t, want)
	assert.Equal(t, want, stackLines(ex.String()), "original:\n%s\ninstrumented:\n%s", origEx.String(), ex.String())
	assert.Equal(t, []string{"4", "10", "9", "15", "17"}, want)
}

func TestInstrument_ShippedFunctionsRunElsewhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string // its completion value is the function to ship
		call string // called on the rebuilt function as f
		want string
	}{
		{"arrow with outer values", `const scale = 3, offset = { by: 1 }; const f = x => x * scale + offset.by; f`, `f(2)`, `7`},
		{"recursion", `function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) } fact`, `f(5)`, `120`},
		{"mutual recursion", `function isEven(n) { return n === 0 ? true : isOdd(n - 1) }
			function isOdd(n) { return n === 0 ? false : isEven(n - 1) } isEven`, `[f(10), f(7)]`, `[true,false]`},
		{"helper chain", `const words = ['ab', 'cd'];
			const join = (a, b) => a + b;
			const has = w => words.includes(w);
			function combos() { const r = []; for (const a of words) for (const b of words) if (!has(join(a, b))) r.push(join(a, b)); return r }
			combos`, `f().length`, `4`},
		{"object method", `const rate = 2; const o = { cost(x) { return x * rate } }; o.cost`, `[f(4), f.name]`, `[8,"cost"]`},
		{"method named like an outer variable", `const cost = 5; const o = { cost(x) { return x + cost } }; o.cost`, `f(1)`, `6`},
		{"class with captured base value", `const sides = 4; class Sq { constructor(s) { this.s = s } per() { return this.s * sides } } Sq`, `new f(2).per()`, `8`},
		{"closure made in a loop", `const fs = []; for (let i = 0; i < 3; i++) { const k = i * 10; fs.push(() => k + i) } fs[2]`, `f()`, `22`},
		{"generator", `const lim = 3; function* g() { for (let i = 0; i < lim; i++) yield i } g`, `[...f()]`, `[0,1,2]`},
		{"default parameter referencing outer", `const d = 10; const f = (a, b = d + a) => b; f`, `f(1)`, `11`},
		{"destructured parameters", `const base = 100; const f = ({ a, b: [c] = [2] }, ...rest) => base + a + c + rest.length; f`, `f({ a: 1 }, 0, 0)`, `105`},
		{"typeof and globals", `const f = () => typeof Math.max + typeof nothingHere; f`, `f()`, `"functionundefined"`},
		{"named function expression", `const f = function self(n) { return n ? self(n - 1) + 1 : 0 }; f`, `f(3)`, `3`},
		{"nested functions", `const factor = 2; function outer(xs) { const local = 1; return xs.map(x => x * factor + local) } outer`, `f([1, 2])`, `[3,5]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, reg := newFakeRuntime(t, tc.src)
			fn, err := reg.run()
			require.NoError(t, err, "instrumented:\n%s", reg.script.Source)
			worker, rebuilt := reg.ship(t, fn)
			require.NoError(t, worker.Set("f", rebuilt))
			got, err := worker.RunString(tc.call)
			require.NoError(t, err)
			assert.Equal(t, tc.want, resultString(worker, got))
		})
	}
}

func TestInstrument_CustomHookName(t *testing.T) {
	t.Parallel()
	s, err := Instrument("x.js", `const f = () => 1;`, Options{Hook: "$reg"})
	require.NoError(t, err)
	rt := goja.New()
	var ids []int64
	require.NoError(t, rt.Set("$reg", func(id int64, _ goja.Value, v goja.Value) goja.Value {
		ids = append(ids, id)
		return v
	}))
	_, err = rt.RunString(s.Source + "\nf()")
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, ids)
}
