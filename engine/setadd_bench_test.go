package engine

import (
	"context"
	"testing"
)

// BenchmarkEngine_SetAdd: a workunit that builds a Set of 100,000
// numbers, through Set.prototype.add (which worker runtimes wrap to see
// changes to shared Sets).
func BenchmarkEngine_SetAdd(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.Eval(ctx, `{ const s = new Set(); for (let i = 0; i < 100000; i++) s.add(i); s.size }`); err != nil {
			b.Fatal(err)
		}
	}
}
