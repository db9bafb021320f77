package engine

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// evalValue evaluates src and returns its result as a Go value.
func evalValue(t testing.TB, e *Engine, src string) any {
	t.Helper()
	res, err := e.Eval(context.Background(), src)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	return v
}

// evalError evaluates src, which must fail, and returns its error.
func evalError(t testing.TB, e *Engine, req Request) (*workunit.Error, *Result) {
	t.Helper()
	res, err := e.Run(context.Background(), req)
	require.Error(t, err)
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr), "error %v (%T) is not a *workunit.Error", err, err)
	return werr, res
}

func evalReq(src string) Request {
	return Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval"}}
}

func TestEngine_Eval_Values(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	tests := []struct {
		src  string
		want any
	}{
		{"1 + 1", 2.0},
		{"'a' + 'b'", "ab"},
		{"var x = 20; x + 1", 21.0},
		{"({a: 1, b: [true, null]})", map[string]any{"a": 1.0, "b": []any{true, nil}}},
		{"undefined", value.Undefined{}},
		{"(async () => 7)()", 7.0},
		{"new Promise(r => setTimeout(() => r('late'), 5))", "late"},
		{"riot.worker.name + '/' + riot.worker.slot", "local/0"},
		{"typeof performance.now()", "number"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, evalValue(t, e, tt.src), "source %q", tt.src)
	}
}

// A request's WorkerName is what its workunit sees as riot.worker.name,
// also in a realm made for an earlier request with another name (a worker
// renamed on a reconnect); a request without one sees Options.WorkerName.
func TestEngine_WorkerName_PerRequest(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, WorkerName: "foo"})
	// The realm keeps what an earlier workunit read, to show that the
	// name is read again, not kept.
	src := "(() => { const before = globalThis.seen; globalThis.seen = riot.worker.name; return [before ?? null, riot.worker.name] })()"
	tests := []struct {
		name string // Request.WorkerName
		want []any
	}{
		{"", []any{nil, "foo"}},
		{"foo-2", []any{"foo", "foo-2"}},
		{"foo-2", []any{"foo-2", "foo-2"}},
		{"", []any{"foo-2", "foo"}},
		{"bar", []any{"foo", "bar"}},
	}
	for i, tt := range tests {
		req := evalReq(src)
		req.WorkerName = tt.name
		res, err := e.Run(context.Background(), req)
		require.NoError(t, err, "request %d", i)
		v, err := res.Decode()
		require.NoError(t, err)
		assert.Equal(t, tt.want, v, "request %d (WorkerName %q)", i, tt.name)
	}
	// The property stays read-only, and riot.worker frozen.
	assert.Equal(t, []any{"foo", true}, evalValue(t, e,
		"'use strict'; let threw = false; try { riot.worker.name = 'x' } catch (e) { threw = e instanceof TypeError }; [riot.worker.name, threw]"))
}

func TestEngine_Console(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	res, err := e.Eval(context.Background(), `
		console.log('hello', 'world', 42);
		console.warn('%s is %d years', 'Bob', 42.5);
		console.error({a: [1, {b: {c: {d: 1}}}], s: 'x'});
		console.info(new Map([['k', 1]]), new Set([1]), 10n, -0, [1, , 3].length);
		console.debug(function named() {}, () => 1, class K {}, Symbol('s'));
		1`)
	require.NoError(t, err)
	require.Equal(t, []workunit.ConsoleLine{
		{Level: workunit.LevelLog, Text: "hello world 42"},
		{Level: workunit.LevelWarn, Text: "Bob is 42.5 years"},
		{Level: workunit.LevelError, Text: "{ a: [ 1, { b: [Object] } ], s: 'x' }"},
		{Level: workunit.LevelInfo, Text: "Map(1) { 'k' => 1 } Set(1) { 1 } 10n -0 3"},
		{Level: workunit.LevelDebug, Text: "[Function: named] [Function (anonymous)] [class K] Symbol(s)"},
	}, lines(t, res.Console))
}

func TestEngine_Console_Limit(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxConsoleBytes: 100})
	res, err := e.Eval(context.Background(), `for (let i = 0; i < 50; i++) console.log('0123456789'); 1`)
	require.NoError(t, err)
	got := lines(t, res.Console)
	// Each line is 16 encoded bytes, and a line is kept while 26 (its
	// text and the most its heads can take) still fit: 5 fit in 100,
	// and the rest are counted.
	require.Len(t, got, 6)
	assert.Contains(t, got[5].Text, "45 lines (450 bytes) of console output dropped")
}

