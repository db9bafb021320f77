package worker

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/internal/cputime"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkGCPacer_ManyRealms is engine's BenchmarkEngine_ManyRealms (a
// trivial function workunit for each of n realms in turn, on 2 slots, as
// a worker runs them) with Go's default GC percent and with the worker's
// pacer (gcpace.go) setting it from the engine's idle runtimes.
func BenchmarkGCPacer_ManyRealms(b *testing.B) {
	const slots = 2
	for _, paced := range []bool{false, true} {
		for _, n := range []int{1, 50, 500} {
			name := "default/" + strconv.Itoa(n)
			if paced {
				name = "paced/" + strconv.Itoa(n)
			}
			b.Run(name, func(b *testing.B) {
				e, err := engine.New(engine.Options{Slots: slots})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				ctx := context.Background()
				payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + 1"}, 41.0})
				if err != nil {
					b.Fatal(err)
				}
				reqs := make([]engine.Request, n)
				for i := range reqs {
					reqs[i] = engine.Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Realm: "realm-" + strconv.Itoa(i),
						Abandoned: func(*engine.Result, error) {}}
					if _, err := e.Run(ctx, reqs[i]); err != nil {
						b.Fatal(err)
					}
				}
				if paced {
					p := newGCPacer(func() uint64 { _, n := e.IdleRuntimes(); return n }, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
					pctx, stop := context.WithCancel(ctx)
					ended := make(chan struct{})
					go func() { defer close(ended); p.run(pctx) }()
					defer func() { stop(); <-ended }()
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cputime.Of(b)
				for range slots {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							if _, err := e.Run(ctx, reqs[i%int64(n)]); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(cputime.Of(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
