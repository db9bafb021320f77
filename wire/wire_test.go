package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

func TestRoundTrip_EveryMessage(t *testing.T) {
	t.Parallel()
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			frame, err := Encode(s.msg)
			require.NoError(t, err)
			got, err := Decode(frame)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, s.msg, got[0])
			assert.Equal(t, s.msg.Type(), got[0].Type())
		})
	}
}

func TestRoundTrip_OneFrame(t *testing.T) {
	t.Parallel()
	want := sampleMsgs()
	frame, err := Encode(want...)
	require.NoError(t, err)
	got, err := Decode(frame)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// An Encoder and a Decoder give the same, frame after frame.
	var enc Encoder
	var dec Decoder
	for range 3 {
		for _, m := range want {
			require.NoError(t, enc.Add(m))
		}
		assert.Equal(t, len(want), enc.Len())
		assert.Equal(t, frame, enc.Frame())
		assert.Equal(t, len(frame), enc.Size())
		got, err := dec.Decode(enc.Frame())
		require.NoError(t, err)
		assert.Equal(t, want, got)
		enc.Reset()
	}
}

func TestRoundTrip_ZeroValues(t *testing.T) {
	t.Parallel()
	// Zero messages (with the fields the protocol requires) come back as
	// they went: empty strings, nil slices, zero times and durations.
	msgs := []Msg{
		&Hello{Version: ProtocolVersion, Role: RoleMaster}, &Welcome{}, &Refused{}, &Error{},
		&Submit{}, &Accepted{}, &Watch{}, &Unwatch{}, &Finished{}, &Info{}, &InfoReply{},
		&BlobHave{}, &BlobNeed{}, &BlobPut{}, &BlobStored{}, &Credit{}, &Assign{}, &Done{},
		&Failed{Error: &workunit.Error{Kind: workunit.Internal}}, &Return{}, &BlobGet{}, &BlobData{},
		&Cancel{}, &Canceled{}, &Revoke{}, &BlobWrite{}, &BlobWritten{}, &BlobRead{}, &BlobPart{},
	}
	frame, err := Encode(msgs...)
	require.NoError(t, err)
	got, err := Decode(frame)
	require.NoError(t, err)
	assert.Equal(t, msgs, got)
}

func TestDecode_AliasesFrame(t *testing.T) {
	t.Parallel()
	frame, err := Encode(&Assign{Spec: []byte("spec"), Realm: "r"})
	require.NoError(t, err)
	msgs, err := Decode(frame)
	require.NoError(t, err)
	a := msgs[0].(*Assign)
	i := strings.Index(string(frame), "spec")
	frame[i] = 'S'
	assert.Equal(t, "Spec", string(a.Spec), "Spec aliases the frame")
	assert.Equal(t, "r", a.Realm)
}

func TestDecoder_ReusesAndShares(t *testing.T) {
	t.Parallel()
	var d Decoder
	f1, err := Encode(&Assign{Realm: "realm-1", Token: 1}, &Assign{Realm: "realm-1", Token: 2})
	require.NoError(t, err)
	f2, err := Encode(&Done{Token: 3})
	require.NoError(t, err)
	m1, err := d.Decode(f1)
	require.NoError(t, err)
	require.Len(t, m1, 2)
	a, b := m1[0].(*Assign), m1[1].(*Assign)
	assert.Equal(t, uint64(1), a.Token)
	assert.Equal(t, uint64(2), b.Token)
	assert.Same(t, unsafeStringData(a.Realm), unsafeStringData(b.Realm), "one copy of a repeated realm")
	m2, err := d.Decode(f2)
	require.NoError(t, err)
	require.Len(t, m2, 1)
	assert.Equal(t, uint64(3), m2[0].(*Done).Token)
	// An error leaves no messages.
	m3, err := d.Decode([]byte{0x81})
	require.Error(t, err)
	assert.Nil(t, m3)
}

