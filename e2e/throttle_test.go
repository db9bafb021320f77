package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/wire"
)

// strangers keeps n clients with a wrong token saying hello to addr from
// this machine's address, each again as soon as it is refused, until the
// test ends. It returns a function that reports the refusals' codes.
func strangers(t *testing.T, addr string, n int) func() map[wire.Code]int {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[wire.Code]int{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := client.Dial(ctx, addr, client.Options{Token: "stranger-guess-0123456789abcdef"})
				if err == nil {
					_ = c.Close()
					continue
				}
				var r *wire.Refused
				if !errors.As(err, &r) { // riotd restarting: do not spin
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				mu.Lock()
				codes[r.Code]++
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() map[wire.Code]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(codes)
	}
}

// TestE2E_StrangersDoNotLockOut: while strangers on the same address (a
// proxy, a NAT) keep failing to authenticate, riot-worker with a valid
// token connects, stays connected across a restart of riotd, and a job
// with a master's token runs; the strangers are throttled. A regression
// test: the throttle was checked before the token, and refused valid
// hellos as bad-credentials, on which riot-worker exits 1.
func TestE2E_StrangersDoNotLockOut(t *testing.T) {
	t.Parallel()
	const master, worker = "lock-master-token-0123456789abcdef", "lock-worker-token-0123456789abcdef"
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("master "+master+"\nworker "+worker+"\n"), 0o600))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: bearer{master}}
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--token-file", file}, HTTPClient: hc})
	codes := strangers(t, tr.Addr(), 12)
	ctx := e2e.Context(t, e2e.DefaultWait)
	// Past riotd's free failures (5), its throttle is on for this address.
	refusedAbove := func(n int) func() error {
		return func() error {
			total := 0
			for _, k := range codes() {
				total += k
			}
			if total <= n {
				return fmt.Errorf("%d refusals of the strangers, want more than %d", total, n)
			}
			return nil
		}
	}
	require.NoError(t, e2e.CheckFor(ctx, 10*time.Millisecond, refusedAbove(12)))

	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1, Env: []string{"RIOT_TOKEN=" + worker}})
	tr.WaitFor(t, workers(1))
	res, err := bins.Eval(ctx, []string{"RIOT_TOKEN=" + master}, "--tracker", tr.Addr(), "-e", "6 * 7")
	require.NoError(t, err)
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, "42\n", res.Stdout)

	// The worker reconnects to a new riotd that the strangers hammer too.
	require.NoError(t, tr.Restart(ctx))
	before := codes()[wire.CodeThrottled]
	require.NoError(t, e2e.CheckFor(ctx, 10*time.Millisecond, func() error {
		if codes()[wire.CodeThrottled] == before {
			return fmt.Errorf("no stranger throttled by the new riotd yet")
		}
		return nil
	}))
	tr.WaitFor(t, workers(1))
	assert.True(t, w.Running(), "the worker stays: %s", w.Log())
	res, err = bins.Eval(ctx, []string{"RIOT_TOKEN=" + master}, "--tracker", tr.Addr(), "-e", "6 * 7")
	require.NoError(t, err)
	require.Equal(t, 0, res.Code, res)
	assert.Equal(t, "42\n", res.Stdout)
}
