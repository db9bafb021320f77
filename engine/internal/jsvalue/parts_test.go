package jsvalue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
)

// TestEncodeParts_SameDocument: EncodeParts gives the bytes EncodeValue
// gives, so a value's blob hash does not depend on which made it.
func TestEncodeParts_SameDocument(t *testing.T) {
	rl := newTestRuntime(t)
	for _, src := range []string{
		`new Float64Array(300).map((_, i) => i * 1.5)`,
		`new Uint8Array(70000).map((_, i) => i)`,
		`new Int16Array(new ArrayBuffer(4000), 8, 100)`, // a view of part of its buffer
		`new BigInt64Array([1n, -2n])`,
		`new DataView(new Uint8Array(300).map((_, i) => i).buffer, 3, 200)`,
		`new Uint8Array(300).map((_, i) => i).buffer`,
		`new ArrayBuffer(0)`,
		`new Float32Array(0)`,
		`[1, 2, new Float64Array(4)]`,
		`({a: "b"})`,
		`42`,
	} {
		v := runJS(t, rl, src)
		want := encodeJS(t, rl, v)
		var parts blob.Parts
		var err error
		require.Nil(t, rl.rt.Try(func() { parts, err = rl.enc.EncodeParts(v) }), src)
		require.NoError(t, err, src)
		assert.Equal(t, want, parts.Bytes(), src)
		assert.Equal(t, blob.Sum(want), parts.Sum(), src)
	}
}

// TestEncodeParts_BufferByReference: a typed array's parts hold its
// buffer's bytes themselves: nothing the size of the array is copied.
func TestEncodeParts_BufferByReference(t *testing.T) {
	rl := newTestRuntime(t)
	v := runJS(t, rl, `globalThis.a = new Float64Array(1000); a`)
	parts, err := rl.enc.EncodeParts(v)
	require.NoError(t, err)
	require.Len(t, parts, 2)
	assert.Len(t, parts[0], 5, "the tag (2 bytes) and the byte string's head (3)")
	runJS(t, rl, `a[0] = 1`)
	assert.Equal(t, byte(0xf0), parts[1][6], "the script's write shows in the parts")
}
