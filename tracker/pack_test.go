package tracker_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// A master's frame of short workunits goes to workers that prefetch in
// packs of table.MaxPack, one frame each, once the master's workunits are
// known to be short; before, the frame's workunits went one to each
// worker in turn (10 and 10 here), in a frame each.
func TestServer_PacksShortWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	var ws []*wsClient
	for _, name := range []string{"a", "b"} {
		w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: name, Slots: 1, Prefetch: 31})
		w.send(&wire.Credit{N: 32})
		ws = append(ws, w)
	}
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 2 })
	m := master(t, tr, "m")

	// The first workunit: its run time, 5 µs, is the master's mean.
	m.submit("0")
	var first *wire.Assign
	for first == nil {
		for _, w := range ws {
			for _, msg := range w.barrier() {
				if a, ok := msg.(*wire.Assign); ok {
					first = a
					w.send(&wire.Done{Key: a.Key, Token: a.Token, Result: result(1), Elapsed: 5 * time.Microsecond}, &wire.Credit{N: 1})
				}
			}
		}
	}
	recv[*wire.Finished](m)

	const n = 20
	subs := make([]wire.Msg, n)
	for i := range subs {
		b, _ := spec(t, strconv.Itoa(i+1))
		subs[i] = &wire.Submit{Req: m.nextReq(), Spec: b}
	}
	m.send(subs...) // one frame
	for range n {
		recv[*wire.Accepted](m)
	}
	var got []int
	for _, w := range ws {
		k := 0
		for _, msg := range w.barrier() {
			if _, ok := msg.(*wire.Assign); ok {
				k++
			}
		}
		got = append(got, k)
	}
	require.Equal(t, n, got[0]+got[1])
	assert.ElementsMatch(t, []int{table.MaxPack, n - table.MaxPack}, got, "a pack of %d, then the rest", table.MaxPack)
}
