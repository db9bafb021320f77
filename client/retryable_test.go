package client

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/wire"
)

// TestRetryable: a reconnecting client keeps trying after refusals that go
// away by themselves, the throttle's among them (strangers behind the
// client's address failed to authenticate), and ends on the final ones.
func TestRetryable(t *testing.T) {
	t.Parallel()
	for code, want := range map[wire.Code]bool{
		wire.CodeThrottled: true,
		wire.CodeFull:      true,
		wire.CodeShutdown:  true,
		wire.CodeAuth:      false,
		wire.CodeInvalid:   false,
		wire.CodeVersion:   false,
	} {
		err := refusedErr("ws://t/riot", &wire.Refused{Code: code, Message: "m"})
		assert.Equal(t, want, retryable(err), "%v", code)
	}
	assert.True(t, retryable(errors.New("connection reset")), "a network error")
}
