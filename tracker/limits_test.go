package tracker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// smallFrames makes a tracker whose frames are at most 1 MiB (so its
// specs and results at most 960 KiB).
func smallFrames(o *tracker.Options) { o.Limits.MaxFrameBytes = 1 << 20 }

// TestServer_Limit_Frame: a frame over max-frame-bytes closes its
// connection with 1009 and a reason; what the connection had submitted
// stays, and nobody else notices.
func TestServer_Limit_Frame(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(smallFrames))
	big := master(t, tr, "big")
	kept, _ := big.submit("'kept'")
	other := master(t, tr, "other")
	require.NoError(t, big.ws.WriteMessage(websocket.BinaryMessage, make([]byte, 1<<20+1)))
	e := recv[*wire.Error](big)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Contains(t, e.Message, "a frame of more than 1048576 bytes: over max-frame-bytes")
	err := big.closed()
	var ce *websocket.CloseError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, wire.CloseTooBig, ce.Code)
	assert.Contains(t, ce.Text, "max-frame-bytes")

	rec, ok := tr.Lookup(t, kept)
	require.True(t, ok, "what was accepted stays")
	assert.Equal(t, workunit.StatusWaiting, workunit.Status(rec.Status))
	other.submit("'fine'")
}

// TestServer_Limit_Spec: a spec over max-spec-bytes is refused by name;
// the workunit is not stored.
func TestServer_Limit_Spec(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(smallFrames))
	m := master(t, tr, "m")
	s, key := spec(t, "'"+strings.Repeat("x", 1000<<10)+"'")
	m.send(&wire.Submit{Req: 5, Spec: s})
	e := recv[*wire.Error](m)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Equal(t, uint64(5), e.Req)
	assert.Contains(t, e.Message, "field spec")
	assert.Equal(t, wire.CloseProtocolError, m.closeCode())
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok)
}

// TestServer_Limit_Result: a worker that sends a result over
// max-result-bytes is dropped and its workunit goes to another worker (a
// worker of this repository sends a result-limit error instead).
func TestServer_Limit_Result(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(smallFrames))
	m := master(t, tr, "m")
	key, _ := m.submit("big()")
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	w.complete(a, make([]byte, 1000<<10))
	e := recv[*wire.Error](w)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Contains(t, e.Message, "field result")
	w2 := worker(t, tr, "w2", 1)
	a2 := recv[*wire.Assign](w2)
	assert.Equal(t, key, a2.Key)
	w2.complete(a2, result(3))
	assert.Equal(t, result(3), recv[*wire.Finished](m).Result)
}

// TestServer_Limit_WaitingPerMaster: a master with max-waiting workunits
// waiting or running has its next submission refused (not stored); it
// gets room as they finish; joins and other masters are not held up.
func TestServer_Limit_WaitingPerMaster(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWaitingPerMaster = 2 }))
	m := master(t, tr, "m")
	k1, _ := m.submit("1")
	m.submit("2")
	s3, k3 := spec(t, "3")
	m.send(&wire.Submit{Req: 77, Spec: s3, Options: workunit.Options{}})
	e := recv[*wire.Error](m)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Equal(t, uint64(77), e.Req)
	assert.Contains(t, e.Message, "2 workunits of this master are waiting or running")
	_, ok := tr.Lookup(t, k3)
	assert.False(t, ok, "refused: not stored")

	other := master(t, tr, "other")
	other.submit("1") // joins m's
	other.submit("3")

	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	require.Equal(t, k1, a.Key)
	w.complete(a, result(1))
	recv[*wire.Finished](m)
	m.submit("4") // room again
}

