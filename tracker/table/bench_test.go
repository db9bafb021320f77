package table_test

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// BenchmarkTable_Memory_MillionWaiting submits a million small workunits
// (persisted and acknowledged, no worker) and reports the heap the table
// holds per waiting workunit. The spec bytes are shared by all, so they are
// not counted: the table keeps the slices it is given. Target: ≤ 300 bytes.
func BenchmarkTable_Memory_MillionWaiting(b *testing.B) {
	b.Run("unwatched", func(b *testing.B) { benchMillionWaiting(b, false) })
	b.Run("watched", func(b *testing.B) { benchMillionWaiting(b, true) })
}

// benchMillionWaiting submits a million workunits, each watched by its
// master when watch is set (a master that waits for all it submitted).
func benchMillionWaiting(b *testing.B, watch bool) {
	const n = 1_000_000
	spec := []byte("trivial workunit spec")
	var perUnit float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tab := table.New(table.Config{MaxWatchesPerMaster: -1})
		var k workunit.Key
		for j := 0; j < n; j++ {
			binary.LittleEndian.PutUint64(k[:], uint64(j)*0x9e3779b97f4a7c15+1)
			if err := tab.Step(table.Submit{Master: 1, Req: uint64(j), Owner: "alice", Key: k, Spec: spec, Watch: watch}); err != nil {
				b.Fatal(err)
			}
			if j%1024 == 1023 {
				tab.Advance(tab.Ready())
			}
		}
		tab.Advance(tab.Ready())
		runtime.GC()
		runtime.ReadMemStats(&after)
		if s := tab.Stats(); s.Waiting != n {
			b.Fatalf("%d waiting, want %d", s.Waiting, n)
		}
		perUnit = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(tab)
	}
	b.ReportMetric(perUnit, "bytes/workunit")
}

// BenchmarkTable_Dispatch measures one workunit through the table per op:
// submit (with a watch), assign, complete, credit, notify, with a Ready
// taken and advanced every 64 ops as a shell would. "new-keys" submits a
// new key each time, so the table grows by a record per op (memoization
// keeps them all); "nocache-reruns" runs 65,536 keys again and again with
// NoCache, the state machine's cost without growth; "new-keys-forgetting"
// is new keys with KeepFinished, the clock moving a second every 64 ops and
// records forgotten after 100 s, so the table stays at about 6,400
// finished records (reported as live-records) and reuses them.
func BenchmarkTable_Dispatch(b *testing.B) {
	b.Run("new-keys", func(b *testing.B) { benchDispatch(b, 0, 0) })
	b.Run("nocache-reruns", func(b *testing.B) { benchDispatch(b, 1<<16, 0) })
	b.Run("new-keys-forgetting", func(b *testing.B) { benchDispatch(b, 0, 100*time.Second) })
}

