package tracker_test

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// benchConn is a lean protocol peer for benchmarks: it reuses its decoder
// and encoder, as the real client does.
type benchConn struct {
	ws  *websocket.Conn
	dec wire.Decoder
	enc wire.Encoder
	// frames counts the frames read and written.
	frames atomic.Int64
}

func benchDial(b *testing.B, tr *trackertest.Tracker, h wire.Hello) *benchConn {
	b.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}}
	ws, resp, err := d.Dial(tr.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	c := &benchConn{ws: ws}
	h.Version = wire.ProtocolVersion
	c.write(b, &h)
	msgs := c.read(b)
	if _, ok := msgs[0].(*wire.Welcome); !ok {
		b.Fatalf("got %T, want a welcome", msgs[0])
	}
	return c
}

func (c *benchConn) write(b *testing.B, msgs ...wire.Msg) {
	c.enc.Reset()
	for _, m := range msgs {
		if err := c.enc.Add(m); err != nil {
			b.Error(err)
			return
		}
	}
	c.frames.Add(1)
	if err := c.ws.WriteMessage(websocket.BinaryMessage, c.enc.Frame()); err != nil {
		b.Error(err)
	}
}

func (c *benchConn) read(b *testing.B) []wire.Msg {
	_, frame, err := c.ws.ReadMessage()
	if err != nil {
		return nil
	}
	c.frames.Add(1)
	msgs, err := c.dec.Decode(frame)
	if err != nil {
		b.Error(err)
	}
	return msgs
}

// benchWorker answers every assign at once with a result and a credit, in
// one frame per frame of assigns, until its connection closes.
func benchWorker(b *testing.B, c *benchConn, slots int) {
	c.write(b, &wire.Credit{N: slots})
	res := []byte{0x01}
	var dones []wire.Done
	var out []wire.Msg
	for {
		msgs := c.read(b)
		if msgs == nil {
			return
		}
		dones, out = dones[:0], out[:0]
		for _, m := range msgs {
			if a, ok := m.(*wire.Assign); ok {
				dones = append(dones, wire.Done{Key: a.Key, Token: a.Token, Result: res, Elapsed: time.Microsecond})
			}
		}
		for i := range dones {
			out = append(out, &dones[i])
		}
		if len(dones) > 0 {
			out = append(out, &wire.Credit{N: len(dones)})
			c.write(b, out...)
		}
	}
}

func benchSpecs(b *testing.B, n int) [][]byte {
	b.Helper()
	specs := make([][]byte, n)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range specs {
		s := workunit.Spec{Kind: workunit.Eval, Source: run + "+" + strconv.Itoa(i), Name: "bench.js"}
		specs[i], _ = s.MarshalBinary()
	}
	return specs
}

// BenchmarkServer_Throughput pushes b.N trivial workunits through the
// tracker: one master submitting (at most window outstanding, in frames
// of up to 256), two workers answering at once. It measures the tracker's
// share of the project's end-to-end target; wu/s is workunits per second.
func BenchmarkServer_Throughput(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := "memory"
		if durable {
			name = "bolt"
		}
		b.Run(name, func(b *testing.B) { benchThroughput(b, durable, 2, 64, 0) })
	}
}

// BenchmarkServer_ManyWorkerConns is BenchmarkServer_Throughput's memory
// run with the same 128 slots spread over many one-slot workers' connections
// (and, for comparison, over two): frames/wu counts the frames the
// workers and the master read and wrote per workunit. The runs with
// prefetch give each worker that much credit beyond its slots, as
// riot-worker does (it sizes its prefetch up to 512 per slot, 1024 in all).
func BenchmarkServer_ManyWorkerConns(b *testing.B) {
	for _, c := range []struct{ workers, slots, prefetch int }{
		{2, 64, 0}, {128, 1, 0}, {1000, 1, 0}, {1000, 1, 3}, {1000, 1, 64},
	} {
		b.Run(fmt.Sprintf("workers=%d,slots=%d,prefetch=%d", c.workers, c.slots, c.prefetch), func(b *testing.B) {
			benchThroughput(b, false, c.workers, c.slots, c.prefetch)
		})
	}
}

