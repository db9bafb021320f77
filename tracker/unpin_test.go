package tracker

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/wire"
)

// TestUnpin: a small value out of a large frame is copied, so that what
// the table keeps does not hold the frame; so is one out of a small frame
// (a worker's Done of a small result); a value that is most of its frame
// is kept as it is.
func TestUnpin(t *testing.T) {
	frame := make([]byte, 1<<20)
	small := frame[100:200]
	got := unpin(small, len(frame))
	assert.Equal(t, small, got)
	assert.NotSame(t, &small[0], &got[0], "a small value out of a large frame is copied")

	most := frame[10:]
	got = unpin(most, len(frame))
	assert.Same(t, &most[0], &got[0])

	// A Done's frame of a few hundred bytes, in io.ReadAll's first buffer
	// (512 bytes): its 3-byte result would hold all 512.
	buf := make([]byte, 300, 512)
	res := buf[200:203]
	got = unpin(res, cap(buf))
	assert.Equal(t, res, got)
	assert.NotSame(t, &res[0], &got[0], "a small value out of a small frame is copied too")
	assert.LessOrEqual(t, cap(got), 8, "the copy holds the value alone (in its size class)")

	tiny := make([]byte, 100)
	got = unpin(tiny[:60], len(tiny))
	assert.Same(t, &tiny[0], &got[0], "most of a small frame is kept as it is")
	assert.Nil(t, unpin(nil, len(frame)))
}

// TestOwnSpecs: the specs of a large frame's submissions are copied into
// one allocation of their total size (nothing of the frame kept); a small
// frame's are left aliasing it.
func TestOwnSpecs(t *testing.T) {
	frame := make([]byte, 1<<20)
	for i := range frame {
		frame[i] = byte(i)
	}
	sub := &wire.Submit{Req: 1, Spec: frame[100:173:300]}
	child := &wire.Child{Req: 2, Spec: frame[500:600]}
	done := &wire.Done{Result: frame[700:800]}
	msgs := []wire.Msg{sub, done, child}
	ownSpecs(msgs, len(frame))
	assert.Equal(t, frame[100:173], sub.Spec)
	assert.Equal(t, frame[500:600], child.Spec)
	assert.Equal(t, 73, cap(sub.Spec), "a spec's capacity ends where it does")
	assert.NotSame(t, &frame[100], &sub.Spec[0], "copied out of the frame")
	assert.Equal(t, unsafe.Add(unsafe.Pointer(&sub.Spec[0]), 73), unsafe.Pointer(&child.Spec[0]), "one allocation for the frame's specs")
	assert.Same(t, &frame[700], &done.Result[0], "other messages are left as they are")

	small := make([]byte, 1000)
	s := &wire.Submit{Req: 1, Spec: small[10:90]}
	ownSpecs([]wire.Msg{s}, len(small))
	assert.Same(t, &small[10], &s.Spec[0], "a small frame's spec aliases it")
}
