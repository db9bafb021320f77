package table

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/riot-go/riot/workunit"
)

// This file checks the table against its own books while random events,
// held Readies and failed writes run through it, with forgetting on: the
// structures that hold record indices never point at a freed record, and
// what the shell stored always restores.

// heldLease is a lease a model worker holds.
type heldLease struct {
	w   WorkerID
	key workunit.Key
	tok Token
}

// checkInvariants checks the free list, the index, the counts, the pending
// list, the queues, the live leases and the watch nodes against the
// records.
func checkInvariants(t *testing.T, tab *Table, where string) {
	t.Helper()
	free := map[uint32]bool{}
	for _, f := range tab.free {
		if free[f] {
			t.Fatalf("%s: idx %d twice on free list", where, f)
		}
		free[f] = true
	}
	var counts [workunit.StatusError + 1]int
	n := 0
	for idx := uint32(0); idx < tab.recs.n; idx++ {
		r := tab.recs.at(idx)
		if free[idx] {
			if r.key != (workunit.Key{}) || r.status != workunit.StatusUnknown {
				t.Fatalf("%s: free idx %d not zero", where, idx)
			}
			continue
		}
		counts[r.status]++
		n++
		got, ok := tab.index.get(&r.key, &tab.recs)
		if !ok || got != idx {
			t.Fatalf("%s: idx %d key %x not in index (%v %d)", where, idx, r.key[0], ok, got)
		}
		if r.status.Finished() && r.watch != 0 {
			t.Fatalf("%s: finished idx %d has watches", where, idx)
		}
	}
	if n != tab.index.n {
		t.Fatalf("%s: index n %d, live %d", where, tab.index.n, n)
	}
	if counts != tab.counts {
		t.Fatalf("%s: counts %v want %v", where, tab.counts, counts)
	}
	for _, idx := range tab.pending {
		if free[idx] || tab.recs.at(idx).flags&flagPending == 0 {
			t.Fatalf("%s: pending idx %d free or unflagged", where, idx)
		}
	}
	q := 0
	for i := range tab.queues {
		r := &tab.queues[i].q
		for j := range r.n {
			idx := r.buf[(r.head+j)&(len(r.buf)-1)]
			if free[idx] || tab.recs.at(idx).status != workunit.StatusWaiting {
				t.Fatalf("%s: queued idx %d free=%v status %v", where, idx, free[idx], tab.recs.at(idx).status)
			}
			q++
		}
	}
	if q != tab.queued {
		t.Fatalf("%s: queued %d, counted %d", where, tab.queued, q)
	}
	for _, w := range tab.workers {
		for _, l := range w.leases {
			if l.expired {
				continue
			}
			r := tab.recs.at(l.idx)
			if free[l.idx] || r.status != workunit.StatusRunning || r.worker != w.name {
				t.Fatalf("%s: live lease idx %d free=%v status %v", where, l.idx, free[l.idx], r.status)
			}
		}
	}
	limited := 0
	for i, wn := range tab.wnodes {
		if wn.rec == 0 {
			continue
		}
		if free[wn.rec-1] {
			t.Fatalf("%s: watch node %d on free idx", where, i)
		}
		if wn.limit != 0 {
			limited++
			if _, ok := tab.limited[uint32(i+1)]; !ok {
				t.Fatalf("%s: watch node %d has a limit and is not listed", where, i)
			}
		}
	}
	if limited != len(tab.limited) {
		t.Fatalf("%s: %d watches with a limit, %d listed", where, limited, len(tab.limited))
	}
	for idx, hs := range tab.held {
		if free[idx] || !isOpen(tab.recs.at(idx).status) || len(hs) == 0 {
			t.Fatalf("%s: a limit held for idx %d, free=%v status %v", where, idx, free[idx], tab.recs.at(idx).status)
		}
	}
}

