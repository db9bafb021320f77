package apiclient_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/apiclient"
	"github.com/riot-go/riot/tracker/trackertest"
)

// fakeReplica answers every request as a replica that does not lead
// does: a 307 naming leader (host:port) in client.LeaderHeader, or 503
// when leader is "". It counts the requests it got.
func fakeReplica(t *testing.T, leader string) (addr string, got *atomic.Int32) {
	t.Helper()
	got = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		if leader == "" {
			http.Error(w, "no leader is elected yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(client.LeaderHeader, leader)
		w.Header().Set("Location", "http://"+leader+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), got
}

// TestClient_Replicas: given a replicated tracker's addresses, the
// client asks the leader: through a follower's redirect when the leader
// is listed, past a replica without a leader; a redirect to an address
// not listed is not followed (the request carries the token), and the
// error says so.
func TestClient_Replicas(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	ctx := t.Context()
	follower, _ := fakeReplica(t, tr.Addr())
	leaderless, _ := fakeReplica(t, "")
	between, betweenGot := fakeReplica(t, "")

	api, err := apiclient.New(follower+","+between+","+tr.Addr(), apiclient.Options{Token: "tok"})
	require.NoError(t, err)
	_, err = api.Overview(ctx)
	require.NoError(t, err)
	assert.Equal(t, "http://"+tr.Addr(), api.Base(), "the leader answered")
	assert.Zero(t, betweenGot.Load(), "the address listed between the follower and its leader was asked")

	api, err = apiclient.New(leaderless+","+tr.Addr(), apiclient.Options{})
	require.NoError(t, err)
	_, err = api.Overview(ctx)
	require.NoError(t, err)

	stranger, strangerGot := fakeReplica(t, "")
	misled, _ := fakeReplica(t, stranger)
	api, err = apiclient.New(misled, apiclient.Options{Token: "tok"})
	require.NoError(t, err)
	_, err = api.Overview(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not among the tracker's addresses")
	assert.Zero(t, strangerGot.Load(), "requests to the address the redirect named")
}
