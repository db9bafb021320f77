package tracker_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// padded returns the source of a workunit of about 1000 bytes, told apart
// by tag.
func padded(tag string) string { return "'" + tag + strings.Repeat("x", 1000) + "'" }

// refusedMemory submits src through c and checks that the tracker refuses
// it with memory-full, naming the bound, and stores nothing of it; it
// returns the Error's message.
func refusedMemory(t *testing.T, tr *trackertest.Tracker, c *wsClient, src string) string {
	t.Helper()
	s, key := spec(t, src)
	req := c.nextReq()
	c.send(&wire.Submit{Req: req, Spec: s, Watch: true})
	e := recv[*wire.Error](c)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.ErrorIs(t, e, wire.ErrMemoryFull)
	assert.Equal(t, req, e.Req)
	assert.Contains(t, e.Message, "tracker: memory full: workunit "+key.Short()+" refused")
	assert.Contains(t, e.Message, "past its --max-memory of 1536 bytes (1.5 KiB)")
	assert.Contains(t, e.Message, "Nothing already accepted is dropped")
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok, "refused: not stored")
	return e.Message
}

// TestServer_MaxMemory: past MaxMemory a new workunit is refused with
// memory-full and a message that says what is full and what to do, and
// leaves no trace; the connection stays open; a submission that joins open
// work or is answered from a kept result is served; the result of accepted
// work is taken; once the table holds less, new work is accepted again.
func TestServer_MaxMemory(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	kA, _ := m.submit(padded("a"))
	msg := refusedMemory(t, tr, m, padded("b"))
	assert.Contains(t, msg, "run riotd with --data", "in memory, the message suggests a durable store")
	assert.Contains(t, msg, "for 1 workunit (records,")
	st := tr.Stats(t)
	assert.Equal(t, uint64(1), st.Submitted, "the refusal is not counted as a submission")
	assert.Equal(t, uint64(1), st.RefusedMemory)
	assert.Equal(t, 1, st.Watches, "the refused submission's watch is not kept")
	assert.Equal(t, 1, st.Waiting)
	assert.True(t, st.Bytes > 1000 && st.Bytes <= 1536, "held %d", st.Bytes)
	status, err := tr.Server().Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, st.Bytes, status.HeldBytes)
	assert.Equal(t, int64(1536), status.MaxMemoryBytes)
	assert.Equal(t, uint64(1), status.RefusedMemory)
	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, "memory for workunits: ")
	assert.Contains(t, text, " held of --max-memory 1536 bytes (1.5 KiB); 1 submissions refused")
	metrics, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, metrics, fmt.Sprintf("riot_held_bytes %d\n", st.Bytes))
	assert.Contains(t, metrics, "riot_submissions_refused_memory_total 1\n")

	other := master(t, tr, "other")
	_, acc := other.submit(padded("a")) // joins the waiting one
	assert.Equal(t, workunit.StatusWaiting, acc.Status)

	w := worker(t, tr, "w", 1)
	a := recv[*wire.Assign](w)
	require.Equal(t, kA, a.Key)
	w.complete(a, result(1), &wire.Credit{N: 1})
	assert.Equal(t, result(1), recv[*wire.Finished](m).Result)
	assert.Equal(t, result(1), recv[*wire.Finished](other).Result)

	// The spec went with the run: room for b now, and then full again.
	kB, _ := m.submit(padded("b"))
	assert.Equal(t, kB, recv[*wire.Assign](w).Key)
	refusedMemory(t, tr, m, padded("c"))
	_, acc = other.submit(padded("a")) // answered from the kept result
	assert.Equal(t, workunit.StatusDone, acc.Status)
	assert.Equal(t, result(1), acc.Result)
}

// TestServer_MaxMemory_Durable: with a durable store, a result written to
// it no longer counts (the store has it; the value cache is bounded
// apart), and the refusal does not suggest --data.
func TestServer_MaxMemory_Durable(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	m.submit(padded("a"))
	msg := refusedMemory(t, tr, m, padded("b"))
	assert.NotContains(t, msg, "--data")

	w := worker(t, tr, "w", 1)
	w.complete(recv[*wire.Assign](w), []byte(padded("result")), &wire.Credit{N: 1})
	recv[*wire.Finished](m)
	st := tr.WaitFor(t, func(s tracker.Stats) bool { return s.Bytes == 160 })
	assert.Equal(t, int64(160), st.Bytes, "only the record: its result is in the store")
	m.submit(padded("b"))
}

