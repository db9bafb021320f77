package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServer_Handshake(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := dialRaw(t, tr, dialOpts{})
	c.send(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "alfred", Session: "s1", Agent: "test"})
	w := recv[*wire.Welcome](c)
	assert.Equal(t, uint32(wire.ProtocolVersion), w.Version)
	assert.Equal(t, "alfred", w.Name)
	assert.Equal(t, tr.Server().Name(), w.Tracker)
	assert.Equal(t, wire.DefaultPingInterval, w.PingInterval)
	assert.False(t, w.Resumed)
	assert.Equal(t, wire.Limits{}.WithDefaults(), w.Limits)

	// Names are unique among connections, whatever their role.
	assert.Equal(t, "alfred-2", master(t, tr, "alfred").name)
	assert.Equal(t, "alfred-3", worker(t, tr, "alfred", 1).name)
	assert.Equal(t, "master", master(t, tr, "").name)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Connections == 4 })
	assert.Equal(t, 3, st.Masters)
	assert.Equal(t, 1, st.Workers)

	// A name is free again once its connection is gone.
	c.ws.Close()
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Connections == 3 })
	assert.Equal(t, "alfred", master(t, tr, "alfred").name)
}

func TestServer_Handshake_VersionMismatch(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := dialRaw(t, tr, dialOpts{})
	c.send(&wire.Hello{Version: 8, Role: wire.RoleWorker, Name: "future"})
	r := recv[*wire.Refused](c)
	assert.Equal(t, wire.CodeVersion, r.Code)
	assert.Equal(t, uint32(wire.ProtocolVersion), r.Version)
	assert.Contains(t, r.Message, "protocol version 8")
	assert.Contains(t, r.Message, fmt.Sprintf("version %d", wire.ProtocolVersion))
	assert.Equal(t, wire.CloseRefused+int(wire.CodeVersion), c.closeCode())
	assert.Equal(t, 0, tr.Stats(t).Connections)
}

func TestServer_Handshake_ProtocolErrors(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	s, _ := spec(t, "1")
	tests := []struct {
		name string
		// first is sent first; then, when hello is set, after a Welcome.
		hello bool
		msgs  []wire.Msg
		code  int
		want  string
	}{
		{name: "a message before hello", msgs: []wire.Msg{&wire.Submit{Req: 1, Spec: s}},
			code: wire.CloseProtocolError, want: "first frame must hold a hello"},
		{name: "hello with more in its frame", msgs: []wire.Msg{&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster}, &wire.Credit{N: 1}},
			code: wire.CloseProtocolError, want: "first frame must hold a hello"},
		{name: "a second hello", hello: true, msgs: []wire.Msg{&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster}},
			code: wire.CloseProtocolError, want: "second hello"},
		{name: "a tracker's message", hello: true, msgs: []wire.Msg{&wire.Credit{N: 1}, &wire.BlobStored{Req: 3}},
			code: wire.CloseProtocolError, want: "blob-stored message goes from the tracker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c *wsClient
			if tt.hello {
				c = master(t, tr, "m")
			} else {
				c = dialRaw(t, tr, dialOpts{})
			}
			c.send(tt.msgs...)
			var e *wire.Error
			for e == nil {
				if m, ok := c.next().(*wire.Error); ok {
					e = m
				}
			}
			assert.Equal(t, wire.CodeProtocol, e.Code)
			assert.Contains(t, e.Message, tt.want)
			assert.Equal(t, tt.code, c.closeCode())
		})
	}
}

func TestServer_Handshake_BadFrame(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := master(t, tr, "m")
	// A submit whose spec field is a text string: the Error names it and
	// echoes the request id.
	require.NoError(t, c.ws.WriteMessage(2, []byte{0x81, 0x89, 0x05, 0x09, 0x61, 0x78, 0xf4, 0x00, 0x00, 0xf4, 0x00, 0x80}))
	e := recv[*wire.Error](c)
	assert.Equal(t, uint64(9), e.Req)
	assert.Equal(t, wire.CodeProtocol, e.Code)
	assert.Contains(t, e.Message, "spec")
	assert.Equal(t, wire.CloseProtocolError, c.closeCode())
}

func TestServer_Submit_InvalidSpec(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := master(t, tr, "m")
	c.send(&wire.Submit{Req: 4, Spec: []byte{0x01}})
	e := recv[*wire.Error](c)
	assert.Equal(t, uint64(4), e.Req)
	assert.Equal(t, wire.CodeInvalid, e.Code)
	assert.Contains(t, e.Message, "spec")
	s, _ := spec(t, "1")
	c.send(&wire.Submit{Req: 5, Spec: s, Options: workunit.Options{GPUs: 300}})
	e = recv[*wire.Error](c)
	assert.Equal(t, uint64(5), e.Req)
	assert.Equal(t, wire.CodeInvalid, e.Code)
	assert.Equal(t, 0, tr.Stats(t).Waiting)
}

func TestServer_Dispatch_Credit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	var keys []workunit.Key
	for i := range 4 {
		k, acc := m.submit("work(" + string(rune('0'+i)) + ")")
		assert.Equal(t, workunit.StatusWaiting, acc.Status)
		keys = append(keys, k)
	}
	// Two workers of one slot each: one workunit each, however many wait.
	w1 := worker(t, tr, "w1", 1)
	w2 := worker(t, tr, "w2", 1)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Running == 2 })
	got := map[*wsClient][]*wire.Assign{}
	for _, w := range []*wsClient{w1, w2} {
		for _, msg := range w.barrier() {
			got[w] = append(got[w], msg.(*wire.Assign))
		}
		require.Len(t, got[w], 1, "%s holds one workunit", w.name)
	}
	// The oldest first, one each in turn.
	assert.ElementsMatch(t, keys[:2], []workunit.Key{got[w1][0].Key, got[w2][0].Key})
	// A result with a credit brings the next.
	w1.complete(got[w1][0], result(1), &wire.Credit{N: 1})
	a := recv[*wire.Assign](w1)
	assert.Equal(t, keys[2], a.Key)
	w1.complete(a, result(2), &wire.Credit{N: 1})
	a = recv[*wire.Assign](w1)
	assert.Equal(t, keys[3], a.Key)
	w1.complete(a, result(3))
	w2.complete(got[w2][0], result(4))
	done := map[workunit.Key]string{}
	for range 4 {
		f := recv[*wire.Finished](m)
		assert.Equal(t, workunit.StatusDone, f.Status)
		done[f.Key] = f.Worker
	}
	assert.Len(t, done, 4)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 4 })
	assert.Equal(t, uint64(4), st.Completed)
	assert.Equal(t, 0, st.Leases)
}

