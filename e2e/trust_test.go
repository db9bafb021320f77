package e2e_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/workunit"
)

// TestE2E_CacheByCredential runs riotd with two master credentials
// (alice, bob) and a worker's, and one riot-worker: a result memoized for
// alice answers alice's submissions of the same workunit, before and after
// a restart of riotd, and never bob's, whose submission runs on its own.
// A master's token cannot take work either: riot-worker with one is
// refused, and exits with the reason. (Once, any master could take work,
// forge its result, and make that the memoized answer of every master.)
func TestE2E_CacheByCredential(t *testing.T) {
	t.Parallel()
	const (
		aliceTok  = "alice-token-0123456789abcdef0123"
		bobTok    = "bob-token-0123456789abcdef012345"
		workerTok = "worker-token-0123456789abcdef012"
	)
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("master "+aliceTok+" alice\nmaster "+bobTok+" bob\nworker "+workerTok+" workers\n"), 0o600))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: bearer{aliceTok}}
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true, Args: []string{"--token-file", file}, HTTPClient: hc})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1, Env: []string{"RIOT_TOKEN=" + workerTok}})
	tr.WaitFor(t, workers(1))
	ctx := e2e.Context(t, e2e.DefaultWait)
	spec := fnSpec(t, "() => Math.random()")

	alice, bob := dialToken(t, tr.Addr(), "alice", aliceTok), dialToken(t, tr.Addr(), "bob", bobTok)
	first, err := alice.Submit(spec, workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	acc, err := bob.Submit(spec, workunit.Options{}).Accepted(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, workunit.StatusDone, acc.Status, "bob is not answered with alice's result")
	bobs, err := bob.Submit(spec, workunit.Options{}).Wait(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first.Result, bobs.Result, "bob's ran on its own: another random number")
	again, err := alice.Submit(spec, workunit.Options{}).Accepted(ctx)
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, again.Status, "alice's own memo")
	assert.Equal(t, first.Result, again.Result)

	// The store keeps both, each in its credential's scope.
	require.NoError(t, alice.Close())
	require.NoError(t, bob.Close())
	require.NoError(t, tr.Restart(ctx))
	alice, bob = dialToken(t, tr.Addr(), "alice", aliceTok), dialToken(t, tr.Addr(), "bob", bobTok)
	for _, tc := range []struct {
		c    *client.Client
		want []byte
	}{{alice, first.Result}, {bob, bobs.Result}} {
		acc, err := tc.c.Submit(spec, workunit.Options{}).Accepted(ctx)
		require.NoError(t, err)
		assert.Equal(t, workunit.StatusDone, acc.Status, "after the restart")
		assert.Equal(t, tc.want, acc.Result)
	}

	thief := e2e.NewProcess("riot-worker thief", bins.RiotWorker, []string{"--name", "thief", "--slots", "1", tr.Addr()},
		[]string{"RIOT_TOKEN=" + aliceTok}, bins.Root)
	require.NoError(t, thief.Start())
	t.Cleanup(func() { thief.Close() })
	code, err := thief.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, code, "%s", thief.Log())
	assert.Contains(t, thief.Log(), "a master's token cannot take work")
}

// dialToken connects a Go client master with token to addr for the test,
// and closes it when the test ends.
func dialToken(t *testing.T, addr, name, token string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), e2e.DefaultWait)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{
		Name:   name,
		Token:  token,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