// TestServer_Limit_WaitingPerCredential: max-waiting counts per
// credential, across its sessions and connections, and per master name
// without credentials. A regression test: it counted per session, so that
// a master that opened sessions with new ids had the quota again each
// time (25 waiting with --max-waiting 5 from five sessions).
func TestServer_Limit_WaitingPerCredential(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T, c *wsClient, src string) {
		t.Helper()
		s, _ := spec(t, src)
		c.send(&wire.Submit{Req: 99, Spec: s})
		e := recv[*wire.Error](c)
		assert.Equal(t, wire.CodeLimit, e.Code)
		assert.Contains(t, e.Message, "2 workunits of this master are waiting or running")
		assert.Equal(t, uint64(99), e.Req)
	}
	limit := trackertest.WithOptions(func(o *tracker.Options) { o.MaxWaitingPerMaster = 2 })
	t.Run("tokens", func(t *testing.T) {
		t.Parallel()
		tr := withTokens(t, limit)
		hello := func(tok, session string) *wsClient {
			return dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Session: session, Token: tok})
		}
		a1 := hello(aliceTok, "s1")
		a1.submit("1")
		a2 := hello(aliceTok, "s2")
		a2.submit("2")
		for i, session := range []string{"s3", "s4", ""} {
			refused(t, hello(aliceTok, session), "3"+strings.Repeat(" ", i))
		}
		refused(t, a1, "4")
		b := hello(bobTok, "s1") // another credential, the same session id
		b.submit("5")
		b.submit("6")
		refused(t, b, "7")
	})
	t.Run("no tokens", func(t *testing.T) {
		t.Parallel()
		tr := trackertest.Start(t, limit)
		hello := func(name, session string) *wsClient {
			return dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: name, Session: session})
		}
		hello("m", "s1").submit("1")
		hello("m", "s2").submit("2")
		refused(t, hello("m", "s3"), "3") // named m-2 by the tracker: still m's quota
		hello("other", "s1").submit("3")
	})
}

// TestServer_Limit_ErrorEndsNothing: a refused request leaves the
// connection working: the tracker answers the next ones.
func TestServer_Limit_ErrorEndsNothing(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWaitingPerMaster = 1 }))
	m := master(t, tr, "m")
	m.submit("1")
	for i := range 3 {
		s, _ := spec(t, strings.Repeat(" ", i)+"2")
		m.send(&wire.Submit{Req: uint64(100 + i), Spec: s})
		assert.Equal(t, wire.CodeLimit, recv[*wire.Error](m).Code)
	}
	assert.Empty(t, m.barrier())
}

// TestServer_Limit_Messages: a frame of more than max-messages messages
// is a frame over its bounds, like one over max-frame-bytes: an Error with
// req 0, then the close 1009.
func TestServer_Limit_Messages(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	frame := []byte{0x9a, 0, 1, 0, 1} // an array of 65537 items...
	for range 1<<16 + 1 {
		frame = append(frame, 0x82, 0x10, 0x00) // ...each [16, 0]
	}
	require.NoError(t, m.ws.WriteMessage(websocket.BinaryMessage, frame))
	e := recv[*wire.Error](m)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Equal(t, uint64(0), e.Req)
	assert.Contains(t, e.Message, "65537 messages, limit 65536")
	assert.Equal(t, wire.CloseTooBig, m.closeCode())
}

// TestServer_Limit_WatchesPerMaster: a master connection waits for at
// most max-watches keys; a watch past them is refused with limit-passed,
// naming the limit; watching one key again and again takes no room, and a
// master that watched one key 100,000 times disconnects at no cost to the
// others (riotd froze for the cleanup once: quadratic in the watches).
func TestServer_Limit_WatchesPerMaster(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxWatchesPerMaster = 2 }))
	m := master(t, tr, "m")
	noWatch := func(s *wire.Submit) { s.Watch = false }
	k1, _ := m.submit("1", noWatch)
	k2, _ := m.submit("2", noWatch)
	k3, _ := m.submit("3", noWatch)
	const n = 100_000
	keys := make([]workunit.Key, n)
	for i := range keys {
		keys[i] = k1
	}
	m.send(&wire.Watch{Req: 10, Keys: keys}, &wire.Watch{Req: 11, Keys: []workunit.Key{k2}})
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 2 })
	assert.Equal(t, 2, st.Watches, "one watch per key")

	m.send(&wire.Watch{Req: 12, Keys: []workunit.Key{k1, k3, k2}})
	e := recv[*wire.Error](m)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Equal(t, uint64(12), e.Req)
	assert.Contains(t, e.Message, "this master has 2 pending watches")
	assert.Contains(t, e.Message, "max-watches")
	assert.Contains(t, e.Message, "2 of the watch's 3 keys not watched")
	s4, k4 := spec(t, "4")
	m.send(&wire.Submit{Req: 13, Spec: s4, Watch: true})
	e = recv[*wire.Error](m)
	assert.Equal(t, wire.CodeLimit, e.Code)
	assert.Equal(t, uint64(13), e.Req)
	_, ok := tr.Lookup(t, k4)
	assert.False(t, ok, "refused: not stored")

	// Another master is not held up; the first's watches end with it.
	other := master(t, tr, "other")
	other.send(&wire.Watch{Req: 1, Keys: []workunit.Key{k1, k2}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 4 })
	m.ws.Close()
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Masters == 1 && s.Watches == 2 })
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(1))
	f := recv[*wire.Finished](other)
	assert.Equal(t, k1, f.Key)
}
