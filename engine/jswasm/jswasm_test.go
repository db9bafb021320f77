package jswasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jswasm"
	"github.com/riot-go/riot/workunit"
)

// modules are the test modules (testdata/*.wat, built by
// testdata/build.sh), as JavaScript array literals.
var modules = map[string]string{}

func moduleLiteral(t testing.TB, name string) string {
	t.Helper()
	if s, ok := modules[name]; ok {
		return s
	}
	b, err := os.ReadFile("testdata/" + name + ".wasm")
	require.NoError(t, err)
	var sb strings.Builder
	sb.WriteString("new Uint8Array([")
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, c)
	}
	sb.WriteString("])")
	modules[name] = sb.String()
	return sb.String()
}

// newEngine makes an engine of one slot with the WebAssembly binding.
func newEngine(t testing.TB, opts engine.Options, wopts jswasm.Options) (*engine.Engine, *jswasm.Binding) {
	t.Helper()
	b, err := jswasm.New(context.Background(), wopts)
	require.NoError(t, err)
	if opts.Slots == 0 {
		opts.Slots = 1
	}
	opts.Bindings = append(opts.Bindings, b)
	eng, err := engine.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, eng.Close())
		require.NoError(t, b.Close(context.Background()))
	})
	return eng, b
}

// script wraps body in an async function that sees API and PLAIN, the
// test modules' bytes, and imports, a fresh imports object for API.
func script(t testing.TB, body string) string {
	return `(async () => {
	const API = ` + moduleLiteral(t, "api") + `;
	const PLAIN = ` + moduleLiteral(t, "plain") + `;
	const logged = [];
	const mem = new WebAssembly.Memory({initial: 1, maximum: 4});
	const imports = {env: {log: (i, f) => { logged.push([i, f]); return i * 2; }, mem, g: 42}};
	` + body + `
})()`
}

func eval(t testing.TB, eng *engine.Engine, body string) (any, error) {
	t.Helper()
	res, err := eng.Run(context.Background(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: script(t, body), Name: "test.js"}})
	if err != nil {
		return nil, err
	}
	return res.Decode()
}

func mustEval(t testing.TB, eng *engine.Engine, body string) any {
	t.Helper()
	v, err := eval(t, eng, body)
	require.NoError(t, err)
	return v
}

func TestAPISurface(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `return [
		typeof WebAssembly, String(WebAssembly), Object.getOwnPropertyNames(WebAssembly).join(),
		WebAssembly.validate(PLAIN), WebAssembly.validate(new Uint8Array([0, 97, 115, 109, 9, 0, 0, 0])),
		WebAssembly.validate(PLAIN.buffer),
		new WebAssembly.RuntimeError('x') instanceof Error, new WebAssembly.LinkError('x').name,
		WebAssembly.CompileError.name,
	]`)
	assert.Equal(t, []any{"object", "[object WebAssembly]",
		"validate,compile,instantiate,Module,Instance,Memory,Global,CompileError,LinkError,RuntimeError",
		true, false, true, true, "LinkError", "CompileError"}, v)

	v = mustEval(t, eng, `
		const m = await WebAssembly.compile(PLAIN);
		const i1 = await WebAssembly.instantiate(m);
		const {module, instance} = await WebAssembly.instantiate(PLAIN);
		const i3 = new WebAssembly.Instance(new WebAssembly.Module(PLAIN));
		return [m instanceof WebAssembly.Module, i1 instanceof WebAssembly.Instance, module instanceof WebAssembly.Module,
			instance instanceof WebAssembly.Instance, i3.exports.inc(41), i1.exports.inc(1), instance.exports.inc(-1),
			Object.keys(i3.exports).join(), Object.isFrozen(i3.exports), Object.getPrototypeOf(i3.exports),
			WebAssembly.Module.exports(m).map(e => e.name + ':' + e.kind).join(),
			WebAssembly.Module.imports(new WebAssembly.Module(API)).map(e => e.module + '.' + e.name + ':' + e.kind).join(),
			i3.exports.inc.length, i3.exports.inc === i3.exports.inc]`)
	assert.Equal(t, []any{true, true, true, true, 42.0, 2.0, 0.0, "memory,sum,grow,spin,inc", true, nil,
		"memory:memory,sum:function,grow:function,spin:function,inc:function",
		"env.log:function,env.mem:memory,env.g:global", 1.0, true}, v)
}

