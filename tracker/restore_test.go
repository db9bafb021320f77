package tracker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestServer_Restart_InChunks: a durable tracker restored a few records at
// a time (Options.RestoreChunk) has, after its restart, every record as it
// was: the done ones with their results, the failed ones with their
// errors, the waiting ones queued again for the next worker.
func TestServer_Restart_InChunks(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(),
		trackertest.WithOptions(func(o *tracker.Options) { o.RestoreChunk = 3 }))
	m := master(t, tr, "m")
	var keys []workunit.Key
	for i := range 10 {
		k, _ := m.submit(fmt.Sprintf("unit %d", i))
		keys = append(keys, k)
	}
	w := worker(t, tr, "w", 1)
	for i := range 6 {
		a := recv[*wire.Assign](w)
		if i == 5 {
			w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "five"}})
			recv[*wire.Finished](m)
			break
		}
		w.complete(a, result(byte(i)), &wire.Credit{N: 1})
		recv[*wire.Finished](m)
	}
	w.ws.Close()
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 5 && s.Error == 1 && s.Workers == 0 })

	tr.Restart(t)
	byStatus := map[workunit.Status]int{}
	var waiting []workunit.Key
	for _, k := range keys {
		r, ok := tr.Lookup(t, k)
		require.True(t, ok, "record %s restored", k.Short())
		byStatus[r.Status]++
		switch r.Status {
		case workunit.StatusWaiting:
			waiting = append(waiting, k)
		case workunit.StatusError:
			require.NotNil(t, r.Err)
			assert.Equal(t, "five", r.Err.Message)
		}
	}
	assert.Equal(t, map[workunit.Status]int{workunit.StatusDone: 5, workunit.StatusError: 1, workunit.StatusWaiting: 4}, byStatus)

	m = master(t, tr, "m")
	_, acc := m.submit("unit 2") // done before the restart: answered from the store
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(2), acc.Result)
	w = worker(t, tr, "w", 4)
	var again []workunit.Key
	for range 4 {
		again = append(again, recv[*wire.Assign](w).Key)
	}
	assert.ElementsMatch(t, waiting, again, "the waiting ones run")
}
