package table_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func key(n int) workunit.Key {
	var k workunit.Key
	binary.BigEndian.PutUint64(k[:], uint64(n)+1)
	return k
}

// drain takes the table's Ready, advances it, and returns it (its slices
// stay valid for the test because a new Ready is not taken before use).
func drain(t *testing.T, tab *table.Table) table.Ready {
	t.Helper()
	rd := tab.Ready()
	cp := table.Ready{
		Persist:   append([]table.Record(nil), rd.Persist...),
		Send:      copyMessages(rd.Send),
		Notify:    append([]table.Notification(nil), rd.Notify...),
		Discarded: append([]table.Discard(nil), rd.Discarded...),
	}
	tab.Advance(rd)
	return cp
}

// copyMessages copies messages out of the table's buffers, which Advance
// gives back to the table.
func copyMessages(ms []table.Message) []table.Message {
	out := make([]table.Message, len(ms))
	for i, m := range ms {
		switch m := m.(type) {
		case *table.Assign:
			c := *m
			out[i] = &c
		case *table.Ack:
			c := *m
			out[i] = &c
		case *table.InfoReply:
			c := *m
			out[i] = &c
		}
	}
	return out
}

func assigns(rd table.Ready) []table.Assign {
	var out []table.Assign
	for _, m := range rd.Send {
		if a, ok := m.(*table.Assign); ok {
			out = append(out, *a)
		}
	}
	return out
}

func step(t *testing.T, tab *table.Table, evs ...table.Event) {
	t.Helper()
	for _, ev := range evs {
		require.NoError(t, tab.Step(ev))
	}
}

func submit(m table.MasterID, k workunit.Key) table.Submit {
	return table.Submit{Master: m, Key: k, Spec: []byte("spec")}
}

func TestTable_Lease_StaleToken(t *testing.T) {
	t.Parallel()
	const w1, w2 = table.WorkerID(1), table.WorkerID(2)
	k := key(1)
	tests := []struct {
		name string
		// setup runs after k was assigned to w1 with token tok; it returns
		// the worker and token of the completion to try.
		setup  func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token)
		reason string
		// status of k afterwards
		want workunit.Status
	}{
		{
			name: "after the worker was lost",
			setup: func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token) {
				step(t, tab, table.WorkerLost{Worker: w1})
				return w1, tok
			},
			reason: "unknown worker",
			want:   workunit.StatusWaiting,
		},
		{
			name: "after the lease expired",
			setup: func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token) {
				step(t, tab, table.Tick{Now: time.Unix(1000, 0)})
				return w1, tok
			},
			reason: "lease expired",
			want:   workunit.StatusWaiting,
		},
		{
			name: "a token never given",
			setup: func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token) {
				return w1, tok + 100
			},
			reason: "no such lease",
			want:   workunit.StatusRunning,
		},
		{
			name: "another worker's token",
			setup: func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token) {
				step(t, tab, table.WorkerJoin{Worker: w2, Name: "w2", Slots: 1, Credit: 1})
				return w2, tok
			},
			reason: "no such lease",
			want:   workunit.StatusRunning,
		},
		{
			name: "answered twice",
			setup: func(t *testing.T, tab *table.Table, tok table.Token) (table.WorkerID, table.Token) {
				step(t, tab, table.Complete{Worker: w1, Key: k, Token: tok, Result: []byte("first")})
				return w1, tok
			},
			reason: "no such lease",
			want:   workunit.StatusDone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := table.New(table.Config{LeaseTimeout: time.Second})
			step(t, tab,
				table.Tick{Now: time.Unix(1, 0)},
				submit(1, k),
				table.WorkerJoin{Worker: w1, Name: "w1", Slots: 1, Credit: 1})
			as := assigns(drain(t, tab))
			require.Len(t, as, 1)
			w, tok := tt.setup(t, tab, as[0].Token)
			drain(t, tab)
			before, _ := tab.Lookup(k)

			// Both a Complete and a Fail are rejected the same way, every time.
			for _, ev := range []table.Event{
				table.Complete{Worker: w, Key: k, Token: tok, Result: []byte("late")},
				table.Fail{Worker: w, Key: k, Token: tok, Err: &workunit.Error{Kind: workunit.Thrown}},
				table.Complete{Worker: w, Key: k, Token: tok, Result: []byte("late")},
			} {
				err := tab.Step(ev)
				require.ErrorIs(t, err, table.ErrStale)
				rd := drain(t, tab)
				require.Len(t, rd.Discarded, 1)
				assert.Equal(t, tok, rd.Discarded[0].Token)
				assert.Equal(t, w, rd.Discarded[0].Worker)
				assert.Empty(t, rd.Persist, "a stale answer changes no record")
				assert.Empty(t, rd.Notify)
				// The first "lease expired" answer frees the window; the
				// next ones find no lease.
				if tt.reason == "lease expired" {
					tt.reason = "no such lease"
					assert.Equal(t, "lease expired", rd.Discarded[0].Reason)
				} else {
					assert.Equal(t, tt.reason, rd.Discarded[0].Reason)
				}
			}
			after, _ := tab.Lookup(k)
			assert.Equal(t, tt.want, after.Status)
			assert.Equal(t, before, after)
		})
	}
}

