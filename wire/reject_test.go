package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/workunit"
)

// frameOf returns a frame of one message whose items write writes after
// the message's array head of n items.
func frameOf(n int, write func(w *cbor.Writer)) []byte {
	var w cbor.Writer
	w.ArrayHeader(1)
	w.ArrayHeader(n)
	write(&w)
	return w.Bytes()
}

func mustEncode(t *testing.T, msgs ...Msg) []byte {
	t.Helper()
	frame, err := Encode(msgs...)
	require.NoError(t, err)
	return frame
}

// assignItems writes an Assign's items, with field i replaced by bad when
// bad is not nil.
func assignItems(bad map[int]func(w *cbor.Writer)) func(w *cbor.Writer) {
	return func(w *cbor.Writer) {
		k := testKey("a")
		fields := []func(){
			func() { w.Int(int64(TypeAssign)) },
			func() { w.ByteString(k[:]) },
			func() { w.Int(7) },
			func() { w.ByteString([]byte("spec")) },
			func() { w.Text("realm") },
			func() { w.Int(1000) },
			func() { w.Int(0) },
		}
		for i, f := range fields {
			if b, ok := bad[i]; ok {
				b(w)
			} else {
				f()
			}
		}
	}
}

func TestDecode_Rejects(t *testing.T) {
	t.Parallel()
	good := mustEncode(t, sampleMsgs()...)
	assign := mustEncode(t, samples()[18].msg)
	require.Equal(t, TypeAssign, samples()[18].msg.Type())
	small := Limits{MaxFrameBytes: 200, MaxMessages: 2, MaxSpecBytes: 3, MaxResultBytes: 4, MaxBlobBytes: 5}

	tests := []struct {
		name   string
		frame  []byte
		limits Limits
		kind   error
		index  int
		typ    Type
		field  string
		detail string // a part of the message
	}{
		{name: "empty input", frame: nil, kind: ErrMalformed, index: -1, detail: "unexpected end of data"},
		{name: "not an array", frame: []byte{0x01}, kind: ErrMalformed, index: -1, detail: "want an array of messages, have an unsigned integer"},
		{name: "indefinite array", frame: []byte{0x9f, 0xff}, kind: ErrMalformed, index: -1, detail: "indefinite-length"},
		{name: "truncated", frame: good[:len(good)-1], kind: ErrMalformed, index: len(samples()) - 1, typ: TypePrinted, field: "missed", detail: "unexpected end of data"},
		{name: "truncated inside assign spec", frame: assign[:50], kind: ErrMalformed, index: 0, typ: TypeAssign, field: "spec"},
		{name: "trailing bytes", frame: append(append([]byte{}, good...), 0x00), kind: ErrMalformed, index: -1, detail: "1 bytes after the frame"},
		{name: "count past the data", frame: []byte{0x9a, 0x00, 0x01, 0x00, 0x00}, kind: ErrMalformed, index: -1},
		{name: "message not an array", frame: []byte{0x81, 0x10, 0x00}, kind: ErrMalformed, index: 0, detail: "want a message array, have an unsigned integer"},
		{name: "empty message", frame: []byte{0x81, 0x80, 0x00}, kind: ErrMalformed, index: 0, detail: "want a message array, have an array"},
		{name: "type not a number", frame: []byte{0x81, 0x81, 0x61, 'x'}, kind: ErrMalformed, index: 0, field: "type"},
		{name: "unknown type", frame: []byte{0x81, 0x81, 0x18, 0x63}, kind: ErrUnknownType, index: 0, field: "type", detail: "unknown message type 99"},
		{name: "type zero", frame: []byte{0x81, 0x81, 0x00}, kind: ErrUnknownType, index: 0, field: "type", detail: "unknown message type 0"},
		{name: "second message unknown", frame: []byte{0x82, 0x82, 0x10, 0x01, 0x81, 0x18, 0x63}, kind: ErrUnknownType, index: 1, field: "type"},
		{name: "too few items", frame: frameOf(6, func(w *cbor.Writer) { assignItems(nil)(w) }), kind: ErrMalformed, index: 0, typ: TypeAssign, detail: "want an array of 7 items, have 6"},
		{name: "token is text", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){2: func(w *cbor.Writer) { w.Text("7") }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "token", detail: "want an unsigned integer, have a text string"},
		{name: "token negative", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){2: func(w *cbor.Writer) { w.Int(-1) }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "token", detail: "have a negative integer"},
		{name: "key of 31 bytes", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){1: func(w *cbor.Writer) { w.ByteString(make([]byte, 31)) }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "key", detail: "31 bytes, want 32"},
		{name: "spec is text", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){3: func(w *cbor.Writer) { w.Text("spec") }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "spec", detail: "want a byte string, have a text string"},
		{name: "realm not UTF-8", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){4: func(w *cbor.Writer) { w.Head(cbor.MajorText, 1); w.Raw([]byte{0xff}) }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "realm", detail: "not valid UTF-8"},
		{name: "timeout past 2^32 ms", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){5: func(w *cbor.Writer) { w.Int(1 << 32) }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "timeout", detail: "out of range"},
		{name: "gpus is a float", frame: frameOf(7, assignItems(map[int]func(*cbor.Writer){6: func(w *cbor.Writer) { w.Float64(1) }})),
			kind: ErrMalformed, index: 0, typ: TypeAssign, field: "gpus", detail: "have a float"},
		{name: "bool is null", frame: frameOf(9, func(w *cbor.Writer) {
			w.Int(int64(TypeSubmit))
			w.Int(1)
			w.ByteString([]byte("s"))
			w.Simple(cbor.SimpleNull)
		}), kind: ErrMalformed, index: 0, typ: TypeSubmit, field: "no-cache", detail: "want a boolean, have null"},
		{name: "too many retry-on names", frame: frameOf(9, func(w *cbor.Writer) {
			w.Int(int64(TypeSubmit))
			w.Int(1)
			w.ByteString([]byte("s"))
			w.Bool(false)
			w.Int(0)
			w.Int(0)
			w.Bool(false)
			w.Int(1)
			w.ArrayHeader(65)
			for range 65 {
				w.String("TypeError")
			}
		}), kind: ErrMalformed, index: 0, typ: TypeSubmit, field: "retry-on", detail: "65 names, at most 64"},
		{name: "status out of range", frame: frameOf(10, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypeFinished))
			w.Int(1)
			w.ByteString(k[:])
			w.Int(5)
		}), kind: ErrMalformed, index: 0, typ: TypeFinished, field: "status", detail: "5 is out of range [0, 4]"},
		{name: "failed with null error", frame: frameOf(6, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypeFailed))
			w.ByteString(k[:])
			w.Int(1)
			w.Simple(cbor.SimpleNull)
		}), kind: ErrMalformed, index: 0, typ: TypeFailed, field: "error", detail: "want an error, have null"},
		{name: "error kind 0", frame: frameOf(6, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypeFailed))
			w.ByteString(k[:])
			w.Int(1)
			w.ArrayHeader(8)
			w.Int(0)
		}), kind: ErrMalformed, index: 0, typ: TypeFailed, field: "error.kind", detail: "error kind 0"},
		{name: "error key of 5 bytes", frame: frameOf(6, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypeFailed))
			w.ByteString(k[:])
			w.Int(1)
			w.ArrayHeader(8)
			w.Int(1)
			w.Text("")
			w.Text("")
			w.Text("")
			w.ByteString(nil)
			w.Text("")
			w.ByteString(make([]byte, 5))
		}), kind: ErrMalformed, index: 0, typ: TypeFailed, field: "error.key", detail: "5 bytes, want 0 or 32"},
		{name: "console line of 3 items", frame: frameOf(6, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypeDone))
			w.ByteString(k[:])
			w.Int(1)
			w.ByteString([]byte{0xf6})
			w.ArrayHeader(1)
			w.ArrayHeader(3)
			w.Text("log")
			w.Text("x")
			w.Text("y")
			w.Int(0)
		}), kind: ErrMalformed, index: 0, typ: TypeDone, field: "console", detail: "want a console line [level, text], have an array of 3 items"},
		{name: "print line of an unknown level", frame: frameOf(4, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypePrint))
			w.ByteString(k[:])
			w.Int(1)
			w.ArrayHeader(1)
			w.ArrayHeader(3)
			w.Text("shout")
			w.Text("x")
			w.Int(0)
		}), kind: ErrMalformed, index: 0, typ: TypePrint, field: "lines.level", detail: `level "shout"`},
		{name: "print line of 2 items", frame: frameOf(4, func(w *cbor.Writer) {
			k := testKey("a")
			w.Int(int64(TypePrint))
			w.ByteString(k[:])
			w.Int(1)
			w.ArrayHeader(1)
			w.ArrayHeader(2)
			w.Text("log")
			w.Text("x")
		}), kind: ErrMalformed, index: 0, typ: TypePrint, field: "lines", detail: "want an array of 3 items, have 2"},
		{name: "huge key list", frame: frameOf(3, func(w *cbor.Writer) {
			w.Int(int64(TypeWatch))
			w.Int(1)
			w.Head(cbor.MajorArray, 1<<40)
		}), kind: ErrMalformed, index: 0, typ: TypeWatch, field: "keys", detail: "items with"},
		{name: "hello bad role", frame: frameOf(12, func(w *cbor.Writer) {
			w.Int(int64(TypeHello))
			w.Int(ProtocolVersion)
			w.Text("admin")
		}), kind: ErrMalformed, index: 0, typ: TypeHello, field: "role", detail: `role "admin"`},
		{name: "hello too short", frame: frameOf(11, func(w *cbor.Writer) {
			w.Int(int64(TypeHello))
			w.Int(ProtocolVersion)
		}), kind: ErrMalformed, index: 0, typ: TypeHello, detail: "want an array of 12 items, have 11"},
		{name: "hello without version", frame: []byte{0x81, 0x81, 0x01}, kind: ErrMalformed, index: 0, typ: TypeHello, detail: "at least 2 items"},
		{name: "foreign hello truncated", frame: []byte{0x81, 0x83, 0x01, 0x02, 0x62, 'x'}, kind: ErrMalformed, index: 0, typ: TypeHello},
		{name: "limits of 4 items", frame: frameOf(7, func(w *cbor.Writer) {
			w.Int(int64(TypeWelcome))
			w.Int(ProtocolVersion)
			w.Text("n")
			w.Text("t")
			w.Int(5000)
			w.Bool(false)
			w.ArrayHeader(4)
		}), kind: ErrMalformed, index: 0, typ: TypeWelcome, field: "limits", detail: "want an array of 5 items, have 4"},
		{name: "frame over limit", frame: good, limits: small, kind: ErrLimit, index: -1, detail: "limit 200"},
		{name: "too many messages", frame: mustEncode(t, &Credit{N: 1}, &Credit{N: 1}, &Credit{N: 1}), limits: small,
			kind: ErrLimit, index: -1, detail: "3 messages, limit 2"},
		{name: "spec over limit", frame: mustEncode(t, &Submit{Req: 77, Spec: []byte("spec")}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeSubmit, field: "spec", detail: "4 bytes, limit 3"},
		{name: "result over limit", frame: mustEncode(t, &Done{Result: []byte("12345")}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeDone, field: "result", detail: "5 bytes, limit 4"},
		{name: "outcome result over limit", frame: mustEncode(t, &Accepted{Outcome: workunit.Outcome{Result: []byte("12345")}}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeAccepted, field: "result"},
		{name: "error value over limit", frame: mustEncode(t, &Failed{Error: &workunit.Error{Kind: 1, Value: []byte("12345")}}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeFailed, field: "error.value"},
		{name: "blob over limit", frame: mustEncode(t, &BlobPut{Data: []byte("123456")}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeBlobPut, field: "data", detail: "6 bytes, limit 5"},
		{name: "blob data over limit", frame: mustEncode(t, &BlobData{Data: []byte("123456")}), limits: small,
			kind: ErrLimit, index: 0, typ: TypeBlobData, field: "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Decoder{Limits: tt.limits}
			msgs, err := d.Decode(tt.frame)
			require.Error(t, err)
			assert.Nil(t, msgs)
			require.ErrorIs(t, err, tt.kind)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tt.index, de.Index, "index")
			assert.Equal(t, tt.typ, de.Type, "type")
			assert.Equal(t, tt.field, de.Field, "field")
			assert.Contains(t, de.Detail, tt.detail)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "wire: "), msg)
			if tt.typ != 0 {
				assert.Contains(t, msg, "("+tt.typ.String()+")")
			}
			if tt.field != "" {
				assert.Contains(t, msg, "field "+tt.field)
			}
			if tt.limits == (Limits{}) {
				_, err2 := Decode(tt.frame)
				assert.Equal(t, err, err2, "Decode and a Decoder agree")
			}
		})
	}
}

func TestDecode_RejectsEveryTruncation(t *testing.T) {
	t.Parallel()
	// Every proper prefix of a valid frame is an error, never a panic.
	frame := mustEncode(t, sampleMsgs()...)
	for n := range len(frame) {
		_, err := Decode(frame[:n])
		require.ErrorIs(t, err, ErrMalformed, "prefix of %d bytes", n)
	}
}

func TestDecode_ErrorHasReq(t *testing.T) {
	t.Parallel()
	frame := mustEncode(t, &Submit{Req: 77, Spec: []byte("spec")})
	_, err := (&Decoder{Limits: Limits{MaxSpecBytes: 3}}).Decode(frame)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, uint64(77), de.Req, "the tracker can answer request 77")
	assert.Equal(t, CodeLimit, CodeOf(err))
	assert.Equal(t, "wire: message 0 (submit), field spec, byte 5: 4 bytes, limit 3", err.Error())
	assert.False(t, errors.Is(err, ErrMalformed))
}
