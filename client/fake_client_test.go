package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// These tests run the client against fakeTracker (fake_test.go), for what
// the real tracker cannot be made to do on cue. client_test.go runs the
// client against the real tracker.

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialFake(t *testing.T, ft *fakeTracker, opts Options) *Client {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.MinBackoff = time.Millisecond
	opts.MaxBackoff = 20 * time.Millisecond
	c, err := Dial(testCtx(t), ft.addr(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func evalSpec(src string) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval"}
}

// serveOne takes one workunit with WaitForWork and completes it with fn.
func serveOne(t *testing.T, w *Client, fn func(*workunit.Spec) (any, error)) {
	t.Helper()
	a, err := w.WaitForWork(testCtx(t))
	require.NoError(t, err)
	spec, err := a.Decode()
	require.NoError(t, err)
	res, werr := fn(spec)
	require.NoError(t, w.CompleteWorkunit(a, res, werr))
}

func TestFake_Dial_VersionMismatch(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.version = wire.ProtocolVersion + 1
	_, err := Dial(testCtx(t), ft.addr(), Options{})
	var ve *VersionError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, uint32(wire.ProtocolVersion), ve.Client)
	assert.Equal(t, uint32(wire.ProtocolVersion+1), ve.Tracker)
	assert.Contains(t, err.Error(), fmt.Sprintf("this client speaks version %d, the tracker version %d", wire.ProtocolVersion, wire.ProtocolVersion+1))
	assert.True(t, wire.IsCode(err, wire.CodeVersion))
}

func TestFake_Dial_Refused(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.refuse = &wire.Refused{Code: wire.CodeAuth, Message: "unknown token", Version: wire.ProtocolVersion}
	_, err := Dial(testCtx(t), ft.addr(), Options{Token: "x"})
	var re *RefusedError
	require.ErrorAs(t, err, &re)
	assert.True(t, wire.IsCode(err, wire.CodeAuth))
	assert.Contains(t, err.Error(), "bad-credentials: unknown token")
}

func TestFake_Dial_Unreachable(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	addr := ft.addr()
	ft.srv.Close()
	_, err := Dial(testCtx(t), addr, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "client: dial")
}

func TestFake_Hello(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{Name: "alfred", Role: wire.RoleWorker, Slots: 3, Prefetch: 2, Token: "tok"})
	c2 := dialFake(t, ft, Options{Name: "alfred"})
	assert.Equal(t, "alfred", c.Name())
	assert.Equal(t, "alfred-2", c2.WhoAmI())
	ft.mu.Lock()
	h := ft.hellos[0]
	ft.mu.Unlock()
	assert.Equal(t, wire.RoleWorker, h.Role)
	assert.Equal(t, 3, h.Slots)
	assert.Equal(t, 2, h.Prefetch)
	assert.Equal(t, "tok", h.Token)
	assert.Len(t, h.Session, 32)
	assert.Contains(t, h.Agent, Agent)
}

// The fake answers no Submit until all 10,000 have arrived: a client that
// waited for each answer before sending the next would never finish.
func TestFake_Submit_Pipelined(t *testing.T) {
	t.Parallel()
	const n = 10000
	ft := newFakeTracker(t)
	type held struct {
		fc *fakeConn
		m  wire.Submit
	}
	var waiting []held
	ft.onSubmit = func(fc *fakeConn, m *wire.Submit) bool {
		cp := *m
		cp.Spec = append([]byte(nil), m.Spec...)
		waiting = append(waiting, held{fc, cp})
		if len(waiting) < n {
			return true
		}
		ft.onSubmit = nil
		for _, h := range waiting {
			ft.handleLocked(h.fc, &h.m)
		}
		return true
	}
	c := dialFake(t, ft, Options{})
	calls := make([]*Call, n)
	for i := range calls {
		calls[i] = c.Submit(evalSpec(fmt.Sprint(i)), workunit.Options{})
	}
	ctx := testCtx(t)
	for _, k := range calls {
		out, err := k.Accepted(ctx)
		require.NoError(t, err)
		require.Equal(t, workunit.StatusWaiting, out.Status)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.Equal(t, 2*n, ft.submits) // held, then handled
	assert.Less(t, ft.frames, n, "submissions share frames")
}

func TestFake_Submit_Error(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.onSubmit = func(fc *fakeConn, m *wire.Submit) bool {
		fc.send(&wire.Error{Req: m.Req, Code: wire.CodeStore, Message: "disk full"})
		return true
	}
	c := dialFake(t, ft, Options{})
	k := c.Submit(evalSpec("1"), workunit.Options{})
	_, err := k.Accepted(testCtx(t))
	require.Error(t, err)
	assert.True(t, wire.IsCode(err, wire.CodeStore))
	var we *wire.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "disk full", we.Message)
	_, err = k.Wait(testCtx(t))
	assert.True(t, wire.IsCode(err, wire.CodeStore))
}