func TestTable_Step_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   table.Event
		want error
	}{
		{"nil event", nil, table.ErrInvalid},
		{"zero key", table.Submit{Master: 1, Spec: []byte("x")}, table.ErrInvalid},
		{"empty spec", table.Submit{Master: 1, Key: key(1)}, table.ErrInvalid},
		{"negative GPUs", table.Submit{Master: 1, Key: key(1), Spec: []byte("x"), Options: workunit.Options{GPUs: -1}}, table.ErrInvalid},
		{"too many GPUs", table.Submit{Master: 1, Key: key(1), Spec: []byte("x"), Options: workunit.Options{GPUs: 256}}, table.ErrInvalid},
		{"nameless worker", table.WorkerJoin{Worker: 9, Slots: 1}, table.ErrInvalid},
		{"no window", table.WorkerJoin{Worker: 9, Name: "x"}, table.ErrInvalid},
		{"negative prefetch", table.WorkerJoin{Worker: 9, Name: "x", Slots: 2, Prefetch: -1}, table.ErrInvalid},
		{"negative credit", table.WorkerJoin{Worker: 9, Name: "x", Slots: 1, Credit: -1}, table.ErrInvalid},
		{"duplicate id", table.WorkerJoin{Worker: 1, Name: "other", Slots: 1}, table.ErrDuplicateWorker},
		{"duplicate name", table.WorkerJoin{Worker: 9, Name: "w1", Slots: 1}, table.ErrDuplicateWorker},
		{"credit unknown", table.WorkerCredit{Worker: 9, N: 1}, table.ErrUnknownWorker},
		{"credit zero", table.WorkerCredit{Worker: 1, N: 0}, table.ErrInvalid},
		{"complete unknown worker", table.Complete{Worker: 9, Key: key(1), Token: 1}, table.ErrStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := table.New(table.Config{})
			step(t, tab, table.WorkerJoin{Worker: 1, Name: "w1", Slots: 1})
			drain(t, tab)
			before := tab.Stats()
			err := tab.Step(tt.ev)
			require.ErrorIs(t, err, tt.want)
			assert.Regexp(t, `^table: `, err.Error())
			rd := drain(t, tab)
			assert.Empty(t, rd.Persist)
			assert.Empty(t, rd.Send)
			after := tab.Stats()
			after.Discarded = before.Discarded
			assert.Equal(t, before, after)
		})
	}
}

