package engine

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// TestEngine_PutResult: a typed array result reaches PutResult as its
// buffer's own bytes between a few of the engine's (the same document,
// byte for byte, as a run without PutResult gives), before the slot runs
// the next workunit of the realm; what PutResult returns is the result;
// its error fails the workunit.
func TestEngine_PutResult(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	ctx := context.Background()
	const src = "globalThis.keep = new Float64Array(1 << 17).map((_, i) => i); keep"
	plain, err := e.Run(ctx, evalReq(src))
	require.NoError(t, err)

	req := evalReq(src)
	var got blob.Parts
	var console int
	req.PutResult = func(_ context.Context, parts blob.Parts, consoleBytes int) ([]byte, error) {
		got, console = parts, consoleBytes
		return []byte("stand-in"), nil
	}
	res, err := e.Run(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, []byte("stand-in"), res.Value)
	require.Len(t, got, 2, "a header and the buffer")
	assert.Equal(t, plain.Value, got.Bytes(), "the same document as in one piece")
	assert.Equal(t, blob.Sum(plain.Value), got.Sum())
	assert.Equal(t, len(res.Console), console)

	// The parts are the script's buffer: a later workunit of the realm
	// writes to it (after PutResult returned), and they show the write.
	before := bytes.Clone(got[1][8:16])
	_, err = e.Run(ctx, evalReq("keep[1] = -1; 0"))
	require.NoError(t, err)
	assert.NotEqual(t, before, got[1][8:16], "the buffer itself, not a copy")

	req.PutResult = func(context.Context, blob.Parts, int) ([]byte, error) {
		return nil, &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError", Message: "too large for the test"}
	}
	werr, _ := evalError(t, e, req)
	assert.Equal(t, workunit.ResultLimit, werr.Kind)
	assert.Equal(t, "too large for the test", werr.Message)

	req.PutResult = func(context.Context, blob.Parts, int) ([]byte, error) { return nil, errors.New("no room") }
	_, err = e.Run(ctx, req)
	assert.ErrorContains(t, err, "no room")
}