// TestServer_MaxMemory_Child: a running workunit's child past MaxMemory is
// refused to its worker with memory-full and the same message, not
// stored; the parent keeps its lease and finishes.
func TestServer_MaxMemory_Child(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.MaxMemory = 1536 }))
	m := master(t, tr, "m")
	parent, _ := m.submit(padded("parent"))
	w := worker(t, tr, "w", 1)
	pa := recv[*wire.Assign](w)
	require.Equal(t, parent, pa.Key)

	child, childKey := spec(t, padded("child"))
	w.send(&wire.Child{Req: 9, Parent: pa.Key, Token: pa.Token, Spec: child, Watch: true})
	e := recv[*wire.Error](w)
	assert.Equal(t, uint64(9), e.Req)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.Contains(t, e.Message, "tracker: memory full: workunit "+childKey.Short()+" refused")
	assert.Contains(t, e.Message, "past its --max-memory of 1536 bytes (1.5 KiB)")
	_, ok := tr.Lookup(t, childKey)
	assert.False(t, ok, "refused: not stored")

	w.complete(pa, result(4))
	assert.Equal(t, result(4), recv[*wire.Finished](m).Result)
}

// sizedBlob returns n bytes told apart by tag, and their hash.
func sizedBlob(tag byte, n int) ([]byte, blob.Hash) {
	b := bytes.Repeat([]byte{tag}, n)
	return b, blob.Sum(b)
}

// refusedBlob checks that e is the memory bound's refusal of an upload of
// blob h answering req.
func refusedBlob(t *testing.T, e *wire.Error, req uint64, op string, h blob.Hash) {
	t.Helper()
	assert.Equal(t, req, e.Req)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.ErrorIs(t, e, wire.ErrMemoryFull)
	assert.Contains(t, e.Message, "tracker: memory full: "+op+" of blob "+h.Short()+" refused: the tracker holds ")
	assert.Contains(t, e.Message, "past its --max-memory of 16384 bytes (16.0 KiB)")
	assert.Contains(t, e.Message, "Nothing already accepted is dropped")
	assert.Contains(t, e.Message, "run riotd with --data")
}