func TestFake_Submit_Invalid(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	_, err := c.Submit(&workunit.Spec{Kind: 9}, workunit.Options{}).Accepted(testCtx(t))
	assert.ErrorContains(t, err, "unknown kind")
	_, err = c.Submit(nil, workunit.Options{}).Wait(testCtx(t))
	assert.ErrorContains(t, err, "nil spec")
}

func TestFake_SubmitWaitComplete(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{Name: "master"})
	w := dialFake(t, ft, Options{Name: "w", Slots: 1})

	k := m.Submit(evalSpec("6 * 7"), workunit.Options{})
	serveOne(t, w, func(s *workunit.Spec) (any, error) {
		assert.Equal(t, "6 * 7", s.Source)
		return 42, nil
	})
	out, err := k.Wait(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
	assert.Equal(t, "w", out.Worker)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, 42.0, v)

	// Memoized: answered from the Accepted, no work.
	k2 := m.Submit(evalSpec("6 * 7"), workunit.Options{})
	acc, err := k2.Accepted(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, acc.Status)
	out2, err := k2.Wait(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, out.Result, out2.Result)
}

func TestFake_WorkunitError(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{})
	w := dialFake(t, ft, Options{Name: "bob", Slots: 1})
	k := m.Submit(evalSpec("throw new TypeError('no')"), workunit.Options{})
	serveOne(t, w, func(*workunit.Spec) (any, error) {
		return nil, &workunit.Error{Kind: workunit.Thrown, Name: "TypeError", Message: "no"}
	})
	out, err := k.Wait(testCtx(t))
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, "bob", werr.Worker)
	assert.Equal(t, k.Key, werr.Key)
	assert.Contains(t, err.Error(), "worker bob: TypeError: no")
	require.NotNil(t, out)
	assert.Equal(t, workunit.StatusError, out.Status)
	_, err = out.Value()
	assert.ErrorAs(t, err, &werr)

	// The low-level form reports the error in the Outcome only.
	o, err := m.WaitForFinishedWorkunit(testCtx(t), k.Key)
	require.NoError(t, err)
	assert.Equal(t, "TypeError", o.Err.Name)
}

func TestFake_WaitFor_Unknown(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	_, err := c.WaitFor(testCtx(t), workunit.Key{7})
	assert.True(t, wire.IsCode(err, wire.CodeUnknownKey), "%v", err)
	info, err := c.Info(testCtx(t), workunit.Key{7})
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusUnknown, info.Status)
}

func TestFake_WaitFor_ContextUnwatches(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	key, err := c.AddWorkunit(testCtx(t), evalSpec("1"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err = c.WaitFor(ctx, key)
	assert.ErrorIs(t, err, context.Canceled)
	c.mu.Lock()
	assert.Zero(t, c.watches.len())
	c.mu.Unlock()
}

func TestFake_CallWhenDone(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{})
	w := dialFake(t, ft, Options{Name: "w", Slots: 1})
	k := m.Submit(evalSpec("'a'"), workunit.Options{})
	got := make(chan string, 2)
	m.CallWhenDone(k.Key, func(o *workunit.Outcome, err error) {
		assert.NoError(t, err)
		v, _ := o.Value()
		got <- fmt.Sprint(o.Worker, " ", v)
	})
	k.OnDone(func(o *workunit.Outcome, err error) {
		got <- fmt.Sprint("call ", err)
	})
	serveOne(t, w, func(*workunit.Spec) (any, error) { return "a", nil })
	assert.ElementsMatch(t, []string{"w a", "call <nil>"}, []string{<-got, <-got})
}

func TestFake_Blobs(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	a, b := []byte("alpha"), []byte("beta")
	ha, hb := blob.Sum(a), blob.Sum(b)
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{ha: a}))
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{ha: a, hb: b}))
	ft.mu.Lock()
	assert.Len(t, ft.blobs, 2)
	frames := ft.frames
	ft.mu.Unlock()
	// Known blobs are not asked about again.
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{ha: a, hb: b}))
	ft.mu.Lock()
	assert.Equal(t, frames, ft.frames)
	ft.mu.Unlock()

	got, err := c.FetchBlob(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, b, got)
	_, err = c.FetchBlob(ctx, blob.Sum([]byte("none")))
	assert.ErrorIs(t, err, blob.ErrNotFound)

	err = c.EnsureBlobs(ctx, map[blob.Hash][]byte{ha: b})
	assert.ErrorContains(t, err, "hashes to")
}

