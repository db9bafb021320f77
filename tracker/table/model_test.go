package table

import (
	"errors"
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
	var data int64
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
		data += int64(len(r.data))
		if r.ext != nil && r.ext.err != nil {
			e := r.ext.err
			data += int64(len(e.Name) + len(e.Message) + len(e.Stack) + len(e.Value))
		}
		if r.flags&flagStored != 0 && r.data != nil {
			t.Fatalf("%s: idx %d is stored and holds %d bytes of result", where, idx, len(r.data))
		}
		got, ok := tab.index.get(&r.key, r.scope, &tab.recs)
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
	if want := data + RecordBytes*int64(n); tab.Stats().Bytes != want {
		t.Fatalf("%s: Stats.Bytes %d, the records hold %d (%d records, %d bytes of data)", where, tab.Stats().Bytes, want, n, data)
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
	checkWatchLists(t, tab, where)
	for idx, hs := range tab.held {
		if free[idx] || !isOpen(tab.recs.at(idx).status) || len(hs) == 0 {
			t.Fatalf("%s: a limit held for idx %d, free=%v status %v", where, idx, free[idx], tab.recs.at(idx).status)
		}
	}
}

// checkWatchLists checks the watch nodes' lists: each record's list and
// each master's list hold exactly the live nodes that name them, linked
// both ways; a master has at most one node per record; a record is
// crowded exactly when wbyKey names its nodes, which it does when its list
// has reached crowdedWatches nodes and not been empty since (a record
// that is not crowded has a shorter list); the counts add up, and the free
// list holds the other nodes.
func checkWatchLists(t *testing.T, tab *Table, where string) {
	t.Helper()
	seen := map[uint32]bool{}
	live, indexed := 0, 0
	for idx := uint32(0); idx < tab.recs.n; idx++ {
		prev := uint32(0)
		masters := map[MasterID]bool{}
		r := tab.recs.at(idx)
		crowded := r.flags&flagCrowded != 0
		if crowded && r.watch == 0 {
			t.Fatalf("%s: record %d is crowded with no watches", where, idx)
		}
		length := 0
		for n := r.watch; n != 0; n = tab.wnodes[n-1].next {
			length++
		}
		if !crowded && length >= crowdedWatches {
			t.Fatalf("%s: record %d has %d watches and is not crowded", where, idx, length)
		}
		for n := r.watch; n != 0; n = tab.wnodes[n-1].next {
			wn := tab.wnodes[n-1]
			if seen[n] || wn.rec != idx+1 || wn.prev != prev {
				t.Fatalf("%s: record %d's list: node %d seen=%v rec %d prev %d (want %d)", where, idx, n, seen[n], wn.rec, wn.prev, prev)
			}
			if masters[wn.master] {
				t.Fatalf("%s: record %d: master %d watches it twice", where, idx, wn.master)
			}
			masters[wn.master] = true
			got, ok := tab.wbyKey[watchKey(tab.mwatches[wn.master].slot, idx)]
			if crowded && got != n || !crowded && ok {
				t.Fatalf("%s: wbyKey of master %d, record %d (crowded %v): %d, want %d", where, wn.master, idx, crowded, got, n)
			}
			if found, ok := tab.watchOf(wn.master, idx); !ok || found != n {
				t.Fatalf("%s: watchOf master %d, record %d: %d %v, want %d", where, wn.master, idx, found, ok, n)
			}
			if crowded {
				indexed++
			}
			seen[n] = true
			prev = n
			live++
		}
	}
	if live != tab.nwatches || indexed != len(tab.wbyKey) {
		t.Fatalf("%s: %d live watch nodes (%d of crowded records), nwatches %d, wbyKey %d", where, live, indexed, tab.nwatches, len(tab.wbyKey))
	}
	inMasters := 0
	for m, ml := range tab.mwatches {
		prev, k := uint32(0), 0
		for n := ml.head; n != 0; n = tab.wnodes[n-1].mnext {
			wn := tab.wnodes[n-1]
			if !seen[n] || wn.master != m || wn.mprev != prev {
				t.Fatalf("%s: master %d's list: node %d live=%v master %d mprev %d (want %d)", where, m, n, seen[n], wn.master, wn.mprev, prev)
			}
			prev = n
			k++
		}
		if k != ml.n || k == 0 {
			t.Fatalf("%s: master %d: %d nodes listed, counted %d", where, m, k, ml.n)
		}
		inMasters += k
	}
	if inMasters != live {
		t.Fatalf("%s: %d nodes in masters' lists, %d in records'", where, inMasters, live)
	}
	free := 0
	for n := tab.wfree; n != 0; n = tab.wnodes[n-1].next {
		if seen[n] || tab.wnodes[n-1].rec != 0 {
			t.Fatalf("%s: free node %d is live", where, n)
		}
		free++
	}
	if free+live != len(tab.wnodes) {
		t.Fatalf("%s: %d free and %d live watch nodes of %d", where, free, live, len(tab.wnodes))
	}
}

// TestTable_ForgetModel drives tables that forget (KeepFinished) with
// random events; the shell holds some Readies and fails some writes. After
// every step the books balance (checkInvariants, the bytes held among
// them), every Ack of a waiting or running workunit is durable in the
// model store (keyed by ID, as bolt), and the store restores (every 25
// steps). Even seeds keep results in the store (Config.ResultsInStore);
// most seeds bound the bytes held (Config.MaxBytes): a submission refused
// for it changes nothing, and one accepted leaves the table within it.
func TestTable_ForgetModel(t *testing.T) {
	t.Parallel()
	var totForgot, totDisc, totLimit, totFull, totStored, totNotified, totCrowded uint64
	defer func() {
		t.Logf("forgotten %d, discarded %d, refused for a bound %d, for memory %d, finished checked against the store %d (%d read from it), steps with a crowded record %d",
			totForgot, totDisc, totLimit, totFull, totNotified, totStored, totCrowded)
		if totCrowded == 0 {
			t.Error("no record was ever crowded: the test misses that path")
		}
		if totFull == 0 || totStored == 0 {
			t.Error("no submission was refused for memory, or no result was read from the store: the test misses that path")
		}
	}()
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		// Two masters, or, for the last seeds, enough that many watch one
		// key at once (crowded records: see watchOf).
		masters, keys := 2, 12
		if seed > 35 {
			masters, keys = 3*crowdedWatches, 2
		}
		// A bound on watches that the masters reach now and then.
		// A bound on bytes, for most seeds, of a few records and their
		// specs and results.
		var maxBytes int64
		if seed%5 != 0 {
			maxBytes = RecordBytes*int64(2+seed%6) + int64(rng.IntN(200))
		}
		inStore := seed%2 == 0
		// Packing for some seeds, with run times around its threshold,
		// and steps now and then in batches (BeginBatch), as frames are.
		var pack time.Duration
		if seed%3 != 0 {
			pack = time.Millisecond
		}
		elapsed := func() time.Duration { return time.Duration(rng.IntN(1200)) * time.Microsecond }
		tab := New(Config{KeepFinished: time.Hour, LeaseTimeout: 20 * time.Minute, MaxLost: 3, FirstToken: 1, HashSeed: seed,
			MaxWatchesPerMaster: 3 + int(seed%4), ResultsInStore: inStore, MaxBytes: maxBytes, PackBudget: pack})
		bytes := func(n int) []byte { return make([]byte, 1+rng.IntN(n)) }
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
			k[0] = byte(1 + rng.IntN(keys))
			return k
		}
		// For some seeds the workers get a Ready's assignments as it is
		// taken, before its write (as a durable tracker sends them), so
		// that their answers come while it is held, or after it failed.
		early := seed%4 >= 2
		apply := func(rd Ready, ok bool) {
			if ok {
				for _, r := range rd.Persist {
					switch {
					case r.Status == workunit.StatusUnknown:
						delete(store, r.ID)
					case r.Stored:
						// The store keeps the result it has for the ID.
						old, had := store[r.ID]
						if !had || old.Result == nil {
							t.Fatalf("seed %d: %x written as stored, and the store has no result for ID %d", seed, r.Key[0], r.ID)
						}
						r.Result = old.Result
						store[r.ID] = r
					default:
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
				// Every Finished of a record's outcome reports what the
				// store has.
				for _, n := range rd.Notify {
					if n.rec == 0 {
						continue
					}
					var stored *Record
					for _, r := range store {
						if r.Key == n.Key && r.Scope == tab.names[n.scope] {
							stored = &r
						}
					}
					result := n.Result
					if n.Stored != 0 {
						// The shell reads it from the store, by ID.
						if !inStore || n.Result != nil || stored == nil || stored.ID != n.Stored {
							t.Fatalf("seed %d: a Finished of %x is stored as ID %d with %d bytes of result; the store has %+v", seed, n.Key[0], n.Stored, len(n.Result), stored)
						}
						result = stored.Result
						totStored++
					}
					if stored == nil || stored.Status != n.Status || string(stored.Result) != string(result) || (n.Err != nil) != (stored.Err != nil) ||
						(n.Err != nil && n.Err.Message != stored.Err.Message) {
						t.Fatalf("seed %d: a Finished of %x says %v %q, the store has %+v", seed, n.Key[0], n.Status, n.Result, stored)
					}
					totNotified++
				}
			}
			if !early {
				leases = assigned(leases, rd)
			}
			if ok {
				tab.Advance(rd)
			} else {
				tab.PersistFailed(rd)
			}
		}
		// Two memo scopes, so that one key is sometimes two records.
		scope := func() string { return []string{"", "s2"}[rng.IntN(2)] }
		for step := 0; step < 400; step++ {
			var ev Event
			op := -1
			if masters > 2 && rng.IntN(2) == 0 {
				op = 11 // many masters watch the few keys: crowded records
			} else {
				op = rng.IntN(14)
			}
			switch op {
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
				ev = Submit{Master: MasterID(1 + rng.IntN(masters)), Req: uint64(step), Owner: owner, Scope: scope(), Key: key(), Spec: bytes(40), Watch: rng.IntN(2) == 0,
					Options: workunit.Options{NoCache: rng.IntN(5) == 0, Timeout: timeout, Retries: max(0, rng.IntN(5)-2)}}
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
						ev = Fail{Worker: l.w, Key: k, Token: l.tok, Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "x", Value: bytes(20)}, Elapsed: elapsed()}
					} else if rng.IntN(6) == 0 {
						ev = Return{Worker: l.w, Leases: []LeaseRef{{Key: k, Token: l.tok}}}
					} else {
						ev = Complete{Worker: l.w, Key: k, Token: l.tok, Result: bytes(60), Elapsed: elapsed()}
					}
				}
			case 9:
				for w := range workers {
					ev = WorkerLost{Worker: w}
					delete(workers, w)
					break
				}
			case 10:
				ev = Cancel{Master: 1, Owner: "", Scope: scope(), Keys: []workunit.Key{key(), key()}}
			case 11:
				ev = Watch{Master: MasterID(1 + rng.IntN(masters)), Req: uint64(step), Owner: []string{"", "b"}[rng.IntN(2)], Scope: scope(), Key: key()}
			case 12:
				ev = MasterLost{Master: MasterID(1 + rng.IntN(masters))}
			case 13:
				ev = GetInfo{Master: 1, Scope: scope(), Key: key()}
			}
			if rng.IntN(10) == 0 {
				if tab.batching {
					tab.EndBatch()
				} else {
					tab.BeginBatch()
				}
			}
			if ev != nil {
				before, had := tab.Stats(), tab.HasReady()
				var watcher MasterID
				switch e := ev.(type) {
				case Watch:
					watcher = e.Master
				case Submit:
					watcher = e.Master
				}
				n0 := tab.mwatches[watcher].n
				// Stale and duplicate events are refused; a refusal for a
				// bound changes nothing, and no watch is made past it (a
				// watch given back after a failed write may pass it: see
				// reconcile).
				err := tab.Step(ev)
				var full *FullError
				if errors.As(err, &full) {
					totFull++
					if !errors.Is(err, ErrFull) || full.Limit != maxBytes || full.Held != before.Bytes || full.Held+full.Need <= maxBytes {
						t.Fatalf("seed %d step %d: %v: held %d (Stats %d), need %d, limit %d (bound %d)", seed, step, err, full.Held, before.Bytes, full.Need, full.Limit, maxBytes)
					}
				}
				if sub, isSub := ev.(Submit); isSub && err == nil && maxBytes > 0 {
					if after := tab.Stats().Bytes; after > before.Bytes && after > maxBytes {
						t.Fatalf("seed %d step %d: submit %x took the table from %d to %d bytes, past its bound %d", seed, step, sub.Key[0], before.Bytes, after, maxBytes)
					}
				}
				if errors.Is(err, ErrLimit) || errors.Is(err, ErrFull) {
					if errors.Is(err, ErrLimit) {
						totLimit++
					}
					if after := tab.Stats(); after != before || tab.HasReady() != had {
						t.Fatalf("seed %d step %d: %v changed the table: %+v, then %+v", seed, step, err, before, after)
					}
				}
				if n1 := tab.mwatches[watcher].n; watcher != 0 && n1 > n0 && n0 >= tab.cfg.MaxWatchesPerMaster {
					t.Fatalf("seed %d step %d: master %d watches %d keys, past the bound %d", seed, step, watcher, n1, tab.cfg.MaxWatchesPerMaster)
				}
			}
			checkInvariants(t, tab, fmt.Sprintf("seed %d step %d", seed, step))
			if len(tab.wbyKey) > 0 {
				totCrowded++
			}
			// The shell: hold a Ready, or apply it; some writes fail.
			if held != nil && rng.IntN(3) == 0 {
				apply(*held, rng.IntN(5) != 0)
				held = nil
			}
			if held == nil && tab.HasReady() {
				rd := tab.Ready()
				if early {
					leases = assigned(leases, rd)
				}
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
			t2 := New(Config{KeepFinished: time.Hour, ResultsInStore: inStore})
			if err := t2.Restore(recs); err != nil {
				t.Fatalf("seed %d step %d: restore: %v", seed, step, err)
			}
			for _, r := range recs {
				got, ok := t2.LookupIn(r.Scope, r.Key)
				if !ok || got.Options.Retries != r.Options.Retries || len(got.Attempts) != len(r.Attempts) {
					t.Fatalf("seed %d step %d: %s restored with retries %d and %d attempts, stored with %d and %d",
						seed, step, r.Key.Short(), got.Options.Retries, len(got.Attempts), r.Options.Retries, len(r.Attempts))
				}
			}
		}
	}
}

// assigned appends to leases the assignments of rd.
func assigned(leases []heldLease, rd Ready) []heldLease {
	for _, m := range rd.Send {
		if a, isA := m.(*Assign); isA {
			leases = append(leases, heldLease{a.Worker, a.Key, a.Token})
		}
	}
	return leases
}