func TestCompileError(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const out = [];
		try { new WebAssembly.Module(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])); } catch (e) { out.push(e instanceof WebAssembly.CompileError, e.name); }
		await WebAssembly.compile(new Uint8Array([0, 97, 115, 109])).catch(e => out.push(e instanceof WebAssembly.CompileError));
		try { new WebAssembly.Module('nope'); } catch (e) { out.push(e instanceof TypeError); }
		return out`)
	assert.Equal(t, []any{true, "CompileError", true, true}, v)
}

func TestValuesAndImports(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const {instance} = await WebAssembly.instantiate(API, imports);
		const e = instance.exports;
		return [e.add(2, 3), e.add(0x7fffffff, 1), e.add('4', 1.9),
			e.add64(2n ** 62n, 2n ** 62n), typeof e.add64(1n, 2n), e.add64(-1n, 0n),
			e.mulf32(1.1, 3), e.divf64(1, 3), e.divf64(1, 0),
			e.pair(-5), e.callLog(21), logged, e.getG(),
			e.counter.value, e.bump(), e.counter.value, e.big.value,
			e.mem === mem]`)
	assert.Equal(t, []any{5.0, -2147483648.0, 5.0,
		"-9223372036854775808", "bigint", "-1",
		float64(float32(1.1) * 3), 1.0 / 3, "Infinity",
		[]any{-5.0, "-5"}, 42.0, []any{[]any{21.0, 2.5}}, 42.0,
		7.0, 8.0, 8.0, "-9007199254740993", true}, normalize(v))

	// An i64 needs a BigInt; a missing import or one of the wrong kind
	// is a LinkError; a JavaScript throw goes through wasm.
	v = mustEval(t, eng, `
		const out = [];
		const {instance} = await WebAssembly.instantiate(API, imports);
		try { instance.exports.add64(1, 2); } catch (e) { out.push(e.name); }
		try { new WebAssembly.Instance(new WebAssembly.Module(API), {env: {log: 1, mem, g: 1}}); } catch (e) { out.push(e.name); }
		try { new WebAssembly.Instance(new WebAssembly.Module(API), {env: {log() {}, mem: {}, g: 1}}); } catch (e) { out.push(e.name); }
		try { new WebAssembly.Instance(new WebAssembly.Module(API), {}); } catch (e) { out.push(e.name); }
		try { new WebAssembly.Instance(new WebAssembly.Module(API), {env: {log() {}, mem: new WebAssembly.Memory({initial: 1, maximum: 9}), g: 1}}); } catch (e) { out.push(e.name); }
		const thrower = new WebAssembly.Instance(new WebAssembly.Module(API), {env: {log() { throw new SyntaxError('from js'); }, mem, g: 1}});
		try { thrower.exports.callLog(1); } catch (e) { out.push(e.name + ': ' + e.message); }
		out.push(thrower.exports.add(1, 1));
		return out`)
	assert.Equal(t, []any{"TypeError", "LinkError", "LinkError", "TypeError", "LinkError", "SyntaxError: from js", 2.0}, v)
}

// normalize makes BigInts and infinities comparable.
func normalize(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case fmt.Stringer:
		return x.String()
	case float64:
		if x > 1e308 {
			return "Infinity"
		}
	}
	return v
}

func TestInstanceToInstance(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	// One instance's exported function, memory and global imported by
	// another.
	v := mustEval(t, eng, `
		const a = new WebAssembly.Instance(new WebAssembly.Module(API), imports);
		const g = new WebAssembly.Global({value: 'i32', mutable: false}, 99);
		const b = new WebAssembly.Instance(new WebAssembly.Module(API), {env: {log: (i) => i + 1, mem: a.exports.mem, g}});
		b.exports.poke(10, 77);
		return [b.exports.callLog(5), a.exports.peek(10), new Uint8Array(mem.buffer)[10], b.exports.getG(), g.value,
			b.exports.mem === mem]`)
	assert.Equal(t, []any{6.0, 77.0, 77.0, 99.0, 99.0, true}, v)
}