func TestDecode_ForeignHello(t *testing.T) {
	t.Parallel()
	// A Hello of another version ends the frame, whatever its other items
	// and whatever follows it, so that the tracker can refuse it clearly.
	for _, v := range []uint32{0, ProtocolVersion + 1, 1 << 31} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			t.Parallel()
			frame := []byte{0x83, 0x84, 0x01}
			frame = appendUint(frame, uint64(v))
			frame = append(frame, 0xa1, 0x61, 'x', 0x80, 0x63, 'n', 'e', 'w') // {"x": []}, "new"
			frame = append(frame, 0x81, 0x18, 0x63)                           // [99]: unknown type
			frame = append(frame, 0xff, 0xff)                                 // garbage
			msgs, err := Decode(frame)
			require.NoError(t, err)
			require.Equal(t, []Msg{&Hello{Version: v}}, msgs)

			r := VersionMismatch(msgs[0].(*Hello).Version)
			assert.Equal(t, CodeVersion, r.Code)
			assert.Equal(t, uint32(ProtocolVersion), r.Version)
			assert.Contains(t, r.Message, fmt.Sprintf("version %d", v))
			assert.Contains(t, r.Message, fmt.Sprintf("version %d", ProtocolVersion))
			assert.True(t, IsCode(r, CodeVersion))
		})
	}
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, byte(n))
	case n < 1<<8:
		return append(b, 0x18, byte(n))
	case n < 1<<16:
		return append(b, 0x19, byte(n>>8), byte(n))
	default:
		return append(b, 0x1a, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func TestEncode_Invalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		msg   Msg
		field string
	}{
		{"nil", nil, ""},
		{"nil pointer", (*Assign)(nil), ""},
		{"bad role", &Hello{Version: ProtocolVersion, Role: "admin"}, "role"},
		{"negative slots", &Hello{Version: ProtocolVersion, Role: RoleWorker, Slots: -1}, "slots"},
		{"negative credit", &Credit{N: -1}, "n"},
		{"negative timeout", &Assign{Timeout: -time.Second}, "timeout"},
		{"timeout too long", &Submit{Options: workunit.Options{Timeout: 1 << 32 * time.Millisecond}}, "timeout"},
		{"negative elapsed", &Done{Elapsed: -1}, "elapsed"},
		{"status out of range", &Finished{Outcome: workunit.Outcome{Status: 5}}, "status"},
		{"failed without error", &Failed{}, "error"},
		{"error kind 0", &Failed{Error: &workunit.Error{}}, "error"},
		{"time before 1970", &InfoReply{Outcome: workunit.Outcome{LastChange: time.Unix(-10, 0)}}, "last-change"},
		{"negative limit", &Welcome{Limits: Limits{MaxBlobBytes: -1}}, "limits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dst := []byte("keep")
			out, err := Append(dst, tt.msg)
			require.ErrorIs(t, err, ErrMalformed)
			assert.Equal(t, "keep", string(out))
			var ee *EncodeError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, tt.field, ee.Field)
			var enc Encoder
			require.ErrorIs(t, enc.Add(tt.msg), ErrMalformed)
			assert.Equal(t, 0, enc.Len())
		})
	}
}

func TestAppend_KeepsDst(t *testing.T) {
	t.Parallel()
	dst := make([]byte, 3, 1024)
	copy(dst, "abc")
	out, err := Append(dst, &Credit{N: 1})
	require.NoError(t, err)
	assert.Equal(t, "abc", string(out[:3]))
	msgs, err := Decode(out[3:])
	require.NoError(t, err)
	assert.Equal(t, []Msg{&Credit{N: 1}}, msgs)
	// A dst too small to hold the frame is grown.
	out, err = Append([]byte("xy"), sampleMsgs()...)
	require.NoError(t, err)
	assert.Equal(t, "xy", string(out[:2]))
	msgs, err = Decode(out[2:])
	require.NoError(t, err)
	assert.Len(t, msgs, len(samples()))
}

