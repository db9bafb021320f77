package job

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/workunit"
)

// TestFinished_SaysWhyTheCallEnded: a callback whose call ended without an
// outcome reports the connection's end only when the client did end (closed,
// or its context); a call the client gave up on (a blob it could not upload
// again) says so with the client's error, not that the connection ended.
func TestFinished_SaysWhyTheCallEnded(t *testing.T) {
	key := workunit.Key{1}
	for _, c := range []struct {
		err  error
		want string
	}{
		{client.ErrClosed, "the connection to the tracker ended: client: closed"},
		{fmt.Errorf("call: %w", context.Canceled), "the connection to the tracker ended: call: context canceled"},
		{errors.New("client: blob 1a2b is not held by the tracker after 3 uploads"),
			"the workunit could not be followed to its end: client: blob 1a2b is not held by the tracker after 3 uploads"},
	} {
		o := finished(key, nil, c.err)
		require.NotNil(t, o.Err)
		assert.Equal(t, workunit.StatusError, o.Status)
		assert.Equal(t, key, o.Err.Key)
		assert.Equal(t, c.want, o.Err.Message)
	}
}
