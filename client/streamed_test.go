package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A master without OnPrint gets the lines a workunit streamed while it
// ran back in its outcome's console, in front of those that came with the
// result: Outcome.Console holds the whole run's, as before streaming. A
// regression test: they were dropped.
func TestClient_StreamedLinesInOutcome(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	ctx := t.Context()
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "m"})
	require.NoError(t, err)
	defer m.Close()
	w, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "w", Role: wire.RoleWorker, Slots: 1})
	require.NoError(t, err)
	defer w.Close()
	w.Credit(1)

	call, err := m.DoWork(&value.Function{Source: "() => 1"})
	require.NoError(t, err)
	a, err := w.NextAssignment(ctx)
	require.NoError(t, err)
	w.Print(a.Lease(), []wire.Line{{Level: "log", Text: "first", Time: time.Now()}, {Level: "warn", Text: "second", Time: time.Now()}})
	res, err := value.Marshal(1.0)
	require.NoError(t, err)
	require.NoError(t, w.Done(a.Lease(), res, workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "last"}}), time.Millisecond))

	out, err := call.Wait(ctx)
	require.NoError(t, err)
	lines, err := out.Console.Lines()
	require.NoError(t, err)
	assert.Equal(t, []workunit.ConsoleLine{{Level: "log", Text: "first"}, {Level: "warn", Text: "second"}, {Level: "log", Text: "last"}}, lines)
}
