package jswasm_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jswasm"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkWasmCall is one call of an exported function (i32 in, i32
// out) from a workunit's JavaScript, against one call of a JavaScript
// function that does the same.
func BenchmarkWasmCall(b *testing.B) {
	eng, _ := newEngine(b, engine.Options{}, jswasm.Options{})
	for _, tc := range []struct{ name, fn string }{
		{"wasm", `new WebAssembly.Instance(new WebAssembly.Module(PLAIN)).exports.inc`},
		{"js", `(x) => (x + 1) | 0`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			src := script(b, fmt.Sprintf(`const inc = %s; let s = 0; for (let k = 0; k < %d; k++) s = inc(s); return s;`, tc.fn, b.N))
			b.ResetTimer()
			res, err := eng.Run(context.Background(), engine.Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: src}})
			require.NoError(b, err)
			v, err := res.Decode()
			require.NoError(b, err)
			require.Equal(b, float64(b.N), v)
		})
	}
}

// BenchmarkWasmLoop is the cost of wazero's termination check, which lets
// the time limit stop a loop in wasm: one iteration of plain.wasm's sum
// (a loop of a load and two adds) with the check (as riot runs modules)
// and without (as riot cannot: nothing would stop an endless loop).
func BenchmarkWasmLoop(b *testing.B) {
	code, err := os.ReadFile("testdata/plain.wasm")
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		cfg  wazero.RuntimeConfig
	}{
		{"checked", wazero.NewRuntimeConfig().WithCloseOnContextDone(true)},
		{"unchecked", wazero.NewRuntimeConfig()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rt := wazero.NewRuntimeWithConfig(ctx, tc.cfg)
			defer rt.Close(ctx)
			m, err := rt.Instantiate(ctx, code)
			require.NoError(b, err)
			sum := m.ExportedFunction("sum")
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(b.N-done, 65536)
				_, err := sum.Call(ctx, 0, uint64(n))
				require.NoError(b, err)
				done += n
			}
		})
	}
}