// TestServer_Dispatch_NoCreditNoWork: a worker that joined gets nothing
// before its first Credit.
func TestServer_Dispatch_NoCreditNoWork(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	m.submit("1")
	w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 4})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 1 })
	assert.Empty(t, w.barrier())
	w.send(&wire.Credit{N: 1})
	recv[*wire.Assign](w)
}

func TestServer_Finished_ToEveryWatcher(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m1 := master(t, tr, "m1")
	m2 := master(t, tr, "m2")
	key, _ := m1.submit("6*7")
	m2.send(&wire.Watch{Req: 77, Keys: []workunit.Key{key}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 2 })
	w := worker(t, tr, "alfred", 1)
	a := recv[*wire.Assign](w)
	assert.Equal(t, key, a.Key)
	console := workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "hi"}})
	w.send(&wire.Done{Key: a.Key, Token: a.Token, Result: result(42 - 30), Console: console, Elapsed: 1500 * time.Microsecond})
	for _, tc := range []struct {
		c   *wsClient
		req uint64
	}{{m1, 1}, {m2, 77}} {
		f := recv[*wire.Finished](tc.c)
		assert.Equal(t, tc.req, f.Req)
		assert.Equal(t, key, f.Key)
		assert.Equal(t, workunit.StatusDone, f.Status)
		assert.Equal(t, "alfred", f.Worker)
		assert.Equal(t, result(12), f.Result)
		assert.Equal(t, console, f.Console)
		assert.Equal(t, 1500*time.Microsecond, f.Elapsed)
		assert.False(t, f.LastChange.IsZero())
	}
	// Info after the fact: done, by alfred, with the result.
	m2.send(&wire.Info{Req: 78, Key: key})
	in := recv[*wire.InfoReply](m2)
	assert.Equal(t, uint64(78), in.Req)
	assert.Equal(t, workunit.StatusDone, in.Status)
	assert.Equal(t, "alfred", in.Worker)
	assert.Equal(t, result(12), in.Result)
}

func TestServer_Watch_UnknownAndUnwatch(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	_, unknown := spec(t, "never submitted")
	m.send(&wire.Watch{Req: 3, Keys: []workunit.Key{unknown}}, &wire.Info{Req: 4, Key: unknown})
	// Answers go before notifications in the tracker's rounds.
	in := recv[*wire.InfoReply](m)
	assert.Equal(t, workunit.StatusUnknown, in.Status)
	f := recv[*wire.Finished](m)
	assert.Equal(t, workunit.StatusUnknown, f.Status)
	assert.Equal(t, uint64(3), f.Req)

	key, _ := m.submit("x", func(m *wire.Submit) { m.Watch = false })
	m.send(&wire.Watch{Req: 5, Keys: []workunit.Key{key}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 1 })
	m.send(&wire.Unwatch{Keys: []workunit.Key{key}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Watches == 0 })
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(1))
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 })
	assert.Empty(t, m.barrier(), "an unwatched key is not reported")
}

func TestServer_Memoized(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	key, _ := m.submit("memo")
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(9), &wire.Credit{N: 1})
	recv[*wire.Finished](m)

	// Submitted again, by anyone: answered from the table, done, with the
	// result inline and a Finished right after; nothing runs.
	m2 := master(t, tr, "m2")
	k2, acc := m2.submit("memo")
	assert.Equal(t, key, k2)
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(9), acc.Result)
	assert.Equal(t, "w", acc.Worker)
	f := recv[*wire.Finished](m2)
	assert.Equal(t, result(9), f.Result)
	assert.Empty(t, w.barrier(), "a memoized workunit does not run again")

	// NoCache runs it again.
	_, acc = m2.submit("memo", func(m *wire.Submit) { m.Options.NoCache = true })
	assert.Equal(t, workunit.StatusWaiting, acc.Status)
	w.complete(recv[*wire.Assign](w), result(10))
	f = recv[*wire.Finished](m2)
	assert.Equal(t, result(10), f.Result)
}

func TestServer_Failed_RunsAgain(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	key, _ := m.submit("throw new TypeError('nope')")
	w := worker(t, tr, "bob", 1)
	a := recv[*wire.Assign](w)
	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{
		Kind: workunit.Thrown, Name: "TypeError", Message: "nope", Stack: "TypeError: nope\n    at test.js:1:7",
	}}, &wire.Credit{N: 1})
	f := recv[*wire.Finished](m)
	assert.Equal(t, workunit.StatusError, f.Status)
	assert.Equal(t, "bob", f.Worker)
	require.NotNil(t, f.Err)
	assert.Equal(t, workunit.Thrown, f.Err.Kind)
	assert.Equal(t, "TypeError", f.Err.Name)
	assert.Equal(t, "nope", f.Err.Message)
	assert.Equal(t, "TypeError: nope\n    at test.js:1:7", f.Err.Stack)
	assert.Equal(t, "bob", f.Err.Worker, "the error names the worker")
	assert.Equal(t, key, f.Err.Key)
	assert.Equal(t, uint64(1), tr.WaitFor(t, func(s tracker.Stats) bool { return s.Error == 1 }).Failed)

	// An errored workunit runs again when submitted again.
	_, acc := m.submit("throw new TypeError('nope')")
	assert.Equal(t, workunit.StatusWaiting, acc.Status)
	a = recv[*wire.Assign](w)
	assert.Equal(t, key, a.Key)
	w.complete(a, result(1))
	assert.Equal(t, workunit.StatusDone, recv[*wire.Finished](m).Status)
}