// TestEngine_Console_Limit_EmptyLines: lines without text count against
// the limit too, so a loop of console.log() cannot grow a workunit's
// console (and its Done) without bound.
func TestEngine_Console_Limit_EmptyLines(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxConsoleBytes: 1000})
	res, err := e.Eval(context.Background(), `for (let i = 0; i < 100000; i++) console.log(); 1`)
	require.NoError(t, err)
	assert.Less(t, len(res.Console), 1200)
	got := lines(t, res.Console)
	assert.Contains(t, got[len(got)-1].Text, "lines (0 bytes) of console output dropped")
}

// TestEngine_Sandbox_Absent proves that a workunit sees no file system,
// network, process, environment, host require or module system.
func TestEngine_Sandbox_Absent(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	for _, name := range []string{
		"require", "process", "module", "exports", "global", "Buffer", "fs", "os", "net", "http",
		"fetch", "XMLHttpRequest", "WebSocket", "Deno", "Bun", "navigator", "__dirname", "__filename",
		"load", "print", "readFile", "setImmediate", "importScripts", "Worker", "env",
	} {
		assert.Equal(t, "undefined", evalValue(t, e, "typeof "+name), "global %s", name)
	}
	// The global object holds the ECMAScript built-ins and riot's few names,
	// nothing else.
	got := evalValue(t, e, `Object.getOwnPropertyNames(globalThis).filter(n => ![
		'Object','Function','Array','String','Boolean','Number','BigInt','Symbol','Date','RegExp','Error',
		'AggregateError','EvalError','RangeError','ReferenceError','SyntaxError','TypeError','URIError',
		'Math','JSON','Reflect','Proxy','Promise','Map','Set','WeakMap','WeakSet','WeakRef','FinalizationRegistry',
		'ArrayBuffer','SharedArrayBuffer','DataView','Int8Array','Uint8Array','Uint8ClampedArray','Int16Array',
		'Uint16Array','Int32Array','Uint32Array','Float32Array','Float64Array','BigInt64Array','BigUint64Array',
		'Float16Array','Atomics','globalThis','NaN','Infinity','undefined','eval','isFinite','isNaN','parseFloat',
		'parseInt','decodeURI','decodeURIComponent','encodeURI','encodeURIComponent','escape','unescape',
		'Iterator','AsyncIterator','Intl',
	].includes(n)).sort()`)
	// (A worker adds the GPU bindings, engine/jsgpu: see its
	// TestGPU_Globals.) __riot_guard is the BigInt operators' guard
	// (engine/internal/opguard), not enumerable.
	assert.Equal(t, []any{"Crypto", "DOMException", "TextDecoder", "TextEncoder", "URL", "URLSearchParams",
		"__riot_guard", "atob", "btoa", "clearInterval", "clearTimeout", "console", "crypto", "performance", "queueMicrotask",
		"riot", "setInterval", "setTimeout", "sleep", "structuredClone"}, got)
	// riot on a worker holds only riot.worker, frozen.
	assert.Equal(t, []any{"worker"}, evalValue(t, e, "Object.keys(riot)"))
	assert.Equal(t, true, evalValue(t, e, "Object.isFrozen(riot) && Object.isFrozen(riot.worker)"))
}

// TestEngine_Timers_DoNotOutlive checks that a timer still pending when its
// workunit ends never fires, in that workunit or a later one.
func TestEngine_Timers_DoNotOutlive(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	evalValue(t, e, `globalThis.fired = false; setTimeout(() => { globalThis.fired = true }, 1); setInterval(() => { globalThis.fired = true }, 1); 0`)
	// This workunit waits on a timer of its own, longer than the ones
	// above: if those were still alive, they would fire first.
	assert.Equal(t, false, evalValue(t, e, `new Promise(r => setTimeout(() => r(globalThis.fired), 20))`))
}

