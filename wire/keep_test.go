package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// finishedFrame returns a frame of n Finished messages, each with its own
// key, worker and result.
func finishedFrame(t testing.TB, n int) []byte {
	msgs := make([]Msg, n)
	for i := range msgs {
		var k workunit.Key
		k[0], k[1], k[2] = byte(i), byte(i>>8), 7
		msgs[i] = &Finished{Req: uint64(i + 1), Outcome: workunit.Outcome{Key: k, Status: workunit.StatusDone,
			Worker: "w1", Result: []byte{0x18, byte(i)}, LastChange: time.UnixMilli(int64(1000 + i)).UTC()}}
	}
	f, err := Encode(msgs...)
	require.NoError(t, err)
	return f
}

// room returns the messages a slab has room for between frames.
func room[T any](s *slab[T]) int {
	n := cap(s.buf)
	for _, c := range s.free {
		n += cap(c)
	}
	return n
}

// A Decoder with Keep reuses the room of frames of more than 4096
// messages of a type, and decodes them as a fresh Decoder does; without
// Keep it keeps the room of 4096, as it always did.
func TestDecoder_Keep_ReusesLargeFrames(t *testing.T) {
	const n = 10000
	frame := finishedFrame(t, n)
	want, err := Decode(frame)
	require.NoError(t, err)

	kept := Decoder{Keep: 16384}
	for range 3 {
		got, err := kept.Decode(frame)
		require.NoError(t, err)
		require.Equal(t, want, got)
		// A smaller frame between: the room is kept, the messages are
		// its own.
		small, err := kept.Decode(finishedFrame(t, 3))
		require.NoError(t, err)
		require.Len(t, small, 3)
		assert.Equal(t, uint64(3), small[2].(*Finished).Req)
	}
	assert.GreaterOrEqual(t, room(&kept.s.finished), n)
	assert.LessOrEqual(t, room(&kept.s.finished), 16384)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := kept.Decode(frame); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations decoding a frame of %d messages again", n)

	var plain Decoder
	for range 3 {
		got, err := plain.Decode(frame)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	assert.LessOrEqual(t, room(&plain.s.finished), maxChunk, "the default keeps the room of one chunk")
}

// BenchmarkDecodeFrame10000Finished decodes what a master's reader gets
// from a tracker that answers many calls at once: frames of 10,000
// Finished messages, with Keep and without.
func BenchmarkDecodeFrame10000Finished(b *testing.B) {
	frame := finishedFrame(b, 10000)
	for _, keep := range []int{0, 16384} {
		name := "default"
		if keep > 0 {
			name = "keep"
		}
		b.Run(name, func(b *testing.B) {
			d := Decoder{Keep: keep}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
