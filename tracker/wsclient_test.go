package tracker_test

// A small websocket client that speaks wire directly, for the tracker's
// tests (the real client package is written beside this one).

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/require"
)

// waitLimit bounds every wait of a test for a message: a test that hangs
// fails rather than running forever. It is no timing assertion.
const waitLimit = 30 * time.Second

// wsClient is a test connection to a tracker.
type wsClient struct {
	t    *testing.T
	ws   *websocket.Conn
	name string // from Welcome
	in   chan wire.Msg
	// readErr holds the error the reader ended with, once done is closed.
	readErr error
	done    chan struct{}
	req     atomic.Uint64
	paused  atomic.Bool
	resume  chan struct{}
}

type dialOpts struct {
	noRead bool // do not read at all (a peer that stops reading)
	noPong bool // read, but never answer pings
	// pings, when not nil, is told of each ping read (and answered), when
	// it has room.
	pings chan<- struct{}
	tls   *tls.Config // for a tracker with TLS
}

// dialRaw opens a websocket to tr without saying hello.
func dialRaw(t *testing.T, tr *trackertest.Tracker, o dialOpts) *wsClient {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: waitLimit, TLSClientConfig: o.tls}
	ws, resp, err := d.Dial(tr.URL(), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, wire.Subprotocol, ws.Subprotocol())
	c := &wsClient{t: t, ws: ws, in: make(chan wire.Msg, 1<<14), done: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(func() { close(c.resume) })
	switch {
	case o.noPong:
		ws.SetPingHandler(func(string) error { return nil })
	case o.pings != nil:
		ws.SetPingHandler(func(data string) error {
			select {
			case o.pings <- struct{}{}:
			default:
			}
			err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(waitLimit))
			if errors.Is(err, websocket.ErrCloseSent) {
				return nil
			}
			return err
		})
	}
	t.Cleanup(func() { ws.Close() })
	if o.noRead {
		close(c.done)
		return c
	}
	go c.read()
	return c
}

func (c *wsClient) read() {
	defer close(c.done)
	defer close(c.in)
	for {
		if c.paused.Load() {
			<-c.resume // the test's end
		}
		_, frame, err := c.ws.ReadMessage()
		if err != nil {
			c.readErr = err
			return
		}
		msgs, err := wire.Decode(frame) // fresh messages: they outlive the frame
		if err != nil {
			c.readErr = fmt.Errorf("test client: %w", err)
			return
		}
		for _, m := range msgs {
			c.in <- m
		}
	}
}

// dial opens a connection and says hello; it returns after the Welcome.
func dial(t *testing.T, tr *trackertest.Tracker, h wire.Hello, o ...dialOpts) *wsClient {
	t.Helper()
	var opt dialOpts
	if len(o) > 0 {
		opt = o[0]
	}
	c := dialRaw(t, tr, opt)
	if h.Version == 0 {
		h.Version = wire.ProtocolVersion
	}
	if h.Session == "" {
		h.Session = rand.Text()
	}
	c.send(&h)
	w := recv[*wire.Welcome](c)
	c.name = w.Name
	return c
}

func master(t *testing.T, tr *trackertest.Tracker, name string) *wsClient {
	t.Helper()
	return dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: name})
}

// worker connects a worker with slots and sends it credit for them.
func worker(t *testing.T, tr *trackertest.Tracker, name string, slots int, o ...dialOpts) *wsClient {
	t.Helper()
	c := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: name, Slots: slots}, o...)
	c.send(&wire.Credit{N: slots})
	return c
}

// stopReading stops the client's reader after the frame it may be reading
// now: from then on the tracker's frames pile up, and pings go unanswered.
func (c *wsClient) stopReading() { c.paused.Store(true) }

func (c *wsClient) send(msgs ...wire.Msg) {
	c.t.Helper()
	frame, err := wire.Encode(msgs...)
	require.NoError(c.t, err)
	require.NoError(c.t, c.ws.WriteMessage(websocket.BinaryMessage, frame))
}

func (c *wsClient) nextReq() uint64 { return c.req.Add(1) }

// next returns the next message from the tracker.
func (c *wsClient) next() wire.Msg {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatalf("%s: connection ended: %v", c.name, c.readErr)
		}
		return m
	case <-time.After(waitLimit):
		c.t.Fatalf("%s: no message within %v", c.name, waitLimit)
	}
	return nil
}

// recv returns the next message, which must be a T.
func recv[T wire.Msg](c *wsClient) T {
	c.t.Helper()
	m := c.next()
	got, ok := m.(T)
	if !ok {
		var want T
		c.t.Fatalf("%s: got %T %+v, want a %T", c.name, m, m, want)
	}
	return got
}

// barrier sends a request that the tracker answers without the table
// (blob-have) and returns every message that came before its answer: the
// tracker's messages to one connection keep their order, so what the
// table had queued for c when the request arrived is in the result.
func (c *wsClient) barrier() []wire.Msg {
	c.t.Helper()
	req := c.nextReq() + 1<<40
	c.send(&wire.BlobHave{Req: req})
	var before []wire.Msg
	for {
		m := c.next()
		if bn, ok := m.(*wire.BlobNeed); ok && bn.Req == req {
			return before
		}
		before = append(before, m)
	}
}

// closed waits until the tracker has closed the connection and returns
// the close error the client read.
func (c *wsClient) closed() error {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(waitLimit):
		c.t.Fatalf("%s: the tracker did not close the connection", c.name)
	}
	for range c.in {
	}
	return c.readErr
}

// closeCode waits for the tracker to close the connection and returns the
// close code it sent.
func (c *wsClient) closeCode() int {
	c.t.Helper()
	err := c.closed()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		c.t.Fatalf("%s: the connection ended with %v, not a close frame", c.name, err)
	}
	return ce.Code
}

// spec returns an eval workunit's spec and key.
func spec(t *testing.T, src string) ([]byte, workunit.Key) {
	t.Helper()
	s := workunit.Spec{Kind: workunit.Eval, Source: src, Name: "test.js"}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	return b, s.Key()
}

// submit submits src with watch and returns its key after the Accepted.
func (c *wsClient) submit(src string, opts ...func(*wire.Submit)) (workunit.Key, *wire.Accepted) {
	c.t.Helper()
	b, key := spec(c.t, src)
	req := c.nextReq()
	m := &wire.Submit{Req: req, Spec: b, Watch: true}
	for _, f := range opts {
		f(m)
	}
	c.send(m)
	acc := recv[*wire.Accepted](c)
	require.Equal(c.t, req, acc.Req)
	require.Equal(c.t, key, acc.Key)
	return key, acc
}

// result returns a one-byte value document for n (an unsigned integer
// under 24), as a worker's result.
func result(n byte) []byte { return []byte{n} }

// complete answers a worker's assign with a result.
func (c *wsClient) complete(a *wire.Assign, res []byte, more ...wire.Msg) {
	c.t.Helper()
	c.send(append([]wire.Msg{&wire.Done{Key: a.Key, Token: a.Token, Result: res, Elapsed: 250 * time.Microsecond}}, more...)...)
}

func blobOf(data string) ([]byte, blob.Hash) { return []byte(data), blob.Sum([]byte(data)) }