func TestTable_Ready_Contract(t *testing.T) {
	t.Parallel()
	t.Run("empty Ready needs no Advance", func(t *testing.T) {
		t.Parallel()
		tab := table.New(table.Config{})
		assert.False(t, tab.HasReady())
		rd := tab.Ready()
		assert.True(t, rd.Empty())
		step(t, tab, submit(1, key(1)))
		assert.True(t, tab.HasReady())
		rd = tab.Ready()
		assert.Len(t, rd.Persist, 1)
	})
	t.Run("one outstanding Ready at a time", func(t *testing.T) {
		t.Parallel()
		tab := table.New(table.Config{})
		step(t, tab, submit(1, key(1)))
		rd := tab.Ready()
		require.Len(t, rd.Send, 1)
		step(t, tab, submit(1, key(2)))
		assert.False(t, tab.HasReady(), "outstanding")
		assert.True(t, tab.Ready().Empty(), "outstanding")
		tab.Advance(rd)
		tab.Advance(rd) // a second Advance is ignored
		rd2 := tab.Ready()
		require.Len(t, rd2.Persist, 1)
		assert.Equal(t, key(2), rd2.Persist[0].Key)
		tab.Advance(rd) // a stale Ready is ignored
		assert.False(t, tab.HasReady(), "rd2 is still outstanding")
		tab.Advance(rd2)
		assert.False(t, tab.HasReady())
	})
	t.Run("acks follow their records", func(t *testing.T) {
		t.Parallel()
		// Whatever the interleaving of Steps, Readys and failures, every
		// Ack is for a record that is durable once its Ready's Persist is.
		rng := rand.New(rand.NewPCG(1, 2))
		tab := table.New(table.Config{})
		durable := map[workunit.Key]bool{}
		var held *table.Ready
		for i := 0; i < 5000; i++ {
			switch rng.IntN(4) {
			case 0, 1:
				step(t, tab, submit(table.MasterID(rng.IntN(3)+1), key(rng.IntN(50))))
			case 2:
				if held == nil {
					rd := tab.Ready()
					held = &rd
				}
			case 3:
				if held == nil {
					continue
				}
				rd := *held
				held = nil
				fail := rng.IntN(3) == 0
				inThis := map[workunit.Key]bool{}
				for _, r := range rd.Persist {
					inThis[r.Key] = true
				}
				for _, m := range rd.Send {
					if a, ok := m.(*table.Ack); ok {
						require.True(t, inThis[a.Key] || durable[a.Key], "ack for %s, neither durable nor in this Ready", a.Key.Short())
					}
				}
				if fail {
					tab.PersistFailed(rd)
				} else {
					for k := range inThis {
						durable[k] = true
					}
					tab.Advance(rd)
				}
			}
		}
	})
}

func TestTable_Dispatch_SlowWorkerDoesNotHoard(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	const n = 100
	for i := 0; i < n; i++ {
		step(t, tab, submit(1, key(i)))
	}
	step(t, tab,
		table.WorkerJoin{Worker: 1, Name: "slow", Slots: 1, Prefetch: 1, Credit: 2},
		table.WorkerJoin{Worker: 2, Name: "fast", Slots: 1, Prefetch: 1, Credit: 2})
	held := map[table.WorkerID][]table.Assign{}
	order := []workunit.Key{}
	for done := 0; done < n-2; {
		rd := drain(t, tab)
		for _, a := range assigns(rd) {
			held[a.Worker] = append(held[a.Worker], a)
			order = append(order, a.Key)
		}
		require.LessOrEqual(t, len(held[1]), 2, "the slow worker holds at most its window")
		require.LessOrEqual(t, len(held[2]), 2)
		// Only the fast worker answers.
		a := held[2][0]
		held[2] = held[2][1:]
		step(t, tab,
			table.Complete{Worker: 2, Key: a.Key, Token: a.Token, Result: []byte("r")},
			table.WorkerCredit{Worker: 2, N: 1})
		done++
	}
	assert.Len(t, held[1], 2)
	// First come, first served.
	for i, k := range order {
		assert.Equal(t, key(i), k, "assignment %d", i)
	}
}

