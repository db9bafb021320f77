package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode checks that no frame makes Decode panic or fail with anything
// but a *DecodeError, and that what decodes is stable: decode, encode,
// decode gives the same messages, and encoding them again the same bytes.
// A reused Decoder agrees with Decode. Seeds are in
// testdata/fuzz/FuzzDecode (written by TestGolden -update from real
// frames).
func FuzzDecode(f *testing.F) {
	for _, frame := range seedFrames(f) {
		f.Add(frame)
	}
	var reused Decoder
	f.Fuzz(func(t *testing.T, frame []byte) {
		msgs, err := Decode(frame)
		if err != nil {
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			_, err2 := reused.Decode(frame)
			require.Equal(t, err, err2)
			return
		}
		first, err := Encode(msgs...)
		require.NoError(t, err, "decoded messages must encode: %#v", msgs)
		again, err := Decode(first)
		require.NoError(t, err, "Encode wrote %x", first)
		require.Equal(t, msgs, again)
		second, err := Encode(again...)
		require.NoError(t, err)
		require.Equal(t, first, second)

		viaReused, err := reused.Decode(frame)
		require.NoError(t, err)
		require.Equal(t, msgs, viaReused)
	})
}
