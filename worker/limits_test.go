package worker_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// TestWorker_ResultLimit: a result larger than the tracker's
// max-blob-bytes fails its workunit with a result-limit error that says
// so, naming the flag; the worker and its connection live on.
func TestWorker_ResultLimit(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Limits.MaxFrameBytes, o.Limits.MaxBlobBytes = 1<<20, 1<<20
	}))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	out, err := m.Submit(eval("'x'.repeat(2 << 20)"), workunit.Options{}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.ResultLimit, werr.Kind)
	assert.Equal(t, "result: larger than 1.0 MiB, over the tracker's limit on a value (riotd --max-blob-bytes)", werr.Message)
	assert.Equal(t, "w", out.Worker)

	out, err = m.Submit(eval("'still here'"), workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
	assert.Equal(t, 0, int(tr.Stats(t).Discarded))
}

// TestWorker_LargeResult_AsBlob: a result larger than a frame (and than
// max-result-bytes) but within max-blob-bytes goes as a blob, in pieces,
// and Wait gives it back whole.
func TestWorker_LargeResult_AsBlob(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.Limits.MaxFrameBytes = 1 << 20 }))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	out, err := m.Submit(eval("'x'.repeat(3 << 20) + 'y'"), workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	s, ok := v.(string)
	require.True(t, ok, "a string: %T", v)
	assert.Equal(t, 3<<20+1, len(s))
	assert.Equal(t, "xy", s[len(s)-2:])
	info, err := m.Info(ctx, out.Key)
	require.NoError(t, err)
	assert.Equal(t, out.Result, info.Result, "info fetches the blob too")
}

// TestWorker_LargeTypedResult_FromItsBuffer: a typed array, DataView or
// ArrayBuffer result too large for a done message goes as a blob straight
// from its buffer (header, buffer, trailer), and is the same blob, byte
// for byte and so by hash, as its encoding in one piece.
func TestWorker_LargeTypedResult_FromItsBuffer(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) { o.Limits.MaxFrameBytes = 1 << 20 }))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	const n = 300000 // 2.4 MB of float64s
	raw := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(float64(i)))
	}
	f64, ok := value.TypedKindByName("Float64Array")
	require.True(t, ok)
	whole := cbor.NewWriter(nil)
	value.WriteTyped(whole, f64, raw)
	part := cbor.NewWriter(nil)
	part.Tag(value.TagView)
	part.ArrayHeader(4)
	part.Int(int64(value.KindDataView))
	part.ByteString(raw)
	part.Int(8)
	part.Int(1 << 20)
	buf := cbor.NewWriter(nil)
	buf.ByteString(raw)
	const arr = "new Float64Array(300000).map((_, i) => i)"
	for src, want := range map[string][]byte{
		arr: whole.Bytes(),
		"new DataView(" + arr + ".buffer, 8, 1 << 20)": part.Bytes(),
		arr + ".buffer": buf.Bytes(),
	} {
		out, err := m.Submit(eval(src), workunit.Options{}).Wait(ctx)
		require.NoError(t, err, src)
		assert.Equal(t, want, out.Result, src)
		got, err := m.FetchBlob(ctx, blob.Sum(want))
		require.NoError(t, err, "%s: the tracker holds it under the hash of its one-piece encoding", src)
		assert.Equal(t, want, got, src)
	}
}

// TestWorker_ResultMemoryFull: a result uploaded as a blob to a tracker
// whose blobs in memory would pass its --max-memory fails its workunit
// with an error that says so (TrackerMemoryFullError, result-limit), not
// an internal error, and nothing is lost: the master gets the error, and
// the worker goes on.
func TestWorker_ResultMemoryFull(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Limits.MaxFrameBytes, o.MaxMemory = 1<<20, 2<<20
	}))
	start(t, tr.Addr(), worker.Options{Name: "w", Slots: 1})
	m := master(t, tr.Addr())
	ctx := ctxFor(t)
	out, err := m.Submit(eval("'x'.repeat(3 << 20)"), workunit.Options{}).Wait(ctx)
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, workunit.ResultLimit, werr.Kind)
	assert.Equal(t, "TrackerMemoryFullError", werr.Name)
	assert.Contains(t, werr.Message, "the tracker refused to keep it as a blob")
	assert.Contains(t, werr.Message, "memory full")
	assert.Contains(t, werr.Message, "past its --max-memory of 2097152 bytes (2.0 MiB)")
	assert.Equal(t, "w", out.Worker)

	out, err = m.Submit(eval("'still here'"), workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "w", out.Worker)
}
