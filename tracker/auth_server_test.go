package tracker_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	aliceTok  = "alice-0123456789abcdef0123456789ab"
	bobTok    = "bob-0123456789abcdef0123456789abcd"
	workerTok = "worker-0123456789abcdef0123456789a"
)

// withTokens starts a tracker that checks credentials: two masters
// (alice, bob) and one worker token.
func withTokens(t *testing.T, more ...trackertest.Option) *trackertest.Tracker {
	t.Helper()
	opts := append([]trackertest.Option{trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: aliceTok, Name: "alice"},
		tracker.Credential{Role: wire.RoleMaster, Token: bobTok, Name: "bob"},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok, Name: "workers"},
	)}, more...)
	return trackertest.Start(t, opts...)
}

// refusedHello says hello with h and returns the Refused and the close
// code that follow.
func refusedHello(t *testing.T, tr *trackertest.Tracker, h wire.Hello) (*wire.Refused, int) {
	t.Helper()
	c := dialRaw(t, tr, dialOpts{})
	h.Version = wire.ProtocolVersion
	c.send(&h)
	r := recv[*wire.Refused](c)
	return r, c.closeCode()
}

func TestServer_Auth_Refused(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	tests := []struct {
		name  string
		hello wire.Hello
		want  string
	}{
		{"no token", wire.Hello{Role: wire.RoleMaster}, "needs a token"},
		{"unknown token", wire.Hello{Role: wire.RoleMaster, Token: "nope-0123456789abcdef0123456789"}, "unknown token"},
		{"almost a token", wire.Hello{Role: wire.RoleMaster, Token: aliceTok[:len(aliceTok)-1] + "c"}, "unknown token"},
		{"a worker's token as master", wire.Hello{Role: wire.RoleMaster, Token: workerTok}, "worker's token cannot connect as \"master\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, code := refusedHello(t, tr, tt.hello)
			assert.Equal(t, wire.CodeAuth, r.Code)
			assert.Contains(t, r.Message, tt.want)
			assert.NotContains(t, r.Message, aliceTok)
			assert.Equal(t, wire.CloseRefused+int(wire.CodeAuth), code)
		})
	}
	assert.Equal(t, 0, tr.Stats(t).Connections)
	body, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, body, "riot_auth_failures_total 4")
}

// TestServer_Auth_Throttled: an address that keeps failing is slowed
// down, and answered throttled; a valid token from the same address is
// welcomed at once meanwhile, and its success does not forget the
// address's failures. A regression test: the throttle was checked before
// the token, so that strangers behind a proxy or NAT delayed, then locked
// out (bad-credentials, final), the clients with valid credentials, and a
// success forgot the failures, so that a worker token's holder could
// guess master tokens at full speed between its own successes.
func TestServer_Auth_Throttled(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	wrong := wire.Hello{Role: wire.RoleMaster, Token: "wrong-0123456789abcdef0123456789"}
	for range 5 { // free
		r, _ := refusedHello(t, tr, wrong)
		assert.Equal(t, wire.CodeAuth, r.Code)
	}
	for range 3 { // waits of 0.1, 0.2 and 0.4 s
		r, code := refusedHello(t, tr, wrong)
		assert.Equal(t, wire.CodeThrottled, r.Code)
		assert.Contains(t, r.Message, "too many failed hellos from this address")
		assert.Equal(t, wire.CloseRefused+int(wire.CodeThrottled), code)
	}
	// Strangers keep failing, at once, from the same address: the next
	// wrong hellos wait up to 5 s; a valid one does not wait for them.
	var strangers []*wsClient
	for range 12 {
		c := dialRaw(t, tr, dialOpts{})
		h := wrong
		h.Version = wire.ProtocolVersion
		c.send(&h)
		strangers = append(strangers, c)
	}
	start := time.Now()
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Token: aliceTok})
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Token: workerTok})
	assert.Less(t, time.Since(start), 2*time.Second, "valid tokens are not delayed (the strangers' answers wait up to 5 s)")
	m.submit("1 + 1")
	_ = w
	for _, c := range strangers {
		assert.Equal(t, wire.CodeThrottled, recv[*wire.Refused](c).Code)
	}
	r, _ := refusedHello(t, tr, wrong)
	assert.Equal(t, wire.CodeThrottled, r.Code, "the successes did not forget the failures")
}

