package tracker_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strconv"
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
	for _, scope := range []string{"", "workers", "alice"} {
		_, known := tr.LookupIn(t, scope, mustKey(t, "evil()"))
		assert.False(t, known, "a refused submit is not stored (scope %q)", scope)
	}

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

// TestServer_Auth_MasterTokenTakesNoWork: a master's token does not take
// work: a hello with it as a worker, or with slots, is refused
// (bad-credentials), and a master's credit, done, failed and return are
// refused with forbidden, saying that a worker's token is needed; the
// connection stays. The work goes to a worker with a worker's token.
// (Once, any master could take another's work, read it, and forge its
// result.)
func TestServer_Auth_MasterTokenTakesNoWork(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	for _, h := range []wire.Hello{
		{Role: wire.RoleMaster, Name: "m", Token: aliceTok, Slots: 1},
		{Role: wire.RoleMaster, Name: "m", Token: aliceTok, Prefetch: 1},
		{Role: wire.RoleWorker, Name: "m", Token: aliceTok, Slots: 1},
	} {
		r, code := refusedHello(t, tr, h)
		assert.Equal(t, wire.CodeAuth, r.Code)
		assert.Contains(t, r.Message, "a master's token cannot take work")
		assert.Contains(t, r.Message, `a line "worker TOKEN" in riotd's --token-file`)
		assert.Equal(t, wire.CloseRefused+int(wire.CodeAuth), code)
	}

	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Token: aliceTok})
	key, _ := m.submit("1")
	m.send(&wire.Credit{N: 1}, &wire.Done{Key: key, Token: 1, Result: result(9)},
		&wire.Failed{Key: key, Token: 1, Error: &workunit.Error{Kind: workunit.Thrown, Message: "forged"}},
		&wire.Return{Leases: []wire.Lease{{Key: key, Token: 1}}})
	for range 4 {
		e := recv[*wire.Error](m)
		assert.Equal(t, wire.CodeForbidden, e.Code)
		assert.Contains(t, e.Message, "a master's token may submit work, not take work: taking work needs a worker's token")
	}
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 1})
	w.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](w)
	assert.Equal(t, key, a.Key)
	w.complete(a, result(1))
	assert.Equal(t, result(1), recv[*wire.Finished](m).Result)
	// The master still uploads blobs and makes round trips.
	data, hash := blobOf("captured")
	m.send(&wire.BlobPut{Req: 50, Hash: hash, Data: data}, &wire.Info{Req: 51})
	assert.Equal(t, uint64(50), recv[*wire.BlobStored](m).Req)
	assert.Equal(t, uint64(51), recv[*wire.InfoReply](m).Req)
}

// TestServer_NoAuth_MasterTakesWork: without credentials (loopback only),
// a master may still take work: one process that submits and runs its
// work (riot-worker eval's embedded default) needs no tokens.
func TestServer_NoAuth_MasterTakesWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Slots: 1})
	key, _ := m.submit("1")
	m.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](m)
	assert.Equal(t, key, a.Key)
	m.complete(a, result(1))
	assert.Equal(t, result(1), recv[*wire.Finished](m).Result)
}

