package tracker

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventually polls cond until it holds, failing the test after a bound:
// for state that no event announces.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServer_HandshakeSlack: connections that never say hello count
// against MaxConns beyond a slack; past it, the tracker refuses new ones
// at once, without waiting for their hello.
func TestServer_HandshakeSlack(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Options{MaxConns: 1})
	live := func() int {
		srv.liveMu.Lock()
		defer srv.liveMu.Unlock()
		return len(srv.live)
	}
	n := 1 + handshakeSlack(1)
	for i := range n {
		rawDial(t, srv)
		eventually(t, "tracked", func() bool { return live() == i+1 })
	}
	ws := rawDial(t, srv) // says nothing
	m := readMsg(t, ws)
	r, ok := m.(*wire.Refused)
	require.True(t, ok, "%T", m)
	assert.Equal(t, wire.CodeFull, r.Code)
	assert.Equal(t, n, live())
}

// TestServer_DroppedCountedOnce: a connection dropped for a full queue
// while its writer is stuck in a write counts once in
// riot_connections_dropped_total (the failed write that the drop causes
// counted it a second time).
func TestServer_DroppedCountedOnce(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Options{Limits: wire.Limits{MaxFrameBytes: 64 << 10}, QueueBytes: 128 << 10})
	ws := rawDial(t, srv)
	hello, err := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "deaf"})
	require.NoError(t, err)
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, hello))
	// Info requests in frames of 500, never reading the answers: the
	// tracker's writer fills the socket and blocks in a write, then its
	// queue fills across rounds, and the connection is dropped.
	infos := make([]wire.Msg, 500)
	req := uint64(0)
	for srv.counters.dropped.Load() == 0 {
		for i := range infos {
			req++
			infos[i] = &wire.Info{Req: req}
		}
		frame, err := wire.Encode(infos...)
		require.NoError(t, err)
		if ws.WriteMessage(websocket.BinaryMessage, frame) != nil {
			break
		}
	}
	live := func() int {
		srv.liveMu.Lock()
		defer srv.liveMu.Unlock()
		return len(srv.live)
	}
	eventually(t, "the dropped connection's reader and writer ended", func() bool { return live() == 0 })
	res, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^riot_connections_dropped_total 1$`, string(body))
}
