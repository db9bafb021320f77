package client

import (
	"encoding/hex"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// DoWork's spec bytes and key are pinned (workunit's TestSpec_Encode_IsPinned
// pins the same spec built by hand): the bytes the tracker receives from
// DoWork(fn, 5) must not change when DoWork's path gets faster, and a call
// whose arguments share references encodes as one value.Encoder document
// of [fn, args...].
func TestFake_DoWork_SpecIsPinned(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t)
	var mu sync.Mutex
	got := map[workunit.Key][]byte{}
	ft.onSubmit = func(_ *fakeConn, m *wire.Submit) bool {
		key, err := workunit.KeyOf(m.Spec)
		assert.NoError(t, err) // not require: the fake's goroutine
		mu.Lock()
		got[key] = append([]byte(nil), m.Spec...)
		mu.Unlock()
		return false
	}
	c := dialFake(t, ft, Options{})
	ctx := testCtx(t)

	k, err := c.DoWork(&value.Function{Source: "(i) => i + 1"}, 5)
	require.NoError(t, err)
	_, err = k.Accepted(ctx)
	require.NoError(t, err)
	assert.Equal(t, "5e080106d9dda602484e99447e32903abd6fa64ec9f723a2e2babba37b4490cc", k.Key.String())
	mu.Lock()
	assert.Equal(t, "87036062666e5820000000000000000000000000000000000000000000000000000000000000000060581982da72696f04856c286929203d3e2069202b2031a06000000580",
		hex.EncodeToString(got[k.Key]))
	mu.Unlock()

	obj := map[string]any{"a": 1.5}
	list := []any{"p", true}
	fn := &value.Function{Source: "(o, l, o2, l2) => o === o2", Env: map[string]any{"k": list}, File: "job.js"}
	args := []any{obj, list, obj, list, -7}
	k, err = c.DoWork(fn, args...)
	require.NoError(t, err)
	_, err = k.Accepted(ctx)
	require.NoError(t, err)
	payload, err := value.Encoder{Root: "args"}.Encode(append([]any{fn}, args...))
	require.NoError(t, err)
	want, key := (&workunit.Spec{Kind: workunit.Fn, Name: "job.js", Payload: payload}).Encode()
	assert.Equal(t, key, k.Key)
	mu.Lock()
	assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got[k.Key]))
	mu.Unlock()
}