func TestServer_WorkerLost_Reassigned(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	key, _ := m.submit("long")
	w1 := worker(t, tr, "w1", 1)
	recv[*wire.Assign](w1)
	w1.ws.Close()
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 0 && s.Waiting == 1 })
	rec, ok := tr.Lookup(t, key)
	require.True(t, ok)
	assert.Equal(t, []string{"w1"}, rec.LostFrom)

	w2 := worker(t, tr, "w2", 1)
	a := recv[*wire.Assign](w2)
	assert.Equal(t, key, a.Key)
	w2.complete(a, result(5))
	f := recv[*wire.Finished](m)
	assert.Equal(t, "w2", f.Worker)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 })
	assert.Empty(t, m.barrier(), "the master gets the result once")
}

func TestServer_WorkerLost_TooOften(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxLost = 2 }))
	m := master(t, tr, "m")
	m.submit("crash()")
	for _, name := range []string{"a", "b"} {
		w := worker(t, tr, name, 1)
		recv[*wire.Assign](w)
		w.ws.Close()
		tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 0 })
	}
	f := recv[*wire.Finished](m)
	assert.Equal(t, workunit.StatusError, f.Status)
	require.NotNil(t, f.Err)
	assert.Equal(t, workunit.WorkersLost, f.Err.Kind)
	assert.Contains(t, f.Err.Message, "a, b")
}

func TestServer_MissedPong_Dropped(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.PingInterval = 100 * time.Millisecond
	}))
	m := master(t, tr, "m")
	key, _ := m.submit("1")
	// This worker reads but never answers a ping, and sends nothing.
	w := worker(t, tr, "deaf", 1, dialOpts{noPong: true})
	recv[*wire.Assign](w)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 0 && s.Waiting == 1 })
	rec, _ := tr.Lookup(t, key)
	assert.Equal(t, []string{"deaf"}, rec.LostFrom)
	// The drop is a bare TCP close, without a close frame.
	var ce *websocket.CloseError
	require.ErrorAs(t, w.closed(), &ce)
	assert.Equal(t, websocket.CloseAbnormalClosure, ce.Code, "no close frame: %v", ce)
}

// TestServer_IdleConn_Pinged: a connection with nothing to receive is
// pinged again and again (its writer runs only when there is something to
// write: a ping is), and stays connected while it answers, past its read
// timeout many times over; then work still reaches it.
func TestServer_IdleConn_Pinged(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		// The read timeout is two intervals: a reader of the test's
		// that stalls that long under -race on a loaded machine (20 ms
		// did, once) drops the connection, which is not what this
		// test is about.
		o.PingInterval = 150 * time.Millisecond
	}))
	pings := make(chan struct{}, 1)
	w := worker(t, tr, "idle", 1, dialOpts{pings: pings})
	// wire.ReadTimeout is two pings: 6 pings outlast it three times.
	for i := range 6 {
		select {
		case <-pings:
		case <-w.done:
			t.Fatalf("dropped after %d pings: %v", i, w.readErr)
		case <-time.After(waitLimit):
			t.Fatalf("ping %d never came", i+1)
		}
	}
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return true })
	assert.Equal(t, 1, st.Workers)
	m := master(t, tr, "m")
	key, _ := m.submit("1")
	a := recv[*wire.Assign](w)
	assert.Equal(t, key, a.Key)
}

// TestServer_NoSubprotocol: the riot subprotocol is optional: a client
// that asks for none is served (and gets none).
func TestServer_NoSubprotocol(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	ws, resp, err := websocket.DefaultDialer.Dial(tr.URL(), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer ws.Close()
	assert.Empty(t, ws.Subprotocol())
	frame, err := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster})
	require.NoError(t, err)
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, frame))
	_, frame, err = ws.ReadMessage()
	require.NoError(t, err)
	msgs, err := wire.Decode(frame)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	w, ok := msgs[0].(*wire.Welcome)
	require.True(t, ok, "%T", msgs[0])
	assert.Equal(t, "master", w.Name, "an empty name becomes the role")
}

// TestServer_NoHello_Dropped: a connection that answers pings but never
// says hello is closed once its read timeout passes: pongs before the
// hello do not extend it.
func TestServer_NoHello_Dropped(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.PingInterval = 50 * time.Millisecond
	}))
	c := dialRaw(t, tr, dialOpts{}) // reads, and answers every ping
	c.name = "silent"
	require.Error(t, c.closed())
}

// TestServer_StaleResult: a result from a worker the tracker gave up on
// is discarded; the master gets the one of the current lease, once.
func TestServer_StaleResult(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	key, _ := m.submit("slow")
	w1 := worker(t, tr, "w1", 1)
	old := recv[*wire.Assign](w1)
	w1.ws.Close()
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 0 })

	// w1 comes back and reports its old lease: stale.
	w1 = dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w1", Slots: 1})
	w1.send(&wire.Done{Key: old.Key, Token: old.Token, Result: result(1)})
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Discarded == 1 })
	assert.Equal(t, 1, st.Waiting)
	// A made-up token is stale too, every time.
	w1.send(&wire.Done{Key: key, Token: 12345, Result: result(2)}, &wire.Failed{Key: key, Token: 12345,
		Error: &workunit.Error{Kind: workunit.Thrown, Name: "Error"}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Discarded == 3 })

	w1.send(&wire.Credit{N: 1})
	a := recv[*wire.Assign](w1)
	assert.NotEqual(t, old.Token, a.Token)
	w1.complete(a, result(3))
	w1.complete(a, result(4)) // a duplicate: stale
	f := recv[*wire.Finished](m)
	assert.Equal(t, result(3), f.Result)
	st = tr.WaitFor(t, func(s tracker.Stats) bool { return s.Discarded == 4 })
	assert.Equal(t, 1, st.Done)
	assert.Empty(t, m.barrier())
}