func TestFake_Blobs_InPieces(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.limits = wire.Limits{MaxFrameBytes: 64 << 10, MaxBlobBytes: 1 << 20}
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	piece := c.Limits().PieceBytes()
	require.Equal(t, 48<<10, piece)
	data := make([]byte, 10*piece+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	h := blob.Sum(data)
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data}))
	ft.mu.Lock()
	assert.Equal(t, data, ft.blobs[h])
	assert.Equal(t, 11, ft.writes, "one blob-write per piece")
	ft.mu.Unlock()

	got, err := c.FetchBlob(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	ft.mu.Lock()
	assert.Equal(t, 11, ft.reads, "one blob-read per piece")
	ft.mu.Unlock()

	big := make([]byte, 1<<20+1)
	err = c.EnsureBlobs(ctx, map[blob.Hash][]byte{blob.Sum(big): big})
	var le *BlobLimitError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, wire.ErrLimit)
	assert.Contains(t, err.Error(), "1048577 bytes (1.0 MiB), over the tracker's limit on a value of 1MiB (riotd --max-blob-bytes)")
}

// TestFake_Blobs_InPieces_Reconnect: an upload in pieces whose connection
// drops starts again on the next one, and completes.
func TestFake_Blobs_InPieces_Reconnect(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.limits = wire.Limits{MaxFrameBytes: 64 << 10}
	ft.dropAt = 9 // sent once the first piece was answered: a resent 9th would not start at 0
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	data := make([]byte, 10*c.Limits().PieceBytes())
	for i := range data {
		data[i] = byte(i * 13)
	}
	h := blob.Sum(data)
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data}))
	ft.mu.Lock()
	assert.Equal(t, data, ft.blobs[h])
	assert.Greater(t, ft.writes, 10, "the pieces went again")
	ft.mu.Unlock()
	got, err := c.FetchBlob(ctx, h)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}

func TestFake_Reconnect(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{Name: "m"})
	w := dialFake(t, ft, Options{Name: "w", Slots: 1})
	ctx := testCtx(t)

	// Accepted before the drop, finished after it: the watch is sent
	// again on the new connection.
	k1 := m.Submit(evalSpec("1"), workunit.Options{})
	_, err := k1.Accepted(ctx)
	require.NoError(t, err)
	waitFor := make(chan error, 1)
	go func() {
		_, err := m.WaitFor(ctx, k1.Key)
		waitFor <- err
	}()

	// Dropped before it was answered: sent again on reconnect.
	drop := true
	ft.mu.Lock()
	ft.onSubmit = func(fc *fakeConn, _ *wire.Submit) bool {
		if drop {
			drop = false
			go fc.close()
			return true
		}
		return false
	}
	ft.mu.Unlock()
	k2 := m.Submit(evalSpec("2"), workunit.Options{})
	acc, err := k2.Accepted(ctx)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusWaiting, acc.Status)

	ft.dropAll()
	for range 2 {
		serveOne(t, w, func(s *workunit.Spec) (any, error) { return s.Source, nil })
	}
	o1, err := k1.Wait(ctx)
	require.NoError(t, err)
	v, _ := o1.Value()
	assert.Equal(t, "1", v)
	o2, err := k2.Wait(ctx)
	require.NoError(t, err)
	v, _ = o2.Value()
	assert.Equal(t, "2", v)
	require.NoError(t, <-waitFor)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	sessions := map[string]bool{}
	for _, h := range ft.hellos {
		if h.Name == "m" {
			sessions[h.Session] = true
		}
	}
	assert.Len(t, sessions, 1, "one session across reconnects")
}