func TestEngine_Timers_Order(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	// The promise settles once every callback that should run has run (on
	// a loaded machine the interval's three ticks can take longer than any
	// fixed wait), and a little after, so that a cleared timer (5 ms) would
	// have had its chance: the last callback is due at 10 ms at the soonest.
	got := evalValue(t, e, `new Promise(resolve => {
		const out = [];
		const push = (x) => { out.push(x); if (out.length === 6) setTimeout(() => resolve(out), 5); };
		setTimeout(() => push('b'), 10);
		setTimeout(() => push('a'), 1);
		const id = setTimeout(() => push('never'), 5);
		clearTimeout(id);
		let n = 0;
		const iv = setInterval(() => { push('i' + n); if (++n === 3) clearInterval(iv) }, 1);
		queueMicrotask(() => push('micro'));
	})`)
	out := got.([]any)
	require.Equal(t, "micro", out[0])
	assert.ElementsMatch(t, []any{"micro", "a", "b", "i0", "i1", "i2"}, out)
	assert.Less(t, slices.Index(out, "a"), slices.Index(out, "b"), "the 1 ms timer fires before the 10 ms one")
}

func TestEngine_Sleep(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	assert.Equal(t, true, evalValue(t, e, `const t0 = performance.now(); sleep(0.02); performance.now() - t0 >= 20`))
	werr, _ := evalError(t, e, evalReq(`sleep(-1)`))
	assert.Equal(t, "RangeError", werr.Name)
}

func TestEngine_Limit_Time(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	for _, src := range []string{`globalThis.dirty = 1; while (true) {}`, `globalThis.dirty = 1; sleep(3600)`} {
		req := evalReq(src)
		req.Timeout = 50 * time.Millisecond
		werr, _ := evalError(t, e, req)
		assert.Equal(t, workunit.TimeLimit, werr.Kind)
		assert.Equal(t, "TimeoutError", werr.Name)
		assert.Equal(t, "workunit ran past its time limit of 50ms", werr.Message)
		// The next workunit on the slot gets a clean runtime.
		assert.Equal(t, "undefined", evalValue(t, e, "typeof dirty"))
	}
}

func TestEngine_Limit_Stack(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxCallStackSize: 500})
	for _, src := range []string{
		`globalThis.dirty = 1; function f() { return f() + 1 } f()`,
		`globalThis.dirty = 1; function g() { return [1].map(g) } g()`,
		`globalThis.dirty = 1; function h() { return JSON.stringify({ toJSON: h }) } h()`,
		`globalThis.dirty = 1; const o = { get x() { return this.x } }; o.x`,
	} {
		werr, _ := evalError(t, e, evalReq(src))
		assert.Equal(t, workunit.StackLimit, werr.Kind, src)
		assert.Equal(t, "RangeError", werr.Name)
		assert.Equal(t, "Maximum call stack size exceeded (the limit is 500 frames)", werr.Message)
		assert.Equal(t, "undefined", evalValue(t, e, "typeof dirty"))
	}
}

func TestEngine_Limit_StringLength(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	werr, _ := evalError(t, e, evalReq(`const a = []; while (true) a.push('x'.repeat(2 ** 29))`))
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "RangeError", werr.Name)
	assert.Equal(t, "Invalid string length", werr.Message)
	assert.Equal(t, "xxx", evalValue(t, e, "'x'.repeat(3)"))
	assert.Equal(t, "--ab", evalValue(t, e, "'ab'.padStart(4, '-')"))
}

// TestEngine_Limit_Memory runs alone: the guard watches the whole process's
// heap.
// The guard says so once per episode, not once per look while the
// interrupted workunit unwinds.
func TestEngine_Limit_Memory(t *testing.T) {
	var logs countingHandler
	e := newEngine(t, Options{Slots: 2, MemoryLimit: 256 << 20, Timeout: 2 * time.Minute, Logger: slog.New(&logs)})
	// Two at once, so that one unwinds while the other is interrupted;
	// each spins a while first, so that both run when the heap passes.
	src := `globalThis.dirty = 1; const t0 = Date.now(); while (Date.now() - t0 < 300) {}
		const s = 'x'.repeat(2 ** 22); const a = []; while (true) a.push(s + a.length)`
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = e.Run(context.Background(), evalReq(src)) })
	}
	wg.Wait()
	for _, err := range errs {
		var werr *workunit.Error
		require.ErrorAs(t, err, &werr)
		assert.Equal(t, workunit.MemoryLimit, werr.Kind)
		assert.Equal(t, "OutOfMemoryError", werr.Name)
		assert.Contains(t, werr.Message, "the worker's heap passed its limit of 256.0 MiB")
	}
	assert.Equal(t, "undefined", evalValue(t, e, "typeof dirty"))
	assert.Equal(t, 1, logs.count("heap passed the memory limit; interrupting running workunits"), "one warning for the episode")
}