// TestTable_ForgetModel drives tables that forget (KeepFinished) with
// random events; the shell holds some Readies and fails some writes. After
// every step the books balance (checkInvariants), every Ack of a waiting
// or running workunit is durable in the model store (keyed by ID, as
// bolt), and the store restores (every 25 steps).
func TestTable_ForgetModel(t *testing.T) {
	t.Parallel()
	var totForgot, totDisc uint64
	defer func() { t.Logf("forgotten %d, discarded %d", totForgot, totDisc) }()
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		tab := New(Config{KeepFinished: time.Hour, LeaseTimeout: 20 * time.Minute, MaxLost: 3, FirstToken: 1, HashSeed: seed})
		base := time.Unix(1_000_000, 0)
		now := base
		if rng.IntN(2) == 0 {
			_ = tab.Step(Tick{Now: now})
		}
		store := map[uint64]Record{} // keyed by ID, as bolt
		var held *Ready
		var leases []heldLease
		workers := map[WorkerID]bool{}
		nextW := WorkerID(1)
		key := func() workunit.Key {
			var k workunit.Key
			k[0] = byte(1 + rng.IntN(12))
			return k
		}
		apply := func(rd Ready, ok bool) {
			if ok {
				for _, r := range rd.Persist {
					if r.Status == workunit.StatusUnknown {
						delete(store, r.ID)
					} else {
						store[r.ID] = r
					}
				}
				// Every Ack of a waiting or running record is durable.
				for _, m := range rd.Send {
					if a, isAck := m.(*Ack); isAck && (a.Status == workunit.StatusWaiting || a.Status == workunit.StatusRunning) {
						found := false
						for _, r := range store {
							if r.Key == a.Key {
								found = true
							}
						}
						if !found {
							t.Fatalf("seed %d: the ack of %x (%v) is not durable", seed, a.Key[0], a.Status)
						}
					}
				}
			}
			for _, m := range rd.Send {
				if a, isA := m.(*Assign); isA {
					leases = append(leases, heldLease{a.Worker, a.Key, a.Token})
				}
			}
			if ok {
				tab.Advance(rd)
			} else {
				tab.PersistFailed(rd)
			}
		}
		for step := 0; step < 400; step++ {
			var ev Event
			switch rng.IntN(14) {
			case 0, 1, 2:
				// Some with a time limit, and some of another owner, so that
				// joiners' limits expire and cancels stop joiners' waits.
				var timeout time.Duration
				if rng.IntN(3) == 0 {
					timeout = time.Duration(1+rng.IntN(60)) * time.Minute
				}
				owner := ""
				if rng.IntN(3) == 0 {
					owner = "b"
				}
				ev = Submit{Master: MasterID(1 + rng.IntN(2)), Req: uint64(step), Owner: owner, Key: key(), Spec: []byte("s"), Watch: rng.IntN(2) == 0,
					Options: workunit.Options{NoCache: rng.IntN(5) == 0, Timeout: timeout}}
			case 3:
				ev = Tick{Now: now.Add(time.Duration(rng.IntN(90)) * time.Minute)}
				now = ev.(Tick).Now
			case 4:
				ev = WorkerJoin{Worker: nextW, Name: string(rune('a' + rng.IntN(4))), Slots: 1 + rng.IntN(2), Credit: 2}
				workers[nextW] = true
				nextW++
			case 5:
				for w := range workers {
					ev = WorkerCredit{Worker: w, N: 1}
					break
				}
			case 6, 7, 8:
				if len(leases) > 0 {
					i := rng.IntN(len(leases))
					l := leases[i]
					leases = append(leases[:i], leases[i+1:]...)
					k := l.key
					if rng.IntN(10) == 0 {
						k = key()
					}
					if rng.IntN(3) == 0 {
						ev = Fail{Worker: l.w, Key: k, Token: l.tok, Err: &workunit.Error{Message: "x"}}
					} else if rng.IntN(6) == 0 {
						ev = Return{Worker: l.w, Leases: []LeaseRef{{Key: k, Token: l.tok}}}
					} else {
						ev = Complete{Worker: l.w, Key: k, Token: l.tok, Result: []byte("r")}
					}
				}
			case 9:
				for w := range workers {
					ev = WorkerLost{Worker: w}
					delete(workers, w)
					break
				}
			case 10:
				ev = Cancel{Master: 1, Owner: "", Keys: []workunit.Key{key(), key()}}
			case 11:
				ev = Watch{Master: MasterID(1 + rng.IntN(2)), Req: uint64(step), Owner: []string{"", "b"}[rng.IntN(2)], Key: key()}
			case 12:
				ev = MasterLost{Master: MasterID(1 + rng.IntN(2))}
			case 13:
				ev = GetInfo{Master: 1, Key: key()}
			}
			if ev != nil {
				_ = tab.Step(ev) // stale and duplicate events are refused
			}
			checkInvariants(t, tab, fmt.Sprintf("seed %d step %d", seed, step))
			// The shell: hold a Ready, or apply it; some writes fail.
			if held != nil && rng.IntN(3) == 0 {
				apply(*held, rng.IntN(5) != 0)
				held = nil
			}
			if held == nil && tab.HasReady() {
				rd := tab.Ready()
				if rng.IntN(3) == 0 {
					held = &rd
				} else {
					apply(rd, rng.IntN(8) != 0)
				}
			}
			if step == 399 {
				st := tab.Stats()
				totForgot += st.Forgotten
				totDisc += st.Discarded
			}
			// What was stored restores (checked now and then: a new table
			// each time is the slow part).
			if step%25 != 24 {
				continue
			}
			var recs []Record
			for _, r := range store {
				recs = append(recs, r)
			}
			t2 := New(Config{KeepFinished: time.Hour})
			if err := t2.Restore(recs); err != nil {
				t.Fatalf("seed %d step %d: restore: %v", seed, step, err)
			}
		}
	}
}