func TestFake_Close(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	k := c.Submit(evalSpec("1"), workunit.Options{})
	_, err := k.Accepted(testCtx(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := k.Wait(testCtx(t))
		assert.ErrorIs(t, err, ErrClosed)
	}()
	require.NoError(t, c.Close())
	wg.Wait()
	assert.ErrorIs(t, c.Err(), ErrClosed)
	_, err = c.Submit(evalSpec("2"), workunit.Options{}).Accepted(testCtx(t))
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, c.Close())
}

func TestFake_DoWork(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{})
	w := dialFake(t, ft, Options{Name: "w", Slots: 1})
	k, err := m.DoWork(&value.Function{Source: "(a, b) => a + b"}, 1, 2)
	require.NoError(t, err)
	serveOne(t, w, func(s *workunit.Spec) (any, error) {
		assert.Equal(t, workunit.Fn, s.Kind)
		v, err := value.Unmarshal(s.Payload)
		require.NoError(t, err)
		args := v.([]any)
		return args[1].(float64) + args[2].(float64), nil
	})
	v, err := m.WaitUntilDone(testCtx(t), k.Key)
	require.NoError(t, err)
	assert.Equal(t, 3.0, v)

	_, err = m.DoWork(&value.Function{Source: "() => 1"}, make(chan int))
	assert.Error(t, err)
	assert.True(t, errors.Is(err, err))
}

func TestFake_Limits(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	lim := c.Limits()
	assert.Equal(t, wire.DefaultMaxSpecBytes, lim.MaxSpecBytes)
	big := make([]byte, lim.MaxSpecBytes+1)
	for i := range big {
		big[i] = 'x'
	}
	_, err := c.Submit(evalSpec(string(big)), workunit.Options{}).Accepted(testCtx(t))
	assert.ErrorIs(t, err, wire.ErrLimit)

	_, err = c.WaitForWork(testCtx(t))
	assert.ErrorContains(t, err, "no room for work")

	w := dialFake(t, ft, Options{Slots: 1})
	err = w.Done(wire.Lease{}, make([]byte, lim.MaxResultBytes+1), nil, 0)
	assert.ErrorIs(t, err, wire.ErrLimit)
	assert.Error(t, w.Done(wire.Lease{}, nil, nil, 0))
	assert.Error(t, w.Failed(wire.Lease{}, nil, nil, 0))
	assert.Error(t, w.Report(Report{}))
}

func TestTrackerURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want, err string }{
		{in: "alfred", want: "ws://alfred:2355/riot"},
		{in: "alfred:1234", want: "ws://alfred:1234/riot"},
		{in: "127.0.0.1:9", want: "ws://127.0.0.1:9/riot"},
		{in: "::1", want: "ws://[::1]:2355/riot"},
		{in: "[::1]", want: "ws://[::1]:2355/riot"},
		{in: "[::1]:7", want: "ws://[::1]:7/riot"},
		{in: "ws://alfred", want: "ws://alfred/riot"},
		{in: "wss://riot.example.org/x", want: "wss://riot.example.org/x"},
		{in: "http://alfred", err: "scheme"},
		{in: "", err: "empty"},
		{in: "alfred:0", err: "bad port"},
		{in: ":5", err: "no host"},
	} {
		got, err := TrackerURL(tt.in)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// A tracker that comes back speaking another protocol version ends the
// client with a *VersionError; calls still waiting get it.
func TestFake_Reconnect_VersionMismatchEnds(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	k := c.Submit(evalSpec("1"), workunit.Options{})
	_, err := k.Accepted(testCtx(t))
	require.NoError(t, err)
	ft.mu.Lock()
	ft.version = wire.ProtocolVersion + 1
	ft.mu.Unlock()
	ft.dropAll()
	<-c.Ended()
	var ve *VersionError
	require.ErrorAs(t, c.Err(), &ve)
	_, err = k.Wait(testCtx(t))
	assert.ErrorAs(t, err, &ve)
	require.NoError(t, c.Close())
}

// Close while the client cannot reach its tracker returns at once.
func TestFake_CloseWhileReconnecting(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	ft.srv.Listener.Close() // no more connections
	ft.dropAll()
	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitFor(testCtx(t), workunit.Key{1})
		errc <- err
	}()
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-errc, ErrClosed)
	assert.ErrorIs(t, c.Err(), ErrClosed)
}