// countingHandler is a slog.Handler that counts the records by message.
type countingHandler struct {
	mu  sync.Mutex
	msg map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.msg == nil {
		h.msg = map[string]int{}
	}
	h.msg[r.Message]++
	return nil
}

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg[msg]
}

func TestEngine_Limit_Result(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxResultBytes: 1000})
	werr, _ := evalError(t, e, evalReq(`'x'.repeat(2000)`))
	assert.Equal(t, workunit.ResultLimit, werr.Kind)
	assert.Equal(t, "the result is larger than the limit of 1000 B", werr.Message)
	assert.Equal(t, 10.0, evalValue(t, e, "'x'.repeat(10).length"))
}

// signalSource is a blob.Source that closes fetched on its first fetch.
type signalSource struct {
	blob.Map
	once    sync.Once
	fetched chan struct{}
}

func (s *signalSource) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	s.once.Do(func() { close(s.fetched) })
	return s.Map.Blob(ctx, h)
}

func TestEngine_Canceled(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	src := &signalSource{Map: blob.Map{}, fetched: make(chan struct{})}
	data, err := value.Marshal(1.0)
	require.NoError(t, err)
	h := src.Put(data)
	payload, err := value.Marshal([]any{&value.Function{Source: "() => { while (one) {} }", Env: map[string]any{"one": value.BlobRef(h)}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src})
		done <- err
	}()
	<-src.fetched // the workunit is running
	cancel()
	err = <-done
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, workunit.Canceled, werr.Kind)
	assert.Equal(t, "AbortError", werr.Name)
	assert.Equal(t, 1.0, evalValue(t, e, "1"))
}

func TestEngine_Thrown(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	werr, _ := evalError(t, e, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Name: "job.js", Source: "let a = 1;\nfunction f() {\n  null.x;\n}\nf();"}})
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "TypeError", werr.Name)
	assert.Contains(t, werr.Message, "Cannot read property 'x'")
	assert.Contains(t, werr.Stack, "at f (job.js:3:")
	assert.Contains(t, werr.Stack, "at job.js:5:")

	werr, _ = evalError(t, e, evalReq("throw {code: 7}"))
	assert.Equal(t, "", werr.Name)
	assert.Equal(t, "Uncaught { code: 7 }", werr.Message)
	v, err := value.Unmarshal(werr.Value)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"code": 7.0}, v)

	werr, _ = evalError(t, e, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Name: "bad.js", Source: "1 +\n+ )"}})
	assert.Equal(t, "SyntaxError", werr.Name)
	assert.Contains(t, werr.Stack, "bad.js:2:")

	werr, _ = evalError(t, e, evalReq("Promise.reject(new RangeError('no'))"))
	assert.Equal(t, "RangeError", werr.Name)
	assert.Equal(t, "no", werr.Message)

	werr, _ = evalError(t, e, evalReq("new Promise(() => {})"))
	assert.Contains(t, werr.Message, "can never settle")

	// An error thrown with console output before it keeps the output.
	werr, res := evalError(t, e, evalReq("console.log('before'); throw new Error('after')"))
	assert.Equal(t, "Error: after", werr.Error())
	assert.Equal(t, []workunit.ConsoleLine{{Level: workunit.LevelLog, Text: "before"}}, lines(t, res.Console))
}

