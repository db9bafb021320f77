package client_test

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

const redirectTok = "secret-0123456789abcdef0123456789"

// recorder is a websocket server that is not a tracker: it records every
// connection made to it and the first message of each (where a client
// would send its Hello, with its token), then hangs up.
type recorder struct {
	srv *httptest.Server

	mu    sync.Mutex
	conns int
	got   [][]byte
}

func startRecorder(t *testing.T, tlsConf *tls.Config) *recorder {
	t.Helper()
	rec := &recorder{}
	up := websocket.Upgrader{Subprotocols: []string{wire.Subprotocol}}
	rec.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if _, msg, err := ws.ReadMessage(); err == nil {
			rec.mu.Lock()
			rec.got = append(rec.got, msg)
			rec.mu.Unlock()
		}
	}))
	// A connection is counted before it is served: before the client can
	// have any answer from it.
	rec.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			rec.mu.Lock()
			rec.conns++
			rec.mu.Unlock()
		}
	}
	if tlsConf != nil {
		rec.srv.TLS = tlsConf
		rec.srv.StartTLS()
	} else {
		rec.srv.Start()
	}
	t.Cleanup(rec.srv.Close)
	return rec
}

// addr returns the recorder's host:port.
func (rec *recorder) addr() string {
	return strings.TrimPrefix(strings.TrimPrefix(rec.srv.URL, "http://"), "https://")
}

// seen returns how many connections were made to the recorder, and
// whether any message it read held the token.
func (rec *recorder) seen(token string) (conns int, leaked bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range rec.got {
		leaked = leaked || strings.Contains(string(m), token)
	}
	return rec.conns, leaked
}

// redirector starts a server that answers as a follower does: a 307 to
// location (a websocket URL), naming leader in client.LeaderHeader. With
// tlsConf it serves TLS.
func redirector(t *testing.T, location string, tlsConf *tls.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(client.LeaderHeader, "whoever")
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	if tlsConf != nil {
		srv.TLS = tlsConf
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// TestDial_Redirect_ToAStranger_NotFollowed: a replica (or whoever answers
// on a listed address) that redirects to an address not in the client's
// list gets no connection there, and no token; the client says why, and
// goes on to the next listed address.
func TestDial_Redirect_ToAStranger_NotFollowed(t *testing.T) {
	t.Parallel()
	stranger := startRecorder(t, nil)
	follower := redirector(t, "ws://"+stranger.addr()+wire.Path, nil)
	followerAddr := strings.TrimPrefix(follower.URL, "http://")

	_, err := client.Dial(ctxFor(t), followerAddr, client.Options{Token: redirectTok})
	require.Error(t, err)
	assert.True(t, errors.Is(err, client.ErrNotLeader), "%v", err)
	assert.Contains(t, err.Error(), stranger.addr())
	assert.Contains(t, err.Error(), "not among the tracker's addresses")
	assert.NotContains(t, err.Error(), redirectTok)
	conns, leaked := stranger.seen(redirectTok)
	assert.Zero(t, conns, "connections to the address the redirect named")
	assert.False(t, leaked, "the token reached the address the redirect named")

	// With another listed address, the client goes on to it.
	tr := trackertest.Start(t, trackertest.Quiet())
	c := dial(t, followerAddr+","+tr.Addr(), client.Options{Name: "m", Token: redirectTok})
	assert.Equal(t, tr.Server().Name(), c.Tracker())
	conns, leaked = stranger.seen(redirectTok)
	assert.Zero(t, conns, "connections to the address the redirect named")
	assert.False(t, leaked)
}

// TestDial_Redirect_FromWSSToWS_Refused: a replica reached over TLS that
// redirects to plain ws:// is not followed, even to a listed host.
func TestDial_Redirect_FromWSSToWS_Refused(t *testing.T) {
	t.Parallel()
	cert := trackertest.NewCert(t)
	kp, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	require.NoError(t, err)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
	plain := startRecorder(t, nil)
	follower := redirector(t, "ws://"+plain.addr()+wire.Path, serverTLS)
	followerURL := "wss://" + strings.TrimPrefix(follower.URL, "https://")

	// Both are listed, the plain one second: the client dials it once,
	// as the list's next address, and not before that, as the redirect's.
	_, err = client.Dial(ctxFor(t), followerURL+",ws://"+plain.addr(), client.Options{Token: redirectTok, TLSConfig: cert.ClientConfig()})
	require.Error(t, err, "the plain address is no tracker")
	assert.Contains(t, err.Error(), "from wss:// to plain ws://")
	assert.NotContains(t, err.Error(), redirectTok)
	conns, _ := plain.seen(redirectTok)
	assert.Equal(t, 1, conns, "connections to the plain address: the list's one only, none for the redirect")
}

// TestDial_Redirect_ToAListedAddress_Followed: the normal case, a
// follower that names a leader the client was given: the client dials the
// leader at once, before the addresses listed between them.
func TestDial_Redirect_ToAListedAddress_Followed(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	between := startRecorder(t, nil)
	// The leader as the follower names it, in another spelling than the
	// list's (the scheme's case).
	follower := redirector(t, "WS://"+tr.Addr()+wire.Path, nil)
	addrs := strings.Join([]string{strings.TrimPrefix(follower.URL, "http://"), between.addr(), tr.Addr()}, ",")
	c := dial(t, addrs, client.Options{Name: "m", Token: redirectTok})
	assert.Equal(t, tr.Server().Name(), c.Tracker(), "welcomed by the leader")
	conns, _ := between.seen(redirectTok)
	assert.Zero(t, conns, "the address listed between the follower and the leader was dialed")
}

// TestDial_Redirect_ToAnAddressOfAListedName_Followed: the client is given
// a host name (as one DNS name for every replica), and a follower names
// its leader by an address that name resolves to, on the same port: the
// client follows it, before the addresses listed between them. A leader
// on another port is refused, and gets no connection.
func TestDial_Redirect_ToAnAddressOfAListedName_Followed(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	_, port, err := net.SplitHostPort(tr.Addr())
	require.NoError(t, err)
	byName := "localhost:" + port
	between := startRecorder(t, nil)
	follower := redirector(t, "ws://"+tr.Addr()+wire.Path, nil)
	addrs := strings.Join([]string{strings.TrimPrefix(follower.URL, "http://"), between.addr(), byName}, ",")
	c := dial(t, addrs, client.Options{Name: "m", Token: redirectTok})
	assert.Equal(t, tr.Server().Name(), c.Tracker(), "welcomed by the leader")
	conns, _ := between.seen(redirectTok)
	assert.Zero(t, conns, "the address listed between the follower and the leader was dialed")

	// An address of the name, but on a port no listed address has.
	other := startRecorder(t, nil)
	stray := redirector(t, "ws://"+other.addr()+wire.Path, nil)
	_, err = client.Dial(ctxFor(t), strings.TrimPrefix(stray.URL, "http://")+",localhost:1", client.Options{Token: redirectTok})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nor an address of a name among them")
	conns, leaked := other.seen(redirectTok)
	assert.Zero(t, conns, "connections to the address the redirect named")
	assert.False(t, leaked)
}
