package tracker_test

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// freeing starts a tracker in memory that frees blobs grace after nothing
// names them, ticking often, with results kept for keep (0: for good).
func freeing(t *testing.T, keep, grace time.Duration) *trackertest.Tracker {
	t.Helper()
	return trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = grace
		o.KeepResults = keep
	}))
}

// blobSpec returns an eval spec that names blobs, and its key.
func blobSpec(t *testing.T, src string, blobs ...blob.Hash) ([]byte, workunit.Key) {
	t.Helper()
	s := workunit.Spec{Kind: workunit.Eval, Source: src, Name: "test.js", Blobs: blobs}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	return b, s.Key()
}

// put uploads data through c as a blob and returns its hash.
func (c *wsClient) put(data []byte) blob.Hash {
	c.t.Helper()
	h := blob.Sum(data)
	req := c.nextReq()
	c.send(&wire.BlobPut{Req: req, Hash: h, Data: data})
	require.Equal(c.t, h, recv[*wire.BlobStored](c).Hash)
	return h
}

// randomBlob returns 1000 random bytes.
func randomBlob() []byte {
	b := make([]byte, 1000)
	_, _ = rand.Read(b)
	return b
}

// sweptPast returns once the tracker has swept past now: a blob that a
// connection uploads and leaves by closing is idle from then, and once it
// is freed every blob idle since before it began (for the grace) is freed
// too. It returns the tracker's Stats then.
func sweptPast(t *testing.T, tr *trackertest.Tracker) tracker.Stats {
	t.Helper()
	before := tr.Stats(t).FreedBlobs
	s := master(t, tr, "sentinel")
	h := s.put(randomBlob())
	require.NoError(t, s.ws.Close())
	st := tr.WaitFor(t, func(st tracker.Stats) bool { return st.FreedBlobs > before })
	m := master(t, tr, "check")
	m.send(&wire.BlobHave{Req: 1, Hashes: []blob.Hash{h}})
	require.Equal(t, []blob.Hash{h}, recv[*wire.BlobNeed](m).Missing, "the sentinel was freed")
	require.NoError(t, m.ws.Close())
	return st
}

// TestServer_BlobFree_Argument: a blob that a spec names stays while its
// workunit waits and runs, though the master that uploaded it has left;
// once the workunit is done (its spec dropped) and nothing else names it,
// it is freed after the grace, and /status, the text page and /metrics
// count it; a submission of the done key that names it is still answered
// from the result.
func TestServer_BlobFree_Argument(t *testing.T) {
	t.Parallel()
	tr := freeing(t, 0, 10*time.Millisecond)
	m := master(t, tr, "m")
	x := m.put(randomBlob())
	s, key := blobSpec(t, "1", x)
	m.send(&wire.Submit{Req: 50, Spec: s, Watch: true})
	require.Equal(t, key, recv[*wire.Accepted](m).Key)
	require.NoError(t, m.ws.Close()) // its hold ends with it; the record names x

	st := sweptPast(t, tr)
	assert.Equal(t, 1, st.Blobs, "waiting: its spec's blob stays")
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	require.Equal(t, key, a.Key)
	st = sweptPast(t, tr)
	assert.Equal(t, 1, st.Blobs, "running: its spec's blob stays")

	w.complete(a, result(3), &wire.Credit{N: 1})
	st = tr.WaitFor(t, func(st tracker.Stats) bool { return st.Blobs == 0 })
	assert.Zero(t, st.BlobBytes)
	assert.GreaterOrEqual(t, st.FreedBlobs, uint64(3), "two sentinels and x")
	status, err := tr.Server().Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, st.FreedBlobs, status.FreedBlobs)
	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, " freed\n")
	metrics, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, metrics, "riot_blobs_freed_total ")

	m = master(t, tr, "m")
	m.send(&wire.Submit{Req: 51, Spec: s, Watch: true})
	acc := recv[*wire.Accepted](m)
	assert.Equal(t, workunit.StatusDone, acc.Status, "done: its result answers, with no need of its blob")
	assert.Equal(t, result(3), acc.Result)
}

// TestServer_BlobFree_Result: a worker's result sent as a blob stays while
// its done record is kept, though the worker stays connected (its hold
// ends with the done), and is freed the grace after --keep-results forgets
// the record.
func TestServer_BlobFree_Result(t *testing.T) {
	t.Parallel()
	tr := freeing(t, 300*time.Millisecond, 10*time.Millisecond)
	m := master(t, tr, "m")
	key, _ := m.submit("big result")
	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	r := w.put(randomBlob())
	w.complete(a, client.BlobRefDocument(r), &wire.Credit{N: 1})
	fin := recv[*wire.Finished](m)
	assert.Equal(t, client.BlobRefDocument(r), fin.Result)

	st := sweptPast(t, tr)
	if st.Forgotten == 0 { // the usual case: kept for 300 ms
		assert.Equal(t, 1, st.Blobs, "kept: its result's blob stays")
		_, ok := tr.Lookup(t, key)
		assert.True(t, ok)
	}
	st = tr.WaitFor(t, func(st tracker.Stats) bool { return st.Forgotten == 1 && st.Blobs == 0 })
	assert.Zero(t, st.BlobBytes, "forgotten: the result's blob is freed, the worker still connected")
}