// TestServer_MaxMemory_Blobs: with the store in memory, blobs count toward
// MaxMemory with the table's bytes: an upload past the bound (blob-put, or
// blob-write's first piece, which gives the size) is refused with
// memory-full, a message that says what is held and what to do, and
// nothing of it stored; a blob held already is taken again; a submission
// that fits the table but not with the blobs is refused, saying so; an
// upload under way counts from its first piece, and an aborted one gives
// its room back; /status, the text page and /metrics show the blobs.
func TestServer_MaxMemory_Blobs(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 16 << 10
	}))
	m := master(t, tr, "m")
	a, ha := sizedBlob('a', 6000)
	m.send(&wire.BlobPut{Req: 1, Hash: ha, Data: a})
	assert.Equal(t, ha, recv[*wire.BlobStored](m).Hash)
	b, hb := sizedBlob('b', 6000)
	m.send(&wire.BlobPut{Req: 2, Hash: hb, Data: b})
	assert.Equal(t, hb, recv[*wire.BlobStored](m).Hash)

	// 12000 held: 6000 more would pass 16384.
	c, hc := sizedBlob('c', 6000)
	m.send(&wire.BlobPut{Req: 3, Hash: hc, Data: c})
	e := recv[*wire.Error](m)
	refusedBlob(t, e, 3, "blob-put", hc)
	assert.Contains(t, e.Message, "and 12000 bytes (11.7 KiB) for 2 blobs (large arguments, large results, modules), and this one needs 6000 bytes (5.9 KiB) more")
	m.send(&wire.BlobHave{Req: 4, Hashes: []blob.Hash{hc}})
	assert.Equal(t, []blob.Hash{hc}, recv[*wire.BlobNeed](m).Missing, "refused: not stored")
	m.send(&wire.BlobPut{Req: 5, Hash: ha, Data: a})
	assert.Equal(t, ha, recv[*wire.BlobStored](m).Hash, "a blob held already needs no room")

	// A blob in pieces is refused at its first piece, for its whole size.
	big, hbig := sizedBlob('d', 20000)
	m.send(&wire.BlobWrite{Req: 6, Hash: hbig, Size: uint64(len(big)), Data: big[:1000]})
	refusedBlob(t, recv[*wire.Error](m), 6, "blob-write", hbig)

	// The table's bytes and the blobs' are one bound.
	s, key := spec(t, "'"+strings.Repeat("w", 5000)+"'") // fits the table alone
	m.send(&wire.Submit{Req: 7, Spec: s, Watch: true})
	e = recv[*wire.Error](m)
	assert.Equal(t, wire.CodeMemoryFull, e.Code, e.Message)
	assert.Contains(t, e.Message, "tracker: memory full: workunit "+key.Short()+" refused: the tracker holds 0 bytes for 0 workunits "+
		"(records, specs of waiting and running work, results and errors) and 12000 bytes (11.7 KiB) for blobs")
	assert.Contains(t, e.Message, "past its --max-memory of 16384 bytes (16.0 KiB)")
	_, ok := tr.Lookup(t, key)
	assert.False(t, ok, "refused: not stored")
	small, _ := m.submit("'small'")
	_, ok = tr.Lookup(t, small)
	assert.True(t, ok, "a workunit that fits with the blobs is accepted")

	st := tr.Stats(t)
	assert.Equal(t, int64(12000), st.BlobBytes)
	assert.Equal(t, 2, st.Blobs)
	assert.Equal(t, uint64(2), st.RefusedBlobs)
	assert.Equal(t, uint64(1), st.RefusedMemory)
	status, err := tr.Server().Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(12000), status.BlobBytes)
	assert.Equal(t, st.Bytes+12000, status.HeldBytes, "held: the table's bytes and the blobs'")
	assert.Equal(t, uint64(2), status.RefusedBlobs)
	text, _ := get(t, "http://"+tr.Addr()+"/")
	assert.Contains(t, text, "blobs in memory: 2, 12000 bytes (11.7 KiB) (counted in --max-memory when set); 2 uploads refused")
	metrics, _ := get(t, "http://"+tr.Addr()+"/metrics")
	assert.Contains(t, metrics, "riot_blob_bytes 12000\n")
	assert.Contains(t, metrics, "riot_blobs 2\n")
	assert.Contains(t, metrics, "riot_blobs_refused_memory_total 2\n")
	assert.Contains(t, metrics, fmt.Sprintf("riot_held_bytes %d\n", st.Bytes+12000))
}

// TestServer_MaxMemory_BlobUploads: an upload in pieces holds its whole
// size of the bound from its first piece, so that a second one that would
// pass the bound with it is refused; an upload dropped (its connection
// closed) gives its room back; one committed counts as the store's.
func TestServer_MaxMemory_BlobUploads(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 16 << 10
	}))
	up := master(t, tr, "up")
	a, ha := sizedBlob('a', 10000)
	up.send(&wire.BlobWrite{Req: 1, Hash: ha, Size: uint64(len(a)), Data: a[:4000]})
	assert.Equal(t, uint64(4000), recv[*wire.BlobWritten](up).Written)

	m := master(t, tr, "m")
	b, hb := sizedBlob('b', 10000)
	m.send(&wire.BlobWrite{Req: 1, Hash: hb, Size: uint64(len(b)), Data: b[:4000]})
	e := recv[*wire.Error](m)
	refusedBlob(t, e, 1, "blob-write", hb)
	assert.Contains(t, e.Message, "10000 bytes (9.8 KiB) for uploads under way")

	require.NoError(t, up.ws.Close()) // the upload is dropped
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Connections == 1 })
	m.send(&wire.BlobWrite{Req: 2, Hash: hb, Size: uint64(len(b)), Data: b[:6000]})
	assert.Equal(t, uint64(6000), recv[*wire.BlobWritten](m).Written, "the dropped upload's room is back")
	m.send(&wire.BlobWrite{Req: 3, Hash: hb, Size: uint64(len(b)), Offset: 6000, Data: b[6000:]})
	assert.Equal(t, uint64(10000), recv[*wire.BlobWritten](m).Written)
	st := tr.Stats(t)
	assert.Equal(t, int64(10000), st.BlobBytes)

	// Committed, the blob counts once, as the store's: 6384 bytes are left.
	c, hc := sizedBlob('c', 6000)
	m.send(&wire.BlobPut{Req: 4, Hash: hc, Data: c})
	assert.Equal(t, hc, recv[*wire.BlobStored](m).Hash)
	d, hd := sizedBlob('d', 1000)
	m.send(&wire.BlobPut{Req: 5, Hash: hd, Data: d})
	refusedBlob(t, recv[*wire.Error](m), 5, "blob-put", hd)
}