// TestEngine_ThrownLarge: an error's texts are cut at MaxErrorBytes, each
// with a note of how much was cut (a stack keeps its innermost frames),
// and a thrown value whose encoding passes MaxThrownBytes is not sent,
// which the message says. A regression test: they were sent whole, and a
// report larger than a frame was never sent (its workunit stayed running).
func TestEngine_ThrownLarge(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxErrorBytes: 1000, MaxThrownBytes: 4096})
	werr, _ := evalError(t, e, evalReq("function deep() { throw new Error('x'.repeat(1e6)) }\ndeep()"))
	assert.Equal(t, workunit.Thrown, werr.Kind)
	assert.Equal(t, "Error", werr.Name)
	assert.Equal(t, strings.Repeat("x", 960)+"... [999040 more bytes cut]", werr.Message)
	assert.LessOrEqual(t, len(werr.Stack), 1000)
	assert.Regexp(t, `^Error: x+\n    \.\.\. \[\d+ bytes cut\] \.\.\.\n`, werr.Stack)
	assert.Contains(t, werr.Stack, "at deep (eval:1:", "the innermost frames stay")

	werr, _ = evalError(t, e, evalReq("const e = new Error('m'); e.name = 'N'.repeat(5000); e.big = 'x'.repeat(1e6); throw e"))
	assert.Equal(t, strings.Repeat("N", 960)+"... [4040 more bytes cut]", werr.Name)
	assert.Equal(t, "m", werr.Message, "an Error's own properties are not sent")
	assert.LessOrEqual(t, len(werr.Stack), 1000)

	werr, _ = evalError(t, e, evalReq("throw {big: 'x'.repeat(1e6)}"))
	assert.Nil(t, werr.Value)
	note := " (the thrown value is not sent: its encoding is larger than 4.0 KiB)"
	assert.LessOrEqual(t, len(werr.Message), 1000)
	assert.Regexp(t, `^Uncaught \{\s+big: 'x+\.\.\. \[\d+ more bytes cut\]`+regexp.QuoteMeta(note)+`$`, werr.Message)
	assert.Contains(t, werr.Stack, note)

	werr, _ = evalError(t, e, evalReq("throw {small: 'x'.repeat(100)}"))
	assert.NotNil(t, werr.Value, "a thrown value within the bound is sent")
}

func TestEngine_Unsendable(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	for src, msg := range map[string]string{
		"({a: [1, function () {}]})":             "result.a[1]: a function cannot be sent back to the master",
		"({'odd key': Symbol('x')})":             `result["odd key"]: a symbol cannot be sent back to the master`,
		"new Map([[1, {p: Promise.resolve()}]])": "result<Map value #0>.p: a Promise cannot be sent back to the master",
		"[new WeakMap()]":                        "result[0]: a WeakMap cannot be sent back to the master",
	} {
		werr, _ := evalError(t, e, evalReq(src))
		assert.Equal(t, workunit.Unsendable, werr.Kind)
		assert.Equal(t, "DataCloneError", werr.Name)
		assert.Equal(t, msg, werr.Message)
	}
}

func TestEngine_Realms(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	run := func(realm, src string) any {
		req := evalReq(src)
		req.Realm = realm
		res, err := e.Run(context.Background(), req)
		require.NoError(t, err)
		v, err := res.Decode()
		require.NoError(t, err)
		return v
	}
	run("a", "globalThis.mine = 'a'; Object.prototype.polluted = 1; 0")
	assert.Equal(t, "undefined", run("b", "typeof mine"))
	assert.Equal(t, "undefined", run("b", "typeof ({}).polluted"))
	assert.Equal(t, "a", run("a", "mine"))
}

func TestEngine_Concurrent(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 4})
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.CallFunc(context.Background(), &value.Function{Source: "(n) => { let s = 0; for (let i = 0; i < n; i++) s += i; return s }"}, 1000.0)
			if err != nil {
				bad.Add(1)
				return
			}
			if v, _ := res.Decode(); v != 499500.0 {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, bad.Load())
}

func TestEngine_Fn(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	isEven := &value.Function{Source: "function isEven(n) { return n === 0 ? true : isOdd(n - 1) }", Env: map[string]any{}}
	isOdd := &value.Function{Source: "function isOdd(n) { return n === 0 ? false : isEven(n - 1) }", Env: map[string]any{"isEven": isEven}}
	isEven.Env["isOdd"] = isOdd
	res, err := e.CallFunc(context.Background(), &value.Function{
		Source: "(x) => [isEven(x), isOdd(x), scale * x, fact(5)]",
		Env: map[string]any{
			"isEven": isEven, "isOdd": isOdd, "scale": 3.0,
			"fact": &value.Function{Source: "function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) }"},
		},
	}, 7.0)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, []any{false, true, 21.0, 120.0}, v)
}