// TestServer_BlobFree_Held: a blob uploaded and not yet named by a
// submission stays while its connection is open, and is freed after it
// closes; so is one a blob-need left out (the client takes it as stored).
func TestServer_BlobFree_Held(t *testing.T) {
	t.Parallel()
	tr := freeing(t, 0, 10*time.Millisecond)
	up := master(t, tr, "up")
	x := up.put(randomBlob())
	asker := master(t, tr, "asker")
	asker.send(&wire.BlobHave{Req: 1, Hashes: []blob.Hash{x}})
	assert.Empty(t, recv[*wire.BlobNeed](asker).Missing)

	require.NoError(t, up.ws.Close())
	st := sweptPast(t, tr)
	assert.Equal(t, 1, st.Blobs, "held by the connection told it is there")

	require.NoError(t, asker.ws.Close())
	tr.WaitFor(t, func(st tracker.Stats) bool { return st.Blobs == 0 })
}

// TestServer_BlobFree_AskedMissing_NotHeld: a blob-have of a blob the
// tracker lacks does not hold it for the asker: once another connection
// uploads it and goes, nothing holds it and it is freed. Before, the ask
// held it until the asker closed, so a connection asking about many
// blobs it never uploaded grew the holds without bound.
func TestServer_BlobFree_AskedMissing_NotHeld(t *testing.T) {
	t.Parallel()
	tr := freeing(t, 0, 10*time.Millisecond)
	data := randomBlob()
	asker := master(t, tr, "asker")
	asker.send(&wire.BlobHave{Req: 1, Hashes: []blob.Hash{blob.Sum(data)}})
	assert.Len(t, recv[*wire.BlobNeed](asker).Missing, 1)
	up := master(t, tr, "up")
	up.put(data)
	require.NoError(t, up.ws.Close())
	tr.WaitFor(t, func(st tracker.Stats) bool { return st.Blobs == 0 && st.FreedBlobs == 1 })
	assert.Empty(t, asker.barrier(), "the asker's connection is still open")
}

// TestServer_BlobFree_RefusedUpload_NotHeld: an upload that is refused
// or dropped does not leave its blob held by the uploader: once another
// connection uploads the blob and goes, it is freed though the refused
// uploader is still connected. Before, each refused blob-put (the memory
// bound full, say) or blob-write (a piece out of order, bytes that hash
// to another blob) held its blob until the connection closed, so a
// connection refused again and again grew the holds without bound.
func TestServer_BlobFree_RefusedUpload_NotHeld(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = 10 * time.Millisecond
		o.MaxMemory = 16 << 10
	}))
	full, _ := sizedBlob('f', 14000)
	filler := master(t, tr, "filler")
	filler.put(full)

	refused := master(t, tr, "refused")
	put, hput := sizedBlob('p', 3000)
	refused.send(&wire.BlobPut{Req: 1, Hash: hput, Data: put})
	refusedBlob(t, recv[*wire.Error](refused), 1, "blob-put", hput)
	piece, hpiece := sizedBlob('w', 3000)
	refused.send(&wire.BlobWrite{Req: 2, Hash: hpiece, Size: uint64(len(piece)), Data: piece[:1000]})
	refusedBlob(t, recv[*wire.Error](refused), 2, "blob-write", hpiece)

	// Room again: the filler goes and its blob is freed.
	require.NoError(t, filler.ws.Close())
	tr.WaitFor(t, func(st tracker.Stats) bool { return st.FreedBlobs == 1 && st.Blobs == 0 })

	// Dropped uploads: a piece out of order, and a blob whose bytes hash
	// to another.
	gap, hgap := sizedBlob('g', 3000)
	refused.send(&wire.BlobWrite{Req: 3, Hash: hgap, Size: uint64(len(gap)), Data: gap[:1000]})
	assert.Equal(t, uint64(1000), recv[*wire.BlobWritten](refused).Written)
	refused.send(&wire.BlobWrite{Req: 4, Hash: hgap, Size: uint64(len(gap)), Offset: 2000, Data: gap[2000:]})
	assert.Equal(t, wire.CodeInvalid, recv[*wire.Error](refused).Code)
	wrong, hwrong := sizedBlob('x', 2000)
	refused.send(&wire.BlobWrite{Req: 5, Hash: hwrong, Size: uint64(len(wrong)), Data: bytes.Repeat([]byte{'y'}, len(wrong))})
	assert.Equal(t, wire.CodeInvalid, recv[*wire.Error](refused).Code)

	up := master(t, tr, "up")
	for _, b := range [][]byte{put, piece, gap, wrong} {
		up.put(b)
	}
	require.NoError(t, up.ws.Close())
	tr.WaitFor(t, func(st tracker.Stats) bool { return st.FreedBlobs == 5 && st.Blobs == 0 })
	assert.Empty(t, refused.barrier(), "the refused uploader's connection is still open")
}

