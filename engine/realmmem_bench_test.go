package engine

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkEngine_RealmMemory reports the heap an idle realm keeps once it
// has run a trivial workunit: what the engine's idle runtimes cost per
// realm (Options.IdleRuntimes).
func BenchmarkEngine_RealmMemory(b *testing.B) {
	const n = 64
	payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + 1"}, 41.0})
	if err != nil {
		b.Fatal(err)
	}
	var per float64
	for b.Loop() {
		e := newEngine(b, Options{Slots: 1, IdleRuntimes: n})
		ctx := context.Background()
		if _, err := e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Realm: "warm"}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n - 1 {
			if _, err := e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Realm: "r" + strconv.Itoa(i)}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / (n - 1)
		runtime.KeepAlive(e)
	}
	b.ReportMetric(per, "bytes/realm")
}

// BenchmarkEngine_NewRealm builds a worker's runtime for a realm, as a
// worker does the first time a realm's workunit runs on a slot with no
// idle runtime of it: what 500 masters' workunits interleaving on a
// worker cost it until each realm has its runtimes.
func BenchmarkEngine_NewRealm(b *testing.B) {
	e := newEngine(b, Options{Slots: 1})
	b.ReportAllocs()
	for b.Loop() {
		rl, err := newRealm(e, "r")
		if err != nil {
			b.Fatal(err)
		}
		rl.close()
	}
}