// Two fetches of one blob at once share one transfer, and each gets bytes
// of its own: a master decodes a fetched result in place (typed arrays over
// the bytes), which must not show in another caller's copy.
func TestFake_FetchBlob_SharedTransferOwnBytes(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	data := []byte("a blob that two callers fetch at once")
	h := blob.Sum(data)
	require.NoError(t, c.EnsureBlobs(ctx, map[blob.Hash][]byte{h: data}))
	gate := make(chan struct{})
	ft.mu.Lock()
	ft.readGate = gate
	ft.mu.Unlock()
	got := make(chan []byte, 2)
	for range 2 {
		go func() {
			b, err := c.FetchBlob(ctx, h)
			assert.NoError(t, err)
			got <- b
		}()
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		r := c.gets[h]
		return r != nil && r.refs == 2
	}, 10*time.Second, time.Millisecond, "both callers wait on one transfer")
	close(gate)
	a, b := <-got, <-got
	assert.Equal(t, data, a)
	assert.Equal(t, data, b)
	a[0] ^= 0xff
	assert.Equal(t, data[0], b[0], "each caller has its own bytes")
	ft.mu.Lock()
	assert.Equal(t, 1, ft.reads, "one transfer")
	ft.mu.Unlock()
}

// OnFinished hears that a workunit ended without fetching a result that the
// worker sent as a blob; OnDone fetches it.
func TestFake_OnFinished_DoesNotFetchABlobResult(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	m := dialFake(t, ft, Options{Name: "master"})
	w := dialFake(t, ft, Options{Name: "w", Slots: 1})
	ctx := testCtx(t)
	result := []byte{0x19, 0x01, 0x00} // the value document of 256
	h, err := w.PutBlob(ctx, result)
	require.NoError(t, err)

	k := m.Submit(evalSpec("256"), workunit.Options{})
	finished := make(chan *workunit.Outcome, 1)
	k.OnFinished(func(o *workunit.Outcome, err error) {
		assert.NoError(t, err)
		finished <- o
	})
	a, err := w.WaitForWork(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Report(Report{Lease: a.Lease(), Result: BlobRefDocument(h)}))
	o := <-finished
	assert.Equal(t, workunit.StatusDone, o.Status)
	assert.Equal(t, BlobRefDocument(h), o.Result, "the result stays a blob reference")
	ft.mu.Lock()
	assert.Equal(t, 0, ft.reads, "nothing fetched")
	ft.mu.Unlock()

	done := make(chan *workunit.Outcome, 1)
	k.OnDone(func(o *workunit.Outcome, err error) {
		assert.NoError(t, err)
		done <- o
	})
	assert.Equal(t, result, (<-done).Result, "OnDone fetches it")
	ft.mu.Lock()
	assert.Equal(t, 1, ft.reads)
	ft.mu.Unlock()
}

// blobParts cuts data into a header of h bytes, a body, and a trailer of
// t bytes, as a master gives a typed array (its buffer by reference).
func blobParts(data []byte, h, t int) blob.Parts {
	return blob.Parts{data[:h:h], data[h : len(data)-t : len(data)-t], data[len(data)-t:]}
}

// TestFake_BlobParts: a blob given as parts has the hash of their
// concatenation and reaches the tracker as the same bytes as when given
// in one slice, in pieces or whole.
func TestFake_BlobParts(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.limits = wire.Limits{MaxFrameBytes: 64 << 10, MaxBlobBytes: 1 << 20}
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	piece := c.Limits().PieceBytes()
	for _, size := range []int{20, piece, piece + 1, 10*piece + 123} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + size)
		}
		h := blob.Sum(data)
		parts := blobParts(data, 9, 3)
		require.Equal(t, h, parts.Sum(), "size %d: the parts hash as the whole", size)
		ft.mu.Lock()
		writes := ft.writes
		ft.mu.Unlock()
		require.NoError(t, c.EnsureBlobParts(ctx, map[blob.Hash]blob.Parts{h: parts}), "size %d", size)
		ft.mu.Lock()
		assert.Equal(t, data, ft.blobs[h], "size %d: the tracker holds the same bytes", size)
		if size > piece {
			assert.Equal(t, (size+piece-1)/piece, ft.writes-writes, "size %d: one blob-write per piece", size)
		}
		ft.mu.Unlock()
		got, err := c.FetchBlob(ctx, h)
		require.NoError(t, err)
		assert.Equal(t, data, got)
	}

	// A small blob's parts are checked against its hash before it goes.
	small := []byte("header, body and trailer")
	err := c.EnsureBlobParts(ctx, map[blob.Hash]blob.Parts{blob.Sum([]byte("other")): blobParts(small, 6, 7)})
	assert.ErrorContains(t, err, "hashes to")
}

