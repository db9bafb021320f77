package engine

import (
	"context"
	"strconv"
	"testing"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkEngine_CachedFunction evaluates a trivial fn workunit whose
// function the engine has seen before: the per-workunit cost of riot's
// engine (target: ≤ 5 µs).
func BenchmarkEngine_CachedFunction(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + 1"}, 41.0})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_CachedFunctionInline is BenchmarkEngine_CachedFunction
// with Request.Abandoned set, as a worker runs: the caller's goroutine
// evaluates, with no hand-off to the slot's executor.
func BenchmarkEngine_CachedFunctionInline(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + 1"}, 41.0})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Abandoned: func(*Result, error) {}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_CachedFunctionWithCapture is the same with a captured
// variable, so that each workunit makes its closure.
func BenchmarkEngine_CachedFunctionWithCapture(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + k", Env: map[string]any{"k": 1.0}}, 41.0})
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_CachedEval evaluates the same small script again and
// again: compiled once, run each time.
func BenchmarkEngine_CachedEval(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(ctx, "3 + 5"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_FreshSource evaluates a source never seen before each
// time: parse, compile and run.
func BenchmarkEngine_FreshSource(b *testing.B) {
	e := newEngine(b, Options{Slots: 1, CompileCacheSize: 64})
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		src := "function f(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s }\nf(" + strconv.Itoa(i) + ")"
		if _, err := e.Eval(ctx, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_JSONStringify stringifies an array of 10⁴ small objects
// in each workunit: the cost of the stop-aware JSON.stringify
// (bindNativeStops) on a large value.
func BenchmarkEngine_JSONStringify(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	ctx := context.Background()
	src := "globalThis.a ??= Array.from({length: 1e4}, (_, i) => ({i, s: 'x' + i})); JSON.stringify(a).length"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Eval(ctx, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine_Shifts runs a loop of 10⁴ shifts by a variable amount,
// which the BigInt operators' guard (engine/internal/opguard) turns into
// calls, and the same loop with literal amounts, which it leaves: the
// guard's cost on numeric code.
func BenchmarkEngine_Shifts(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"variable", "h = ((h << k) | (h >>> (32 - k))) ^ i; h = h >> k2"},
		{"literal", "h = ((h << 5) | (h >>> 27)) ^ i; h = h >> 1"},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEngine(b, Options{Slots: 1})
			ctx := context.Background()
			src := "(() => { let h = 1, k = 5, k2 = 1; for (let i = 0; i < 10000; i++) { " + c.body + " } return h })()"
			for b.Loop() {
				if _, err := e.Eval(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
