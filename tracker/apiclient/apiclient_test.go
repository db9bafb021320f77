package apiclient_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/apiclient"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
)

// The client reads a real tracker's API: the overview, a job by name,
// its workunits; a job that is not there is a not-found error, and a
// tracker that needs a token says so.
func TestClient_AgainstTracker(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	ctx := t.Context()
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: "m", Job: "squares.js"})
	require.NoError(t, err)
	defer m.Close()
	call, err := m.DoWork(&value.Function{Source: "(x) => x * x"}, 3)
	require.NoError(t, err)
	_, err = call.Accepted(ctx) // in the table: what the API shows from here on
	require.NoError(t, err)

	for _, addr := range []string{tr.Addr(), "http://" + tr.Addr(), "ws://" + tr.Addr() + "/riot"} {
		api, err := apiclient.New(addr, apiclient.Options{})
		require.NoError(t, err, addr)
		assert.Equal(t, "http://"+tr.Addr(), api.Base())
		ov, err := api.Overview(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, ov.Workunits.Waiting)
	}
	api, err := apiclient.New(tr.Addr(), apiclient.Options{})
	require.NoError(t, err)
	j, err := api.FindJob(ctx, "squares.js")
	require.NoError(t, err)
	assert.Equal(t, "running", j.State)
	same, err := api.FindJob(ctx, j.ID)
	require.NoError(t, err)
	assert.Equal(t, j.ID, same.ID)
	page, err := api.Workunits(ctx, apiclient.Filter{Job: j.ID, Status: "waiting"})
	require.NoError(t, err)
	require.Len(t, page.Workunits, 1)
	assert.Equal(t, call.Key.String(), page.Workunits[0].Key)
	d, err := api.Workunit(ctx, call.Key.Short())
	require.NoError(t, err)
	assert.Equal(t, "(x) => x * x", d.Source)

	_, err = api.FindJob(ctx, "nothing.js")
	assert.True(t, apiclient.IsNotFound(err), "%v", err)
	_, err = api.CancelJob(ctx, "jnothing")
	assert.True(t, apiclient.IsNotFound(err), "%v", err)
	n, err := api.CancelJob(ctx, j.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	locked := trackertest.Start(t, trackertest.Tokens(tracker.Credential{Role: "master", Token: "master-0123456789abcdef0123456789", Name: "m"}))
	api, err = apiclient.New(locked.Addr(), apiclient.Options{})
	require.NoError(t, err)
	_, err = api.Jobs(ctx)
	var ae *apiclient.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 401, ae.Status)
	api, err = apiclient.New(locked.Addr(), apiclient.Options{Token: "master-0123456789abcdef0123456789"})
	require.NoError(t, err)
	_, err = api.Jobs(ctx)
	assert.NoError(t, err)

	_, err = apiclient.New("ftp://x", apiclient.Options{})
	assert.Error(t, err)
}
