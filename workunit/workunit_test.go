package workunit

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/value"
)

// Keys are stored by trackers and compared across versions (memoized
// results): a change of the key's definition must be a decision, not an
// accident.
func TestSpec_Key_IsStable(t *testing.T) {
	t.Parallel()
	fn := &Spec{Kind: Fn, Name: "job.js", Payload: []byte{0x82, 0x01, 0x02}}
	eval := &Spec{Kind: Eval, Source: "1 + 2", Name: "eval"}
	assert.Equal(t, "214d3d36ca741646cac7e3b1d00c10e217e686f239bda793965a942f95dbed9f", fn.Key().String())
	assert.Equal(t, "2786712b624fdae488798391bc439fe4fa17de964c64d1d8bba539e6478b2408", eval.Key().String())
	// The blobs a spec lists do not change its key.
	withBlobs := *fn
	withBlobs.Blobs = []blob.Hash{{7}}
	assert.Equal(t, fn.Key(), withBlobs.Key())
}

// A nonce makes equal work a workunit of its own (noCache calls), and a
// spec without one keeps the key it always had.
func TestSpec_Nonce_MakesItsOwnKey(t *testing.T) {
	t.Parallel()
	fn := &Spec{Kind: Fn, Name: "job.js", Payload: []byte{0x82, 0x01, 0x02}}
	a, b := *fn, *fn
	a.Nonce, b.Nonce = NewNonce(), NewNonce()
	assert.NotEqual(t, a.Nonce, b.Nonce)
	assert.NotEqual(t, fn.Key(), a.Key())
	assert.NotEqual(t, a.Key(), b.Key())
	assert.Equal(t, "214d3d36ca741646cac7e3b1d00c10e217e686f239bda793965a942f95dbed9f", fn.Key().String(), "no nonce, the key of old")

	data, key := a.Encode()
	assert.Equal(t, byte(0x88), data[0], "an array of 8 items")
	got, err := KeyOf(data)
	require.NoError(t, err)
	assert.Equal(t, key, got)
	var back Spec
	require.NoError(t, back.UnmarshalBinary(data))
	assert.Equal(t, a, back)

	long := *fn
	long.Nonce = make([]byte, MaxNonceBytes+1)
	assert.ErrorContains(t, long.Validate(), "nonce of 33 bytes")
	data, _ = long.Encode()
	_, err = KeyOf(data)
	assert.Error(t, err)
	// An 8-item spec with an empty nonce is not the 7-item one.
	var w cbor.Writer
	w.ArrayHeader(8)
	w.Int(int64(Eval))
	w.String("1")
	w.String("eval")
	w.ByteString(make([]byte, 32))
	w.String("")
	w.ByteString(nil)
	w.ByteString(nil)
	w.ArrayHeader(0)
	_, err = KeyOf(w.Bytes())
	assert.ErrorContains(t, err, "empty nonce")
}

func TestKeyOf_IsTheKeyOfTheBytesSent(t *testing.T) {
	t.Parallel()
	s := &Spec{Kind: Call, Name: "m.js", Module: blob.Hash{1}, Export: "f", Payload: []byte{0x81, 0x01}, Blobs: []blob.Hash{{1}, {2}}}
	data, key := s.Encode()
	got, err := KeyOf(data)
	require.NoError(t, err)
	assert.Equal(t, key, got)
	assert.Equal(t, s.Key(), got)

	var back Spec
	require.NoError(t, back.UnmarshalBinary(data))
	assert.Equal(t, *s, back)
}

func TestKeyOf_RefusesWhatUnmarshalRefuses(t *testing.T) {
	t.Parallel()
	good, _ := (&Spec{Kind: Eval, Source: "1", Name: "eval"}).Encode()
	badKind, _ := (&Spec{Kind: 9, Source: "1"}).Encode()
	noExport, _ := (&Spec{Kind: Call, Module: blob.Hash{1}}).Encode()
	for name, data := range map[string][]byte{
		"empty":               nil,
		"truncated":           good[:len(good)-1],
		"trailing bytes":      append(append([]byte(nil), good...), 0),
		"unknown kind":        badKind,
		"call without export": noExport,
		"not an array":        {0x01},
	} {
		_, err := KeyOf(data)
		assert.Error(t, err, name)
		var s Spec
		assert.Error(t, s.UnmarshalBinary(data), name)
	}
}