func TestTable_Fail_ErrorIsCopied(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, submit(1, key(1)), table.WorkerJoin{Worker: 1, Name: "w1", Slots: 1, Credit: 1})
	a := assigns(drain(t, tab))[0]
	werr := &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "x is undefined", Stack: "at f (job.js:3)"}
	step(t, tab, table.Fail{Worker: 1, Key: key(1), Token: a.Token, Err: werr})
	assert.Empty(t, werr.Worker, "the caller's error is not modified")
	rec, ok := tab.Lookup(key(1))
	require.True(t, ok)
	require.Equal(t, workunit.StatusError, rec.Status)
	assert.Equal(t, "w1", rec.Err.Worker)
	assert.Equal(t, key(1), rec.Err.Key)
	assert.True(t, errors.Is(rec.Err, &workunit.Error{Kind: workunit.Thrown}))
	assert.Contains(t, rec.Err.Error(), "worker w1: TypeError: x is undefined")
	assert.Nil(t, rec.Spec, "a finished record keeps no spec")
}

func TestTable_Lease_BeforeFirstTick(t *testing.T) {
	t.Parallel()
	// A lease given before the first tick counts from that tick.
	tab := table.New(table.Config{LeaseTimeout: 10 * time.Second})
	step(t, tab, submit(1, key(1)), table.WorkerJoin{Worker: 1, Name: "w1", Slots: 1, Credit: 1})
	drain(t, tab)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	step(t, tab, table.Tick{Now: now})
	assert.Equal(t, 1, tab.Stats().Running)
	step(t, tab, table.Tick{Now: now.Add(9 * time.Second)})
	assert.Equal(t, 1, tab.Stats().Running)
	step(t, tab, table.Tick{Now: now.Add(5 * time.Second)}) // backwards: ignored
	step(t, tab, table.Tick{Now: now.Add(10 * time.Second)})
	assert.Equal(t, 0, tab.Stats().Running)
	rec, _ := tab.Lookup(key(1))
	assert.Equal(t, []string{"w1"}, rec.LostFrom)
	assert.Equal(t, now.Add(10*time.Second), rec.LastChange.UTC())
}

func TestTable_Restore_Invalid(t *testing.T) {
	t.Parallel()
	good := table.Record{Key: key(1), ID: 1, Status: workunit.StatusWaiting, Spec: []byte("s")}
	tests := []struct {
		name string
		recs []table.Record
	}{
		{"zero key", []table.Record{{ID: 1, Status: workunit.StatusDone}}},
		{"no ID", []table.Record{{Key: key(1), Status: workunit.StatusDone}}},
		{"waiting without spec", []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusWaiting}}},
		{"running without spec", []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusRunning}}},
		{"error without error", []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusError}}},
		{"unknown status", []table.Record{{Key: key(1), ID: 1, Status: 9}}},
		{"bad GPUs", []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusDone, Options: workunit.Options{GPUs: 999}}}},
		{"duplicate", []table.Record{good, good}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := table.New(table.Config{})
			err := tab.Restore(tt.recs)
			require.ErrorIs(t, err, table.ErrInvalid)
			assert.Equal(t, table.Stats{}, tab.Stats(), "nothing loaded")
		})
	}
	t.Run("not empty", func(t *testing.T) {
		t.Parallel()
		tab := table.New(table.Config{})
		step(t, tab, submit(1, key(5)))
		require.ErrorIs(t, tab.Restore([]table.Record{good}), table.ErrNotEmpty)
	})
}

