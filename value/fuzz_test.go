package value

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/cbor"
)

// FuzzUnmarshal checks that no input makes Unmarshal panic or fail with
// anything but a *SyntaxError, and that what decodes is stable through
// Marshal: decode, encode, decode, encode gives the same bytes twice.
// Seeds are in testdata/fuzz/FuzzUnmarshal.
func FuzzUnmarshal(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Unmarshal(data)
		if err != nil {
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			return
		}
		first, err := Marshal(v)
		if err != nil {
			// Sorting an object's keys can move the first occurrence of a
			// shared object to a deeper place; only depth may fail.
			var pe *PathError
			require.ErrorAs(t, err, &pe)
			require.True(t, strings.HasPrefix(pe.Msg, "nested deeper"), "%v", err)
			return
		}
		v2, err := Unmarshal(first)
		require.NoError(t, err, "Marshal wrote %x", first)
		second, err := Marshal(v2)
		require.NoError(t, err)
		require.Equal(t, first, second, "from %x", data)
		require.False(t, errors.Is(err, cbor.ErrTruncated))
	})
}
