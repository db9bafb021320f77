package client_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/workunit"
)

// notLeader starts an HTTP server that answers as a replica that does not
// lead: a redirect to leader (host:port), or 503 when leader is "".
func notLeader(t *testing.T, leader string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if leader == "" {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "no leader is elected yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(client.LeaderHeader, leader)
		w.Header().Set("Location", "ws://"+leader+r.URL.Path)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// deadAddr returns a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestDial_Replicas_FollowsTheLeader(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	follower := notLeader(t, tr.Addr())
	// The leader is listed, last: the redirect takes the client there
	// before the dead address.
	c := dial(t, follower+","+deadAddr(t)+","+tr.Addr(), client.Options{Name: "m"})
	assert.Equal(t, tr.Server().Name(), c.Tracker(), "welcomed by the leader")
}

func TestDial_Replicas_SkipsTheDeadAndTheLeaderless(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.Quiet())
	c := dial(t, strings.Join([]string{deadAddr(t), notLeader(t, ""), tr.Addr()}, ","), client.Options{Name: "m"})
	assert.Equal(t, tr.Server().Name(), c.Tracker(), "welcomed by the tracker that answers")
}

func TestDial_Replicas_NoneAnswers(t *testing.T) {
	t.Parallel()
	addrs := deadAddr(t) + "," + notLeader(t, "")
	_, err := client.Dial(ctxFor(t), addrs, client.Options{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, client.ErrNotLeader), "err %v: want it to say the replica does not lead", err)
	assert.Contains(t, err.Error(), "no leader is elected yet")
}

func TestTrackerURLs(t *testing.T) {
	t.Parallel()
	got, err := client.TrackerURLs("a:1, b:2,ws://c:3")
	require.NoError(t, err)
	assert.Equal(t, []string{"ws://a:1/riot", "ws://b:2/riot", "ws://c:3/riot"}, got)
	for _, bad := range []string{"a:1,,b:2", "a:1,", "a:1,http://b"} {
		_, err := client.TrackerURLs(bad)
		assert.Error(t, err, fmt.Sprintf("TrackerURLs(%q)", bad))
	}
}

func TestClient_Replicas_ReconnectsToAnother(t *testing.T) {
	t.Parallel()
	tr1 := trackertest.Start(t, trackertest.Quiet())
	tr2 := trackertest.Start(t, trackertest.Quiet())
	c := dial(t, tr1.Addr()+","+tr2.Addr(), client.Options{Name: "m"})
	require.Equal(t, tr1.Server().Name(), c.Tracker())
	tr1.Stop(t) // the leader is lost: the next address takes the client
	tr2.WaitFor(t, func(st tracker.Stats) bool { return st.Masters == 1 })
	// A workunit submitted now is the other tracker's, and a worker of
	// it answers it.
	call := c.Submit(eval("1 + 1"), workunit.Options{})
	w := dial(t, tr2.Addr(), client.Options{Name: "w", Slots: 1})
	work(t, w, 1, func(*workunit.Spec) (any, error) { return 2, nil })
	out, err := call.Wait(ctxFor(t))
	require.NoError(t, err)
	assert.Equal(t, workunit.StatusDone, out.Status)
}

// dialLog is a listener that answers every request as a replica that
// knows no leader (503), and notes when each came, by its own clock.
type dialLog struct {
	addr string
	mu   sync.Mutex
	at   []time.Time
	hit  chan struct{} // one a request
}

func leaderless(t *testing.T) *dialLog {
	t.Helper()
	dl := &dialLog{hit: make(chan struct{}, 1024)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl.mu.Lock()
		dl.at = append(dl.at, time.Now())
		dl.mu.Unlock()
		select {
		case dl.hit <- struct{}{}:
		default:
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "no leader is elected yet", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	dl.addr = strings.TrimPrefix(srv.URL, "http://")
	return dl
}

// times returns the requests' times so far.
func (dl *dialLog) times() []time.Time {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return slices.Clone(dl.at)
}

// TestClient_Replicas_EveryoneRefuses_BacksOff: when every address
// refuses (two replicas without a leader, one gone), the reconnect loop
// waits its backoff between rounds, doubling from MinBackoff up to
// MaxBackoff, as for one address: it does not spin through the list. A
// wait is never shorter than half its backoff (the jitter's floor, and
// timers do not fire early), which is what is asserted of each interval
// between two requests at the same address, by that listener's clock; and
// the last ones, at the cap, are far below what an uncapped doubling
// would wait.
func TestClient_Replicas_EveryoneRefuses_BacksOff(t *testing.T) {
	t.Parallel()
	const (
		minB = 20 * time.Millisecond
		maxB = 160 * time.Millisecond
		n    = 9 // requests at the first leaderless address
	)
	tr := trackertest.Start(t, trackertest.Quiet())
	a, b := leaderless(t), leaderless(t)
	c, err := client.Dial(ctxFor(t), strings.Join([]string{tr.Addr(), a.addr, b.addr}, ","), client.Options{
		Name: "m", MinBackoff: minB, MaxBackoff: maxB,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.Empty(t, a.times(), "the first address was dialed first")
	tr.Stop(t) // from now on, every address refuses

	ctx := ctxFor(t)
	for range n {
		select {
		case <-a.hit:
		case <-ctx.Done():
			t.Fatalf("only %d requests at the first leaderless address", len(a.times()))
		}
	}
	at := a.times()[:n]
	// Each round dials every address once, a before b: b has had its
	// request of every round before a's n-th, and none of a later one.
	assert.Contains(t, []int{n - 1, n}, len(b.times()), "requests at the second leaderless address")
	delay := minB // the backoff before the round of at[0]
	for i := 1; i < n; i++ {
		delay = min(2*delay, maxB)
		got := at[i].Sub(at[i-1])
		assert.GreaterOrEqual(t, got, delay/2, "interval %d: want at least half its backoff %v", i, delay)
	}
	// Doubling without the cap would wait at least 20 ms × 2^8 / 2 = 2.56 s
	// before the last.
	assert.Less(t, at[n-1].Sub(at[n-2]), 2*time.Second, "the last interval: the backoff is capped at %v", maxB)
}
