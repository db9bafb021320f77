package client_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// TestClient_Misuse: calls a user may get wrong end in an error that says
// what was wrong, never a panic.
func TestClient_Misuse(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t)
	ctx := ctxFor(t)
	m := dial(t, tr.Addr(), client.Options{Name: "m"})

	_, err := client.ForWork(ctx, m, -1, func(int) *workunit.Spec { return nil })
	assert.EqualError(t, err, "client: for-work: -1 workunits: want 0 or more")

	assert.EqualError(t, m.CompleteWorkunit(nil, 1, nil), "client: complete workunit: nil assignment")

	_, err = m.Submit(nil, workunit.Options{}).Accepted(ctx)
	assert.EqualError(t, err, "client: submit: nil spec")

	// Paths name the caller's own arguments and function.
	_, err = m.DoWork(&value.Function{Source: "(c) => c"}, make(chan int))
	assert.ErrorContains(t, err, "client: do-work: args[0]: a channel cannot be sent")
	_, err = m.DoWork(&value.Function{Source: "() => f", Env: map[string]any{"f": func() {}}})
	assert.ErrorContains(t, err, "client: do-work: fn")

	require.NoError(t, m.Close())
	_, err = m.WaitForWork(ctx)
	assert.ErrorIs(t, err, client.ErrClosed, "closed, not a complaint about room")
	assert.ErrorIs(t, m.Sync(ctx), client.ErrClosed)
}

// TestDial_DeadlineDuringHandshake: a tracker that accepts but never
// answers ends Dial with its context's deadline, which errors.Is tells.
func TestDial_DeadlineDuringHandshake(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = client.Dial(ctx, ln.Addr().String(), client.Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}