// TestServer_BlobFree_UnknownBlob: a submission (or a child) that names a
// blob the tracker does not hold, never uploaded or freed, is refused with
// unknown-blob, a message that names the blob and says what to do, and
// nothing stored; uploaded again, the same submission is accepted and
// runs.
func TestServer_BlobFree_UnknownBlob(t *testing.T) {
	t.Parallel()
	tr := freeing(t, time.Millisecond, time.Millisecond)
	m := master(t, tr, "m")
	data := randomBlob()
	x := blob.Sum(data)
	s, key := blobSpec(t, "2", x)
	m.send(&wire.Submit{Req: 7, Spec: s, Watch: true})
	e := recv[*wire.Error](m)
	assert.Equal(t, uint64(7), e.Req)
	assert.Equal(t, wire.CodeUnknownBlob, e.Code, e.Message)
	assert.ErrorIs(t, e, wire.ErrUnknownBlob)
	assert.Contains(t, e.Message, "tracker: submit: the spec names blob "+x.Short()+", which the tracker does not hold")
	assert.Contains(t, e.Message, "Upload the blob again (EnsureBlobs) and submit again")
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok, "refused: not stored")

	// Uploaded, run and forgotten: freed, and refused again.
	m.put(data)
	m.send(&wire.Submit{Req: 8, Spec: s, Watch: true})
	require.Equal(t, key, recv[*wire.Accepted](m).Key)
	w := worker(t, tr, "w", 1)
	pa := recv[*wire.Assign](w)
	// A child that names a blob the tracker lacks is refused the same way.
	child, childKey := blobSpec(t, "3", blob.Hash{9})
	w.send(&wire.Child{Req: 9, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	e = recv[*wire.Error](w)
	assert.Equal(t, wire.CodeUnknownBlob, e.Code, e.Message)
	assert.Contains(t, e.Message, "tracker: child: the spec names blob "+blob.Hash{9}.Short())
	_, ok = tr.Lookup(t, childKey)
	assert.False(t, ok)
	w.complete(pa, result(2), &wire.Credit{N: 1})
	recv[*wire.Finished](m)
	tr.WaitFor(t, func(st tracker.Stats) bool { return st.Forgotten == 1 && st.Blobs == 0 })

	m.send(&wire.Submit{Req: 10, Spec: s, Watch: true})
	e = recv[*wire.Error](m)
	assert.Equal(t, wire.CodeUnknownBlob, e.Code, "the master took it as stored, and the tracker freed it: "+e.Message)
	m.put(data)
	m.send(&wire.Submit{Req: 11, Spec: s, Watch: true})
	assert.Equal(t, workunit.StatusWaiting, recv[*wire.Accepted](m).Status)
	assert.Equal(t, key, recv[*wire.Assign](w).Key)
}

// TestServer_BlobFree_Durable: a tracker with a durable store frees
// nothing and checks no submission's blobs (a workunit that names a blob
// it lacks fails on its worker, as before).
func TestServer_BlobFree_Durable(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = time.Millisecond
	}))
	m := master(t, tr, "m")
	s, key := blobSpec(t, "4", blob.Hash{9})
	m.send(&wire.Submit{Req: 7, Spec: s, Watch: true})
	assert.Equal(t, key, recv[*wire.Accepted](m).Key)
	assert.Zero(t, tr.Stats(t).FreedBlobs)
}

// TestServer_BlobFree_RefusedPut_UploadInProgress_Held: a blob-put refused
// (the memory bound full) while the same connection uploads that blob in
// pieces does not end the upload's hold: once the upload commits and the
// uploader is told the blob is stored, it stays while the uploader is
// connected. Before, the refusal ended the hold (the store lacked the blob
// then), the blob was idle from the refusal, and the sweep freed it after
// the grace, though its uploader had been told it was stored.
func TestServer_BlobFree_RefusedPut_UploadInProgress_Held(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = 10 * time.Millisecond
		o.MaxMemory = 16 << 10
	}))
	data, h := sizedBlob('u', 10000)
	up := master(t, tr, "up")
	up.send(&wire.BlobWrite{Req: 1, Hash: h, Size: uint64(len(data)), Data: data[:1000]})
	require.Equal(t, uint64(1000), recv[*wire.BlobWritten](up).Written)
	up.send(&wire.BlobPut{Req: 2, Hash: h, Data: data}) // 10000 more: past the bound
	refusedBlob(t, recv[*wire.Error](up), 2, "blob-put", h)
	up.send(&wire.BlobWrite{Req: 3, Hash: h, Size: uint64(len(data)), Offset: 1000, Data: data[1000:]})
	require.Equal(t, uint64(len(data)), recv[*wire.BlobWritten](up).Written, "stored")

	st := sweptPast(t, tr)
	assert.Equal(t, 1, st.Blobs, "held by the connection that uploaded it")
	asker := master(t, tr, "asker")
	asker.send(&wire.BlobHave{Req: 1, Hashes: []blob.Hash{h}})
	assert.Empty(t, recv[*wire.BlobNeed](asker).Missing, "the uploaded blob is still stored")
	require.NoError(t, asker.ws.Close())
	assert.Empty(t, up.barrier(), "the uploader's connection is still open")
}