func TestServer_Return(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	k1, _ := m.submit("one")
	k2, _ := m.submit("two")
	w1 := worker(t, tr, "w1", 2)
	a1, a2 := recv[*wire.Assign](w1), recv[*wire.Assign](w1)
	w1.send(&wire.Return{Leases: []wire.Lease{{Key: a1.Key, Token: a1.Token}, {Key: a2.Key, Token: a2.Token}}})
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 2 && s.Leases == 0 })
	for _, k := range []workunit.Key{k1, k2} {
		rec, _ := tr.Lookup(t, k)
		assert.Empty(t, rec.LostFrom, "a return is no loss")
	}
	assert.Empty(t, w1.barrier(), "a worker that returns work gets none back without credit")
	w1.ws.Close()
	w2 := worker(t, tr, "w2", 2)
	assert.Equal(t, k1, recv[*wire.Assign](w2).Key)
	assert.Equal(t, k2, recv[*wire.Assign](w2).Key)
}

func TestServer_Realm(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m1 := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Session: "alpha"})
	m2 := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Session: "beta"})
	m1.submit("a")
	m2.submit("b")
	m2.submit("a") // joins m1's: same key, m1's realm
	// alpha again, as a master that reconnected.
	m3 := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "m", Session: "alpha"})
	m3.submit("c")
	w := worker(t, tr, "w", 3)
	realms := []string{recv[*wire.Assign](w).Realm, recv[*wire.Assign](w).Realm, recv[*wire.Assign](w).Realm}
	assert.NotEqual(t, realms[0], realms[1], "masters of different sessions have different realms")
	assert.Equal(t, realms[0], realms[2], "a session keeps its realm")
	for _, r := range realms {
		assert.NotContains(t, r, "alpha", "workers never see a master's session")
		assert.NotContains(t, r, "beta")
	}
	rec, _ := tr.Lookup(t, mustKey(t, "a"))
	assert.Equal(t, realms[0], rec.Owner)
}

func mustKey(t *testing.T, src string) workunit.Key {
	_, k := spec(t, src)
	return k
}

func TestServer_Blobs(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "bolt"}[durable], func(t *testing.T) {
			t.Parallel()
			var opts []trackertest.Option
			if durable {
				opts = append(opts, trackertest.Durable())
			}
			tr := trackertest.Start(t, opts...)
			m := master(t, tr, "m")
			data, h := blobOf("a large captured dictionary")
			empty, eh := blobOf("")
			m.send(&wire.BlobHave{Req: 1, Hashes: []blob.Hash{h, eh}})
			need := recv[*wire.BlobNeed](m)
			assert.Equal(t, uint64(1), need.Req)
			assert.Equal(t, []blob.Hash{h, eh}, need.Missing)

			m.send(&wire.BlobPut{Req: 2, Hash: h, Data: []byte("something else")})
			e := recv[*wire.Error](m)
			assert.Equal(t, uint64(2), e.Req)
			assert.Equal(t, wire.CodeInvalid, e.Code)

			m.send(&wire.BlobPut{Req: 3, Hash: h, Data: data}, &wire.BlobPut{Req: 4, Hash: eh, Data: empty})
			assert.Equal(t, h, recv[*wire.BlobStored](m).Hash)
			assert.Equal(t, eh, recv[*wire.BlobStored](m).Hash)
			m.send(&wire.BlobHave{Req: 5, Hashes: []blob.Hash{h, eh}})
			assert.Empty(t, recv[*wire.BlobNeed](m).Missing)

			w := dial(t, tr, wire.Hello{Role: wire.RoleWorker, Name: "w", Slots: 1})
			_, missing := blobOf("nobody put this")
			w.send(&wire.BlobGet{Req: 6, Hash: h}, &wire.BlobGet{Req: 7, Hash: missing}, &wire.BlobGet{Req: 8, Hash: eh})
			bd := recv[*wire.BlobData](w)
			assert.Equal(t, uint64(6), bd.Req)
			assert.Equal(t, data, bd.Data)
			assert.False(t, bd.Missing)
			bd = recv[*wire.BlobData](w)
			assert.Equal(t, uint64(7), bd.Req)
			assert.True(t, bd.Missing)
			bd = recv[*wire.BlobData](w)
			assert.Equal(t, uint64(8), bd.Req)
			assert.False(t, bd.Missing)
			assert.Empty(t, bd.Data)
		})
	}
}

