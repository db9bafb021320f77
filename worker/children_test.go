package worker_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// A workunit that waits for its child gives up its one slot, so the child
// runs in it; when the child is done the parent takes the slot back and
// finishes, and the worker runs the next workunit in its one slot again.
func TestWorker_ParentGivesUpItsSlot(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	var mu sync.Mutex
	var started []workunit.Key
	start(t, tr.Addr(), worker.Options{Name: "one", Slots: 1, Prefetch: -1, Started: func(a *client.Assignment) {
		mu.Lock()
		started = append(started, a.Key)
		mu.Unlock()
	}})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)

	parent, err := m.DoWork(&value.Function{Source: `(x) => {
		const a = riot.doWork((y) => [y * 2, riot.worker.slot], x);
		const b = riot.doWork((y) => [y * 3, riot.worker.slot], x);
		const [ra, rb] = [riot.waitUntilDone(a), riot.waitUntilDone(b)];
		return [ra[0] + rb[0], riot.worker.slot, ra[1], rb[1]];
	}`}, 7)
	require.NoError(t, err)
	got, err := m.WaitUntilDone(ctx, parent.Key)
	require.NoError(t, err)
	res := got.([]any)
	assert.Equal(t, 35.0, res[0], "both children ran, on the worker with one slot")
	assert.NotEqual(t, res[1], res[2], "a child ran in a slot of its own, while the parent kept its runtime")
	mu.Lock()
	assert.Len(t, started, 3, "the parent and its two children")
	mu.Unlock()

	// The slot is the worker's one again: the next workunit runs.
	next, err := m.DoWork(&value.Function{Source: `() => 'next'`})
	require.NoError(t, err)
	v, err := m.WaitUntilDone(ctx, next.Key)
	require.NoError(t, err)
	assert.Equal(t, "next", v)
}

// Past the bound on waiting parents (--max-waiting-parents), a workunit
// that would wait for its children throws a RangeError that names the
// flag.
func TestWorker_MaxWaitingParents(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	start(t, tr.Addr(), worker.Options{Name: "bounded", Slots: 1, Engine: engine.Options{MaxSeceded: 1}})
	m := master(t, tr.Addr())
	// The parent waits (one seceded), its child would wait too.
	parent, err := m.DoWork(&value.Function{Source: `() => riot.waitUntilDone(riot.doWork(() => {
		try { return riot.waitUntilDone(riot.doWork(() => 1)); } catch (e) { return e.name + ': ' + e.message; }
	}))`})
	require.NoError(t, err)
	v, err := m.WaitUntilDone(ctxFor(t), parent.Key)
	require.NoError(t, err)
	assert.Contains(t, v, "RangeError: riot.waitUntilDone: engine: too many workunits wait with their slots given up: 1 already (the most: 1)")
	assert.Contains(t, v, "riot-worker --max-waiting-parents")
}
