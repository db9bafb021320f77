package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// runIn evaluates src in realm and returns its result as a Go value and
// the slot that ran it.
func runIn(t *testing.T, e *Engine, realm, src string) (any, int) {
	t.Helper()
	req := evalReq(src)
	req.Realm = realm
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err, "realm %q: %s", realm, src)
	v, err := res.Decode()
	require.NoError(t, err)
	return v, res.Slot
}

// countRuns counts, in a global of the runtime, the workunits it ran: 1
// means a fresh runtime.
const countRuns = "globalThis.runs = (globalThis.runs ?? 0) + 1"

// A realm's runtime is the engine's, not a slot's: run after run, one
// realm's workunits run on alternate slots in one runtime, and
// riot.worker.slot is the slot that runs each.
func TestPool_RuntimeFollowsTheRealmAcrossSlots(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 2})
	slots := map[int]bool{}
	for i := 1; i <= 6; i++ {
		v, slot := runIn(t, e, "a", countRuns+"; [runs, riot.worker.slot]")
		got := v.([]any)
		assert.Equal(t, float64(i), got[0], "run %d: one runtime for the realm, whichever slot runs it", i)
		assert.Equal(t, float64(slot), got[1], "run %d: riot.worker.slot is the slot that runs the workunit", i)
		slots[slot] = true
	}
	assert.Len(t, slots, 2, "both slots ran the realm's workunits")
	n, bytes := e.IdleRuntimes()
	assert.Equal(t, 1, n)
	assert.Equal(t, uint64(RuntimeBytesEstimate), bytes)
}

// Past Options.IdleRuntimes, the least recently used runtime is closed:
// its realm's next workunit gets a fresh one, the others keep theirs.
func TestPool_CountBound(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, IdleRuntimes: 3})
	for _, r := range []string{"a", "b", "c", "d"} {
		v, _ := runIn(t, e, r, countRuns+"; runs")
		assert.Equal(t, 1.0, v, "realm %s: a fresh runtime", r)
		n, _ := e.IdleRuntimes()
		assert.LessOrEqual(t, n, 3)
	}
	n, _ := e.IdleRuntimes()
	assert.Equal(t, 3, n)
	// b, c and d were kept; a, the least recently used, was closed.
	for _, r := range []string{"b", "c", "d"} {
		v, _ := runIn(t, e, r, countRuns+"; runs")
		assert.Equal(t, 2.0, v, "realm %s: its kept runtime", r)
	}
	v, _ := runIn(t, e, "a", countRuns+"; runs")
	assert.Equal(t, 1.0, v, "realm a: its runtime was closed, the least recently used")
}

// Past Options.IdleRuntimeBytes (RuntimeBytesEstimate a runtime, plus the
// blobs it keeps), the least recently used runtimes are closed.
func TestPool_MemoryBound(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, IdleRuntimeBytes: 2*RuntimeBytesEstimate + RuntimeBytesEstimate/2})
	for _, r := range []string{"a", "b", "c"} {
		runIn(t, e, r, countRuns)
	}
	n, bytes := e.IdleRuntimes()
	assert.Equal(t, 2, n, "two runtimes fit in the bound, not three")
	assert.Equal(t, uint64(2*RuntimeBytesEstimate), bytes)
	v, _ := runIn(t, e, "a", countRuns+"; runs")
	assert.Equal(t, 1.0, v, "realm a's runtime was closed")

	// A runtime that keeps a blob's bytes counts them: with a blob of
	// more than the bound's slack, it is kept alone.
	data, err := value.Marshal(make([]byte, RuntimeBytesEstimate))
	require.NoError(t, err)
	src := blob.Map{}
	h := src.Put(data)
	payload, err := value.Marshal([]any{&value.Function{Source: "() => big.length", Env: map[string]any{"big": value.BlobRef(h)}}})
	require.NoError(t, err)
	res, err := e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload}, Blobs: src, Realm: "blobs"})
	require.NoError(t, err)
	got, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, float64(RuntimeBytesEstimate), got)
	n, bytes = e.IdleRuntimes()
	assert.Equal(t, 1, n, "the runtime that keeps the blob is kept alone")
	assert.Equal(t, uint64(RuntimeBytesEstimate+len(data)), bytes)
}

// A runtime whose workunit ran away (its time limit, the stack limit) is
// never given back: its realm's next workunit starts on a fresh one.
func TestPool_RunawayRuntimeIsNotReused(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 2})
	for _, tc := range []struct {
		name, src string
		timeout   time.Duration
		kind      workunit.ErrorKind
	}{
		{"time limit", "for (;;) {}", 20 * time.Millisecond, workunit.TimeLimit},
		{"stack limit", "(function f() { f() })()", 0, workunit.StackLimit},
	} {
		realm := "runaway " + tc.name
		runIn(t, e, realm, "globalThis.dirty = 1")
		n, _ := e.IdleRuntimes()
		req := evalReq(tc.src)
		req.Realm, req.Timeout = realm, tc.timeout
		werr, _ := evalError(t, e, req)
		assert.Equal(t, tc.kind, werr.Kind, tc.name)
		after, _ := e.IdleRuntimes()
		assert.Equal(t, n-1, after, "%s: the runtime left the pool and did not come back", tc.name)
		v, _ := runIn(t, e, realm, "typeof dirty")
		assert.Equal(t, "undefined", v, "%s: a fresh runtime", tc.name)
	}
	// A workunit that throws did not run away: its runtime is kept.
	runIn(t, e, "thrower", "globalThis.kept = 1")
	werr, _ := evalError(t, e, Request{Spec: evalReq("throw new Error('x')").Spec, Realm: "thrower"})
	assert.Equal(t, workunit.Thrown, werr.Kind)
	v, _ := runIn(t, e, "thrower", "typeof kept")
	assert.Equal(t, "number", v)
}