func TestConsole_RoundTrip(t *testing.T) {
	t.Parallel()
	lines := []ConsoleLine{{LevelLog, "hello"}, {LevelWarn, ""}, {Level("custom"), "ünïcode"}}
	c := EncodeConsole(lines)
	got, err := c.Lines()
	require.NoError(t, err)
	assert.Equal(t, lines, got)

	var b ConsoleBuilder
	for _, l := range lines {
		b.Add(l.Level, l.Text)
	}
	assert.Equal(t, 3, b.Lines())
	assert.Equal(t, c, b.Console())
	assert.Nil(t, b.Console(), "Console empties the builder")

	assert.Nil(t, EncodeConsole(nil))
	none, err := Console(nil).Lines()
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestConsole_InvalidUTF8_IsReplaced(t *testing.T) {
	t.Parallel()
	got, err := EncodeConsole([]ConsoleLine{{LevelLog, "a\xffb"}}).Lines()
	require.NoError(t, err)
	assert.Equal(t, "a\uFFFDb", got[0].Text)
}

func TestReadConsole_ChecksAndAliases(t *testing.T) {
	t.Parallel()
	c := EncodeConsole([]ConsoleLine{{LevelError, "boom"}})
	var w cbor.Writer
	w.ArrayHeader(2)
	w.Raw(c)
	w.Int(7)
	r := cbor.NewReader(w.Bytes())
	_, err := r.Next()
	require.NoError(t, err)
	got, err := ReadConsole(r)
	require.NoError(t, err)
	assert.Equal(t, c, got)
	n, err := r.Uint()
	require.NoError(t, err)
	assert.Equal(t, uint64(7), n, "the reader is past the console")

	empty, err := ReadConsole(cbor.NewReader([]byte{0x80}))
	require.NoError(t, err)
	assert.Nil(t, empty)

	for name, data := range map[string][]byte{
		"not an array":          {0x60},
		"a line of 3 items":     {0x81, 0x83, 0x60, 0x60, 0x60},
		"a level of bytes":      {0x81, 0x82, 0x40, 0x60},
		"invalid UTF-8":         {0x81, 0x82, 0x60, 0x61, 0xff},
		"more lines than bytes": {0x9a, 0x00, 0x10, 0x00, 0x00},
	} {
		_, err := ReadConsole(cbor.NewReader(data))
		assert.Error(t, err, name)
		_, err = Console(data).Lines()
		assert.Error(t, err, name)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	for s, want := range map[Status]string{StatusUnknown: "unknown", StatusWaiting: "waiting", StatusRunning: "running", StatusDone: "done", StatusError: "error", 9: "Status(9)"} {
		assert.Equal(t, want, s.String())
	}
	assert.True(t, StatusDone.Finished())
	assert.True(t, StatusError.Finished())
	assert.False(t, StatusRunning.Finished())
	assert.True(t, StatusError.Valid())
	assert.False(t, Status(5).Valid())
}

func TestOutcome_Value(t *testing.T) {
	t.Parallel()
	res, err := value.Marshal([]any{1, "x"})
	require.NoError(t, err)
	done := &Outcome{Key: Key{1}, Status: StatusDone, Result: res, Elapsed: time.Millisecond}
	v, err := done.Value()
	require.NoError(t, err)
	assert.Equal(t, []any{1.0, "x"}, v)

	werr := &Error{Kind: Thrown, Name: "TypeError", Message: "bad"}
	_, err = (&Outcome{Status: StatusError, Err: werr}).Value()
	assert.Same(t, werr, err)

	_, err = (&Outcome{Key: Key{2}, Status: StatusRunning}).Value()
	assert.True(t, errors.Is(err, ErrNotFinished))
	assert.False(t, (&Outcome{Status: StatusWaiting}).Finished())
}

func TestOptions_Retryable(t *testing.T) {
	thrown := &Error{Kind: Thrown, Name: "TypeError", Message: "x"}
	timeout := &Error{Kind: TimeLimit, Name: "TimeoutError", Message: "ran past 1s"}
	stack := &Error{Kind: StackLimit, Name: "RangeError", Message: "too deep"}
	for _, tt := range []struct {
		opts     Options
		err      *Error
		attempts int
		want     bool
	}{
		{Options{}, thrown, 1, false},
		{Options{Retries: 2}, thrown, 1, true},
		{Options{Retries: 2}, thrown, 2, true},
		{Options{Retries: 2}, thrown, 3, false},
		{Options{Retries: 2}, timeout, 1, true},
		{Options{Retries: 2}, stack, 1, false},
		{Options{Retries: 2, RetryOn: []string{"RangeError"}}, thrown, 1, false},
		{Options{Retries: 2, RetryOn: []string{"RangeError"}}, stack, 1, false},
		{Options{Retries: 2, RetryOn: []string{"TypeError"}}, thrown, 1, true},
		{Options{Retries: 2, RetryOn: []string{"TypeError"}}, timeout, 1, false},
		{Options{Retries: 2, RetryOn: []string{"TimeoutError"}}, timeout, 1, true},
		{Options{Retries: 2}, nil, 1, false},
	} {
		if got := tt.opts.Retryable(tt.err, tt.attempts); got != tt.want {
			t.Errorf("%+v.Retryable(%v, %d) = %v, want %v", tt.opts, tt.err, tt.attempts, got, tt.want)
		}
	}
}

func TestError_Attempts(t *testing.T) {
	e := &Error{Kind: Thrown, Name: "Error", Message: "boom", Worker: "w2",
		Attempts: []Attempt{{Worker: "w1", Name: "Error", Message: "boom"}, {Worker: "w2", Name: "Error", Message: "boom"}}}
	if got, want := e.Error(), "worker w2: Error: boom (after 2 attempts)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e.Attempts = e.Attempts[1:]
	if got, want := e.Error(), "worker w2: Error: boom"; got != want {
		t.Errorf("one attempt: Error() = %q, want %q", got, want)
	}
}

func TestAttemptOf_Cuts(t *testing.T) {
	long := strings.Repeat("é", MaxAttemptMessage) // 2 bytes each
	a := AttemptOf(&Error{Name: "Error", Message: long, Worker: "w"})
	if len(a.Message) > MaxAttemptMessage+len("…") || !strings.HasSuffix(a.Message, "…") || !utf8.ValidString(a.Message) {
		t.Errorf("cut message of %d bytes: %q...", len(a.Message), a.Message[:20])
	}
	if a := AttemptOf(&Error{Name: "E", Message: "short", Worker: "w"}); a != (Attempt{Worker: "w", Name: "E", Message: "short"}) {
		t.Errorf("short message: %+v", a)
	}
}

// TestEncodeExactSize checks that Encode's buffer is made at the
// encoding's size, for specs whose lengths cross the CBOR head sizes.
func TestEncodeExactSize(t *testing.T) {
	for _, n := range []int{1, 23, 24, 255, 256, 65535, 65536} {
		s := &Spec{Kind: Fn, Name: "x.js", Source: strings.Repeat("s", n%300), Payload: make([]byte, n), Blobs: make([]blob.Hash, n%3)}
		for _, nonce := range [][]byte{nil, NewNonce()} {
			s.Nonce = nonce
			data, key := s.Encode()
			if cap(data) != len(data) {
				t.Errorf("payload %d, nonce %v: cap %d, len %d", n, nonce != nil, cap(data), len(data))
			}
			var back Spec
			if err := back.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if _, k2 := back.Encode(); k2 != key {
				t.Errorf("payload %d: key changed after a round trip", n)
			}
		}
	}
}

func BenchmarkSpecEncode(b *testing.B) {
	s := &Spec{Kind: Fn, Name: "script.js", Payload: make([]byte, 60)}
	b.ReportAllocs()
	for b.Loop() {
		s.Encode()
	}
}

// TestBlobsOf: BlobsOf gives a spec's key, as KeyOf does, and the blobs
// it names: its Blobs, and a Call's module when Blobs leaves it out; a
// spec that does not decode is an error.
func TestBlobsOf(t *testing.T) {
	t.Parallel()
	mod, helper := blob.Sum([]byte("mod")), blob.Sum([]byte("helper"))
	for _, tc := range []struct {
		spec Spec
		want []blob.Hash
	}{
		{Spec{Kind: Eval, Source: "1"}, nil},
		{Spec{Kind: Call, Module: mod, Export: "f", Blobs: []blob.Hash{mod, helper}}, []blob.Hash{mod, helper}},
		{Spec{Kind: Call, Module: mod, Export: "f", Blobs: []blob.Hash{helper}}, []blob.Hash{helper, mod}},
		{Spec{Kind: Call, Module: mod, Export: "f"}, []blob.Hash{mod}},
	} {
		data, err := tc.spec.MarshalBinary()
		require.NoError(t, err)
		key, blobs, err := BlobsOf(data)
		require.NoError(t, err)
		want, err := KeyOf(data)
		require.NoError(t, err)
		assert.Equal(t, want, key)
		assert.Equal(t, tc.want, blobs)
	}
	_, _, err := BlobsOf([]byte{0x80})
	require.Error(t, err)
}