func TestTable_Restore_RunsAgain(t *testing.T) {
	t.Parallel()
	// What one table persisted, another restores: the interrupted work runs
	// again with its delivery count kept; finished work is answered.
	a := table.New(table.Config{})
	step(t, a,
		table.Tick{Now: time.Unix(100, 0)},
		submit(1, key(1)), submit(1, key(2)), submit(1, key(3)),
		table.WorkerJoin{Worker: 1, Name: "w1", Slots: 2, Credit: 2})
	disk := map[workunit.Key]table.Record{}
	save := func(rd table.Ready) {
		for _, r := range rd.Persist {
			disk[r.Key] = r
		}
	}
	rd := drain(t, a)
	save(rd)
	as := assigns(rd)
	require.Len(t, as, 2)
	step(t, a, table.Complete{Worker: 1, Key: as[0].Key, Token: as[0].Token, Result: []byte("one")})
	save(drain(t, a))

	var recs []table.Record
	for _, r := range disk {
		recs = append(recs, r)
	}
	b := table.New(table.Config{FirstToken: 1 << 40})
	require.NoError(t, b.Restore(recs))
	assert.Equal(t, table.Stats{Waiting: 2, Done: 1, Bytes: 3*table.RecordBytes + int64(2*len("spec")+len("one"))}, b.Stats())
	assert.False(t, b.HasReady(), "restored records are durable")
	step(t, b, table.Submit{Master: 2, Key: key(1), Spec: []byte("spec"), Watch: true},
		table.WorkerJoin{Worker: 7, Name: "w7", Slots: 5, Credit: 5})
	rd = drain(t, b)
	require.Len(t, rd.Notify, 1)
	assert.Equal(t, []byte("one"), rd.Notify[0].Result)
	as = assigns(rd)
	require.Len(t, as, 2)
	assert.Equal(t, key(2), as[0].Key)
	assert.Equal(t, 2, as[0].Delivery, "the delivery count is kept")
	assert.Equal(t, key(3), as[1].Key)
	assert.Equal(t, 1, as[1].Delivery)
	assert.GreaterOrEqual(t, uint64(as[0].Token), uint64(1<<40))
}

