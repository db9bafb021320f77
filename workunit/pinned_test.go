package workunit

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
)

// pinnedSpecs are specs whose encodings and keys are pinned below: a
// DoWork spec ([fn, arg] encoded as DoWork encodes it), one whose
// arguments share references (the encoder's back references), a call with
// blobs and an eval with a nonce. Trackers keep results by key and masters
// of other versions submit the same work: a change of these bytes is a
// change of the protocol and of every stored key, never a side effect of
// making the encoders faster.
func pinnedSpecs(t *testing.T) map[string]*Spec {
	t.Helper()
	fn := &value.Function{Source: "(i) => i + 1"}
	doWork, err := value.Encoder{Root: "args"}.Encode([]any{fn, 5})
	require.NoError(t, err)
	obj := map[string]any{"a": 1.5, "b": "x"}
	list := []any{"p", true, nil}
	shared, err := value.Encoder{Root: "args"}.Encode([]any{
		&value.Function{Source: "(o, l, o2, l2) => o === o2 && l === l2", Env: map[string]any{"k": list}, File: "job.js", Line: 3, Column: 9, Strict: true},
		obj, list, obj, list, []byte{1, 2, 3}, int64(1) << 40, -7,
	})
	require.NoError(t, err)
	return map[string]*Spec{
		"do-work": {Kind: Fn, Name: "fn", Payload: doWork},
		"shared":  {Kind: Fn, Name: "job.js", Payload: shared},
		"call":    {Kind: Call, Name: "m.js", Module: blob.Hash{1, 2, 3}, Export: "f", Payload: []byte{0x81, 0x01}, Blobs: []blob.Hash{{1, 2, 3}, {9}}},
		"eval":    {Kind: Eval, Source: "1 + 2", Name: "eval", Nonce: []byte("0123456789abcdef")},
	}
}

func TestSpec_Encode_IsPinned(t *testing.T) {
	t.Parallel()
	want := map[string]struct{ data, key string }{
		"do-work": {
			"87036062666e5820000000000000000000000000000000000000000000000000000000000000000060581982da72696f04856c286929203d3e2069202b2031a06000000580",
			"5e080106d9dda602484e99447e32903abd6fa64ec9f723a2e2babba37b4490cc"},
		"shared": {
			"870360666a6f622e6a735820000000000000000000000000000000000000000000000000000000000000000060587388da72696f04867826286f2c206c2c206f322c206c3229203d3e206f203d3d3d206f32202626206c203d3d3d206c32a1616b836170f5f6666a6f622e6a730309f5a26161fb3ff800000000000061626178da72696f0102da72696f0103da72696f0102d840430102031b00000100000000002680",
			"c3b730b6397ac308791b6858e2108e827d718a363f6e923a6930f83f3e03285a"},
		"call": {
			"870260646d2e6a73582001020300000000000000000000000000000000000000000000000000000000006166428101825820010203000000000000000000000000000000000000000000000000000000000058200900000000000000000000000000000000000000000000000000000000000000",
			"e21f05d8435cf8ec9058a3cbd08d06ad6610269e9d2b0a41b0c65911267fb74a"},
		"eval": {
			"88016531202b2032646576616c582000000000000000000000000000000000000000000000000000000000000000006040503031323334353637383961626364656680",
			"bde9e8d6beaa1f05e26f507c71161488881f4cc95a4d1ec0463cd864bc79a257"},
	}
	for name, s := range pinnedSpecs(t) {
		data, key := s.Encode()
		assert.Equal(t, want[name].data, hex.EncodeToString(data), name+": encoding")
		assert.Equal(t, want[name].key, key.String(), name+": key")
		got, err := KeyOf(data)
		require.NoError(t, err, name)
		assert.Equal(t, want[name].key, got.String(), name+": KeyOf")
		assert.Equal(t, want[name].key, s.Key().String(), name+": Key")
	}
}
