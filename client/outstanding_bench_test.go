package client_test

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/value"
)

// These benchmarks measure what a Go master costs per call: its own CPU
// and the heap it holds while calls are outstanding. riotd and the
// workers are real processes (built once per test binary, by the first
// benchmark that needs them), so that the benchmark process holds and
// spends only the client's share, which is what they report:
//
//	go test -run XXX -bench 'Outstanding|Pipelined' -benchtime 200000x ./client
//
// cpu-ns/call is the process's CPU time (user and system, every thread:
// the caller, the client's reader, writer and callback goroutines, the
// garbage collector) per call; B/outstanding the growth of the heap and
// stacks in use, after a collection, per call submitted and acknowledged
// and not finished.

var (
	benchBinsOnce sync.Once
	benchBinsDir  string
	benchBins     e2e.Bins
	benchBinsErr  error
)

// TestMain removes the commands the benchmarks built.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchBinsDir != "" {
		_ = os.RemoveAll(benchBinsDir)
	}
	os.Exit(code)
}

// binsFor builds riotd and riot-worker once for this test binary, into a
// temporary directory that TestMain removes.
func binsFor(b *testing.B) e2e.Bins {
	b.Helper()
	benchBinsOnce.Do(func() {
		benchBinsDir, benchBinsErr = os.MkdirTemp("", "riot-client-bench-")
		if benchBinsErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		benchBins, benchBinsErr = e2e.Build(ctx, benchBinsDir)
	})
	if benchBinsErr != nil {
		b.Fatal(benchBinsErr)
	}
	return benchBins
}

// trivialFn is riot-bench's workunit: each call's argument is distinct,
// so that no result comes from memory.
const trivialFn = "(i) => i + 1"

func benchDial(b *testing.B, addr string) *client.Client {
	b.Helper()
	c, err := client.Dial(b.Context(), addr, client.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// heapInUse returns the bytes of heap and stacks in use after a
// collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// BenchmarkOutstanding: b.N calls (DoWork of a trivial function, each
// argument distinct) submitted to riotd with no worker, every one
// acknowledged, none finished: the CPU that submitting and the
// acknowledgement cost, and the heap the client holds for them.
func BenchmarkOutstanding(b *testing.B) {
	bins := binsFor(b)
	tr := bins.StartTracker(b, e2e.TrackerOptions{})
	c := benchDial(b, tr.Addr())
	ctx := b.Context()
	fn := &value.Function{Source: trivialFn}
	calls := make([]*client.Call, b.N)
	// One call first, so that what every client has once (the encoder's
	// buffers, the tables' first buckets) is not counted per call.
	warm, err := c.DoWork(fn, -1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := warm.Accepted(ctx); err != nil {
		b.Fatal(err)
	}
	before := heapInUse()
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range calls {
		if calls[i], err = c.DoWork(fn, i); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range calls {
		if _, err := k.Accepted(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	after := heapInUse()
	runtime.KeepAlive(calls)
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/call")
	}
	b.ReportMetric((float64(after)-float64(before))/float64(b.N), "B/outstanding")
}

// BenchmarkPipelined: b.N calls (DoWork of a trivial function) pipelined
// through riotd to two riot-worker processes, every result waited for
// and checked: what the client spends per call from submission to
// result.
func BenchmarkPipelined(b *testing.B) {
	bins := binsFor(b)
	tr := bins.StartTracker(b, e2e.TrackerOptions{})
	for _, name := range []string{"w1", "w2"} {
		bins.StartWorker(b, tr.Addr(), e2e.WorkerOptions{Name: name, Slots: 1})
	}
	c := benchDial(b, tr.Addr())
	ctx := b.Context()
	fn := &value.Function{Source: trivialFn}
	// Warm the workers up (their realms, their prefetch) with calls of
	// their own, so that the measured ones find them running.
	const warmN = 2000
	for i := range warmN {
		k, err := c.DoWork(fn, -warmN+i)
		if err != nil {
			b.Fatal(err)
		}
		if i == warmN-1 {
			if _, err := k.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	calls := make([]*client.Call, b.N)
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	var err error
	for i := range calls {
		if calls[i], err = c.DoWork(fn, i); err != nil {
			b.Fatal(err)
		}
	}
	for i, k := range calls {
		out, err := k.Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		v, err := out.Value()
		if err != nil {
			b.Fatal(err)
		}
		if v != float64(i+1) {
			b.Fatalf("call %d: result %v, want %d", i, v, i+1)
		}
	}
	b.StopTimer()
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/call")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