// TestTable_Invariants drives a table with random events and checks that
// its books balance after each.
func TestTable_Invariants(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		cfg := table.Config{LeaseTimeout: 5 * time.Second, MaxLost: 2}
		if seed > 5 {
			cfg.KeepFinished = 3 * time.Second // forgetting, and records reused
		}
		tab := table.New(cfg)
		now := time.Unix(1000, 0)
		step(t, tab, table.Tick{Now: now})
		type held struct {
			key workunit.Key
			tok table.Token
		}
		window := map[table.WorkerID]int{}
		leases := map[table.WorkerID][]held{}
		watchesOut := map[[2]uint64]int{} // (master, req) -> answers
		nextW := table.WorkerID(1)
		req := uint64(0)
		for i := 0; i < 3000; i++ {
			var ev table.Event
			switch rng.IntN(10) {
			case 0, 1:
				req++
				ev = table.Submit{Master: table.MasterID(rng.IntN(3) + 1), Req: req, Key: key(rng.IntN(40)),
					Spec: []byte("s"), Watch: rng.IntN(2) == 0, Options: workunit.Options{GPUs: rng.IntN(2), NoCache: rng.IntN(5) == 0}}
				if ev.(table.Submit).Watch {
					watchesOut[[2]uint64{uint64(ev.(table.Submit).Master), req}] = 0
				}
			case 2:
				w := nextW
				nextW++
				slots := rng.IntN(3) + 1
				window[w] = slots
				ev = table.WorkerJoin{Worker: w, Name: string(rune('a' + rng.IntN(5))), Slots: slots, GPUs: rng.IntN(2), Credit: slots}
			case 3:
				ev = table.WorkerLost{Worker: table.WorkerID(rng.IntN(int(nextW)) + 1)}
			case 4, 5, 6:
				for w, hs := range leases {
					if len(hs) == 0 {
						continue
					}
					h := hs[0]
					leases[w] = hs[1:]
					if rng.IntN(4) == 0 {
						ev = table.Fail{Worker: w, Key: h.key, Token: h.tok, Err: &workunit.Error{Kind: workunit.Thrown}}
					} else {
						ev = table.Complete{Worker: w, Key: h.key, Token: h.tok, Result: []byte("r")}
					}
					_ = tab.Step(ev) // may be stale
					ev = table.WorkerCredit{Worker: w, N: 1}
					break
				}
			case 7:
				now = now.Add(time.Duration(rng.IntN(4)) * time.Second)
				ev = table.Tick{Now: now}
			case 9:
				for w, hs := range leases {
					if len(hs) == 0 {
						continue
					}
					n := rng.IntN(len(hs)) + 1
					refs := make([]table.LeaseRef, n)
					for j, h := range hs[:n] {
						refs[j] = table.LeaseRef{Key: h.key, Token: h.tok}
					}
					leases[w] = hs[n:]
					ev = table.Return{Worker: w, Leases: refs}
					break
				}
			case 8:
				ev = table.MasterLost{Master: table.MasterID(rng.IntN(3) + 1)}
				for k := range watchesOut {
					if k[0] == uint64(ev.(table.MasterLost).Master) {
						delete(watchesOut, k)
					}
				}
			}
			if ev == nil {
				continue
			}
			err := tab.Step(ev)
			if lost, ok := ev.(table.WorkerLost); ok {
				delete(leases, lost.Worker)
				delete(window, lost.Worker)
			}
			if err != nil {
				require.True(t, errors.Is(err, table.ErrStale) || errors.Is(err, table.ErrDuplicateWorker) ||
					errors.Is(err, table.ErrUnknownWorker), "seed %d step %d: %v", seed, i, err)
				if _, ok := ev.(table.WorkerJoin); ok {
					delete(window, ev.(table.WorkerJoin).Worker)
				}
			}
			rd := drain(t, tab)
			for _, a := range assigns(rd) {
				leases[a.Worker] = append(leases[a.Worker], held{a.Key, a.Token})
				rec, _ := tab.Lookup(a.Key)
				require.Equal(t, workunit.StatusRunning, rec.Status)
			}
			for _, n := range rd.Notify {
				k := [2]uint64{uint64(n.Master), n.Req}
				if _, ok := watchesOut[k]; ok {
					watchesOut[k]++
					require.Equal(t, 1, watchesOut[k], "a watch is answered once")
				}
			}
			s := tab.Stats()
			total := 0
			for w, hs := range leases {
				require.LessOrEqual(t, len(hs), window[w], "worker %d holds more than its window", w)
				total += len(hs)
			}
			require.GreaterOrEqual(t, total, s.Running)
			require.GreaterOrEqual(t, s.Leases, s.Running)
			// Every record the counts hold is found by its key.
			var byStatus [workunit.StatusError + 1]int
			for k := range 40 {
				if rec, ok := tab.Lookup(key(k)); ok {
					require.Equal(t, key(k), rec.Key)
					byStatus[rec.Status]++
				}
			}
			require.Equal(t, [4]int{s.Waiting, s.Running, s.Done, s.Error}, [4]int(byStatus[1:]), "seed %d step %d", seed, i)
		}
		if cfg.KeepFinished > 0 {
			require.NotZero(t, tab.Stats().Forgotten, "seed %d forgot nothing", seed)
		}
	}
}

// TestTable_Restore_ForgetsUntimedLast: a restored finished record without
// a time counts from the first Tick, and does not hold up the forgetting
// of older records behind it.
func TestTable_Restore_ForgetsUntimedLast(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	tab := table.New(table.Config{KeepFinished: 30 * 24 * time.Hour})
	require.NoError(t, tab.Restore([]table.Record{
		{Key: key(1), ID: 1, Status: workunit.StatusDone, Result: []byte("untimed")},
		{Key: key(2), ID: 2, Status: workunit.StatusDone, Result: []byte("old"), LastChange: now.Add(-40 * 24 * time.Hour)},
		{Key: key(3), ID: 3, Status: workunit.StatusDone, Result: []byte("recent"), LastChange: now.Add(-time.Hour)},
	}))
	step(t, tab, table.Tick{Now: now})
	rd := drain(t, tab)
	require.Len(t, rd.Persist, 1)
	assert.Equal(t, table.Record{Key: key(2), ID: 2}, rd.Persist[0], "a tombstone for the old one")
	for k, want := range map[int]bool{1: true, 2: false, 3: true} {
		_, ok := tab.Lookup(key(k))
		assert.Equal(t, want, ok, "key %d", k)
	}
	step(t, tab, table.Tick{Now: now.Add(30 * 24 * time.Hour)})
	rd = drain(t, tab)
	assert.Len(t, rd.Persist, 2, "both forgotten a keep after the first Tick")
	assert.Equal(t, uint64(3), tab.Stats().Forgotten)
}

