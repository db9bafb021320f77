package e2e_test

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// The operator's commands against real riotd and riot-worker processes:
// status shows the workers and the job in progress, jobs and workunits
// list them (also as JSON), logs shows a failed workunit's console and
// stack (exit 1), and cancel stops a job's endless and waiting work from
// outside the job.
func TestE2E_OperatorCommands(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "ops-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	ctx := e2e.Context(t, e2e.DefaultWait)
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "ops-master", Job: "nightly",
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })

	bad, err := m.DoWork(&value.Function{Source: "() => { console.log('about to fail'); null.x }"})
	require.NoError(t, err)
	_, err = bad.Wait(ctx)
	require.Error(t, err, "it throws")
	endless, err := m.DoWork(&value.Function{Source: "() => { for (;;) {} }"})
	require.NoError(t, err)
	waiting, err := m.DoWork(&value.Function{Source: "() => 'never runs'"})
	require.NoError(t, err)
	// The worker holds both: one in its slot, one prefetched.
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 2 })

	env := []string{"RIOT_TRACKER=" + tr.Addr()}
	res := bins.RunWorker(t, env, "status")
	require.Equal(t, 0, res.Code, res.String())
	assert.Contains(t, res.Stdout, "workunits: 0 waiting, 2 running, 0 done, 1 error")
	assert.Contains(t, res.Stdout, "workers: 1, 1 slots: 1 running, 1 prefetched")
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+ops-w\s+1\s+1\s+1\s`), res.Stdout, "the worker runs its one slot")
	assert.Contains(t, res.Stdout, "jobs in progress: 1")
	assert.Contains(t, res.Stdout, "nightly")
	res = bins.RunWorker(t, nil, "status", tr.Addr(), "--json")
	require.Equal(t, 0, res.Code, res.String())
	var ov tracker.Overview
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &ov))
	assert.Equal(t, 1, ov.Workers.Count)

	res = bins.RunWorker(t, env, "jobs")
	require.Equal(t, 0, res.Code, res.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^\s+j[0-9a-f]{12}\s+nightly\s+running\s+ops-master\s`), res.Stdout)

	res = bins.RunWorker(t, env, "workunits", "--job", "nightly", "--status", "error")
	require.Equal(t, 0, res.Code, res.String())
	assert.Contains(t, res.Stdout, bad.Key.Short())
	assert.Contains(t, res.Stdout, "TypeError")
	assert.NotContains(t, res.Stdout, endless.Key.Short())
	res = bins.RunWorker(t, env, "workunits", "--status", "lost")
	assert.Equal(t, 1, res.Code, res.String())
	assert.Contains(t, res.Stderr, `status "lost": want waiting, running, done or error`)

	res = bins.RunWorker(t, env, "logs", bad.Key.Short())
	assert.Equal(t, 1, res.Code, "a failed workunit: %s", res.String())
	assert.Contains(t, res.Stdout, "[log] about to fail")
	assert.Contains(t, res.Stdout, "TypeError")
	assert.Contains(t, res.Stdout, "on ops-w")

	res = bins.RunWorker(t, env, "cancel", "nightly")
	require.Equal(t, 0, res.Code, res.String())
	assert.Contains(t, res.Stdout, "job nightly (j")
	assert.Contains(t, res.Stdout, "2 workunits canceled")
	for _, call := range []*client.Call{endless, waiting} {
		_, err := call.Wait(ctx)
		var werr *workunit.Error
		require.ErrorAs(t, err, &werr)
		assert.Equal(t, workunit.Canceled, werr.Kind)
	}
	res = bins.RunWorker(t, env, "cancel", "no-such-job")
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, res.Stderr, `no job with the id or name "no-such-job"`)

	// The worker is free again: the endless workunit was stopped.
	again, err := m.DoWork(&value.Function{Source: "() => 42"})
	require.NoError(t, err)
	out, err := again.Wait(e2e.Context(t, 30*time.Second))
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)
}