func TestMemoryWithoutCopy(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const {instance} = await WebAssembly.instantiate(API, imports);
		const e = instance.exports;
		const bytes = new Uint8Array(mem.buffer);
		bytes[3] = 200;
		e.poke(4, 201);
		const before = [mem.buffer === mem.buffer, mem.buffer.byteLength, e.peek(3), bytes[4]];
		const old = mem.buffer;
		const prev = mem.grow(1);
		const afterJS = [prev, old.byteLength, mem.buffer.byteLength, new Uint8Array(mem.buffer)[3]];
		const old2 = mem.buffer;
		const prev2 = e.grow(1);
		const afterWasm = [prev2, old2.byteLength, mem.buffer.byteLength, e.grow(5), mem.buffer.byteLength];
		let refused = '';
		try { mem.grow(5); } catch (e) { refused = e.name; }
		const m = new WebAssembly.Memory({initial: 0});
		return [before, afterJS, afterWasm, refused, m.buffer.byteLength, m.grow(2), m.buffer.byteLength]`)
	assert.Equal(t, []any{
		[]any{true, 65536.0, 200.0, 201.0},
		[]any{1.0, 0.0, 131072.0, 200.0},
		[]any{2.0, 0.0, 196608.0, -1.0, 196608.0},
		"RangeError", 0.0, 0.0, 131072.0}, v)

	// The plain module's sum reads what JavaScript wrote.
	v = mustEval(t, eng, `
		const {instance} = await WebAssembly.instantiate(PLAIN);
		new Uint8Array(instance.exports.memory.buffer).set([1, 2, 3, 4], 100);
		return instance.exports.sum(100, 104)`)
	assert.Equal(t, 10.0, v)
}

func TestTraps(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const {instance} = await WebAssembly.instantiate(API, imports);
		const out = [];
		for (const f of [() => instance.exports.trap(), () => instance.exports.oob(), () => instance.exports.div0(0)]) {
			try { f(); out.push('no trap'); } catch (e) { out.push(e instanceof WebAssembly.RuntimeError, e.message); }
		}
		out.push(instance.exports.add(1, 2));
		return out`)
	assert.Equal(t, []any{true, "unreachable", true, "out of bounds memory access", true, "integer divide by zero", 3.0}, v)

	// An uncaught trap fails the workunit as a RuntimeError.
	_, err := eval(t, eng, `const {instance} = await WebAssembly.instantiate(API, imports); instance.exports.trap();`)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "RuntimeError", werr.Name)
}

func TestTimeLimitStopsWasm(t *testing.T) {
	for _, interp := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpreter=%v", interp), func(t *testing.T) {
			eng, _ := newEngine(t, engine.Options{Timeout: 300 * time.Millisecond}, jswasm.Options{Interpreter: interp})
			start := time.Now()
			_, err := eval(t, eng, `const {instance} = await WebAssembly.instantiate(PLAIN); try { instance.exports.spin(); } catch (e) {} for (;;) {}`)
			var werr *workunit.Error
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, workunit.TimeLimit, werr.Kind, "%v", err)
			assert.Less(t, time.Since(start), 10*time.Second)
			// The slot goes on.
			assert.Equal(t, 3.0, mustEval(t, eng, `return new WebAssembly.Instance(new WebAssembly.Module(PLAIN)).exports.inc(2)`))
			// A JavaScript import that loops, called from wasm, is stopped too.
			_, err = eval(t, eng, `imports.env.log = () => { for (;;) {} }; const {instance} = await WebAssembly.instantiate(API, imports); try { instance.exports.callLog(1); } catch (e) {} return 1`)
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, workunit.TimeLimit, werr.Kind, "%v", err)
		})
	}
}

func TestCanceledStopsWasm(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := eng.Run(ctx, engine.Request{Spec: &workunit.Spec{Kind: workunit.Eval, Name: "spin.js",
			Source: script(t, `const {instance} = await WebAssembly.instantiate(PLAIN); console.log('spinning'); instance.exports.spin();`)},
			Print: func(workunit.Level, string) { cancel() }})
		done <- err
	}()
	err := <-done
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.Canceled, werr.Kind, "%v", err)
	assert.Equal(t, 3.0, mustEval(t, eng, `return new WebAssembly.Instance(new WebAssembly.Module(PLAIN)).exports.inc(2)`))
}

