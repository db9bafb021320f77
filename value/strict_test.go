package value

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A strict function travels with a sixth item, true; a sloppy one is
// written as before, so that its bytes (and the keys of workunits that
// carry it) do not change.
func TestFunction_Strict_RoundTrip(t *testing.T) {
	t.Parallel()
	sloppy := &Function{Source: "() => 1", Env: map[string]any{}, File: "job.js", Line: 2, Column: 3}
	strict := &Function{Source: "() => 1", Env: map[string]any{}, File: "job.js", Line: 2, Column: 3, Strict: true}
	a, err := Marshal(sloppy)
	require.NoError(t, err)
	b, err := Marshal(strict)
	require.NoError(t, err)
	// After TagFunction's head, the array's.
	i := bytes.IndexByte(a, 0x85)
	require.Positive(t, i, "5 items")
	assert.Equal(t, byte(0x86), b[i], "6 items")
	assert.Equal(t, a[:i], b[:i])
	assert.Equal(t, a[i+1:], b[i+1:len(b)-1])
	assert.Equal(t, byte(0xf5), b[len(b)-1], "true")
	for _, c := range []struct {
		data []byte
		want *Function
	}{{a, sloppy}, {b, strict}} {
		v, err := Unmarshal(c.data)
		require.NoError(t, err)
		assert.Equal(t, c.want, v)
	}
	bad := append([]byte(nil), b...)
	bad[len(bad)-1] = 0xf4 // false
	_, err = Unmarshal(bad)
	assert.ErrorContains(t, err, "sixth item is true (strict), or absent")
}
