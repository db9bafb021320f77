package master

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/value"
)

// TestMaster_TypedArrayBlobFromItsBuffer: a large typed array, sent from
// its buffer's own bytes (header, buffer, trailer), is the same blob, by
// hash and by bytes, as its encoding in one buffer (the way the master
// made it before): content addresses do not change, so memoized
// workunits and stored blobs keep working.
func TestMaster_TypedArrayBlobFromItsBuffer(t *testing.T) {
	t.Parallel()
	const n = 1 << 18 // 2 MiB
	sr := runScript(t, map[string]string{"main.js": `
		const big = new Float64Array(1 << 18);
		for (let i = 0; i < big.length; i++) big[i] = i * 0.5;
		const view = new DataView(big.buffer, 8, 1 << 20);    // part of the same buffer: a TagView
		const part = new Float64Array(big.buffer, 16, 1 << 17);
		console.log(riot.waitUntilDone(riot.doWork((a, v, p) => [a[3], v.getFloat64(0, true), p[1]], big, view, part)));
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, "[ 1.5, 0.5, 1.5 ]\n", sr.stdout.String())

	raw := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(float64(i)*0.5))
	}
	f64, ok := value.TypedKindByName("Float64Array")
	require.True(t, ok)
	whole := cbor.NewWriter(nil)
	value.WriteTyped(whole, f64, raw)
	view := func(kind value.TypedKind, off, n int) []byte {
		w := cbor.NewWriter(nil)
		w.Tag(value.TagView)
		w.ArrayHeader(4)
		w.Int(int64(kind))
		w.ByteString(raw)
		w.Int(int64(off))
		w.Int(int64(n))
		return w.Bytes()
	}
	for name, want := range map[string][]byte{
		"the whole array": whole.Bytes(),
		"the DataView":    view(value.KindDataView, 8, 1<<20),
		"the part":        view(f64, 16, 1<<17),
	} {
		got, ok := sr.ft.blobs[blob.Sum(want)]
		if assert.True(t, ok, "%s: the tracker holds the blob under the hash of its one-buffer encoding", name) {
			assert.Equal(t, want, got, name)
		}
	}
	assert.Equal(t, 3, sr.ft.uploads)
}

// TestMaster_BufferChangedWhileEncodingIsAnError: a buffer goes from its
// own bytes, hashed when it is encoded; a getter of a later argument that
// writes to it before the upload would make the blob differ from its hash
// (and from the value the workunit was given), so the call fails, saying
// so, and sends nothing.
func TestMaster_BufferChangedWhileEncodingIsAnError(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const big = new Float64Array(1 << 18);
		const sneaky = { get x() { big[0] = 99; return 1; } };
		try {
			riot.doWork((a, s) => a[0] + s.x, big, sneaky);
			console.log('sent');
		} catch (e) {
			console.log(e.message);
		}
		// Changed between calls, it is a new blob: fine.
		console.log(riot.waitUntilDone(riot.doWork((a) => a[0], big)));
	`})
	require.NoError(t, sr.err)
	out := sr.stdout.String()
	assert.Contains(t, out, "(a Float64Array of 2097152 bytes (2.0 MiB)) changed after it was encoded for this workunit and before it was uploaded")
	assert.Contains(t, out, "send a copy")
	assert.NotContains(t, out, "sent\n")
	assert.Contains(t, out, "\n99\n")
	assert.Equal(t, 1, sr.ft.uploads, "only the second call's blob")
}

// TestMaster_TypedArraySentWithoutACopy: sending a 64 MiB typed array
// allocates a few header bytes and bookkeeping, not a second 64 MiB (the
// encoding the master made before it sent from the buffer). Not parallel:
// it counts the process's allocations.
func TestMaster_TypedArraySentWithoutACopy(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte(`
		const big = new Float64Array(`+strconv.Itoa(size/8)+`);
		big[1] = 1;
		riot.doWork((a) => a[1], big);
		console.log('sent');
	`), 0o644))
	ft := newFakeTracker(t, true)
	ft.hashOnly = true
	conn, err := ft.connect(context.Background(), "localhost", 0, "me")
	require.NoError(t, err)
	var stdout bytes.Buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = RunScript(context.Background(), ScriptOptions{Path: filepath.Join(dir, "main.js"), Conn: conn, Connect: ft.connect, Stdout: &stdout})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, "sent\n", stdout.String())
	require.Equal(t, 1, ft.uploads)
	extra := int64(after.TotalAlloc-before.TotalAlloc) - size
	t.Logf("allocated %d KiB besides the array", extra>>10)
	assert.Less(t, extra, int64(16<<20), "allocated %d MiB besides the array", extra>>20)
}
