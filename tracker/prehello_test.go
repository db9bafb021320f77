package tracker

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/wire"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer runs a Server with opts on 127.0.0.1 until the test ends.
func startServer(t testing.TB, opts Options, before ...func(*Server)) *Server {
	t.Helper()
	opts.Listen = "127.0.0.1:0"
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(opts)
	require.NoError(t, err)
	for _, f := range before {
		f(srv) // before Run: nothing reads the Server yet
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	<-srv.Ready()
	return srv
}

// rawDial opens a websocket to srv and says nothing.
func rawDial(t testing.TB, srv *Server) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}}
	ws, resp, err := d.Dial(srv.URL(), nil)
	require.NoError(t, err)
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	return ws
}

// readMsg reads one frame of ws and returns its one message.
func readMsg(t *testing.T, ws *websocket.Conn) wire.Msg {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, frame, err := ws.ReadMessage()
	require.NoError(t, err)
	msgs, err := wire.Decode(frame)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	return msgs[0]
}

// hello says hello on ws and returns the answer.
func hello(t *testing.T, ws *websocket.Conn) wire.Msg {
	t.Helper()
	frame, err := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "m", Session: rand.Text()})
	require.NoError(t, err)
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, frame))
	return readMsg(t, ws)
}

// TestServer_MaxHandshakes: at most MaxHandshakes connections may be
// open without their hello accepted, whatever MaxConns allows; more are
// refused at once with CodeFull. A connection gives its place back when
// its hello is accepted, and when it ends.
func TestServer_MaxHandshakes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Options{MaxHandshakes: 2})
	held := func() int { return len(srv.handshakes) }
	a := rawDial(t, srv)
	eventually(t, "a in its handshake", func() bool { return held() == 1 })
	b := rawDial(t, srv)
	eventually(t, "b in its handshake", func() bool { return held() == 2 })

	c := rawDial(t, srv)
	r, ok := readMsg(t, c).(*wire.Refused)
	require.True(t, ok, "want a Refused")
	assert.Equal(t, wire.CodeFull, r.Code)
	assert.Contains(t, r.Message, "2 connections before their hello")
	assert.Equal(t, 2, held())

	_, ok = hello(t, a).(*wire.Welcome)
	require.True(t, ok, "a is welcomed")
	eventually(t, "a's place given back", func() bool { return held() == 1 })
	d := rawDial(t, srv)
	_, ok = hello(t, d).(*wire.Welcome)
	require.True(t, ok, "d takes a's place")
	eventually(t, "d's place given back", func() bool { return held() == 1 })

	require.NoError(t, b.Close())
	eventually(t, "b's place given back", func() bool { return held() == 0 })
}

// TestOptions_MaxHandshakes: the default, the flag, and the values
// refused.
func TestOptions_MaxHandshakes(t *testing.T) {
	assert.Equal(t, DefaultMaxHandshakes, Options{}.withDefaults().MaxHandshakes)
	o := Options{MaxHandshakes: -1}
	assert.ErrorContains(t, o.check(), "max handshakes -1 is negative")
	getenv := func(string) string { return "" }
	for args, want := range map[string]int{"": DefaultMaxHandshakes, "--max-handshakes=7": 7} {
		fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
		o, err := configureOptions(fs, strings.Fields(args+" --memory"), getenv)
		require.NoError(t, err, args)
		assert.Equal(t, want, o.MaxHandshakes, args)
	}
	fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
	_, err := configureOptions(fs, []string{"--memory", "--max-handshakes=0"}, getenv)
	assert.ErrorContains(t, err, "--max-handshakes 0: want more than 0")
}

// TestMaxHelloBytes: the first-frame limit has room for the largest
// hello it is computed for.
func TestMaxHelloBytes(t *testing.T) {
	gpus := make([]wire.GPU, 255)
	for i := range gpus {
		gpus[i] = wire.GPU{Name: string(make([]byte, helloGPUNameBytes)), Memory: 1<<64 - 1}
	}
	text := string(make([]byte, helloTextBytes))
	frame, err := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleWorker, Name: text,
		Session: text, Agent: text, Token: string(make([]byte, maxTokenBytes)),
		Slots: 1 << 20, Prefetch: 1 << 20, GPUs: gpus})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(frame), maxHelloBytes)
	assert.LessOrEqual(t, maxHelloBytes, helloFrameBytes)
}