func TestEncoder_Limits(t *testing.T) {
	t.Parallel()
	enc := Encoder{Limits: Limits{MaxFrameBytes: 100, MaxMessages: 3, MaxBlobBytes: 40, MaxResultBytes: 10}}

	err := enc.Add(&Done{Result: make([]byte, 11)})
	require.ErrorIs(t, err, ErrLimit)
	assert.Contains(t, err.Error(), "done, field result: 11 bytes, limit 10")

	put := &BlobPut{Data: make([]byte, 40)} // 1+1+1+34+2+40 = 79 bytes
	require.NoError(t, enc.Add(put))
	require.ErrorIs(t, enc.Add(put), ErrFrameFull)
	assert.Equal(t, 1, enc.Len())
	frame := enc.Frame()
	assert.Len(t, frame, 80)
	msgs, err := Decode(frame)
	require.NoError(t, err)
	assert.Len(t, msgs, 1)

	enc.Reset()
	assert.Equal(t, 0, enc.Len())
	assert.Equal(t, []byte{0x80}, enc.Frame())
	assert.Equal(t, 1, enc.Size())
	require.NoError(t, enc.Add(put))
	for range 2 {
		require.NoError(t, enc.Add(&Credit{N: 1}))
	}
	require.ErrorIs(t, enc.Add(&Credit{N: 1}), ErrFrameFull, "MaxMessages")

	// A message that no frame can hold is ErrLimit, not ErrFrameFull.
	small := Encoder{Limits: Limits{MaxFrameBytes: 50}}
	err = small.Add(&BlobPut{Data: make([]byte, 40)})
	require.ErrorIs(t, err, ErrLimit)
	assert.False(t, errors.Is(err, ErrFrameFull))
	assert.Equal(t, 0, small.Len())
}

func TestEncoder_LargeFrames(t *testing.T) {
	t.Parallel()
	// Head lengths of 1, 2, 3 and 5 bytes; the buffer grows and shrinks.
	enc := Encoder{Limits: Limits{MaxMessages: 100000}}
	dec := Decoder{Limits: Limits{MaxMessages: 100000}}
	for _, n := range []int{0, 23, 24, 255, 256, 70000} {
		for range n {
			require.NoError(t, enc.Add(&Credit{N: 1}))
		}
		frame := enc.Frame()
		assert.Equal(t, len(frame), enc.Size())
		want, err := Encode(repeat(&Credit{N: 1}, n)...)
		require.NoError(t, err)
		assert.Equal(t, want, frame)
		msgs, err := dec.Decode(frame)
		require.NoError(t, err)
		assert.Len(t, msgs, n)
		enc.Reset()
	}
	require.NoError(t, enc.Add(&BlobPut{Data: make([]byte, 5<<20)}))
	enc.Reset()
	assert.Equal(t, 0, cap(enc.buf), "a buffer past maxKeep is dropped")
}

func repeat(m Msg, n int) []Msg {
	msgs := make([]Msg, n)
	for i := range msgs {
		msgs[i] = m
	}
	return msgs
}

// A console travels as the bytes the worker encoded: decoding a Done gives
// those bytes, aliasing the frame, for the tracker to pass on as they are.
func TestConsole_PassesThrough(t *testing.T) {
	t.Parallel()
	c := testConsole()
	frame := mustEncode(t, &Done{Key: testKey("a"), Token: 1, Console: c})
	msgs, err := Decode(frame)
	require.NoError(t, err)
	got := msgs[0].(*Done).Console
	assert.Equal(t, c, got)
	i := bytes.Index(frame, c)
	require.GreaterOrEqual(t, i, 0)
	assert.Same(t, &frame[i], &got[0], "aliases the frame")

	// No console, and an empty one, are both nil and an empty array on the wire.
	for _, none := range []workunit.Console{nil, {}} {
		frame := mustEncode(t, &Done{Key: testKey("a"), Token: 1, Console: none})
		msgs, err := Decode(frame)
		require.NoError(t, err)
		assert.Nil(t, msgs[0].(*Done).Console)
	}

	// A console not in its form is refused on both sides.
	_, err = Encode(&Done{Key: testKey("a"), Token: 1, Console: workunit.Console{0x81, 0x81, 0x60}})
	require.ErrorIs(t, err, ErrMalformed)
	bad := append([]byte(nil), frame...)
	bad[i+1] = 0x83 // the first line claims 3 items
	_, err = Decode(bad)
	require.ErrorIs(t, err, ErrMalformed)
}

func TestTypes_Named(t *testing.T) {
	t.Parallel()
	fromClient := map[Type]bool{}
	for typ := Type(1); typ <= maxType; typ++ {
		assert.NotContains(t, typ.String(), "Type(", "type %d has a name", typ)
		assert.NotZero(t, typ.items(), typ.String())
		fromClient[typ] = typ.FromClient()
	}
	assert.Equal(t, "Type(99)", Type(99).String())
	assert.Zero(t, Type(99).items())
	assert.True(t, fromClient[TypeHello] && fromClient[TypeDone] && fromClient[TypeSubmit])
	assert.False(t, fromClient[TypeAssign] || fromClient[TypeWelcome] || fromClient[TypeFinished])
	for c := CodeVersion; c <= CodeUnknownBlob; c++ {
		assert.NotContains(t, c.String(), "Code(")
	}
	// Each sample's type is its message's.
	seen := map[Type]bool{}
	for _, s := range samples() {
		seen[s.msg.Type()] = true
	}
	assert.Len(t, seen, int(maxType), "a sample of every type")
}

