package e2e_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
)

// bins are riotd and riot-worker, built once for this test binary by
// TestMain and read-only afterwards.
var bins e2e.Bins

func TestMain(m *testing.M) { os.Exit(e2e.Main(m, &bins)) }

// dial connects a Go client master to addr for the test, logging to the
// test's output, and closes it when the test ends.
func dial(t *testing.T, addr, name string) *client.Client {
	t.Helper()
	ctx := e2e.Context(t, e2e.DefaultWait)
	c, err := client.Dial(ctx, addr, client.Options{
		Name:       name,
		Logger:     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