func TestMemoryLimit(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{MemoryLimit: 256 << 20}, jswasm.Options{})
	v := mustEval(t, eng, `
		const out = [];
		try { new WebAssembly.Memory({initial: 8192}); out.push('made'); } catch (e) { out.push(e.name, e.message.includes('memory limit')); }
		const m = new WebAssembly.Memory({initial: 1});
		try { m.grow(8000); out.push('grew'); } catch (e) { out.push(e.name); }
		out.push(m.buffer.byteLength);
		const {instance} = await WebAssembly.instantiate(PLAIN);
		out.push(instance.exports.grow(15));
		return out`)
	assert.Equal(t, []any{"RangeError", true, "RangeError", 65536.0, 1.0}, v)

	// A memory.grow in wasm past the limit gives -1, and the workunit
	// goes on.
	res, err := eng.Run(context.Background(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: `(() => {
		const {exports: e} = new WebAssembly.Instance(new WebAssembly.Module(` + moduleLiteral(t, "big") + `));
		return [e.grow(16), e.grow(8192), e.memory.buffer.byteLength];
	})()`}})
	require.NoError(t, err)
	v, err = res.Decode()
	require.NoError(t, err)
	assert.Equal(t, []any{1.0, -1.0, 17.0 * 65536}, v)
}

func TestCacheByHash(t *testing.T) {
	eng, b := newEngine(t, engine.Options{}, jswasm.Options{})
	// Each run compiles PLAIN and the prelude's Memory (a module riot
	// makes): only the first run misses.
	mustEval(t, eng, `return new WebAssembly.Instance(new WebAssembly.Module(PLAIN)).exports.inc(1)`)
	st0 := b.Stats()
	assert.Equal(t, uint64(2), st0.Misses, "%+v", st0)
	for range 2 {
		mustEval(t, eng, `return new WebAssembly.Instance(new WebAssembly.Module(PLAIN)).exports.inc(1)`)
	}
	st := b.Stats()
	assert.Equal(t, st0.Misses, st.Misses, "%+v", st)
	assert.Equal(t, st0.Hits+4, st.Hits, "%+v", st)
	// Another engine's sandboxes with the same binding share it: a copy
	// of the same bytes is a hit.
	eng2, err := engine.New(engine.Options{Slots: 1, Bindings: []engine.Binding{b}})
	require.NoError(t, err)
	defer eng2.Close()
	res, err := eng2.Run(context.Background(), engine.Request{Realm: "other", Spec: &workunit.Spec{Kind: workunit.Eval,
		Source: script(t, `return WebAssembly.validate(PLAIN.slice())`)}})
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, true, v)
	assert.Equal(t, st.Misses, b.Stats().Misses)
	assert.Equal(t, st.Hits+2, b.Stats().Hits)
}

func TestCacheBound(t *testing.T) {
	eng, b := newEngine(t, engine.Options{}, jswasm.Options{MaxModules: 2})
	// Three different modules (memories of other sizes), each used again:
	// the cache keeps two, and a dropped module's Module goes on working.
	v := mustEval(t, eng, `
		const m = new WebAssembly.Module(PLAIN);
		new WebAssembly.Memory({initial: 1}); new WebAssembly.Memory({initial: 2}); new WebAssembly.Memory({initial: 3});
		return new WebAssembly.Instance(m).exports.inc(1)`)
	assert.Equal(t, 2.0, v)
	assert.Equal(t, 2, b.Stats().Modules)
}

func TestNoWasmWithoutBinding(t *testing.T) {
	eng, err := engine.New(engine.Options{Slots: 1})
	require.NoError(t, err)
	defer eng.Close()
	res, err := eng.Eval(context.Background(), `typeof WebAssembly`)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, "undefined", v)
	_ = errors.New
}