// Realms never mix, with many realms on two slots sharing the engine's
// runtimes: each workunit's runtime has only its own realm's globals and
// prototypes, and runtimes are reused.
func TestPool_RealmsNeverMix(t *testing.T) {
	t.Parallel()
	const realms, rounds = 12, 10
	e := newEngine(t, Options{Slots: 2, IdleRuntimes: realms / 2})
	src := func(r int) string {
		return fmt.Sprintf(`globalThis.owner ??= %[1]q; Object.prototype['mark' + %[1]q] ??= 1; `+countRuns+`;
			[owner, Object.keys(Object.prototype).join(), runs]`, "r"+strconv.Itoa(r))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	reused := 0
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range realms * rounds {
				r := (i + g*realms/2) % realms
				req := evalReq(src(r))
				req.Realm = "r" + strconv.Itoa(r)
				res, err := e.Run(context.Background(), req)
				if !assert.NoError(t, err) {
					return
				}
				v, err := res.Decode()
				if !assert.NoError(t, err) {
					return
				}
				got := v.([]any)
				assert.Equal(t, req.Realm, got[0], "a global of another realm")
				assert.Equal(t, "mark"+req.Realm, got[1], "a prototype change of another realm")
				if got[2].(float64) > 1 {
					mu.Lock()
					reused++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.Positive(t, reused, "runtimes were reused")
	n, _ := e.IdleRuntimes()
	assert.LessOrEqual(t, n, realms/2)
}

// While a workunit waits with its slot given up (Secede), its runtime is
// its own: another workunit of its realm runs meanwhile on another
// runtime and slot, and the first, back, sees its own slot and globals.
func TestPool_SecededRuntimeIsBusy(t *testing.T) {
	t.Parallel()
	release, seceded := make(chan struct{}), make(chan struct{}, 1)
	e := newEngine(t, Options{Slots: 1, Bindings: []Binding{secedeBinding(release, seceded)}})
	type result struct {
		v   any
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		req := evalReq(countRuns + "; globalThis.mine = 'parent'; const s = riot.worker.slot; wait(); [s, riot.worker.slot, mine, runs]")
		req.Realm = "job"
		res, err := e.Run(context.Background(), req)
		if err != nil {
			waiting <- result{err: err}
			return
		}
		v, err := res.Decode()
		waiting <- result{v, err}
	}()
	<-seceded
	v, slot := runIn(t, e, "job", countRuns+"; [typeof mine, riot.worker.slot, runs]")
	assert.Equal(t, []any{"undefined", float64(slot), 1.0}, v, "another runtime of the realm, on the slot made meanwhile")
	assert.Equal(t, 1, slot)
	close(release)
	r := <-waiting
	require.NoError(t, r.err)
	assert.Equal(t, []any{0.0, 0.0, "parent", 1.0}, r.v, "the parent's slot and runtime, as before it waited")
	n, _ := e.IdleRuntimes()
	assert.Equal(t, 2, n, "both runtimes of the realm are kept")
}

// The pool's bounds default from the memory limit, and a RealmsPerSlot
// still set bounds the count as it did, RealmsPerSlot for each slot.
func TestPool_Defaults(t *testing.T) {
	t.Parallel()
	o := Options{Slots: 2}
	o.setDefaults()
	assert.Equal(t, DefaultIdleRuntimes, o.IdleRuntimes)
	assert.Equal(t, uint64(DefaultIdleRuntimeBytes), o.IdleRuntimeBytes)
	o = Options{Slots: 2, MemoryLimit: 8 << 30}
	o.setDefaults()
	assert.Equal(t, uint64(1<<30), o.IdleRuntimeBytes, "an eighth of the memory limit")
	o = Options{Slots: 2, RealmsPerSlot: 3}
	o.setDefaults()
	assert.Equal(t, 6, o.IdleRuntimes)
	o = Options{Slots: 2, RealmsPerSlot: 3, IdleRuntimes: 10, IdleRuntimeBytes: 1 << 20}
	o.setDefaults()
	assert.Equal(t, 10, o.IdleRuntimes)
	assert.Equal(t, uint64(1<<20), o.IdleRuntimeBytes)
}

// A runtime that alone is past Options.IdleRuntimeBytes (the blobs it
// keeps) is closed when it is given back, and the other realms keep their
// idle runtimes: it does not empty the pool first.
func TestPool_OversizedRuntimeLeavesTheOthers(t *testing.T) {
	t.Parallel()
	p := newRuntimePool(10, 3*RuntimeBytesEstimate)
	closed := map[string]bool{}
	mk := func(key string, kept int) *realm {
		rl := &realm{key: key}
		rl.closers = []func(){func() { closed[key] = true }}
		if kept > 0 {
			rl.blobLRU.PushFront(&blobBytes{data: make([]byte, kept)})
		}
		return rl
	}
	p.put(mk("a", 0), 0)
	p.put(mk("b", 0), 0)
	p.put(mk("big", 3*RuntimeBytesEstimate), 0)
	assert.True(t, closed["big"], "the oversized runtime is closed")
	assert.False(t, closed["a"] || closed["b"], "the others stay idle: %v", closed)
	n, bytes := p.stats()
	assert.Equal(t, 2, n)
	assert.Equal(t, uint64(2*RuntimeBytesEstimate), bytes)
	assert.NotNil(t, p.take("a", 0))
	assert.NotNil(t, p.take("b", 0))
	assert.Nil(t, p.take("big", 0))
}
