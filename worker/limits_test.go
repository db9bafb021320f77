package worker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// TestWorker_ResultLimit: a result larger than the tracker's
// max-result-bytes fails its workunit with a result-limit error that says
// so; the worker and its connection live on.
func TestWorker_ResultLimit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.Limits.MaxFrameBytes = 1 << 20 }))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	out, err := m.Submit(eval("'x'.repeat(2 << 20)"), workunit.Options{}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.ResultLimit, werr.Kind)
	assert.Contains(t, werr.Message, "larger than")
	assert.Equal(t, "w", out.Worker)

	out, err = m.Submit(eval("'still here'"), workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
	assert.Equal(t, 0, int(tr.Stats(t).Discarded))
}