// TestServer_MaxMemory_BlobsDurable: a durable store keeps its blobs in
// files: they do not count toward MaxMemory, and the status shows none in
// memory.
func TestServer_MaxMemory_BlobsDurable(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Durable(), trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 16 << 10
	}))
	m := master(t, tr, "m")
	for i := range 4 {
		data, h := sizedBlob(byte('a'+i), 6000)
		m.send(&wire.BlobPut{Req: uint64(i + 1), Hash: h, Data: data})
		assert.Equal(t, h, recv[*wire.BlobStored](m).Hash)
	}
	m.submit(padded("a"))
	st := tr.Stats(t)
	assert.Zero(t, st.BlobBytes)
	assert.Zero(t, st.RefusedBlobs)
}

// TestServer_MaxMemory_BlobsGivenMemoryStore: a tracker given a Memory
// store (Options.Store) writes its records to it as to a durable one, but
// its blobs are in memory all the same: they count toward MaxMemory, and
// an upload past it is refused.
func TestServer_MaxMemory_BlobsGivenMemoryStore(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithStore(store.NewMemory()), trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 16 << 10
	}))
	m := master(t, tr, "m")
	a, ha := sizedBlob('a', 12000)
	m.send(&wire.BlobPut{Req: 1, Hash: ha, Data: a})
	assert.Equal(t, ha, recv[*wire.BlobStored](m).Hash)
	b, hb := sizedBlob('b', 6000)
	m.send(&wire.BlobPut{Req: 2, Hash: hb, Data: b})
	refusedBlob(t, recv[*wire.Error](m), 2, "blob-put", hb)
	st := tr.Stats(t)
	assert.Equal(t, int64(12000), st.BlobBytes)
	assert.Equal(t, uint64(1), st.RefusedBlobs)
}

// TestServer_MaxMemory_BlobUploadFails: an upload in pieces that fails
// (a piece out of order, a size that changes, bytes that do not match
// the hash, a fresh start at offset 0) gives back the room its first
// piece reserved, each time: after them all, a blob of the whole bound
// fits.
func TestServer_MaxMemory_BlobUploadFails(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.MaxMemory = 16 << 10
	}))
	m := master(t, tr, "m")
	a, ha := sizedBlob('a', 10000)
	first := func(req uint64) {
		t.Helper()
		m.send(&wire.BlobWrite{Req: req, Hash: ha, Size: uint64(len(a)), Data: a[:4000]})
		assert.Equal(t, uint64(4000), recv[*wire.BlobWritten](m).Written)
	}
	invalid := func(req uint64, contains string) {
		t.Helper()
		e := recv[*wire.Error](m)
		assert.Equal(t, req, e.Req)
		assert.Equal(t, wire.CodeInvalid, e.Code, e.Message)
		assert.Contains(t, e.Message, contains)
	}
	first(1)
	m.send(&wire.BlobWrite{Req: 2, Hash: ha, Size: uint64(len(a)), Offset: 5000, Data: a[5000:]})
	invalid(2, "pieces go in order")
	first(3)
	m.send(&wire.BlobWrite{Req: 4, Hash: ha, Size: uint64(len(a)) + 1, Offset: 4000, Data: a[4000:]})
	invalid(4, "after a first piece that gave")
	first(5)
	first(6) // starts again: the first upload is dropped, its room with it
	wrong := bytes.Repeat([]byte{'z'}, len(a)-4000)
	m.send(&wire.BlobWrite{Req: 7, Hash: ha, Size: uint64(len(a)), Offset: 4000, Data: wrong})
	invalid(7, "its bytes hash to")

	st := tr.Stats(t)
	assert.Zero(t, st.BlobBytes, "nothing stored")
	b, hb := sizedBlob('b', 16<<10) // nothing else is held: the whole bound
	m.send(&wire.BlobPut{Req: 8, Hash: hb, Data: b})
	assert.Equal(t, hb, recv[*wire.BlobStored](m).Hash, "every failed upload gave its room back")
}