// TestServer_Auth_CacheByCredential: a result is memoized for the
// masters of its credential only. Alice's result (here, forged by the
// worker) answers alice's submissions of the same workunit, not bob's:
// bob's runs on its own, and neither joins the other's run. With
// SharedCache, bob gets alice's result at once.
func TestServer_Auth_CacheByCredential(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	alice := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "alice", Token: aliceTok})
	bob := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "bob", Token: bobTok})
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 2})
	key, _ := alice.submit("6 * 7")
	w.send(&wire.Credit{N: 2})
	a := recv[*wire.Assign](w)
	w.complete(a, result(13))
	assert.Equal(t, result(13), recv[*wire.Finished](alice).Result)

	_, acc := bob.submit("6 * 7")
	assert.Equal(t, workunit.StatusWaiting, acc.Status, "not alice's result")
	b := recv[*wire.Assign](w)
	assert.Equal(t, key, b.Key)
	assert.NotEqual(t, a.Realm, b.Realm)
	_, acc = alice.submit("6 * 7")
	assert.Equal(t, workunit.StatusDone, acc.Status, "alice's own memo")
	assert.Equal(t, result(13), acc.Result)
	// Nor does alice's info see bob's run, or bob's alice's result.
	bob.send(&wire.Info{Req: 90, Key: key})
	assert.Equal(t, workunit.StatusRunning, recv[*wire.InfoReply](bob).Status)
	w.complete(b, result(14))
	assert.Equal(t, result(14), recv[*wire.Finished](bob).Result)
	ra, ok := tr.LookupIn(t, "alice", key)
	require.True(t, ok)
	rb, ok := tr.LookupIn(t, "bob", key)
	require.True(t, ok)
	assert.Equal(t, result(13), ra.Result)
	assert.Equal(t, result(14), rb.Result)
	_, ok = tr.LookupIn(t, "", key)
	assert.False(t, ok, "nothing in the shared scope")

	shared := withTokens(t, trackertest.WithOptions(func(o *tracker.Options) { o.SharedCache = true }))
	alice = dial(t, shared, wire.Hello{Role: wire.RoleMaster, Name: "alice", Token: aliceTok})
	bob = dial(t, shared, wire.Hello{Role: wire.RoleMaster, Name: "bob", Token: bobTok})
	w = dial(t, shared, wire.Hello{Role: wire.RoleWorker, Name: "w", Token: workerTok, Slots: 1})
	alice.submit("6 * 7")
	w.send(&wire.Credit{N: 1})
	w.complete(recv[*wire.Assign](w), result(13))
	assert.Equal(t, result(13), recv[*wire.Finished](alice).Result)
	_, acc = bob.submit("6 * 7")
	assert.Equal(t, workunit.StatusDone, acc.Status, "--shared-cache: masters trust each other")
	assert.Equal(t, result(13), acc.Result)
}

// TestServer_MaxWorkerWindow: a worker that declares more slots plus
// prefetch than MaxWorkerWindow (1024 by default) connects, but holds
// no more than that, however much credit it grants. (Once, a worker token
// with slots 2^20 took 994 of 1,000 workunits and sat on them.)
func TestServer_MaxWorkerWindow(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWorkerWindow = 2 }))
	m := master(t, tr, "m")
	for i := range 3 {
		m.submit(strconv.Itoa(i)) // durable: what follows is answered at once
	}
	hoarder := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "hoarder", Slots: 1 << 20})
	hoarder.send(&wire.Credit{N: 1 << 20})
	var got []*wire.Assign
	for _, msg := range hoarder.barrier() {
		if a, ok := msg.(*wire.Assign); ok {
			got = append(got, a)
		}
	}
	assert.Len(t, got, 2, "the window's bound, not the slots declared")
	// The third goes to another worker.
	w := worker(t, tr, "w", 1)
	w.send(&wire.Credit{N: 1})
	recv[*wire.Assign](w)

	def := trackertest.Start(t)
	dm := master(t, def, "m")
	for i := range 1030 {
		dm.send(&wire.Submit{Req: dm.nextReq(), Spec: must(spec(t, strconv.Itoa(i)))})
	}
	for range 1030 {
		recv[*wire.Accepted](dm) // durable: what follows is answered at once
	}
	hoarder = dial(t, def, wire.Hello{Role: wire.RoleWorker, Name: "hoarder", Slots: 1 << 20})
	hoarder.send(&wire.Credit{N: 1 << 20})
	// The assigns come over several rounds of the loop: take 1024, then
	// a round trip through the loop (an info, which the table answers
	// after what it sent before) shows that no more came.
	for range 1024 {
		recv[*wire.Assign](hoarder)
	}
	req := hoarder.nextReq()
	hoarder.send(&wire.Info{Req: req})
	for {
		m := hoarder.next()
		if r, ok := m.(*wire.InfoReply); ok && r.Req == req {
			break
		}
		_, isAssign := m.(*wire.Assign)
		require.False(t, isAssign, "more than 1024 assigns: 1024 by default")
	}
}

func must(b []byte, _ workunit.Key) []byte { return b }

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