func TestServer_Restart(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable())
	m := master(t, tr, "m")
	kDone, _ := m.submit("done")
	kFailed, _ := m.submit("failed")
	kRunning, _ := m.submit("running")
	kWaiting, _ := m.submit("waiting")
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(7), &wire.Credit{N: 1})
	a := recv[*wire.Assign](w)
	w.send(&wire.Failed{Key: a.Key, Token: a.Token, Error: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "x"}},
		&wire.Credit{N: 1})
	assert.Equal(t, kRunning, recv[*wire.Assign](w).Key)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Done == 1 && s.Error == 1 && s.Running == 1 })

	addr := tr.Addr()
	tr.Restart(t)
	assert.Equal(t, addr, tr.Addr(), "a restarted tracker keeps its address")
	// Finished results survive; waiting and running workunits wait.
	want := map[workunit.Key]workunit.Status{kDone: workunit.StatusDone, kFailed: workunit.StatusError, kRunning: workunit.StatusWaiting, kWaiting: workunit.StatusWaiting}
	for k, st := range want {
		rec, ok := tr.Lookup(t, k)
		require.True(t, ok)
		assert.Equal(t, st, rec.Status, "%s", k.Short())
	}
	rec, _ := tr.Lookup(t, kDone)
	assert.True(t, rec.Stored, "a restored result stays in the store until asked for")
	assert.Nil(t, rec.Result)

	m = master(t, tr, "m")
	_, acc := m.submit("done")
	assert.Equal(t, workunit.StatusDone, acc.Status, "a memoized result survives a restart")
	assert.Equal(t, result(7), acc.Result)
	recv[*wire.Finished](m)
	m.send(&wire.Watch{Req: 100, Keys: []workunit.Key{kRunning, kWaiting}})
	w = worker(t, tr, "w", 2)
	a1, a2 := recv[*wire.Assign](w), recv[*wire.Assign](w)
	assert.Equal(t, []workunit.Key{kRunning, kWaiting}, []workunit.Key{a1.Key, a2.Key}, "in queue order")
	assert.Greater(t, a1.Token, a.Token, "tokens of a new run start above the old ones")
	w.complete(a1, result(1))
	w.complete(a2, result(2))
	got := []workunit.Key{recv[*wire.Finished](m).Key, recv[*wire.Finished](m).Key}
	assert.ElementsMatch(t, []workunit.Key{kRunning, kWaiting}, got)
}

// TestServer_KeepResults: with KeepResults, a finished workunit is
// forgotten after it, in the table and in the store (a restart does not
// bring it back), and submitting it again runs it again.
func TestServer_KeepResults(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) {
		o.KeepResults = time.Millisecond
	}))
	m := master(t, tr, "m")
	k, _ := m.submit("forget me")
	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), result(7), &wire.Credit{N: 1})
	fin := recv[*wire.Finished](m)
	assert.Equal(t, workunit.StatusDone, fin.Status, "the watcher gets the result before it is forgotten")
	assert.Equal(t, result(7), fin.Result)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Forgotten == 1 && s.Done == 0 })
	_, ok := tr.Lookup(t, k)
	assert.False(t, ok)

	tr.Restart(t)
	_, ok = tr.Lookup(t, k)
	assert.False(t, ok, "the store forgot it too")

	m = master(t, tr, "m")
	_, acc := m.submit("forget me")
	assert.Equal(t, workunit.StatusWaiting, acc.Status, "a forgotten workunit runs again")
	w = worker(t, tr, "w", 1)
	assert.Equal(t, k, recv[*wire.Assign](w).Key)
}

// fakeStore is a store whose Apply announces each batch and waits to be
// told what to answer, so that a test can hold a commit in flight.
type fakeStore struct {
	*store.Memory
	applied chan []table.Record
	answer  chan error
	auto    chan struct{} // closed: answer nil at once
	once    sync.Once
}

// answerAll has every Apply from now on, and the one waiting, answered
// nil at once.
func (f *fakeStore) answerAll() { f.once.Do(func() { close(f.auto) }) }

func newFakeStore() *fakeStore {
	return &fakeStore{Memory: store.NewMemory(), applied: make(chan []table.Record, 16),
		answer: make(chan error), auto: make(chan struct{})}
}

func (f *fakeStore) Apply(ctx context.Context, batch []table.Record) error {
	select {
	case <-f.auto:
		return f.Memory.Apply(ctx, batch)
	default:
	}
	f.applied <- slices.Clone(batch)
	select {
	case err := <-f.answer:
		if err != nil {
			return err
		}
	case <-f.auto:
	}
	return f.Memory.Apply(ctx, batch)
}

func (f *fakeStore) nextApply(t *testing.T) []table.Record {
	t.Helper()
	select {
	case b := <-f.applied:
		return b
	case <-time.After(waitLimit):
		t.Fatalf("no Apply within %v", waitLimit)
	}
	return nil
}

func startWithFake(t *testing.T) (*trackertest.Tracker, *fakeStore) {
	f := newFakeStore()
	tr := trackertest.Start(t, trackertest.WithStore(f))
	t.Cleanup(f.answerAll) // before Stop
	return tr, f
}

func TestServer_Submit_AcceptedOnlyWhenDurable(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	m := master(t, tr, "m")
	s, key := spec(t, "durable")
	m.send(&wire.Submit{Req: 1, Spec: s})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	assert.Equal(t, key, batch[0].Key)
	assert.Equal(t, workunit.StatusWaiting, batch[0].Status)
	// While the write is in flight, the tracker answers other requests but
	// not the submission; events keep being taken (a second submission),
	// and go into the next commit.
	s2, key2 := spec(t, "durable 2")
	m.send(&wire.Submit{Req: 2, Spec: s2})
	assert.Empty(t, m.barrier(), "no Accepted before the record is durable")
	f.answer <- nil
	acc := recv[*wire.Accepted](m)
	assert.Equal(t, uint64(1), acc.Req)
	batch = f.nextApply(t)
	require.Len(t, batch, 1)
	assert.Equal(t, key2, batch[0].Key)
	assert.Empty(t, m.barrier())
	f.answer <- nil
	assert.Equal(t, uint64(2), recv[*wire.Accepted](m).Req)
}

