package client_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/modules"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// someBytes returns n random bytes.
func someBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// blobEval returns an eval spec that names blobs.
func blobEval(src string, blobs ...blob.Hash) *workunit.Spec {
	return &workunit.Spec{Kind: workunit.Eval, Source: src, Name: "eval", Blobs: blobs}
}

// TestClient_BlobFree_RestartReuploads: after a restart of a tracker in
// memory, which comes back without its blobs and workunits, a client that
// had submitted a workunit naming a blob (SubmitBlobs) submits it again,
// is told the blob is unknown, uploads it again and submits again: the
// call succeeds, and the caller sees no error. EnsureBlobs after the
// reconnect asks the tracker again rather than trusting what was stored
// on the lost connection, so a plain Submit after it runs too (before,
// the client skipped the upload and the worker failed on the missing
// blob).
func TestClient_BlobFree_RestartReuploads(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	ctx := ctxFor(t)
	data := someBytes(2000)
	x := blob.Sum(data)
	blobs := map[blob.Hash]blob.Parts{x: {data}}
	require.NoError(t, m.EnsureBlobParts(ctx, blobs))
	k := m.SubmitBlobs(blobEval("'again'", x), workunit.Options{}, blobs)
	_, err := k.Accepted(ctx)
	require.NoError(t, err)

	tr.Restart(t) // in memory: no workunits, no blobs
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Waiting == 1 })
	assert.Equal(t, 1, tr.Stats(t).Blobs, "uploaded again")

	require.NoError(t, m.EnsureBlobs(ctx, map[blob.Hash][]byte{x: data}))
	plain := m.Submit(blobEval("'plain'", x), workunit.Options{})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 2, func(s *workunit.Spec) (any, error) {
		assert.Equal(t, []blob.Hash{x}, s.Blobs)
		got, err := w.FetchBlob(ctx, x)
		require.NoError(t, err, "the worker finds the blob")
		assert.Equal(t, data, got)
		return s.Source, nil
	})
	for _, c := range []*client.Call{k, plain} {
		out, err := c.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, workunit.StatusDone, out.Status)
	}
}

// TestClient_BlobFree_UnknownBlob: once the tracker freed a blob the
// client uploaded (its workunit done and forgotten), a Submit that names
// it fails with an error that wraps ErrUnknownBlob and says what to do;
// the client forgot it, so EnsureBlobs uploads it again and the same
// submission runs. SubmitBlobs does that by itself, as does DoWorkCall
// with its modules: no error reaches the caller.
func TestClient_BlobFree_UnknownBlob(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.TickInterval = 5 * time.Millisecond
		o.BlobGrace = time.Millisecond
		o.KeepResults = time.Millisecond
	}))
	m := dial(t, tr.Addr(), client.Options{Name: "m"})
	w := dial(t, tr.Addr(), client.Options{Name: "w", Slots: 1})
	ctx := ctxFor(t)
	data := someBytes(2000)
	x := blob.Sum(data)
	one := map[blob.Hash][]byte{x: data}
	freed := func(n uint64) {
		t.Helper()
		tr.WaitFor(t, func(s tracker.Stats) bool { return s.FreedBlobs >= n && s.Blobs == 0 })
	}

	require.NoError(t, m.EnsureBlobs(ctx, one))
	first := m.Submit(blobEval("1", x), workunit.Options{})
	work(t, w, 1, echo)
	_, err := first.Wait(ctx)
	require.NoError(t, err)
	freed(1)

	refused := m.Submit(blobEval("2", x), workunit.Options{})
	_, err = refused.Wait(ctx)
	require.ErrorIs(t, err, client.ErrUnknownBlob)
	assert.True(t, wire.IsCode(err, wire.CodeUnknownBlob))
	assert.Contains(t, err.Error(), "this client has no bytes of it to upload again")
	assert.Contains(t, err.Error(), "the spec names blob "+x.Short())

	require.NoError(t, m.EnsureBlobs(ctx, one), "forgotten as stored: uploaded again")
	again := m.Submit(blobEval("2", x), workunit.Options{})
	work(t, w, 1, echo)
	_, err = again.Wait(ctx)
	require.NoError(t, err)
	freed(2)

	auto := m.SubmitBlobs(blobEval("3", x), workunit.Options{}, map[blob.Hash]blob.Parts{x: {data}})
	work(t, w, 1, echo)
	out, err := auto.Wait(ctx)
	require.NoError(t, err, "uploaded again by itself")
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "3", v)
	freed(3)

	// DoWorkCall: its modules come again from the cache.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.js"), []byte("exports.f = (x) => x;"), 0o600))
	mods := modules.NewCache(dir)
	call, err := m.DoWorkCall(ctx, mods, "m.js", "f", 1)
	require.NoError(t, err)
	work(t, w, 1, echo)
	_, err = call.Wait(ctx)
	require.NoError(t, err)
	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Blobs == 0 })
	call, err = m.DoWorkCall(ctx, mods, "m.js", "f", 2)
	require.NoError(t, err)
	work(t, w, 1, echo)
	_, err = call.Wait(ctx)
	require.NoError(t, err, "the module, freed, went again")
}