func TestGlobals(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const out = [];
		const i64 = new WebAssembly.Global({value: 'i64', mutable: true}, -5n);
		out.push(i64.value, typeof i64.value);
		i64.value = 2n ** 63n; // wraps, as BigInt.asIntN(64)
		out.push(i64.value);
		const f32 = new WebAssembly.Global({value: 'f32'}, 1.1);
		out.push(f32.value === Math.fround(1.1), f32.valueOf() === f32.value);
		try { f32.value = 2; } catch (e) { out.push(e.name); }
		const f64 = new WebAssembly.Global({value: 'f64', mutable: true});
		out.push(f64.value);
		try { new WebAssembly.Global({value: 'v128'}); } catch (e) { out.push(e.name); }
		try { new WebAssembly.Global({value: 'i64'}, 1); } catch (e) { out.push(e.name); }
		out.push(String(i64), Object.prototype.toString.call(i64));
		return out`)
	assert.Equal(t, []any{"-5", "bigint", "-9223372036854775808", true, true, "TypeError", 0.0, "TypeError", "TypeError",
		"[object WebAssembly.Global]", "[object WebAssembly.Global]"}, normalize(v))
}

func TestMemoryDescriptor(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{}, jswasm.Options{})
	v := mustEval(t, eng, `
		const out = [];
		for (const d of [undefined, {}, {initial: -1}, {initial: 2, maximum: 1}, {initial: 70000}, {initial: 1, shared: true}]) {
			try { new WebAssembly.Memory(d); out.push('made'); } catch (e) { out.push(e.name); }
		}
		const m = new WebAssembly.Memory({initial: 1, maximum: 2});
		try { m.grow(2); } catch (e) { out.push(e.name); }
		out.push(m.grow(1), m.buffer.byteLength, m.buffer instanceof ArrayBuffer);
		return out`)
	assert.Equal(t, []any{"TypeError", "TypeError", "RangeError", "RangeError", "RangeError", "TypeError", "RangeError",
		1.0, 131072.0, true}, v)
}

// TestSameInEverySandbox: WebAssembly and its classes list their
// properties in one order in every sandbox (a workunit's result must not
// depend on which sandbox ran it).
func TestSameInEverySandbox(t *testing.T) {
	eng, _ := newEngine(t, engine.Options{Slots: 2}, jswasm.Options{})
	src := `[Object.getOwnPropertyNames(globalThis).filter(n => n === 'WebAssembly').length,
		...['', '.Module', '.Instance', '.Memory', '.Global'].map(p => {
			const o = eval('WebAssembly' + p);
			return Object.getOwnPropertyNames(o).join() + '|' + (o.prototype ? Object.getOwnPropertyNames(o.prototype).join() : '');
		})]`
	var first any
	for _, realm := range []string{"a", "b", "c"} {
		res, err := eng.Run(context.Background(), engine.Request{Realm: realm, Spec: &workunit.Spec{Kind: workunit.Eval, Source: src}})
		require.NoError(t, err)
		v, err := res.Decode()
		require.NoError(t, err)
		if first == nil {
			first = v
			continue
		}
		assert.Equal(t, first, v, "realm %s", realm)
	}
	assert.Equal(t, 1.0, first.([]any)[0])
	assert.Equal(t, "validate,compile,instantiate,Module,Instance,Memory,Global,CompileError,LinkError,RuntimeError|", first.([]any)[1])
}

// A memory stays counted against the worker's limit after a module that
// imported it is gone, and dropped importers are closed. wazero frees a
// shared memory (and drops riot's allocator from it) when any module
// holding it closes: once a dropped instance was closed, the memory's
// later growth went uncounted, and a workunit could grow it past the
// worker's limit. The race detector also saw two cleanups free one memory
// at once.
func TestSharedMemoryOutlivesImporter(t *testing.T) {
	b, err := jswasm.New(context.Background(), jswasm.Options{})
	require.NoError(t, err)
	released := make(chan int, 1024)
	jswasm.SetOnRelease(b, func(n int) { released <- n })
	eng, err := engine.New(engine.Options{Slots: 1, MemoryLimit: 256 << 20, Bindings: []engine.Binding{b}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, eng.Close())
		require.NoError(t, b.Close(context.Background()))
	})
	grow := moduleLiteral(t, "grow")

	// waitClosed collects cleanups until n importers' modules (a shim and
	// the instance each) are closed. (The script's own Memory, mem, is a
	// holder of one module, released too.)
	waitClosed := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for got := 0; got < n; {
			require.True(t, time.Now().Before(deadline), "%d of %d dropped instances were closed", got, n)
			runtime.GC()
			select {
			case k := <-released:
				if k == 2 {
					got++
				}
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	v := mustEval(t, eng, `
		globalThis.M = new WebAssembly.Memory({initial: 1});
		new Uint8Array(M.buffer)[7] = 9;
		globalThis.G = new WebAssembly.Module(`+grow+`);
		let sum = 0;
		for (let k = 0; k < 50; k++) sum += new WebAssembly.Instance(G, {env: {mem: M}}).exports.peek(7);
		return sum`)
	assert.Equal(t, 450.0, v)
	waitClosed(50)

	// 512 MiB more is past the worker's 256 MiB: memory.grow gives -1.
	v = mustEval(t, eng, `
		const i = new WebAssembly.Instance(G, {env: {mem: M}});
		return [i.exports.peek(7), i.exports.grow(8192), M.buffer.byteLength, i.exports.grow(1), M.buffer.byteLength]`)
	assert.Equal(t, []any{9.0, -1.0, 65536.0, 1.0, 131072.0}, v)
}