// BenchmarkServer_FinishedHeap is BenchmarkServer_Throughput's memory run
// with two one-slot workers, as a riot-worker of few slots answers: each
// result comes in a small frame of its own. B/finished is the tracker's
// heap in use per finished workunit that it keeps (the memory store keeps
// every record and result), after a collection.
func BenchmarkServer_FinishedHeap(b *testing.B) {
	benchThroughput(b, false, 2, 1, 0)
}

// heapInuse is the heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func benchThroughput(b *testing.B, durable bool, nworkers, slots, prefetch int) {
	var opts []trackertest.Option
	if durable {
		opts = append(opts, trackertest.Durable())
	}
	opts = append(opts, trackertest.Quiet())
	tr := trackertest.Start(b, opts...)
	const window, batch = 4096, 256
	var wg sync.WaitGroup
	var workers []*benchConn
	for i := range nworkers {
		w := benchDial(b, tr, wire.Hello{Role: wire.RoleWorker, Name: "w" + strconv.Itoa(i), Slots: slots, Prefetch: prefetch})
		workers = append(workers, w)
		wg.Go(func() { benchWorker(b, w, slots+prefetch) })
	}
	tr.WaitFor(b, func(s tracker.Stats) bool { return s.Workers == nworkers })
	m := benchDial(b, tr, wire.Hello{Role: wire.RoleMaster, Name: "m"})
	specs := benchSpecs(b, b.N)
	free := make(chan int, window/batch+1)
	for range window / batch {
		free <- batch
	}
	finished := make(chan struct{})
	var subs []wire.Submit
	var out []wire.Msg
	frames0 := m.frames.Load()
	for _, w := range workers {
		frames0 += w.frames.Load()
	}
	heap0 := heapInuse()

	b.ResetTimer()
	start := time.Now()
	go func() {
		defer close(finished)
		n, got := 0, 0
		for n < b.N {
			msgs := m.read(b)
			if msgs == nil {
				b.Error("master: connection ended")
				return
			}
			for _, msg := range msgs {
				if _, ok := msg.(*wire.Finished); ok {
					n++
					if got++; got == batch {
						free <- got
						got = 0
					}
				}
			}
		}
	}()
	for i := 0; i < b.N; {
		<-free
		subs, out = subs[:0], out[:0]
		for ; i < b.N && len(subs) < batch; i++ {
			subs = append(subs, wire.Submit{Req: uint64(i + 1), Spec: specs[i], Options: workunit.Options{}, Watch: true})
		}
		for j := range subs {
			out = append(out, &subs[j])
		}
		m.write(b, out...)
	}
	<-finished
	elapsed := time.Since(start)
	b.StopTimer()
	frames := m.frames.Load()
	for _, w := range workers {
		frames += w.frames.Load()
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "wu/s")
	b.ReportMetric(float64(frames-frames0)/float64(b.N), "frames/wu")
	b.ReportMetric((float64(heapInuse())-float64(heap0))/float64(b.N), "B/finished")
	runtime.KeepAlive(specs)
	m.ws.Close()
	for _, w := range workers {
		w.ws.Close()
	}
	wg.Wait()
}

// BenchmarkServer_RoundTrip submits one workunit at a time and waits for
// its result: a worker takes it, answers at once, the master is told.
// p50 and p99 are the round trip's percentiles.
func BenchmarkServer_RoundTrip(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchRoundTrip(b, trackertest.Quiet()) })
	b.Run("bolt", func(b *testing.B) { benchRoundTrip(b, trackertest.Quiet(), trackertest.Durable()) })
}

func benchRoundTrip(b *testing.B, opts ...trackertest.Option) {
	tr := trackertest.Start(b, opts...)
	w := benchDial(b, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 1})
	var wg sync.WaitGroup
	wg.Go(func() { benchWorker(b, w, 1) })
	tr.WaitFor(b, func(s tracker.Stats) bool { return s.Workers == 1 })
	m := benchDial(b, tr, wire.Hello{Role: wire.RoleMaster, Name: "m"})
	specs := benchSpecs(b, b.N)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		m.write(b, &wire.Submit{Req: uint64(i + 1), Spec: specs[i], Options: workunit.Options{}, Watch: true})
		for done := false; !done; {
			msgs := m.read(b)
			if msgs == nil {
				b.Fatal("master: connection ended")
			}
			for _, msg := range msgs {
				if _, ok := msg.(*wire.Finished); ok {
					done = true
				}
			}
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
	m.ws.Close()
	w.ws.Close()
	wg.Wait()
}
