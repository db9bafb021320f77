package tracker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

const (
	adminTok      = "admin-0123456789abcdef0123456789ab"
	adminViewTok  = "viewer-0123456789abcdef0123456789"
	adminRouteAdd = "/api/v1/replicas"
)

// adminRoutes returns routes like a replicated tracker's membership
// changes, and the count of the requests that reached them.
func adminRoutes() (map[string]http.HandlerFunc, *atomic.Int64) {
	var n atomic.Int64
	h := func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"replicas": []}`))
	}
	return map[string]http.HandlerFunc{"POST /api/v1/replicas": h, "DELETE /api/v1/replicas/{id}": h}, &n
}

// TestAdminRoutes_Credentials: a replicated tracker's membership changes
// (Options.AdminRoutes) need an admin's token in Authorization: a master's,
// a worker's or a viewer's is refused (403), as are none and a wrong one
// (401), and a dashboard session, even an admin's (403); an admin's token
// is accepted, reads the status page as a viewer's does, and cannot
// connect to the websocket endpoint.
func TestAdminRoutes_Credentials(t *testing.T) {
	t.Parallel()
	routes, reached := adminRoutes()
	tr := trackertest.Start(t, trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: aliceTok, Name: "alice"},
		tracker.Credential{Role: tracker.RoleViewer, Token: adminViewTok, Name: "ops"},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok, Name: "workers"},
		tracker.Credential{Role: tracker.RoleAdmin, Token: adminTok, Name: "root"},
	), trackertest.WithOptions(func(o *tracker.Options) { o.AdminRoutes = routes }))
	base := "http://" + tr.Addr()
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"none", nil, http.StatusUnauthorized},
		{"wrong", bearer("wrong-0123456789abcdef0123456789"), http.StatusUnauthorized},
		{"worker", bearer(workerTok), http.StatusForbidden},
		{"viewer", bearer(adminViewTok), http.StatusForbidden},
		{"master", bearer(aliceTok), http.StatusForbidden},
	} {
		assert.Equal(t, tc.want, apiDo(t, nil, "POST", base+adminRouteAdd, tc.hdr, &struct{}{}), "POST with %s", tc.name)
		assert.Equal(t, tc.want, apiDo(t, nil, "DELETE", base+adminRouteAdd+"/c", tc.hdr, &struct{}{}), "DELETE with %s", tc.name)
	}
	assert.Zero(t, reached.Load(), "a refused request reached the route")

	require.Equal(t, http.StatusOK, apiDo(t, nil, "POST", base+adminRouteAdd, bearer(adminTok), &struct{}{}))
	require.Equal(t, http.StatusOK, apiDo(t, nil, "DELETE", base+adminRouteAdd+"/c", bearer(adminTok), &struct{}{}))
	assert.Equal(t, int64(2), reached.Load())
	assert.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/status", bearer(adminTok), nil), "an admin reads the status page")
	assert.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/jobs", bearer(adminTok), &struct{}{}), "and the API")

	// A session cookie (here an admin's) does not change membership: the
	// token must be in the request, which no page elsewhere can make a
	// browser send.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	req, err := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {adminTok}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := browser.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	u, _ := url.Parse(base)
	require.Len(t, jar.Cookies(u), 1, "logged in")
	assert.Equal(t, http.StatusForbidden, apiDo(t, browser, "POST", base+adminRouteAdd, map[string]string{"Origin": base}, &struct{}{}))
	assert.Equal(t, int64(2), reached.Load())

	// An admin's token is no master's or worker's on the websocket.
	for _, role := range []wire.Role{wire.RoleMaster, wire.RoleWorker} {
		r, _ := refusedHello(t, tr, wire.Hello{Role: role, Name: "x", Token: adminTok})
		assert.Equal(t, wire.CodeAuth, r.Code)
		assert.Contains(t, r.Message, "admin")
	}
}

// TestAdminRoutes_NoCredentials: without a token file (riotd on
// loopback), the routes answer requests for a loopback host, not a
// page elsewhere's (another Origin) or another Host's.
func TestAdminRoutes_NoCredentials(t *testing.T) {
	t.Parallel()
	routes, reached := adminRoutes()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.AdminRoutes = routes }))
	base := "http://" + tr.Addr()
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", base+adminRouteAdd, map[string]string{"Origin": "http://evil.example"}, &struct{}{}))
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "POST", base+adminRouteAdd, map[string]string{"Host": "evil.example"}, &struct{}{}))
	assert.Zero(t, reached.Load())
	assert.Equal(t, http.StatusOK, apiDo(t, nil, "POST", base+adminRouteAdd, nil, &struct{}{}))
	assert.Equal(t, int64(1), reached.Load())
}

// TestAPI_Replicas: a replicated tracker's GET /api/v1/replicas lists its
// replicas (Options.Replicas; a fake here) for whoever reads the API, and
// its dashboard links the Replicas page; a single tracker has neither.
func TestAPI_Replicas(t *testing.T) {
	t.Parallel()
	fakeReplicas := func(context.Context) []tracker.ReplicaStatus {
		return []tracker.ReplicaStatus{
			{ID: "a", Client: "127.0.0.1:1", Raft: "127.0.0.1:2", State: "Leader", Voter: true, Term: 3, AppliedIndex: 40},
			{ID: "b", Client: "127.0.0.1:3", Raft: "127.0.0.1:4", State: "unreachable", Voter: true, Error: "refused"},
		}
	}
	tr := trackertest.Start(t, trackertest.Tokens(
		tracker.Credential{Role: tracker.RoleViewer, Token: adminViewTok, Name: "ops"},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok, Name: "workers"},
	), trackertest.WithOptions(func(o *tracker.Options) { o.Replicas = fakeReplicas }))
	base := "http://" + tr.Addr()
	var got struct{ Replicas []tracker.ReplicaStatus }
	assert.Equal(t, http.StatusUnauthorized, apiDo(t, nil, "GET", base+"/api/v1/replicas", nil, &got))
	assert.Equal(t, http.StatusForbidden, apiDo(t, nil, "GET", base+"/api/v1/replicas", map[string]string{"Authorization": "Bearer " + workerTok}, &got))
	require.Equal(t, http.StatusOK, apiDo(t, nil, "GET", base+"/api/v1/replicas", map[string]string{"Authorization": "Bearer " + adminViewTok}, &got))
	assert.Equal(t, fakeReplicas(t.Context()), got.Replicas)

	single := trackertest.Start(t)
	assert.Equal(t, http.StatusNotFound, apiDo(t, nil, "GET", "http://"+single.Addr()+"/api/v1/replicas", nil, nil))
	page := func(addr string) string {
		req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	assert.NotContains(t, page(single.Addr()), `data-route="replicas"`)
	replicated := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.Replicas = fakeReplicas }))
	assert.Contains(t, page(replicated.Addr()), `data-route="replicas"`)
}