// TestFake_BlobParts_ChangedDuringUpload: a blob whose bytes change while
// its pieces go (the caller broke EnsureBlobParts' rule) is refused by the
// tracker, which hashes what arrived: an error, and nothing stored under
// the hash.
func TestFake_BlobParts_ChangedDuringUpload(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	ft.limits = wire.Limits{MaxFrameBytes: 64 << 10}
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	piece := c.Limits().PieceBytes()
	data := make([]byte, 12*piece)
	for i := range data {
		data[i] = byte(i * 3)
	}
	h := blob.Sum(data)
	parts := blobParts(data, 9, 3)
	body := parts[1]
	ft.onWrite = func(m *wire.BlobWrite) {
		if m.Offset == 0 {
			// The last pieces wait for the first one's answer: they go
			// changed.
			body[len(body)-1]++
		}
	}
	err := c.EnsureBlobParts(ctx, map[blob.Hash]blob.Parts{h: parts})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad hash")
	ft.mu.Lock()
	_, stored := ft.blobs[h]
	ft.mu.Unlock()
	assert.False(t, stored, "nothing stored under a hash its bytes do not have")
}

// The tracker refuses the submission that made its key's watch, and
// accepts a later one of the same key: the refused Call ends with the
// refusal, the client watches the key for the others, and they (a later
// Call, a WaitFor) end with the key's run.
func TestFake_Refused_OtherCallOfTheKeyWaits(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	refuse := true
	ft.onSubmit = func(fc *fakeConn, m *wire.Submit) bool {
		if !refuse {
			return false
		}
		refuse = false
		fc.send(&wire.Error{Req: m.Req, Code: wire.CodeStore, Message: "disk full"})
		return true
	}
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)
	first := c.Submit(evalSpec("'k'"), workunit.Options{})
	second := c.Submit(evalSpec("'k'"), workunit.Options{})
	waited := make(chan error, 1)
	go func() {
		out, err := c.WaitFor(ctx, first.Key)
		if err == nil && out.Worker != "w" {
			err = fmt.Errorf("worker %q", out.Worker)
		}
		waited <- err
	}()
	_, err := first.Accepted(ctx)
	require.True(t, wire.IsCode(err, wire.CodeStore), "%v", err)
	_, err = first.Wait(ctx)
	require.True(t, wire.IsCode(err, wire.CodeStore), "%v", err)
	_, err = second.Accepted(ctx)
	require.NoError(t, err)
	assert.False(t, second.Finished())

	w := dialFake(t, ft, Options{Name: "w", Slots: 1})
	serveOne(t, w, func(s *workunit.Spec) (any, error) { return s.Source, nil })
	out, err := second.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
	require.NoError(t, <-waited)
	out, err = c.WaitFor(ctx, first.Key) // a new watch: answered at once
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
}

// A burst of submissions goes out in frames of about writeFrameBytes, not
// in one frame as large as the tracker allows: the submissions sent again
// after a reconnect (one batch for the writer, 3 MB of them) too.
func TestFake_Submit_BurstInFramesOfAboutAMiB(t *testing.T) {
	t.Parallel()
	const n = 30000
	ft := newFakeTracker(t)
	all := make(chan struct{})
	seen := 0
	ft.onSubmit = func(*fakeConn, *wire.Submit) bool {
		if seen++; seen == n {
			close(all)
		}
		return true // never answered
	}
	c := dialFake(t, ft, Options{})
	pad := strings.Repeat("x", 100)
	for i := range n {
		c.Submit(evalSpec(fmt.Sprintf("%q + %d", pad, i)), workunit.Options{})
	}
	ctx := testCtx(t)
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	again := make(chan struct{})
	ft.mu.Lock()
	seen, ft.maxFrame, ft.frames = 0, 0, 0
	all = again
	ft.mu.Unlock()
	ft.dropAll()
	select {
	case <-again:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.LessOrEqual(t, ft.maxFrame, writeFrameBytes+1024, "the largest frame")
	assert.GreaterOrEqual(t, ft.frames, 3, "frames of the %d submissions sent again", n)
}
