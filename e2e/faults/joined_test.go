package faults_test

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/workunit"
)

// TestFaults_JoinerLimitOutlivesReconnect: a master that joined an endless
// workunit with a time limit, and whose connection is lost and made again
// (a proxy in between stops forwarding until the tracker drops it), keeps
// its limit: it gets a TimeoutError, and the workunit, which nobody else
// waits for, is stopped. A regression test: the watch it made again after
// the reconnect had no limit, and it waited for ever.
func TestFaults_JoinerLimitOutlivesReconnect(t *testing.T) {
	ctx := e2e.Context(t, jobWait)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--ping-interval", "200ms"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 1})
	tr.WaitFor(t, func(s tracker.Status) bool { return len(s.Workers) == 1 })
	spec := &workunit.Spec{Kind: workunit.Eval, Name: "endless.js", Source: "while (true) {}"}

	// An interrupted run leaves the endless workunit running, unwatched.
	first := master(t, tr.Addr())
	_, err := first.Submit(spec, workunit.Options{}).Accepted(ctx)
	require.NoError(t, err)
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 1 })
	require.NoError(t, first.Close())
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Watches == 0 })

	// A rerun joins it with a time limit, through the proxy.
	px := startProxy(t, tr.Addr())
	m := master(t, px.addr())
	call := m.Submit(spec, workunit.Options{Timeout: 2 * time.Second})
	acc, err := call.Accepted(ctx)
	require.NoError(t, err)
	require.Equal(t, workunit.StatusRunning, acc.Status, "joined")

	// Its connection goes silent until the tracker drops it, then comes
	// back: the client reconnects and watches the key again.
	mark := tr.Mark()
	px.stall()
	_, err = tr.WaitLogAfter(ctx, mark, regexp.MustCompile(`"msg":"disconnected","conn":"master".*"reason":"missed its ping deadline`))
	require.NoError(t, err, "the tracker drops the silent master")
	px.resume()

	_, err = call.Wait(ctx)
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr), "%v", err)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)
	assert.Contains(t, werr.Message, "the workunit ran past this master's time limit of 2s")
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 0 })
	assert.Equal(t, 1, st.Workunits.Error, "stopped: nobody else waited")
}