func TestEngine_Fn_StackLines(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	_, err := e.CallFunc(context.Background(), &value.Function{
		Source: "function boom(x) {\n  if (x) {\n    throw new Error('boom ' + x)\n  }\n}",
		File:   "job.js", Line: 40, Column: 3,
	}, 1.0)
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr))
	assert.Contains(t, werr.Stack, "at boom (job.js:42:11)")
}

func TestEngine_Call(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	mods := blob.Map{}
	put := func(m *workunit.Module) blob.Hash {
		b, err := m.MarshalBinary()
		require.NoError(t, err)
		return mods.Put(b)
	}
	util := put(&workunit.Module{Path: "lib/util.js", Source: "globalThis.loads = (globalThis.loads || 0) + 1;\nexports.twice = x => 2 * x;"})
	main := put(&workunit.Module{Path: "do-work-call.js", Source: "const u = require('./lib/util');\nexports.double = x => u.twice(x);\nexports.loads = () => globalThis.loads;\nexports.fail = () => { throw new TypeError('nope') };\nexports.notfn = 3;",
		Requires: map[string]blob.Hash{"./lib/util": util}})
	for i := 0; i < 3; i++ {
		res, err := e.Call(context.Background(), mods, main, "double", float64(i))
		require.NoError(t, err)
		v, _ := res.Decode()
		assert.Equal(t, float64(2*i), v)
	}
	res, err := e.Call(context.Background(), mods, main, "loads")
	require.NoError(t, err)
	v, _ := res.Decode()
	assert.Equal(t, 1.0, v, "a module's top level runs once per runtime")

	_, err = e.Call(context.Background(), mods, main, "tripl")
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, workunit.Invalid, werr.Kind)
	assert.Equal(t, `module do-work-call.js has no export "tripl" (it exports: double, loads, fail, notfn)`, werr.Message)

	_, err = e.Call(context.Background(), mods, main, "fail")
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, "TypeError", werr.Name)
	assert.Contains(t, werr.Stack, "do-work-call.js:4:")

	bad := put(&workunit.Module{Path: "bad.js", Source: "require('fs')"})
	_, err = e.Call(context.Background(), mods, bad, "x")
	require.True(t, errors.As(err, &werr))
	assert.Contains(t, werr.Message, `require("fs") in bad.js: no such module was shipped`)

	_, err = e.Call(context.Background(), mods, blob.Sum([]byte("missing")), "x")
	require.True(t, errors.As(err, &werr))
	assert.Equal(t, workunit.Invalid, werr.Kind)
}

// countingSource is a blob.Source that counts its fetches.
type countingSource struct {
	blob.Map
	n atomic.Int32
}

func (c *countingSource) Blob(ctx context.Context, h blob.Hash) ([]byte, error) {
	c.n.Add(1)
	return c.Map.Blob(ctx, h)
}

// A blob value is each workunit's own copy: what one workunit changes in
// it, it sees, and the next workunit on the runtime does not. A regression
// test: the copy was shared and frozen, and a write was lost (a TypeError
// with no message in strict code). The blob is still fetched once.
func TestEngine_BlobValue_OwnCopyPerWorkunit(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	words := make([]any, 1000)
	for i := range words {
		words[i] = strings.Repeat("w", i%7+3)
	}
	set := &value.Set{Values: []any{"a", "b"}}
	data, err := value.Marshal(map[string]any{"words": words, "set": set, "nested": map[string]any{"n": 1.0},
		"bytes": []byte{1, 2, 3}})
	require.NoError(t, err)
	src := &countingSource{Map: blob.Map{}}
	h := src.Put(data)
	for _, strict := range []string{"", "'use strict'; "} {
		fn := &value.Function{Source: `(i) => { ` + strict + `
			const before = [big.words.length, big.words[0], big.set.size, big.nested.n, big.bytes[0]];
			big.words.push('x'); big.words[0] = 'changed'; big.set.add(i); big.nested.n = i; big.bytes[0] = 99;
			big.extra = true; delete big.nested;
			return [before, big.words.length, big.words[0], big.set.has(i), big.extra, 'nested' in big, big.bytes[0], same === big];
		}`, Env: map[string]any{"big": value.BlobRef(h), "same": value.BlobRef(h)}}
		for i := range 3 {
			payload, err := value.Marshal([]any{fn, float64(i + 10)})
			require.NoError(t, err)
			res, err := e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src})
			require.NoError(t, err, "strict %q, workunit %d", strict, i)
			v, _ := res.Decode()
			assert.Equal(t, []any{[]any{1000.0, "www", 2.0, 1.0, 1.0}, 1001.0, "changed", true, true, false, 99.0, true}, v,
				"strict %q, workunit %d: its writes work, and the last one's are gone", strict, i)
		}
	}
	assert.Equal(t, int32(1), src.n.Load(), "the blob is fetched once per runtime")
}

