package tracker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnpin: a small value out of a large frame is copied, so that what
// the table keeps does not hold the frame; a value that is most of its
// frame, or out of a small frame, is kept as it is.
func TestUnpin(t *testing.T) {
	frame := make([]byte, 1<<20)
	small := frame[100:200]
	got := unpin(small, len(frame))
	assert.Equal(t, small, got)
	assert.NotSame(t, &small[0], &got[0], "a small value out of a large frame is copied")

	most := frame[10:]
	got = unpin(most, len(frame))
	assert.Same(t, &most[0], &got[0])

	tiny := make([]byte, 100)
	got = unpin(tiny[:10], len(tiny))
	assert.Same(t, &tiny[0], &got[0])
	assert.Nil(t, unpin(nil, len(frame)))
}
