package client

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestClient_AnswerOfTheWrongKind: a tracker that answers a request with
// a message of another request's kind ends that request with an error; it
// neither crashes the client nor hands the caller a value of the wrong
// type.
func TestClient_AnswerOfTheWrongKind(t *testing.T) {
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	require.NoError(t, opts.setDefaults())
	c := newClient(opts, "ws://fake.invalid/riot")
	defer c.cb.stop()
	cn := &conn{done: make(chan struct{}), welcome: wire.Welcome{Version: wire.ProtocolVersion, Name: "fake"}}
	c.mu.Lock()
	c.cur = cn
	c.welcome = cn.welcome
	c.mu.Unlock()

	h := blob.Sum([]byte("x"))
	requests := []wire.Msg{
		&wire.BlobHave{Hashes: []blob.Hash{h}},
		&wire.BlobPut{Hash: h, Data: []byte("x")},
		&wire.BlobGet{Hash: h},
		&wire.Info{Key: workunit.Key{1}},
		&wire.Cancel{Keys: []workunit.Key{{1}}},
	}
	// Each answer is of the kind that answers the next request.
	answers := []func(req uint64) wire.Msg{
		func(req uint64) wire.Msg { return &wire.BlobStored{Req: req, Hash: h} },
		func(req uint64) wire.Msg { return &wire.BlobData{Req: req, Hash: h, Data: []byte("x")} },
		func(req uint64) wire.Msg { return &wire.InfoReply{Req: req} },
		func(req uint64) wire.Msg { return &wire.Canceled{Req: req} },
		func(req uint64) wire.Msg { return &wire.BlobNeed{Req: req, Missing: []blob.Hash{h}} },
	}
	for i, msg := range requests {
		c.mu.Lock()
		r := c.startLocked("test "+msg.Type().String(), msg)
		c.mu.Unlock()
		ans := answers[i](wire.ReqOf(msg))
		require.NotPanics(t, func() { _ = c.handle(cn, []wire.Msg{ans}) }, "%s answered with %s", msg.Type(), ans.Type())
		<-r.done
		require.ErrorContains(t, r.err, "answered with "+ans.Type().String(), "%s answered with %s", msg.Type(), ans.Type())
		require.Nil(t, r.val)
	}
}