// A submission refused for memory is told apart from a connection refused
// for a full tracker, with errors.Is through wrapping.
func TestErrors_MemoryFull(t *testing.T) {
	t.Parallel()
	e := fmt.Errorf("client: submit 1a2b: %w", &Error{Req: 3, Code: CodeMemoryFull, Message: "tracker: memory full"})
	assert.ErrorIs(t, e, ErrMemoryFull)
	assert.True(t, IsCode(e, CodeMemoryFull))
	assert.Equal(t, "memory-full", CodeMemoryFull.String())
	assert.NotErrorIs(t, &Error{Code: CodeFull}, ErrMemoryFull)
	assert.NotErrorIs(t, &Refused{Code: CodeFull}, ErrMemoryFull)
	assert.NotErrorIs(t, &Error{Code: CodeLimit}, ErrMemoryFull)
	assert.ErrorIs(t, &Refused{Code: CodeMemoryFull}, ErrMemoryFull)
}

// A submission refused for a blob the tracker lacks is told apart, with
// errors.Is through wrapping, from a refusal for memory.
func TestErrors_UnknownBlob(t *testing.T) {
	t.Parallel()
	e := fmt.Errorf("client: submit 1a2b: %w", &Error{Req: 3, Code: CodeUnknownBlob, Message: "tracker: submit: the spec names blob 0a0b"})
	assert.ErrorIs(t, e, ErrUnknownBlob)
	assert.True(t, IsCode(e, CodeUnknownBlob))
	assert.Equal(t, "unknown-blob", CodeUnknownBlob.String())
	assert.NotErrorIs(t, e, ErrMemoryFull)
	assert.NotErrorIs(t, &Error{Code: CodeMemoryFull}, ErrUnknownBlob)
	assert.NotErrorIs(t, &Error{Code: CodeUnknownKey}, ErrUnknownBlob)
}

func TestErrors_Codes(t *testing.T) {
	t.Parallel()
	e := &Error{Req: 3, Code: CodeStore, Message: "store: disk full"}
	wrapped := fmt.Errorf("client: submit: %w", e)
	assert.True(t, IsCode(wrapped, CodeShutdown, CodeStore))
	assert.False(t, IsCode(wrapped, CodeLimit))
	assert.False(t, IsCode(errors.New("other"), CodeStore))
	assert.Equal(t, "wire: store-failed: store: disk full", e.Error())
	assert.Equal(t, CodeStore, CodeOf(wrapped))
	assert.Equal(t, CodeAuth, CodeOf(&Refused{Code: CodeAuth}))
	assert.Equal(t, CodeInternal, CodeOf(errors.New("other")))

	_, err := Decode([]byte{0x81, 0x81, 0x18, 0x63})
	assert.Equal(t, CodeProtocol, CodeOf(err))
	_, err = (&Decoder{Limits: Limits{MaxFrameBytes: 2}}).Decode([]byte{0x81, 0x82, 0x10, 0x01})
	assert.Equal(t, CodeLimit, CodeOf(err))
	assert.Equal(t, CodeLimit, CodeOf(fmt.Errorf("x: %w", ErrFrameFull)))
	assert.Equal(t, CodeProtocol, CodeOf(ErrMalformed))
}

func TestWorkError(t *testing.T) {
	t.Parallel()
	assert.Nil(t, WorkError(nil))
	we := testWorkError()
	assert.Same(t, we, WorkError(fmt.Errorf("engine: %w", we)))
	got := WorkError(errors.New("engine: boom"))
	assert.Equal(t, workunit.Internal, got.Kind)
	assert.Equal(t, "engine: boom", got.Message)
}