func TestTable_Complete_PassesConsoleAndElapsedToWatchers(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	const w = table.WorkerID(1)
	step(t, tab, table.Tick{Now: time.Unix(100, 0)}, table.WorkerJoin{Worker: w, Name: "w", Slots: 1, Credit: 1})
	sub := submit(1, key(1))
	sub.Watch, sub.Req = true, 7
	step(t, tab, sub)
	a := assigns(drain(t, tab))
	require.Len(t, a, 1)
	console := workunit.EncodeConsole([]workunit.ConsoleLine{{Level: workunit.LevelLog, Text: "hi"}})
	step(t, tab, table.Complete{Worker: w, Key: key(1), Token: a[0].Token, Result: []byte("r"), Console: console, Elapsed: 3 * time.Millisecond})
	rd := drain(t, tab)
	require.Len(t, rd.Notify, 1)
	n := rd.Notify[0]
	assert.Equal(t, uint64(7), n.Req)
	assert.Equal(t, key(1), n.Key)
	assert.Equal(t, workunit.StatusDone, n.Status)
	assert.Equal(t, "w", n.Worker)
	assert.Equal(t, console, n.Console)
	assert.Equal(t, 3*time.Millisecond, n.Elapsed)

	// A watch of the finished key later gets the outcome without the run's
	// console: the table keeps none.
	step(t, tab, table.Watch{Master: 2, Req: 8, Key: key(1)})
	rd = drain(t, tab)
	require.Len(t, rd.Notify, 1)
	assert.Nil(t, rd.Notify[0].Console)
	assert.Zero(t, rd.Notify[0].Elapsed)
}

func TestTable_Submit_TimeoutOutOfRange(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	for _, d := range []time.Duration{-time.Millisecond, 50 * 24 * time.Hour} {
		sub := submit(1, key(1))
		sub.Options.Timeout = d
		err := tab.Step(sub)
		assert.ErrorIs(t, err, table.ErrInvalid, "%v", d)
	}
	sub := submit(1, key(1))
	sub.Options.Timeout = 49 * 24 * time.Hour
	require.NoError(t, tab.Step(sub))
	rd := drain(t, tab)
	assert.Equal(t, 49*24*time.Hour, rd.Persist[0].Options.Timeout)
}

// TestTable_MaxWorkerWindow_Default: a worker that asks for a window
// larger than DefaultMaxWorkerWindow (slots 2^20: a hoarder) holds that
// many at most; with a negative bound, what it asks for.
func TestTable_MaxWorkerWindow_Default(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "hoarder", Slots: 1 << 20, Prefetch: 5, Credit: 1 << 20})
	wi, ok := tab.Worker(1)
	require.True(t, ok)
	assert.Equal(t, table.DefaultMaxWorkerWindow, wi.Window)
	assert.Equal(t, table.DefaultMaxWorkerWindow, wi.Credit)

	tab = table.New(table.Config{MaxWorkerWindow: -1})
	step(t, tab, table.WorkerJoin{Worker: 1, Name: "big", Slots: 1 << 20, Prefetch: 5, Credit: 1})
	wi, _ = tab.Worker(1)
	assert.Equal(t, 1<<20+5, wi.Window)
}

