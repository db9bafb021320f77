package tracker_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// BenchmarkServer_BigResults makes 300 round trips of 1 MiB results (one
// workunit at a time: submit, the worker answers, the master gets its
// Finished) and reports the tracker process's heap in use afterwards, after
// a GC: what riotd keeps of the values it has handed out. memory, bolt
// (default --value-cache) and bolt with a 16 MiB cache.
func BenchmarkServer_BigResults(b *testing.B) {
	const trips, size = 300, 1 << 20
	for _, c := range []struct {
		name    string
		durable bool
		cache   int
	}{{"memory", false, 0}, {"bolt", true, 0}, {"bolt-cache16MiB", true, 16 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				opts := []trackertest.Option{trackertest.Quiet()}
				if c.durable {
					opts = append(opts, trackertest.Durable())
				}
				if c.cache != 0 {
					opts = append(opts, trackertest.WithOptions(func(o *tracker.Options) { o.ValueCache = c.cache }))
				}
				tr := trackertest.Start(b, opts...)
				w := benchDial(b, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 1})
				m := benchDial(b, tr, wire.Hello{Role: wire.RoleMaster, Name: "m"})
				w.write(b, &wire.Credit{N: 1})
				specs := benchSpecs(b, trips)
				res := make([]byte, size)
				for i := range res {
					res[i] = byte(i)
				}
				for i := range trips {
					m.write(b, &wire.Submit{Req: uint64(i + 1), Spec: specs[i], Watch: true})
					var a *wire.Assign
					for a == nil {
						for _, msg := range w.read(b) {
							if x, ok := msg.(*wire.Assign); ok {
								a = x
							}
						}
					}
					w.write(b, &wire.Done{Key: a.Key, Token: a.Token, Result: res, Elapsed: time.Microsecond}, &wire.Credit{N: 1})
					for got := false; !got; {
						for _, msg := range m.read(b) {
							if _, ok := msg.(*wire.Finished); ok {
								got = true
							}
						}
					}
				}
				runtime.GC()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heapMiB")
				m.ws.Close()
				w.ws.Close()
			}
		})
	}
}