func TestServer_Submit_StoreFails(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	m := master(t, tr, "m")
	s, _ := spec(t, "doomed")
	m.send(&wire.Submit{Req: 9, Spec: s})
	f.nextApply(t)
	f.answer <- errors.New("fake: disk full")
	e := recv[*wire.Error](m)
	assert.Equal(t, uint64(9), e.Req)
	assert.Equal(t, wire.CodeStore, e.Code)
	assert.Contains(t, e.Message, "disk full")
	// The table writes the record again; the submission is never
	// acknowledged.
	f.nextApply(t)
	f.answer <- nil
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.StoreErrors == 1 })
	assert.Equal(t, 1, st.Waiting)
	for _, msg := range m.barrier() {
		_, isAccepted := msg.(*wire.Accepted)
		assert.False(t, isAccepted, "an Accepted after a failed write")
	}
}

// TestServer_Assign_WhileSubmissionWritten: a durable tracker hands a
// workunit to a worker as its submission goes to the store, not once it
// is written, so that the worker runs it while the write is in flight;
// nothing is acknowledged before its write: the master's Accepted waits
// for the submission's, its Finished for the result's. A write that fails
// after the worker finished loses nothing: the record is written again
// with the result, and a submission again is answered from it. (Before,
// the assignment waited for the write: one write more in every durable
// round trip, one Raft commit through replicas.)
func TestServer_Assign_WhileSubmissionWritten(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	w := worker(t, tr, "w", 2)
	m := master(t, tr, "m")
	s1, k1 := spec(t, "first")
	m.send(&wire.Submit{Req: 1, Spec: s1})
	f.nextApply(t)
	f.answer <- nil
	assert.Equal(t, uint64(1), recv[*wire.Accepted](m).Req)
	require.Equal(t, k1, recv[*wire.Assign](w).Key, "the worker's credit is in")

	s2, k2 := spec(t, "second")
	m.send(&wire.Submit{Req: 2, Spec: s2, Watch: true})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	require.Equal(t, k2, batch[0].Key)
	a2 := recv[*wire.Assign](w) // the write is held
	require.Equal(t, k2, a2.Key, "assigned while its submission is written")
	w.complete(a2, result(9), &wire.Credit{N: 1})
	waitLookup(t, tr, k2, func(r table.Record) bool { return r.Status == workunit.StatusDone })
	assert.Empty(t, m.barrier(), "nothing acknowledged before the write")
	f.answer <- nil
	acc := recv[*wire.Accepted](m)
	assert.Equal(t, uint64(2), acc.Req)
	assert.Equal(t, workunit.StatusWaiting, acc.Status, "acknowledged as what was written")
	batch = f.nextApply(t)
	require.Len(t, batch, 1)
	require.Equal(t, workunit.StatusDone, batch[0].Status, "the result's write")
	assert.Empty(t, m.barrier(), "no Finished before the result's write")
	f.answer <- nil
	fin := recv[*wire.Finished](m)
	assert.Equal(t, k2, fin.Key)
	assert.Equal(t, result(9), fin.Result)

	// The submission's write fails after its worker finished.
	s3, k3 := spec(t, "third")
	m.send(&wire.Submit{Req: 3, Spec: s3, Watch: true})
	f.nextApply(t)
	a3 := recv[*wire.Assign](w)
	require.Equal(t, k3, a3.Key)
	w.complete(a3, result(27))
	waitLookup(t, tr, k3, func(r table.Record) bool { return r.Status == workunit.StatusDone })
	f.answer <- errors.New("fake: disk full")
	e := recv[*wire.Error](m)
	assert.Equal(t, uint64(3), e.Req)
	assert.Equal(t, wire.CodeStore, e.Code)
	batch = f.nextApply(t)
	require.Len(t, batch, 1)
	assert.Equal(t, k3, batch[0].Key)
	assert.Equal(t, workunit.StatusDone, batch[0].Status, "written again, with its result")
	// Answered, and whatever follows: the result's own write may come
	// after it, when the worker's Done was stepped after the failed
	// write's Ready was taken back.
	f.answerAll()
	m.send(&wire.Submit{Req: 4, Spec: s3})
	for acc = nil; acc == nil; {
		switch msg := m.next().(type) {
		case *wire.Finished: // the refused submission's watch, kept with its record
			assert.Equal(t, uint64(3), msg.Req)
			assert.Equal(t, result(27), msg.Result)
		case *wire.Accepted:
			acc = msg
		default:
			t.Fatalf("m: got %T %+v", msg, msg)
		}
	}
	assert.Equal(t, uint64(4), acc.Req)
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(27), acc.Result)
}

// TestServer_Info_StoreFails: an Info answered in the same Ready as the
// write of the workunit's result, when that write fails, does not report
// the result (which is not on disk, and may never be): it is refused as
// the submissions of that write are, and the result is reported once the
// table wrote it again.
func TestServer_Info_StoreFails(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	m := master(t, tr, "m")
	s1, k1 := spec(t, "first")
	m.send(&wire.Submit{Req: 1, Spec: s1})
	f.nextApply(t)
	f.answer <- nil
	assert.Equal(t, uint64(1), recv[*wire.Accepted](m).Req)
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	require.Equal(t, k1, a.Key)

	// A second submission's write is held in flight, so that the result
	// and the Info below go into the next Ready together.
	s2, _ := spec(t, "second")
	m.send(&wire.Submit{Req: 2, Spec: s2})
	f.nextApply(t)
	w.complete(a, result(5))
	waitLookup(t, tr, k1, func(r table.Record) bool { return r.Status == workunit.StatusDone })
	s3, k3 := spec(t, "third")
	m.send(&wire.Info{Req: 3, Key: k1}, &wire.Submit{Req: 4, Spec: s3}) // one frame: stepped together
	waitLookup(t, tr, k3, func(table.Record) bool { return true })
	f.answer <- nil
	assert.Equal(t, uint64(2), recv[*wire.Accepted](m).Req)

	batch := f.nextApply(t)
	var done bool
	for _, r := range batch {
		done = done || (r.Key == k1 && r.Status == workunit.StatusDone)
	}
	require.True(t, done, "the result's write is this one")
	f.answer <- errors.New("fake: disk full")
	refused := map[uint64]*wire.Error{}
	for len(refused) < 2 {
		switch msg := m.next().(type) {
		case *wire.InfoReply:
			t.Fatalf("an Info answered %v, result %v, from a write that failed", msg.Status, msg.Result)
		case *wire.Error:
			refused[msg.Req] = msg
		default:
			t.Fatalf("unexpected %T", msg)
		}
	}
	for _, req := range []uint64{3, 4} {
		require.Contains(t, refused, req)
		assert.Equal(t, wire.CodeStore, refused[req].Code)
		assert.Contains(t, refused[req].Message, "disk full")
	}
	// The table writes the result again; asked again, the tracker answers.
	f.nextApply(t)
	f.answer <- nil
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.StoreErrors == 1 && s.Commits == 3 })
	m.send(&wire.Info{Req: 5, Key: k1})
	in := recv[*wire.InfoReply](m)
	assert.Equal(t, workunit.StatusDone, in.Status)
	assert.Equal(t, result(5), in.Result)
}

