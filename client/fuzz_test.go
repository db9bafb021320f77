package client

import (
	"log/slog"
	"testing"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// fuzzSpecs are the workunits a fuzzed client waits for: request ids 1
// and 2 are their submissions, 3 a watch of the third key.
var fuzzSpecs = []*workunit.Spec{
	{Kind: workunit.Eval, Source: "1", Name: "a.js"},
	{Kind: workunit.Eval, Source: "2", Name: "b.js"},
	{Kind: workunit.Eval, Source: "3", Name: "c.js"},
}

// FuzzClientFrame feeds frames from a tracker to a client's frame
// handling (what its reader does after the websocket: wire.Decoder, then
// Client.handle) with requests and watches pending, and checks that no
// frame makes it panic or leaves its lock held. Seeds: an answer to each
// pending request, and each message a tracker sends.
func FuzzClientFrame(f *testing.F) {
	keys := make([]workunit.Key, len(fuzzSpecs))
	for i, s := range fuzzSpecs {
		keys[i] = s.Key()
	}
	specBytes, _ := fuzzSpecs[0].MarshalBinary()
	outcome := workunit.Outcome{Status: workunit.StatusDone, Worker: "w", Result: []byte{0x01},
		Console: workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "hi"}}), LastChange: time.UnixMilli(1767225600123), Elapsed: time.Millisecond}
	failed := workunit.Outcome{Status: workunit.StatusError, Worker: "w",
		Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "no", Stack: "at x"}}
	seeds := [][]wire.Msg{
		{&wire.Accepted{Req: 1, Outcome: workunit.Outcome{Key: keys[0], Status: workunit.StatusWaiting}}},
		{&wire.Accepted{Req: 2, Outcome: keyed(keys[1], outcome)}, &wire.Finished{Req: 1, Outcome: keyed(keys[0], failed)}},
		{&wire.Finished{Req: 3, Outcome: keyed(keys[2], outcome)}},
		{&wire.Finished{Req: 3, Outcome: workunit.Outcome{Key: keys[2], Status: workunit.StatusUnknown}}},
		{&wire.Error{Req: 1, Code: wire.CodeLimit, Message: "too many"}, &wire.Error{Req: 3, Code: wire.CodeForbidden}},
		{&wire.Error{Code: wire.CodeInternal, Message: "connection"}},
		{&wire.InfoReply{Req: 9, Outcome: keyed(keys[0], outcome)}},
		{&wire.BlobNeed{Req: 9, Missing: []blob.Hash{{1}}}, &wire.BlobStored{Req: 9, Hash: blob.Hash{1}}},
		{&wire.BlobData{Req: 9, Hash: blob.Hash{1}, Data: []byte("x")}, &wire.BlobData{Req: 10, Hash: blob.Hash{2}, Missing: true}},
		{&wire.Assign{Key: keys[0], Token: 5, Spec: specBytes, Realm: "r", Timeout: time.Second, GPUs: 1}},
		{&wire.Welcome{Version: wire.ProtocolVersion, Name: "x"}},
		{&wire.Credit{N: 1}},
		{&wire.Assign{Key: keys[1], Token: 6, Spec: specBytes}, &wire.Revoke{Key: keys[1], Token: 6}, &wire.Revoke{Key: keys[0], Token: 99}},
		{&wire.Canceled{Req: 9, Keys: keys[:2]}},
	}
	for _, msgs := range seeds {
		frame, err := wire.Encode(msgs...)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	if err := opts.setDefaults(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := newClient(opts, "ws://fuzz.invalid/riot")
		defer c.cb.stop()
		cn := &conn{done: make(chan struct{}), welcome: wire.Welcome{Version: wire.ProtocolVersion, Name: "fuzz"}}
		c.mu.Lock()
		c.cur = cn
		c.welcome = cn.welcome
		c.mu.Unlock()
		c.Submit(fuzzSpecs[0], workunit.Options{})
		c.Submit(fuzzSpecs[1], workunit.Options{})
		c.Watch(keys[2])
		c.Credit(2)

		dec := wire.Decoder{Limits: wire.Limits{}.WithDefaults()}
		msgs, err := dec.Decode(frame)
		if err != nil {
			return
		}
		_ = c.handle(cn, msgs)
		// The lock is free again, and the client answers.
		c.mu.Lock()
		n := len(c.assigns)
		c.mu.Unlock()
		if n > len(msgs) {
			t.Fatalf("%d assignments from %d messages", n, len(msgs))
		}
		_ = c.TakeQueued()
	})
}
