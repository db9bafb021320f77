package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A stopping worker interrupts its running workunits AbandonAfter before
// its grace ends, so that one stuck in a built-in call is abandoned by
// then; never before half the grace.
func TestInterruptAt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		grace, abandon, want time.Duration
	}{
		{30 * time.Second, time.Second, 29 * time.Second},
		{30 * time.Second, 0, 29 * time.Second}, // the engine's default
		{2 * time.Second, time.Second, time.Second},
		{time.Second, time.Second, 500 * time.Millisecond},
		{0, time.Second, 0},
	} {
		assert.Equal(t, tt.want, interruptAt(tt.grace, tt.abandon), "grace %s, abandon after %s", tt.grace, tt.abandon)
	}
}