// TestServer_Auth_WorkerToken: a worker's token takes work and reports
// results, and may upload blobs (a result too large for a done goes as
// one); it may not submit, watch or ask for infos: each such request is
// refused with forbidden, and the connection stays.
func TestServer_Auth_WorkerToken(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Token: aliceTok})
	key, _ := m.submit("6 * 7")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 1})

	s, _ := spec(t, "evil()")
	data, hash := blobOf("x")
	w.send(&wire.Submit{Req: 1, Spec: s}, &wire.Watch{Req: 2, Keys: []workunit.Key{key}}, &wire.Info{Req: 3, Key: key},
		&wire.Cancel{Req: 4, Keys: []workunit.Key{key}}, &wire.Unwatch{Keys: []workunit.Key{key}})
	for want := uint64(1); want <= 5; want++ {
		e := recv[*wire.Error](w)
		assert.Equal(t, wire.CodeForbidden, e.Code)
		assert.Equal(t, want%5, e.Req, "unwatch has no request id")
		assert.Contains(t, e.Message, "a worker's token may ")
	}
	w.send(&wire.BlobHave{Req: 8, Hashes: []blob.Hash{hash}})
	assert.Equal(t, []blob.Hash{hash}, recv[*wire.BlobNeed](w).Missing)
	w.send(&wire.BlobPut{Req: 9, Hash: hash, Data: data})
	assert.Equal(t, uint64(9), recv[*wire.BlobStored](w).Req)
	_, known := tr.Lookup(t, mustKey(t, "evil()"))
	assert.False(t, known, "a refused submit is not stored")

	w.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](w)
	assert.Equal(t, key, a.Key)
	w.complete(a, result(7))
	assert.Equal(t, result(7), recv[*wire.Finished](m).Result)
	body, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, body, "riot_requests_forbidden_total 5")

	// The info of the zero key, a worker's round trip when it stops
	// (client.Sync), is allowed: it names no workunit.
	w.send(&wire.Info{Req: 7})
	ir := recv[*wire.InfoReply](w)
	assert.Equal(t, uint64(7), ir.Req)
	assert.Equal(t, workunit.StatusUnknown, ir.Status)
	body, _ = get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, body, "riot_requests_forbidden_total 5")
}

// TestServer_Auth_MasterTokenTakesWork: a master's token allows the
// worker's half too.
func TestServer_Auth_MasterTokenTakesWork(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Token: aliceTok, Slots: 1})
	key, _ := m.submit("1")
	m.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](m)
	assert.Equal(t, key, a.Key)
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: bobTok, Slots: 1})
	w.ws.Close()
}

// TestServer_Auth_RealmsByCredential: two masters that give the same
// session under different credentials do not share a realm.
func TestServer_Auth_RealmsByCredential(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	a := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "a", Token: aliceTok, Session: "same"})
	b := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "b", Token: bobTok, Session: "same"})
	a.submit("'a'")
	b.submit("'b'")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 2})
	w.send(&wire.Credit{N: 2})
	r1, r2 := recv[*wire.Assign](w).Realm, recv[*wire.Assign](w).Realm
	assert.NotEqual(t, r1, r2)
}

