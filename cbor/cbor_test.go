package cbor

import (
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriter_PreferredForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		write func(w *Writer)
		want  string
	}{
		{"0", func(w *Writer) { w.Int(0) }, "00"},
		{"23", func(w *Writer) { w.Int(23) }, "17"},
		{"24", func(w *Writer) { w.Int(24) }, "1818"},
		{"256", func(w *Writer) { w.Int(256) }, "190100"},
		{"2^32", func(w *Writer) { w.Int(1 << 32) }, "1b0000000100000000"},
		{"-1", func(w *Writer) { w.Int(-1) }, "20"},
		{"-500", func(w *Writer) { w.Int(-500) }, "3901f3"},
		{"true", func(w *Writer) { w.Bool(true) }, "f5"},
		{"null", func(w *Writer) { w.Simple(SimpleNull) }, "f6"},
		{"text", func(w *Writer) { w.Text("riot") }, "6472696f74"},
		{"invalid UTF-8 as U+FFFD", func(w *Writer) { w.String("a\xffb") }, "6561efbfbd62"},
		{"bytes", func(w *Writer) { w.ByteString([]byte{1, 2}) }, "420102"},
		{"array head", func(w *Writer) { w.ArrayHeader(3) }, "83"},
		{"map head", func(w *Writer) { w.MapHeader(25) }, "b819"},
		{"tag", func(w *Writer) { w.Tag(258) }, "d90102"},
		{"integral number", func(w *Writer) { w.Number(42) }, "182a"},
		{"-0 stays a float", func(w *Writer) { w.Number(math.Copysign(0, -1)) }, "fb8000000000000000"},
		{"NaN is one NaN", func(w *Writer) { w.Number(math.Float64frombits(0x7ff8000000000001)) }, "fb7ff8000000000000"},
		{"2^53+2 is a float", func(w *Writer) { w.Number(1<<53 + 2) }, "fb4340000000000001"},
		{"bignum", func(w *Writer) { w.BigInt(big.NewInt(-257)) }, "c3420100"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w Writer
			tt.write(&w)
			assert.Equal(t, tt.want, hex.EncodeToString(w.Bytes()))
		})
	}
}

func TestWriter_AppendExtendTruncate(t *testing.T) {
	t.Parallel()
	w := AppendWriter([]byte{0xaa})
	w.Head(MajorBytes, 3)
	copy(w.Extend(3), "xyz")
	assert.Equal(t, "aa4378797a", hex.EncodeToString(w.Bytes()))
	w.Truncate(1)
	assert.Equal(t, 1, w.Len())
	w.Reset()
	assert.Empty(t, w.Bytes())
}

func TestReader_RoundTrip(t *testing.T) {
	t.Parallel()
	var w Writer
	w.ArrayHeader(5)
	w.Text("name")
	w.Int(1 << 40)
	w.ByteString([]byte("blob"))
	w.Float64(1.5)
	w.BigInt(new(big.Int).Lsh(big.NewInt(1), 70))

	r := NewReader(w.Bytes())
	h, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, Head{Major: MajorArray, Arg: 5}, h)
	s, err := r.Text()
	require.NoError(t, err)
	assert.Equal(t, "name", s)
	n, err := r.Uint()
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<40), n)
	b, err := r.ByteString()
	require.NoError(t, err)
	assert.Equal(t, "blob", string(b))
	h, err = r.Next()
	require.NoError(t, err)
	f, ok := HeadNumber(h)
	assert.True(t, ok)
	assert.Equal(t, 1.5, f)
	h, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, uint64(TagPosBignum), h.Arg)
	b, err = r.ByteString()
	require.NoError(t, err)
	assert.Equal(t, "1180591620717411303424", Bignum(h.Arg, b).String())
	assert.Zero(t, r.Remaining())
}

func TestReader_HalfAndSingleFloats(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"f93c00": 1, "f9c400": -4, "f97c00": math.Inf(1), "fa47c35000": 100000, "f90001": 5.960464477539063e-8} {
		data, _ := hex.DecodeString(in)
		h, err := NewReader(data).Next()
		require.NoError(t, err, in)
		assert.True(t, h.IsFloat, in)
		assert.Equal(t, want, h.Float, in)
	}
}

func TestReader_Malformed(t *testing.T) {
	t.Parallel()
	next := func(r *Reader) error { _, err := r.Next(); return err }
	text := func(r *Reader) error { _, err := r.Text(); return err }
	bytes := func(r *Reader) error { _, err := r.ByteString(); return err }
	for _, tt := range []struct {
		name, in  string
		read      func(*Reader) error
		truncated bool
	}{
		{"empty", "", next, true},
		{"head cut short", "19ff", next, true},
		{"string past the end", "4401", bytes, true},
		{"indefinite length", "9f", next, false},
		{"reserved additional information", "1c", next, false},
		{"simple value in two-byte form", "f810", next, false},
		{"invalid UTF-8 text", "62c328", text, false},
		{"want text, have bytes", "4161", text, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, _ := hex.DecodeString(tt.in)
			err := tt.read(NewReader(data))
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.truncated, errors.Is(err, ErrTruncated), "%v", err)
			assert.Contains(t, err.Error(), "cbor: malformed data at byte ")
		})
	}
}

func TestReader_CheckCountAndSkip(t *testing.T) {
	t.Parallel()
	// An array that claims a million items in four bytes.
	r := NewReader([]byte{0x9a, 0x00, 0x0f, 0x42, 0x40})
	h, err := r.Next()
	require.NoError(t, err)
	require.ErrorIs(t, r.CheckCount(h.Arg, 1), ErrTruncated)

	var w Writer
	w.ArrayHeader(2)
	w.MapHeader(1)
	w.Text("k")
	w.Tag(1)
	w.Int(7)
	w.ArrayHeader(1)
	w.ArrayHeader(1)
	w.ArrayHeader(0)
	w.Int(9)
	r = NewReader(w.Bytes())
	require.NoError(t, r.Skip(8))
	h, err = r.Next()
	require.NoError(t, err)
	assert.Equal(t, uint64(9), h.Arg)

	r = NewReader(w.Bytes())
	assert.Error(t, r.Skip(3), "deeper than the limit")
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"83010203", "a16161f5", "d9010283f6f7f4", "5f", "fb7ff8000000000000", "c2420100"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(data)
		for r.Remaining() > 0 {
			start := r.Offset()
			if err := r.Skip(64); err != nil {
				var se *SyntaxError
				require.ErrorAs(t, err, &se)
				return
			}
			require.Greater(t, r.Offset(), start, "Skip moves on")
		}
	})
}