// waitLookup waits until the table has a record of key for which cond
// holds. Lookup goes through the tracker's loop, which WaitFor's stats
// wait for only while no write is in flight.
func waitLookup(t *testing.T, tr *trackertest.Tracker, key workunit.Key, cond func(table.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if r, ok := tr.Lookup(t, key); ok && cond(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of %s as wanted within %v", key.Short(), waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServer_Submit_StoreFenced: a write that fails because another
// tracker writes the store now (a replica that lost the lead) is not
// acknowledged, and not refused as a store error, which a client gives its
// caller: it is refused as by a tracker shutting down, which a client
// sends again on its next connection; and the tracker stops, closing its
// connections, without writing or handing out anything more.
func TestServer_Submit_StoreFenced(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	m := master(t, tr, "m")
	w := worker(t, tr, "w", 1)
	w.barrier() // its credit is in: the submission's Ready assigns it
	s, key := spec(t, "fenced")
	m.send(&wire.Submit{Req: 9, Spec: s})
	f.nextApply(t)
	a := recv[*wire.Assign](w)
	require.Equal(t, key, a.Key, "assigned as the submission is written")
	f.answer <- fmt.Errorf("fake replica: %w", store.ErrFenced)
	e := recv[*wire.Error](m)
	assert.Equal(t, uint64(9), e.Req)
	assert.Equal(t, wire.CodeShutdown, e.Code, "refused as by a tracker shutting down: %s", e.Message)
	assert.Contains(t, e.Message, "another tracker writes the store")
	err := tr.Ended(t)
	require.ErrorIs(t, err, store.ErrFenced, "Run's error")
	select {
	case <-m.done:
	case <-time.After(waitLimit):
		t.Fatalf("the fenced tracker did not close the master's connection")
	}
	for msg := range m.in {
		_, isAccepted := msg.(*wire.Accepted)
		assert.False(t, isAccepted, "an Accepted after a fenced write")
	}
	var ce *websocket.CloseError
	require.ErrorAs(t, m.readErr, &ce)
	assert.Equal(t, websocket.CloseGoingAway, ce.Code)
	select {
	case <-w.done:
	case <-time.After(waitLimit):
		t.Fatalf("the fenced tracker did not close the worker's connection")
	}
	// The assignment sent as the fenced write began is taken back: the
	// other tracker hands the work out; nothing else is handed out.
	revoked := false
	for msg := range w.in {
		switch msg := msg.(type) {
		case *wire.Assign:
			t.Errorf("work handed out by a fenced tracker: %s", msg.Key.Short())
		case *wire.Revoke:
			assert.Equal(t, a.Key, msg.Key)
			assert.Equal(t, a.Token, msg.Token)
			revoked = true
		}
	}
	assert.True(t, revoked, "the assignment of the fenced write is revoked")
	select {
	case b := <-f.applied:
		t.Fatalf("a write after the fenced one: %d records", len(b))
	default:
	}
}

// TestServer_SlowMaster: a master that stops reading is dropped when its
// queue fills, and never holds up the others.
func TestServer_SlowMaster(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Limits.MaxFrameBytes = 1 << 20
		o.QueueBytes = 2 << 20
	}))
	slow := dial(t, tr, wire.Hello{Role: wire.RoleMaster, Name: "slow"})
	slow.stopReading() // from here on, nobody reads slow's connection
	const n = 64
	for i := range n {
		s, _ := spec(t, "big "+strings.Repeat("x", i))
		slow.send(&wire.Submit{Req: uint64(i + 1), Spec: s, Watch: true})
	}
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Submitted == n })
	w := worker(t, tr, "w", 8)
	big := make([]byte, 256<<10) // the tracker does not look into results
	for range n {
		a := recv[*wire.Assign](w)
		w.send(&wire.Done{Key: a.Key, Token: a.Token, Result: big}, &wire.Credit{N: 1})
	}
	// The others go on while slow's results pile up.
	fast := master(t, tr, "fast")
	fast.submit("quick")
	w.complete(recv[*wire.Assign](w), result(1))
	assert.Equal(t, result(1), recv[*wire.Finished](fast).Result)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Masters == 1 && s.Done == n+1 })
	assert.Equal(t, 1, st.Masters, "slow was dropped")
}

func TestServer_Shutdown_ClosesWebsockets(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := master(t, tr, "m")
	m.submit("pending")
	w := worker(t, tr, "w", 1)
	recv[*wire.Assign](w)
	raw := dialRaw(t, tr, dialOpts{}) // connected, no hello yet
	tr.Stop(t)
	for _, c := range []*wsClient{m, w} {
		assert.Equal(t, wire.CloseGoingAway, c.closeCode())
	}
	// One still in its handshake is closed too: going away, or refused as
	// the tracker is shutting down when it was not quite registered yet.
	assert.Contains(t, []int{wire.CloseGoingAway, wire.CloseRefused + int(wire.CodeShutdown)}, raw.closeCode())
}