func TestEngine_Fn_SelfAndShared(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	fib := &value.Function{Source: "(n) => n < 2 ? n : fib(n - 1) + fib(n - 2)", Env: map[string]any{}}
	fib.Env["fib"] = fib
	cfg := map[string]any{"k": 2.0}
	get := &value.Function{Source: "() => cfg", Env: map[string]any{"cfg": cfg}}
	res, err := e.CallFunc(context.Background(), &value.Function{
		Source: "() => [fib(10), get() === cfg, cfg.k]",
		Env:    map[string]any{"fib": fib, "get": get, "cfg": cfg},
	})
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, []any{55.0, true, 2.0}, v)
}

// lines decodes a workunit's console output.
func lines(t *testing.T, c workunit.Console) []workunit.ConsoleLine {
	t.Helper()
	l, err := c.Lines()
	require.NoError(t, err)
	return l
}

// A function that was strict where it was written runs strict: assigning
// to an undeclared variable throws, and `this` of a plain call is
// undefined. A sloppy one runs sloppy. A regression test: strictness was
// lost on the way, and such code ran sloppy on the worker.
func TestEngine_Fn_Strict(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	// Each case assigns its own name: the sloppy one makes a global.
	src := func(name string) string {
		return "() => { const self = (function () { return this })(); try { " + name + " = 1; return [self === undefined, 'assigned'] } catch (e) { return [self === undefined, e.name] } }"
	}
	for i, tc := range []struct {
		strict bool
		env    map[string]any
		want   []any
	}{
		{false, nil, []any{false, "assigned"}},
		{true, nil, []any{true, "ReferenceError"}},
		{true, map[string]any{"k": 1.0}, []any{true, "ReferenceError"}},
	} {
		res, err := e.CallFunc(context.Background(), &value.Function{Source: src("undeclared" + strconv.Itoa(i)), Env: tc.env, Strict: tc.strict})
		require.NoError(t, err)
		v, err := res.Decode()
		require.NoError(t, err)
		assert.Equal(t, tc.want, v, "strict %v, env %v", tc.strict, tc.env)
	}
	// Functions that refer to each other (made before their variables).
	a := &value.Function{Source: "() => b()", Env: map[string]any{}, Strict: true}
	b := &value.Function{Source: "() => { try { undeclaredCycle = a; return 'assigned' } catch (e) { return e.name } }", Env: map[string]any{"a": a}, Strict: true}
	a.Env["b"] = b
	res, err := e.CallFunc(context.Background(), a)
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, "ReferenceError", v)
}

// Request.Print hears each line the console keeps, as it is printed
// (before the workunit ends), and not the lines past the limit nor the
// line that says how many were dropped; Result.Console holds them all.
func TestEngine_Console_Print(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, MaxConsoleBytes: 100})
	var heard []workunit.ConsoleLine
	spec := &workunit.Spec{Kind: workunit.Eval, Name: "eval",
		Source: `console.log('a'); console.error('b'); for (let i = 0; i < 50; i++) console.log('0123456789'); heard()`}
	res, err := e.Run(context.Background(), Request{Spec: spec, Print: func(level workunit.Level, text string) {
		heard = append(heard, workunit.ConsoleLine{Level: level, Text: text})
	}})
	// heard() is not defined: the workunit fails after printing, and its
	// console is still there.
	require.Error(t, err)
	got := lines(t, res.Console)
	require.Greater(t, len(got), len(heard))
	assert.Equal(t, got[:len(heard)], heard)
	assert.Equal(t, workunit.ConsoleLine{Level: workunit.LevelLog, Text: "a"}, heard[0])
	assert.Equal(t, workunit.ConsoleLine{Level: workunit.LevelError, Text: "b"}, heard[1])
	assert.Len(t, got, len(heard)+1)
	assert.Contains(t, got[len(got)-1].Text, "of console output dropped")
}
