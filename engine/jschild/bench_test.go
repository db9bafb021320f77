package jschild_test

import (
	"context"
	"testing"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jschild"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkChildren_NewRealm: what the binding adds to making a
// workunit's runtime (each realm of each slot makes one).
func BenchmarkChildren_NewRealm(b *testing.B) {
	for _, c := range []struct {
		name     string
		bindings []engine.Binding
	}{{"without", nil}, {"with", []engine.Binding{jschild.Binding()}}} {
		b.Run(c.name, func(b *testing.B) {
			eng, err := engine.New(engine.Options{Slots: 1, RealmsPerSlot: 1, Bindings: c.bindings})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			ctx := context.Background()
			realms := []string{"a", "b"}
			for i := 0; b.Loop(); i++ {
				// A new realm each time: the slot keeps one.
				if _, err := eng.Run(ctx, engine.Request{Spec: evalSpec("1"), Realm: realms[i%2]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func evalSpec(src string) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval"}
}
