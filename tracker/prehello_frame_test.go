package tracker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

// TestServer_PreHello_BigFirstFrame: before its hello is accepted, a
// connection may send no frame bigger than a hello (32 KiB), even though
// max-frame-bytes (64 MiB by default) allows more once it has
// authenticated: a bigger first frame closes it with 1009 and a reason
// that says so, and the tracker stops reading it at the limit rather than
// holding the whole frame.
func TestServer_PreHello_BigFirstFrame(t *testing.T) {
	t.Parallel()
	tr := withTokens(t)
	c := dialRaw(t, tr, dialOpts{})
	// A frame that would decode as a hello if read whole: the size
	// alone refuses it.
	frame, err := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster,
		Session: "s", Name: strings.Repeat("n", 1<<20), Token: aliceTok})
	require.NoError(t, err)
	// The write may fail: the tracker closes the connection before it
	// has read the frame whole.
	_ = c.ws.WriteMessage(websocket.BinaryMessage, frame)
	e := recv[*wire.Error](c)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Contains(t, e.Message, "a first frame of more than 32768 bytes")
	err = c.closed()
	var ce *websocket.CloseError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, wire.CloseTooBig, ce.Code)
	assert.Contains(t, ce.Text, "first frame of more than 32768 bytes")

	// Once authenticated, frames up to max-frame-bytes are read.
	m := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "alice", Token: aliceTok})
	m.submit("'" + strings.Repeat("x", 1<<20) + "'")
}

// TestServer_PreHello_LargestHello: the largest hello the first-frame
// limit makes room for (a token of 4096 bytes, names of 256 bytes, 255
// GPUs with names of 96 bytes) is welcomed.
func TestServer_PreHello_LargestHello(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWorkerWindow = -1 }))
	gpus := make([]wire.GPU, 255)
	for i := range gpus {
		gpus[i] = wire.GPU{Name: strings.Repeat("g", 96), Memory: 1<<64 - 1}
	}
	h := wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleWorker, Name: strings.Repeat("n", 256),
		Session: strings.Repeat("s", 256), Agent: strings.Repeat("a", 256), Token: strings.Repeat("t", 4096),
		Slots: 1 << 20, Prefetch: 1 << 20, GPUs: gpus}
	frame, err := wire.Encode(&h)
	require.NoError(t, err)
	require.Greater(t, len(frame), 32000)
	require.LessOrEqual(t, len(frame), 32<<10)
	w := dial(t, tr, h)
	assert.NotEmpty(t, w.name)
}

// TestServer_PreHello_EmptyFramesDoNotExtend: a connection that sends
// empty frames (which mean nothing) and no hello is closed when its
// handshake's read timeout passes, as one that sends nothing: empty frames
// do not hold a place before the hello for good.
func TestServer_PreHello_EmptyFramesDoNotExtend(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.PingInterval = 100 * time.Millisecond }))
	c := dialRaw(t, tr, dialOpts{})
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if c.ws.WriteMessage(websocket.BinaryMessage, []byte{0x80}) != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	err := c.closed()
	close(stop)
	<-sent
	require.Error(t, err)
}
