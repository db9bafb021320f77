package tracker_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestServer_Retries: a submit's retries travel to the table: the
// worker's failed attempt is run again and the master hears nothing of
// it; the workunit's page lists the attempt meanwhile; the last failure
// reaches the master with both attempts, and the page shows them.
func TestServer_Retries(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	base := "http://" + tr.Addr()
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "laptop"})
	key, _ := m.submit("null.x", func(s *wire.Submit) { s.Options.Retries, s.Options.RetryOn = 1, []string{"TypeError"} })
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "alfred", Slots: 1})
	w.send(&wire.Credit{N: 1})
	fail := func(a *wire.Assign, msg string) {
		w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: msg}},
			&wire.Credit{N: 1})
	}
	a := recv[*wire.Assign](w)
	require.Equal(t, key, a.Key)
	fail(a, "first")
	again := recv[*wire.Assign](w)
	require.Equal(t, key, again.Key, "run again")
	assert.NotEqual(t, a.Token, again.Token)

	var det tracker.WorkunitDetail
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+key.String(), nil, &det))
	assert.Equal(t, "running", det.Status)
	assert.Equal(t, 1, det.Options.Retries)
	assert.Equal(t, []string{"TypeError"}, det.Options.RetryOn)
	assert.Equal(t, []tracker.AttemptDoc{{Worker: "alfred", Name: "TypeError", Message: "first"}}, det.FailedAttempts)

	fail(again, "second")
	fin := recv[*wire.Finished](m)
	require.NotNil(t, fin.Err)
	assert.Equal(t, []workunit.Attempt{{Worker: "alfred", Name: "TypeError", Message: "first"}, {Worker: "alfred", Name: "TypeError", Message: "second"}}, fin.Err.Attempts)
	det = tracker.WorkunitDetail{}
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/workunits/"+key.String(), nil, &det))
	require.NotNil(t, det.Error)
	assert.Len(t, det.Error.Attempts, 2)
	assert.Empty(t, det.FailedAttempts)
}
