package engine

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/riot-go/riot/internal/cputime"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkEngine_ManyRealms runs a trivial function workunit for each of
// n realms in turn on 2 slots, as a worker runs them (on the caller's
// goroutine, Request.Abandoned set): n masters whose workunits interleave
// on one worker. Each realm ran once before the timer starts, so the
// figures are the steady state; 1 realm is one master's cost.
func BenchmarkEngine_ManyRealms(b *testing.B) {
	const slots = 2
	for _, n := range []int{1, 50, 500} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			e := newEngine(b, Options{Slots: slots})
			ctx := context.Background()
			payload, err := value.Marshal([]any{&value.Function{Source: "(x) => x + 1"}, 41.0})
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]Request, n)
			for i := range reqs {
				reqs[i] = Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Realm: "realm-" + strconv.Itoa(i),
					Abandoned: func(*Result, error) {}}
				if _, err := e.Run(ctx, reqs[i]); err != nil {
					b.Fatal(err)
				}
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
			// CPU time rather than wall time: the slots' work, whatever
			// else shares the machine's cores.
			b.ReportMetric(float64(cputime.Of(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
