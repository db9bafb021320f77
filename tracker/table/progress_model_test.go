package table

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/riot-go/riot/workunit"
)

// This file checks a worker's progress (kept as a time and a first token,
// read by deadlineOf) against a reference model of the algorithm it
// replaced, which wrote each restarted deadline into its lease: random
// events run through a table, and after each one every live lease's
// deadline, as the table reads it, must be the one the reference gives.

// refLease is what the reference model reads of a lease before a step.
type refLease struct {
	tok      Token
	expired  bool
	waiting  bool
	dur      int64
	deadline int64
}

func snapLeases(w *worker) []refLease {
	out := make([]refLease, len(w.leases))
	for i := range w.leases {
		l := &w.leases[i]
		out[i] = refLease{tok: l.token, expired: l.expired, waiting: l.waiting, dur: l.dur, deadline: l.deadline}
	}
	return out
}

func TestTable_ProgressModel(t *testing.T) {
	t.Parallel()
	var progressed, materialized, expiredN, waits uint64
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		first := Token(1 + rng.Uint64N(1<<40))
		tab := New(Config{LeaseTimeout: 10 * time.Second, LeaseGrace: time.Second, FirstToken: first, HashSeed: seed})
		base := time.Unix(2_000_000, 0)
		now := base
		if rng.IntN(3) != 0 {
			_ = tab.Step(Tick{Now: now})
		}
		ref := map[Token]int64{} // the reference's deadline of each live lease
		nextW := WorkerID(1)
		var workers []WorkerID
		nkey := 0
		drain := func() {
			for tab.HasReady() {
				tab.Advance(tab.Ready())
			}
		}
		for step := 0; step < 300; step++ {
			// What the reference reads: every worker's leases before.
			pre := map[WorkerID][]refLease{}
			for id, w := range tab.workers {
				pre[id] = snapLeases(w)
			}
			wasTicked, preNow := tab.ticked, tab.now
			var ev Event
			var answered Token
			var answeredBy WorkerID
			pick := func() (WorkerID, *refLease) {
				if len(workers) == 0 {
					return 0, nil
				}
				id := workers[rng.IntN(len(workers))]
				ls := pre[id]
				if len(ls) == 0 {
					return id, nil
				}
				i := 0
				if rng.IntN(3) == 0 {
					i = rng.IntN(len(ls)) // mostly the oldest, as workers answer
				}
				return id, &ls[i]
			}
			switch op := rng.IntN(20); {
			case op < 4:
				var timeout time.Duration
				if rng.IntN(3) == 0 {
					timeout = time.Duration(rng.IntN(20)) * time.Second
				}
				var k workunit.Key
				nkey++
				k[0], k[1], k[2] = byte(nkey), byte(nkey>>8), byte(seed)
				ev = Submit{Master: 1, Req: uint64(step), Key: k, Spec: []byte{1}, Options: workunit.Options{Timeout: timeout}}
			case op < 7:
				now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
				ev = Tick{Now: now}
			case op < 8:
				slots := rng.IntN(4)
				prefetch := rng.IntN(5)
				if slots+prefetch == 0 {
					slots = 1
				}
				ev = WorkerJoin{Worker: nextW, Name: fmt.Sprint("w", nextW), Slots: slots, Prefetch: prefetch, Credit: slots + prefetch}
				workers = append(workers, nextW)
				nextW++
			case op < 10:
				if len(workers) > 0 {
					ev = WorkerCredit{Worker: workers[rng.IntN(len(workers))], N: 1 + rng.IntN(2)}
				}
			case op < 16:
				if id, l := pick(); l != nil {
					k := tab.recs.at(tab.workers[id].leases[slicesIndexTok(tab.workers[id], l.tok)].idx).key
					answered, answeredBy = l.tok, id
					if rng.IntN(4) == 0 {
						ev = Fail{Worker: id, Key: k, Token: l.tok, Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "x"}}
					} else {
						ev = Complete{Worker: id, Key: k, Token: l.tok, Result: []byte{2}}
					}
				}
			case op < 18:
				if id, l := pick(); l != nil {
					k := tab.recs.at(tab.workers[id].leases[slicesIndexTok(tab.workers[id], l.tok)].idx).key
					ev = Wait{Worker: id, Key: k, Token: l.tok, Waiting: !l.waiting}
				}
			case op < 19:
				if id, l := pick(); l != nil && rng.IntN(2) == 0 {
					k := tab.recs.at(tab.workers[id].leases[slicesIndexTok(tab.workers[id], l.tok)].idx).key
					ev = Return{Worker: id, Leases: []LeaseRef{{Key: k, Token: l.tok}}}
				} else if len(workers) > 0 && rng.IntN(4) == 0 {
					i := rng.IntN(len(workers))
					ev = WorkerLost{Worker: workers[i]}
					workers = append(workers[:i], workers[i+1:]...)
				}
			default:
				if id, l := pick(); l != nil {
					k := tab.recs.at(tab.workers[id].leases[slicesIndexTok(tab.workers[id], l.tok)].idx).key
					ev = Cancel{Master: 1, Keys: []workunit.Key{k}}
				}
			}
			if ev == nil {
				continue
			}
			_ = tab.Step(ev)
			where := fmt.Sprintf("seed %d step %d (%T %+v)", seed, step, ev, ev)

			// The reference, from what it read before.
			if tk, ok := ev.(Tick); ok && unixNano(tk.Now) > preNow {
				n := unixNano(tk.Now)
				if !wasTicked {
					for tok, d := range ref {
						if d != 0 {
							ref[tok] = d + n
						}
					}
				}
				for id, ls := range pre {
					for _, l := range ls {
						want := !l.expired && ref[l.tok] != 0 && ref[l.tok] <= n
						got := leaseOf(tab.workers[id], l.tok).expired && !l.expired
						if want != got {
							t.Fatalf("%s: lease %d: expired %v, the reference says %v (deadline %d, reference %d, now %d)",
								where, l.tok, got, want, tab.workers[id].deadlineOf(leaseOf(tab.workers[id], l.tok)), ref[l.tok], n)
						}
						if got {
							expiredN++
						}
					}
				}
			}
			if e, ok := ev.(Wait); ok {
				for _, l := range pre[e.Worker] {
					if l.tok != e.Token || l.waiting == e.Waiting {
						continue
					}
					if w := tab.workers[e.Worker]; leaseOf(w, l.tok) != nil && leaseOf(w, l.tok).waiting == e.Waiting {
						waits++
						if e.Waiting {
							ref[l.tok] = 0
						} else if l.dur > 0 && !l.expired {
							ref[l.tok] = tab.now + l.dur
						}
					}
				}
			}
			if answered != 0 {
				w := tab.workers[answeredBy]
				ls := pre[answeredBy]
				li := -1
				for i := range ls {
					if ls[i].tok == answered {
						li = i
					}
				}
				if w != nil && li >= 0 && leaseOf(w, answered) == nil {
					// Answered: out of the worker's leases, and the old
					// progress ran on the rest.
					after := append(append([]refLease(nil), ls[:li]...), ls[li+1:]...)
					waiting := 0
					for _, l := range after {
						if l.waiting {
							waiting++
						}
					}
					running := w.slots
					if running <= 0 {
						running = w.window
					}
					running += waiting
					for j := max(li, running-1); j < len(after); j++ {
						// The old loop restarted a waiting lease's clock
						// too, giving it a deadline while it waited, against
						// what Wait says (no deadline until it runs again):
						// the new one leaves it, and so does the reference.
						if l := after[j]; !l.expired && !l.waiting && l.dur > 0 {
							ref[l.tok] = max(ref[l.tok], tab.now+l.dur)
						}
					}
					progressed++
					if w.refreshed && li > 0 {
						materialized++
					}
				}
			}
			// Leases made in this step start from their own deadline;
			// those gone leave the reference.
			live := map[Token]bool{}
			for id, w := range tab.workers {
				had := map[Token]bool{}
				for _, l := range pre[id] {
					had[l.tok] = true
				}
				for i := range w.leases {
					l := &w.leases[i]
					live[l.token] = true
					if !had[l.token] {
						ref[l.token] = l.deadline
					}
					if i > 0 && w.leases[i-1].token >= l.token {
						t.Fatalf("%s: worker %d's tokens not ascending: %d then %d", where, id, w.leases[i-1].token, l.token)
					}
				}
			}
			for tok := range ref {
				if !live[tok] {
					delete(ref, tok)
				}
			}
			drain()
			// Every live lease's deadline, as the table reads it, is the
			// reference's.
			for id, w := range tab.workers {
				for i := range w.leases {
					l := &w.leases[i]
					if l.expired {
						continue
					}
					if got := w.deadlineOf(l); got != ref[l.token] {
						t.Fatalf("%s: worker %d lease %d (waiting %v, dur %d): deadline %d, the reference's %d (refreshed %v from %d at %d, now %d)",
							where, id, l.token, l.waiting, l.dur, got, ref[l.token], w.refreshed, w.refreshFrom, w.refreshAt, tab.now)
					}
				}
			}
		}
	}
	t.Logf("answers %d (%d with a later lease answered first), expiries %d, waits %d", progressed, materialized, expiredN, waits)
	if progressed == 0 || expiredN == 0 || waits == 0 || materialized == 0 {
		t.Error("a path was never taken")
	}
}

func slicesIndexTok(w *worker, tok Token) int {
	for i := range w.leases {
		if w.leases[i].token == tok {
			return i
		}
	}
	return -1
}

func leaseOf(w *worker, tok Token) *lease {
	if w == nil {
		return nil
	}
	if i := slicesIndexTok(w, tok); i >= 0 {
		return &w.leases[i]
	}
	return nil
}