func TestServer_Auth_StatusPage(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	base := "http://" + tr.Addr()
	do := func(path, tok string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/", "/status"} {
		code, body := do(path, "")
		assert.Equal(t, http.StatusUnauthorized, code, path)
		assert.Contains(t, body, "a viewer's token")
		code, _ = do(path, workerTok)
		assert.Equal(t, http.StatusUnauthorized, code, "a worker's token does not show %s", path)
		code, _ = do(path, aliceTok)
		assert.Equal(t, http.StatusOK, code, path)
	}
	code, body := do("/healthz", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, _ = do("/metrics", "")
	assert.Equal(t, http.StatusOK, code, "metrics hold counts only")
}

// TestServer_Auth_StatusPageThrottled: wrong tokens for the status page
// are throttled as hellos are (429 past 5 failures); a master's token from
// the same address is served at once, while strangers' requests wait.
func TestServer_Auth_StatusPageThrottled(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	do := func(ctx context.Context, tok string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tr.Addr()+"/status", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 5 {
		assert.Equal(t, http.StatusUnauthorized, do(t.Context(), "wrong-0123456789abcdef0123456789"))
	}
	assert.Equal(t, http.StatusTooManyRequests, do(t.Context(), "wrong-0123456789abcdef0123456789"))
	assert.Equal(t, http.StatusUnauthorized, do(t.Context(), workerTok), "a worker's token is no guess")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() { defer wg.Done(); do(ctx, "wrong-0123456789abcdef0123456789") }()
	}
	start := time.Now()
	assert.Equal(t, http.StatusOK, do(t.Context(), aliceTok))
	assert.Less(t, time.Since(start), 2*time.Second, "a master's token is not delayed (the strangers' requests wait up to 5 s)")
	cancel()
	wg.Wait()
}

func TestServer_TLS(t *testing.T) {
	t.Parallel()
	cert := trackertest.NewCert(t)
	tr := withTokens(t, trackertest.TLS(cert))
	require.True(t, strings.HasPrefix(tr.URL(), "wss://"), tr.URL())
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Token: aliceTok}, dialOpts{tls: cert.ClientConfig()})
	m.submit("1")

	// A client that does not trust the certificate cannot connect, nor
	// one that speaks plain websockets to it.
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	_, _, err := d.Dial(tr.URL(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	_, _, err = websocket.DefaultDialer.Dial("ws://"+tr.Addr()+wire.Path, nil)
	require.Error(t, err)

	// The status page is served over TLS too.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cert.ClientConfig()}}
	resp, err := hc.Get("https://" + tr.Addr() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestServer_NoAuth_LoopbackOnly(t *testing.T) {
	t.Parallel()
	_, err := tracker.New(tracker.Options{Listen: ":0", Logger: testLogger(t)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--unsafe-no-auth")
	srv, err := tracker.New(tracker.Options{Listen: ":0", UnsafeNoAuth: true, Logger: testLogger(t)})
	require.NoError(t, err)
	require.NoError(t, srv.Shutdown(t.Context()))
}

// TestServer_Auth_Cancel: a master cancels only what its own session
// submitted; a worker's token may not cancel at all.
func TestServer_Auth_Cancel(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	alice := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "alice", Token: aliceTok})
	key, _ := alice.submit("'mine'")
	bob := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "bob", Token: bobTok})
	bob.send(&wire.Cancel{Req: 1, Keys: []workunit.Key{key}})
	assert.Empty(t, recv[*wire.Canceled](bob).Keys, "bob cannot cancel alice's workunit")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok})
	w.send(&wire.Cancel{Req: 2, Keys: []workunit.Key{key}})
	e := recv[*wire.Error](w)
	assert.Equal(t, wire.CodeForbidden, e.Code)
	assert.Contains(t, e.Message, "cancel workunits")

	alice.send(&wire.Watch{Req: 3, Keys: []workunit.Key{key}}, &wire.Cancel{Req: 4, Keys: []workunit.Key{key}})
	c := recv[*wire.Canceled](alice)
	assert.Equal(t, uint64(4), c.Req)
	assert.Equal(t, []workunit.Key{key}, c.Keys)
	f := recv[*wire.Finished](alice)
	assert.Equal(t, workunit.StatusError, f.Status)
	assert.Equal(t, workunit.Canceled, f.Err.Kind)
	assert.Equal(t, "canceled by alice", f.Err.Message)
	body, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, body, `riot_finished_total{outcome="canceled"} 1`)
}