// TestTable_Lookup_AnyScope: Lookup and SpecOf, which name a record by key
// alone (for the status pages), find it in any memo scope, "" first, and
// SpecOf prefers an open record; LookupIn looks in one scope.
func TestTable_Lookup_AnyScope(t *testing.T) {
	t.Parallel()
	tab := table.New(table.Config{})
	step(t, tab, table.Submit{Master: 1, Scope: "alice", Owner: "ra", Key: key(1), Spec: []byte("a")})
	_, ok := tab.LookupIn("", key(1))
	assert.False(t, ok)
	rec, ok := tab.Lookup(key(1))
	require.True(t, ok)
	assert.Equal(t, "alice", rec.Scope)

	step(t, tab, table.WorkerJoin{Worker: 1, Name: "w", Slots: 1, Credit: 1})
	rd := drain(t, tab)
	a := rd.Send[len(rd.Send)-1].(*table.Assign)
	step(t, tab, table.Complete{Worker: 1, Key: key(1), Token: a.Token, Result: []byte("r")})
	step(t, tab, table.Submit{Master: 1, Scope: "bob", Owner: "rb", Key: key(1), Spec: []byte("b")})
	spec, owner, ok := tab.SpecOf(key(1))
	require.True(t, ok, "bob's is waiting, alice's done")
	assert.Equal(t, "b", string(spec))
	assert.Equal(t, "rb", owner)
	rec, ok = tab.LookupIn("bob", key(1))
	require.True(t, ok)
	assert.Equal(t, workunit.StatusWaiting, rec.Status)
}

// TestTable_Restorer_Chunks: records restored a chunk at a time make the
// table that Restore makes of all of them at once: the same records, the
// waiting ones queued in Seq order across the chunks; a bad record in a
// later chunk, or a key of an earlier one, leaves the table empty.
func TestTable_Restorer_Chunks(t *testing.T) {
	t.Parallel()
	var recs []table.Record
	for i := range 20 {
		r := table.Record{Key: key(i + 1), ID: uint64(i + 1), Seq: int64(20 - i), Status: workunit.StatusWaiting, Spec: []byte("spec")}
		switch i % 4 {
		case 1:
			r.Status, r.Spec, r.Result, r.Worker = workunit.StatusDone, nil, []byte("r"), "w"
		case 2:
			r.Status, r.Spec, r.Worker = workunit.StatusError, nil, "w"
			r.Err = &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "x"}
		}
		recs = append(recs, r)
	}
	order := func(tab *table.Table) []workunit.Key {
		step(t, tab, table.WorkerJoin{Worker: 1, Name: "w1", Slots: 20, Credit: 20})
		var keys []workunit.Key
		for _, a := range assigns(drain(t, tab)) {
			keys = append(keys, a.Key)
		}
		return keys
	}
	whole := table.New(table.Config{})
	require.NoError(t, whole.Restore(slices.Clone(recs)))
	chunked := table.New(table.Config{})
	rs, err := chunked.BeginRestore()
	require.NoError(t, err)
	chunk := make([]table.Record, 0, 3)
	for _, r := range recs {
		if chunk = append(chunk, r); len(chunk) == cap(chunk) {
			require.NoError(t, rs.Add(chunk))
			clear(chunk) // the table keeps nothing of the slice
			chunk = chunk[:0]
		}
	}
	require.NoError(t, rs.Add(chunk))
	rs.End()
	assert.Equal(t, whole.Stats(), chunked.Stats())
	for _, r := range recs {
		a, _ := whole.Lookup(r.Key)
		b, ok := chunked.Lookup(r.Key)
		require.True(t, ok)
		assert.Equal(t, a, b)
	}
	wo := order(whole)
	assert.Len(t, wo, 10)
	assert.Equal(t, wo, order(chunked), "queued in Seq order across the chunks")

	for name, second := range map[string][]table.Record{
		"malformed":           {{Key: key(99), ID: 99, Status: workunit.StatusWaiting}},
		"a key loaded before": {recs[0]},
	} {
		tab := table.New(table.Config{})
		rs, err := tab.BeginRestore()
		require.NoError(t, err)
		require.NoError(t, rs.Add(recs[:5]))
		require.ErrorIs(t, rs.Add(second), table.ErrInvalid, name)
		rs.End()
		assert.Equal(t, table.Stats{}, tab.Stats(), "%s: nothing loaded", name)
	}
}
