package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// DefaultWait bounds the harness's waits in tests: a process coming up, a
// condition on the tracker's status (Tracker.WaitFor), a test's Context.
const DefaultWait = 30 * time.Second

// CheckFor calls check every interval until it returns nil, and returns
// nil; or, when ctx ends first, an error that wraps ctx's and says what
// check said last (the deadline helper of nats-server's checkFor, with a
// context).
func CheckFor(ctx context.Context, interval time.Duration, check func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("e2e: %w: last: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Context returns a context for a test's blocking calls that ends after d
// or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// cleanupProcess ends p when the test ends, after writing its log to the
// test's output if the test failed or RIOT_E2E_LOG is set.
func cleanupProcess(t testing.TB, p *Process) {
	t.Cleanup(func() {
		graceful := p.Close()
		if t.Failed() || os.Getenv("RIOT_E2E_LOG") != "" {
			t.Logf("log of %s:\n%s", p.Label, p.Log())
		}
		if !graceful {
			t.Logf("e2e: %s did not exit within %v of SIGTERM; killed", p.Label, DefaultStopTimeout)
		}
	})
}