func TestServer_Shutdown_BeforeRun(t *testing.T) {
	t.Parallel()
	srv, err := tracker.New(tracker.Options{Listen: "127.0.0.1:0", Logger: testLogger(t)})
	require.NoError(t, err)
	require.NoError(t, srv.Shutdown(context.Background()))
	require.NoError(t, srv.Run(context.Background()), "Run after Shutdown returns at once")
	_, err = srv.Stats(context.Background())
	assert.ErrorIs(t, err, tracker.ErrClosed)
}

func TestServer_Run_Twice(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	assert.ErrorIs(t, tr.Server().Run(context.Background()), tracker.ErrRunning)
}

func TestServer_Run_EndsWithContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := tracker.New(tracker.Options{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()
	_, err = srv.Stats(context.Background())
	require.NoError(t, err)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
	}
	// The store was closed: a second tracker opens the same directory (it
	// would wait for the file lock otherwise, and fail).
	srv, err = tracker.New(tracker.Options{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger(t)})
	require.NoError(t, err)
	require.NoError(t, srv.Shutdown(context.Background()))
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

func TestServer_Full(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxConns = 1 }))
	master(t, tr, "first")
	c := dialRaw(t, tr, dialOpts{})
	c.send(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "second"})
	r := recv[*wire.Refused](c)
	assert.Equal(t, wire.CodeFull, r.Code)
	assert.Equal(t, wire.CloseRefused+int(wire.CodeFull), c.closeCode())
}

func TestServer_TextMessage(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := master(t, tr, "m")
	require.NoError(t, c.ws.WriteMessage(1, []byte("hello?")))
	assert.Equal(t, wire.CloseUnsupportedData, c.closeCode())
}

func TestServer_CreditWithoutSlots(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := master(t, tr, "m")
	c.send(&wire.Credit{N: 3})
	e := recv[*wire.Error](c)
	assert.Equal(t, wire.CodeInvalid, e.Code)
	assert.Equal(t, uint64(0), e.Req)
}

// TestServer_New_PortTaken: a port that is taken fails New before the
// store is made, so that no data directory is left behind.
func TestServer_New_PortTaken(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	dir := filepath.Join(t.TempDir(), "riot")
	_, err := tracker.New(tracker.Options{Listen: tr.Addr(), DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.Error(t, err)
	assert.ErrorContains(t, err, "listen")
	_, statErr := os.Stat(dir)
	assert.True(t, os.IsNotExist(statErr), "no data directory made: %v", statErr)
}

// TestServer_ReqZero: a request with req 0 is refused with an Error of
// code invalid-request that names it, and has no effect; the connection
// stays open (docs/protocol.md: req is non-zero).
func TestServer_ReqZero(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	c := master(t, tr, "m")
	s, key := spec(t, "'req 0'")
	data, h := blobOf("req 0")
	for _, m := range []wire.Msg{
		&wire.Submit{Spec: s, Watch: true},
		&wire.Watch{Keys: []workunit.Key{key}},
		&wire.Info{Key: key},
		&wire.BlobHave{Hashes: []blob.Hash{h}},
		&wire.BlobPut{Hash: h, Data: data},
		&wire.BlobGet{Hash: h},
		&wire.BlobWrite{Hash: h, Size: uint64(len(data)), Data: data},
		&wire.BlobRead{Hash: h, Length: 10},
		&wire.Cancel{Keys: []workunit.Key{key}},
	} {
		c.send(m)
		e := recv[*wire.Error](c)
		assert.Equal(t, uint64(0), e.Req, "%s", m.Type())
		assert.Equal(t, wire.CodeInvalid, e.Code, "%s", m.Type())
		assert.Contains(t, e.Message, m.Type().String()+" with req 0 refused", "%s", m.Type())
	}
	assert.Empty(t, c.barrier(), "nothing else came")
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok, "the submit had no effect")
	c.send(&wire.BlobHave{Req: 7, Hashes: []blob.Hash{h}})
	assert.Equal(t, []blob.Hash{h}, recv[*wire.BlobNeed](c).Missing, "the blob-put had no effect")
	c.submit("'req 1'") // the connection is open
}

// TestServer_Finished_OnlyWhenDurable: when the write of a result fails,
// the master is not told the result (it would run again after a restart);
// it is told once a later write of it succeeds.
func TestServer_Finished_OnlyWhenDurable(t *testing.T) {
	t.Parallel()
	tr, f := startWithFake(t)
	m := master(t, tr, "m")
	s, key := spec(t, "result")
	m.send(&wire.Submit{Req: 1, Spec: s, Watch: true})
	f.nextApply(t)
	f.answer <- nil
	recv[*wire.Accepted](m)
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	w.send(&wire.Done{Key: a.Key, Token: a.Token, Result: result(7)})
	batch := f.nextApply(t)
	require.Len(t, batch, 1)
	assert.Equal(t, workunit.StatusDone, batch[0].Status)
	f.answer <- errors.New("fake: disk full")
	// The write again (after the backoff): the result goes out with it.
	// What the failure sent came before.
	batch = f.nextApply(t)
	require.Len(t, batch, 1)
	assert.Equal(t, key, batch[0].Key)
	assert.Empty(t, m.barrier(), "a Finished before the result is on disk")
	f.answer <- nil
	fin := recv[*wire.Finished](m)
	assert.Equal(t, uint64(1), fin.Req)
	assert.Equal(t, workunit.StatusDone, fin.Status)
	assert.Equal(t, result(7), fin.Result)
	recs, err := f.Memory.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, workunit.StatusDone, recs[0].Status)
	assert.EqualValues(t, 1, tr.Stats(t).StoreErrors)
}
