package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzConsoleUnmarshal checks that no bytes make Console.UnmarshalBinary
// (what the tracker does with the console a worker reported, kept packed
// until the master is told) panic, and that what decodes encodes to bytes
// that decode to the same lines.
func FuzzConsoleUnmarshal(f *testing.F) {
	for _, c := range []Console{
		{{Level: "log", Text: "hello"}},
		{{Level: "warn", Text: "careful"}, {Level: "error", Text: "ü ∑"}, {Level: "debug", Text: ""}},
	} {
		b, err := c.MarshalBinary()
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Console
		if err := c.UnmarshalBinary(data); err != nil {
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			return
		}
		b, err := c.MarshalBinary()
		require.NoError(t, err)
		var again Console
		require.NoError(t, again.UnmarshalBinary(b))
		require.Equal(t, c, again)
	})
}
