package tracker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// barrierReq is the request id of the blob-have that follows each fuzzed
// frame: its answer says the tracker has taken the frame.
const barrierReq = 1 << 62

// FuzzServerFrame sends frames to a running tracker, as the first frame
// of a connection (where a hello belongs) or after a hello, and checks
// that the tracker answers each (a welcome, a refusal, answers, or an
// error and a close) and never panics or hangs: a frame is followed by a
// blob-have whose answer must come, unless the tracker closed the
// connection. This is the tracker's own frame handling, beyond
// wire.FuzzDecode: the hello, the checks of each message, spec keys,
// blobs, and the table.
func FuzzServerFrame(f *testing.F) {
	spec := workunit.Spec{Kind: workunit.Eval, Source: "1 + 1", Name: "f.js"}
	specBytes, _ := spec.MarshalBinary()
	key := spec.Key()
	data := []byte("blob")
	hash := blob.Sum(data)
	seeds := []struct {
		first bool
		msgs  []wire.Msg
	}{
		{true, []wire.Msg{&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleWorker, Name: "w", Session: "s", Slots: 2, Prefetch: 1}}},
		{true, []wire.Msg{&wire.Hello{Version: wire.ProtocolVersion + 1, Role: wire.RoleMaster}}},
		{false, []wire.Msg{&wire.Submit{Req: 1, Spec: specBytes, Options: workunit.Options{Timeout: time.Second}, Watch: true}}},
		{false, []wire.Msg{&wire.Submit{Req: 2, Spec: []byte{0x80}}}},
		{false, []wire.Msg{&wire.Watch{Req: 3, Keys: []workunit.Key{key}}, &wire.Unwatch{Keys: []workunit.Key{key}}}},
		{false, []wire.Msg{&wire.Info{Req: 4, Key: key}}},
		{false, []wire.Msg{&wire.BlobHave{Req: 5, Hashes: []blob.Hash{hash}}, &wire.BlobPut{Req: 6, Hash: hash, Data: data}}},
		{false, []wire.Msg{&wire.BlobGet{Req: 7, Hash: hash}, &wire.BlobPut{Req: 8, Hash: blob.Hash{1}, Data: data}}},
		{false, []wire.Msg{&wire.Cancel{Req: 9, Keys: []workunit.Key{key, {1}}}, &wire.Revoke{Key: key, Token: 1}}},
		{false, []wire.Msg{&wire.Credit{N: 3}}},
		{false, []wire.Msg{&wire.Done{Key: key, Token: 1, Result: []byte{2}, Console: workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "x"}})}}},
		{false, []wire.Msg{&wire.Failed{Key: key, Token: 1, Error: &workunit.Error{Kind: workunit.Thrown, Name: "E", Message: "m"}}}},
		{false, []wire.Msg{&wire.Return{Leases: []wire.Lease{{Key: key, Token: 1}}}}},
		{false, []wire.Msg{&wire.Assign{Key: key, Token: 1, Spec: specBytes}}},
	}
	for _, s := range seeds {
		frame, err := wire.Encode(s.msgs...)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.first, frame)
	}

	srv, err := New(Options{Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler),
		Limits: wire.Limits{MaxFrameBytes: 1 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	f.Cleanup(func() {
		cancel()
		<-done
	})
	<-srv.Ready()
	dial := func(t *testing.T) *websocket.Conn {
		d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, HandshakeTimeout: 10 * time.Second}
		ws, resp, err := d.Dial(srv.URL(), nil)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		resp.Body.Close()
		return ws
	}
	hello, _ := wire.Encode(&wire.Hello{Version: wire.ProtocolVersion, Role: wire.RoleMaster, Name: "fuzz", Session: "fuzz", Slots: 1})
	barrier, _ := wire.Encode(&wire.BlobHave{Req: barrierReq})
	var open *websocket.Conn // a connection past its hello, kept between inputs
	f.Fuzz(func(t *testing.T, first bool, frame []byte) {
		var ws *websocket.Conn
		if first {
			ws = dial(t)
			defer ws.Close()
		} else {
			if open == nil {
				open = dial(t)
				if err := open.WriteMessage(websocket.BinaryMessage, hello); err != nil {
					t.Fatal(err)
				}
				if _, _, err := open.ReadMessage(); err != nil {
					t.Fatalf("no welcome: %v", err)
				}
			}
			ws = open
		}
		_ = ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if err := ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
			t.Fatalf("write: %v", err)
		}
		_ = ws.WriteMessage(websocket.BinaryMessage, barrier) // fails if the tracker closed already
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, got, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				var ne interface{ Timeout() bool }
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("the tracker did not answer within 10s")
				}
				if !first && !errors.As(err, &ce) {
					t.Logf("connection ended without a close frame: %v", err)
				}
				if ws == open {
					open.Close()
					open = nil
				}
				return
			}
			msgs, err := wire.Decode(got)
			if err != nil {
				t.Fatalf("the tracker sent a frame that does not decode: %v", err)
			}
			for _, m := range msgs {
				if bn, ok := m.(*wire.BlobNeed); ok && bn.Req == barrierReq {
					return
				}
			}
		}
	})
	if open != nil {
		open.Close()
	}
}