func TestLimits_WithDefaults(t *testing.T) {
	t.Parallel()
	l := Limits{MaxSpecBytes: 5, MaxBlobBytes: -1}.WithDefaults()
	assert.Equal(t, Limits{
		MaxFrameBytes: DefaultMaxFrameBytes, MaxMessages: DefaultMaxMessages, MaxSpecBytes: 5,
		MaxResultBytes: DefaultMaxResultBytes, MaxBlobBytes: DefaultMaxBlobBytes,
	}, l)
	assert.Equal(t, 10*time.Second, ReadTimeout(5*time.Second))
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

func TestDecode_Edges(t *testing.T) {
	t.Parallel()
	k := testKey("a")
	tests := []struct {
		name  string
		frame []byte
		want  Msg
		canon []byte // the re-encoded frame, when it differs from frame
	}{
		{
			name:  "non-shortest heads",
			frame: []byte{0x99, 0x00, 0x01, 0x98, 0x02, 0x18, 0x10, 0x1b, 0, 0, 0, 0, 0, 0, 0, 5},
			want:  &Credit{N: 5},
			canon: []byte{0x81, 0x82, 0x10, 0x05},
		},
		{
			name:  "largest values",
			frame: mustEncode(t, &Finished{Outcome: workunit.Outcome{LastChange: time.UnixMilli(1<<63 - 1).UTC(), Elapsed: maxElapsedMicros * time.Microsecond}}),
			want:  &Finished{Outcome: workunit.Outcome{LastChange: time.UnixMilli(1<<63 - 1).UTC(), Elapsed: maxElapsedMicros * time.Microsecond}},
		},
		{
			name: "error key of 32 zero bytes",
			frame: func() []byte {
				f := mustEncode(t, &Failed{Key: k, Error: &workunit.Error{Kind: 1}})
				// Replace the error's empty key (40) by 32 zero bytes.
				i := len(f) - 4
				require.Equal(t, byte(0x40), f[i])
				return append(append(append([]byte{}, f[:i]...), append([]byte{0x58, 0x20}, make([]byte, 32)...)...), f[i+1:]...)
			}(),
			want:  &Failed{Key: k, Error: &workunit.Error{Kind: 1}},
			canon: mustEncode(t, &Failed{Key: k, Error: &workunit.Error{Kind: 1}}),
		},
		{
			name:  "empty blob",
			frame: mustEncode(t, &BlobData{Req: 1, Data: []byte{}}),
			want:  &BlobData{Req: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs, err := Decode(tt.frame)
			require.NoError(t, err)
			require.Equal(t, []Msg{tt.want}, msgs)
			again, err := Encode(msgs...)
			require.NoError(t, err)
			canon := tt.canon
			if canon == nil {
				canon = tt.frame
			}
			assert.Equal(t, canon, again)
		})
	}
}

// ReqOf knows every message type with a Req field.
func TestReqOf_EveryMessage(t *testing.T) {
	t.Parallel()
	for _, s := range samples() {
		v := reflect.ValueOf(s.msg).Elem()
		want := uint64(0)
		if f := v.FieldByName("Req"); f.IsValid() {
			f.SetUint(77)
			want = 77
		}
		assert.Equal(t, want, ReqOf(s.msg), s.name)
	}
}

// Messages are plain values, safe to share once built: encoding reads
// them and writes nothing (run with -race).
func TestEncode_SharedMessages(t *testing.T) {
	t.Parallel()
	msgs := sampleMsgs()
	want, err := Encode(msgs...)
	require.NoError(t, err)
	done := make(chan []byte)
	for range 4 {
		go func() {
			var enc Encoder
			for _, m := range msgs {
				_ = enc.Add(m)
			}
			done <- append([]byte(nil), enc.Frame()...)
		}()
	}
	for range 4 {
		assert.Equal(t, want, <-done)
	}
}

// A warm Encoder and Decoder allocate nothing per message on the hot
// path (assign, done, credit).
func TestEncoderDecoder_NoAllocs(t *testing.T) {
	msgs := append(append(benchAssigns(50), benchDones(50)...), &Credit{N: 100})
	var enc Encoder
	var dec Decoder
	run := func() {
		for _, m := range msgs {
			if err := enc.Add(m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dec.Decode(enc.Frame()); err != nil {
			t.Fatal(err)
		}
		enc.Reset()
	}
	run()
	assert.Zero(t, testing.AllocsPerRun(20, run))
}