func benchDispatch(b *testing.B, keys int, keep time.Duration) {
	tab := table.New(table.Config{KeepFinished: keep})
	now := time.Unix(1_000_000, 0)
	if err := tab.Step(table.Tick{Now: now}); err != nil {
		b.Fatal(err)
	}
	const window = 256
	if err := tab.Step(table.WorkerJoin{Worker: 1, Name: "w1", Slots: window / 2, Prefetch: window / 2, Credit: window}); err != nil {
		b.Fatal(err)
	}
	spec := []byte("spec")
	result := []byte("result")
	type lease struct {
		key workunit.Key
		tok table.Token
	}
	var held []lease
	var k workunit.Key
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := i
		if keys > 0 {
			n = i % keys
		}
		binary.LittleEndian.PutUint64(k[:], uint64(n)*0x9e3779b97f4a7c15+1)
		_ = tab.Step(table.Submit{Master: 1, Req: uint64(i), Key: k, Spec: spec, Watch: true,
			Options: workunit.Options{NoCache: keys > 0}})
		if i%64 == 63 || i == b.N-1 {
			if keep > 0 {
				now = now.Add(time.Second)
				_ = tab.Step(table.Tick{Now: now})
			}
			rd := tab.Ready()
			for _, m := range rd.Send {
				if a, ok := m.(*table.Assign); ok {
					held = append(held, lease{a.Key, a.Token})
				}
			}
			tab.Advance(rd)
			for _, l := range held {
				if err := tab.Step(table.Complete{Worker: 1, Key: l.key, Token: l.tok, Result: result}); err != nil {
					b.Fatal(err)
				}
				_ = tab.Step(table.WorkerCredit{Worker: 1, N: 1})
			}
			held = held[:0]
		}
	}
	tab.Advance(tab.Ready())
	b.StopTimer()
	if s := tab.Stats(); s.Running != 0 || s.Waiting != 0 {
		b.Fatalf("stats %+v after %d", s, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workunits/s")
	if keep > 0 {
		s := tab.Stats()
		b.ReportMetric(float64(s.Done), "live-records")
	}
}

// BenchmarkTable_Dispatch_FullWindow measures one workunit through the
// table per op, as BenchmarkTable_Dispatch does, for a worker of 2 slots
// whose window of 1024 stays full (riot-worker's prefetch against a
// tracker it waits on): each answer is to its oldest lease, with 1023
// queued behind it ("oldest"), or, as often as not, to the lease given
// after it, its other slot's ("out-of-order").
func BenchmarkTable_Dispatch_FullWindow(b *testing.B) {
	b.Run("oldest", func(b *testing.B) { benchFullWindow(b, false) })
	b.Run("out-of-order", func(b *testing.B) { benchFullWindow(b, true) })
}

func benchFullWindow(b *testing.B, outOfOrder bool) {
	const window = 1024
	tab := table.New(table.Config{LeaseTimeout: time.Hour, MaxWorkerWindow: window})
	now := time.Unix(1_000_000, 0)
	if err := tab.Step(table.Tick{Now: now}); err != nil {
		b.Fatal(err)
	}
	if err := tab.Step(table.WorkerJoin{Worker: 1, Name: "w1", Slots: 2, Prefetch: window - 2, Credit: window}); err != nil {
		b.Fatal(err)
	}
	spec, result := []byte("spec"), []byte("result")
	type lease struct {
		key workunit.Key
		tok table.Token
	}
	var held []lease // oldest first
	var k workunit.Key
	submit := func(i int) {
		binary.LittleEndian.PutUint64(k[:], uint64(i)*0x9e3779b97f4a7c15+1)
		_ = tab.Step(table.Submit{Master: 1, Req: uint64(i), Key: k, Spec: spec, Watch: true})
	}
	take := func() {
		rd := tab.Ready()
		for _, m := range rd.Send {
			if a, ok := m.(*table.Assign); ok {
				held = append(held, lease{a.Key, a.Token})
			}
		}
		tab.Advance(rd)
	}
	for i := range window {
		submit(-1 - i)
	}
	take()
	if len(held) != window {
		b.Fatalf("%d leases, want %d", len(held), window)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := held[0]
		if outOfOrder && i%2 == 0 {
			l, held[1] = held[1], l
		}
		held = held[1:]
		if err := tab.Step(table.Complete{Worker: 1, Key: l.key, Token: l.tok, Result: result}); err != nil {
			b.Fatal(err)
		}
		_ = tab.Step(table.WorkerCredit{Worker: 1, N: 1})
		submit(i)
		if i%64 == 63 {
			take()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workunits/s")
}

// BenchmarkTable_MasterLost_Watches measures the cleanup of a master's
// watches when it is lost (MasterLost), per op: "one-key" is a master
// that watched one waiting key 200,000 times (a hostile master: the
// watches of one key by one master are one), "distinct-keys" one that
// watched 200,000 waiting keys once each, and "others-watching" the loss
// of a master with one watch while another holds 200,000 (what the loss
// of one master costs with many watches around). The setup is not timed.
func BenchmarkTable_MasterLost_Watches(b *testing.B) {
	const n = 200_000
	key := func(j int) workunit.Key {
		var k workunit.Key
		binary.LittleEndian.PutUint64(k[:], uint64(j)*0x9e3779b97f4a7c15+1)
		return k
	}
	setup := func(b *testing.B, keys int) *table.Table {
		b.Helper()
		tab := table.New(table.Config{MaxWatchesPerMaster: -1})
		for j := range keys {
			if err := tab.Step(table.Submit{Master: 2, Req: uint64(j + 1), Key: key(j), Spec: []byte("s")}); err != nil {
				b.Fatal(err)
			}
		}
		tab.Advance(tab.Ready())
		return tab
	}
	b.Run("one-key", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tab := setup(b, 1)
			for j := range n {
				if err := tab.Step(table.Watch{Master: 1, Req: uint64(j + 1), Key: key(0)}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			_ = tab.Step(table.MasterLost{Master: 1})
			b.StopTimer()
			if w := tab.Stats().Watches; w != 0 {
				b.Fatalf("%d watches left", w)
			}
		}
	})
	b.Run("distinct-keys", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tab := setup(b, n)
			for j := range n {
				if err := tab.Step(table.Watch{Master: 1, Req: uint64(j + 1), Key: key(j)}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			_ = tab.Step(table.MasterLost{Master: 1})
			b.StopTimer()
			if w := tab.Stats().Watches; w != 0 {
				b.Fatalf("%d watches left", w)
			}
		}
	})
	b.Run("others-watching", func(b *testing.B) {
		b.StopTimer()
		tab := setup(b, n)
		for j := range n {
			if err := tab.Step(table.Watch{Master: 1, Req: uint64(j + 1), Key: key(j)}); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; i < b.N; i++ {
			m := table.MasterID(3 + i)
			if err := tab.Step(table.Watch{Master: m, Req: 1, Key: key(i % n)}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			_ = tab.Step(table.MasterLost{Master: m})
			b.StopTimer()
		}
		if w := tab.Stats().Watches; w != n {
			b.Fatalf("%d watches, want %d", w, n)
		}
	})
}

// BenchmarkTable_List measures a page of the dashboard's workunit list
// over a million records: the newest page, a page deep into the table by
// its cursor, one owner's, and a filter that matches nothing (errors, of
// which there are none), whose scan stops at table.MaxListScan. A page
// costs what it scans, never the table.
func BenchmarkTable_List(b *testing.B) {
	const n = 1_000_000
	tab := table.New(table.Config{MaxWatchesPerMaster: -1})
	spec := []byte("spec")
	var k workunit.Key
	for j := range n {
		binary.LittleEndian.PutUint64(k[:], uint64(j)*0x9e3779b97f4a7c15+1)
		if err := tab.Step(table.Submit{Master: 1, Req: uint64(j), Owner: "alice", Key: k, Spec: spec}); err != nil {
			b.Fatal(err)
		}
		if j%1024 == 1023 {
			tab.Advance(tab.Ready())
		}
	}
	tab.Advance(tab.Ready())
	for _, bc := range []struct {
		name string
		q    table.Query
	}{
		{"newest", table.Query{Limit: 50}},
		{"deep", table.Query{Limit: 50, Before: n / 2}},
		{"owner", table.Query{Limit: 50, Owner: "alice"}},
		{"rare-filter", table.Query{Limit: 50, Statuses: []workunit.Status{workunit.StatusError}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_ = tab.List(bc.q)
			}
		})
	}
}
