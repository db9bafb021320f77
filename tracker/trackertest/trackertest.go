// Package trackertest starts riot trackers (riotd) for tests: on
// 127.0.0.1 with a free port, with an in-memory store or a bbolt store in
// a temporary directory, logging to the test's output, stopped when the
// test ends.
//
// # Usage
//
//	tr := trackertest.Start(t)                    // memory, ready to connect
//	cl, err := client.Connect(ctx, tr.Addr(), client.Options{})
//	tr.WaitFor(t, func(s tracker.Stats) bool { return s.Workers == 2 })
//
//	tr := trackertest.Start(t, trackertest.Durable()) // bbolt in t.TempDir()
//	tr.Restart(t)                                     // same data, same address
//
//	tr.Stop(t)     // the tracker is down: clients see 1001 and reconnect...
//	tr.Restart(t)  // ...until it is back
//
//	cert := trackertest.NewCert(t)                // a CA and a server certificate
//	tr := trackertest.Start(t, trackertest.TLS(cert), trackertest.Tokens(
//		tracker.Credential{Role: wire.RoleMaster, Token: tok})) // wss://, tokens checked
//
// WaitFor is how a test synchronizes with the tracker's state without
// sleeping: it blocks until a condition over tracker.Stats holds, checked
// each time the tracker is idle (see tracker.Server.WaitStats).
//
// # The caller's duties
//
//  1. Call Start, Stop, Restart, WaitFor and Lookup from the test's
//     goroutine: they fail the test with t.Fatal.
//  2. Remember that a tracker in memory forgets everything on Restart;
//     use Durable for restart tests.
package trackertest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// DefaultWait bounds WaitFor, Stop and Restart unless WaitTimeout says
// otherwise.
const DefaultWait = 30 * time.Second

// Option changes how Start makes the tracker.
type Option func(*config)

type config struct {
	durable  bool
	dir      string
	st       store.Store
	level    slog.Level
	wait     time.Duration
	optFuncs []func(*tracker.Options)
}

// Durable keeps the tracker's store in a bbolt file in t.TempDir(), so
// that Restart finds it again.
func Durable() Option { return func(c *config) { c.durable = true } }

// DataDir keeps the tracker's store in dir (implies Durable).
func DataDir(dir string) Option {
	return func(c *config) { c.durable, c.dir = true, dir }
}

// WithStore uses st as the tracker's store (a fake, in unit tests). The
// tracker owns it and closes it on Stop; Restart is not possible.
func WithStore(st store.Store) Option { return func(c *config) { c.st = st } }

// WithOptions lets f change the tracker's Options before New (ping
// interval, lease timeout, limits, ...). Listen, DataDir, Store and Logger
// are set by trackertest.
func WithOptions(f func(*tracker.Options)) Option {
	return func(c *config) { c.optFuncs = append(c.optFuncs, f) }
}

// LogLevel sets the level of the tracker's logs in the test's output
// (default slog.LevelInfo; they show with -v or when the test fails).
func LogLevel(l slog.Level) Option { return func(c *config) { c.level = l } }

// Quiet silences the tracker's logs (for benchmarks).
func Quiet() Option { return func(c *config) { c.level = slog.LevelError + 4 } }

// WaitTimeout bounds WaitFor, Stop and Restart (default DefaultWait).
func WaitTimeout(d time.Duration) Option { return func(c *config) { c.wait = d } }

// Tracker is a running tracker for a test. Its methods are safe to call
// from the test's goroutine; Addr, URL and Server from any.
type Tracker struct {
	cfg  config
	addr string

	mu   sync.Mutex
	url  string
	srv  *tracker.Server
	done chan error // Run's result
}

// Start starts a tracker on 127.0.0.1 with a free port and returns once it
// accepts connections. It stops when the test ends (t.Cleanup).
func Start(t testing.TB, opts ...Option) *Tracker {
	t.Helper()
	cfg := config{level: slog.LevelInfo, wait: DefaultWait}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.durable && cfg.dir == "" && cfg.st == nil {
		cfg.dir = t.TempDir()
	}
	tr := &Tracker{cfg: cfg}
	tr.start(t, "127.0.0.1:0")
	t.Cleanup(func() { tr.stop(t) })
	return tr
}

func (tr *Tracker) start(t testing.TB, listen string) {
	t.Helper()
	o := tracker.Options{
		Listen: listen,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: tr.cfg.level})),
	}
	for _, f := range tr.cfg.optFuncs {
		f(&o)
	}
	o.Listen = listen
	o.DataDir = ""
	o.Store = nil
	switch {
	case tr.cfg.st != nil:
		o.Store = tr.cfg.st
	case tr.cfg.durable:
		o.DataDir = tr.cfg.dir
	}
	srv, err := tracker.New(o)
	if err != nil {
		t.Fatalf("trackertest: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background()) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("trackertest: run: %v", err)
	}
	tr.mu.Lock()
	tr.srv, tr.done = srv, done
	tr.addr = srv.Addr().String()
	tr.url = srv.URL()
	tr.mu.Unlock()
}

// Addr returns the tracker's address, "127.0.0.1:PORT": what
// client.Connect and riot-worker take. It stays the same across Restart.
func (tr *Tracker) Addr() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.addr
}

// URL returns the websocket URL, "ws://127.0.0.1:PORT/riot" ("wss://"
// for a tracker with TLS).
func (tr *Tracker) URL() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.url
}

// Server returns the running Server (a new one after Restart), nil while
// the tracker is stopped.
func (tr *Tracker) Server() *tracker.Server {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.srv
}

// DataDir returns the data directory, "" for a tracker in memory.
func (tr *Tracker) DataDir() string { return tr.cfg.dir }

// Stop shuts the tracker down gracefully (clients see their connections
// close with wire.CloseGoingAway) and waits until it has. Stopping twice
// is a no-op.
func (tr *Tracker) Stop(t testing.TB) {
	t.Helper()
	tr.stop(t)
}

func (tr *Tracker) stop(t testing.TB) {
	t.Helper()
	tr.mu.Lock()
	srv, done := tr.srv, tr.done
	tr.srv, tr.done = nil, nil
	tr.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tr.cfg.wait)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("trackertest: shutdown: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("trackertest: run: %v", err)
		}
	case <-ctx.Done():
		t.Errorf("trackertest: run did not return after shutdown")
	}
}

// Ended waits until the tracker's Run returns by itself, without Stop (a
// tracker whose store is fenced stops so), and returns Run's error; the
// test fails if it does not within the wait timeout. Stop is a no-op
// after it.
func (tr *Tracker) Ended(t testing.TB) error {
	t.Helper()
	tr.mu.Lock()
	done := tr.done
	tr.mu.Unlock()
	if done == nil {
		t.Fatalf("trackertest: Ended: the tracker is not running")
	}
	select {
	case err := <-done:
		tr.mu.Lock()
		tr.srv, tr.done = nil, nil
		tr.mu.Unlock()
		return err
	case <-time.After(tr.cfg.wait):
		t.Fatalf("trackertest: Ended: the tracker still runs after %v", tr.cfg.wait)
	}
	return nil
}

// Restart stops the tracker (unless Stop did already) and starts a new
// one on the same address and the same data directory, as a restart of
// riotd does: finished results are kept, waiting and running workunits are
// waiting. A tracker in memory comes back empty. Clients must reconnect.
// A tracker made WithStore cannot restart (its store is closed).
func (tr *Tracker) Restart(t testing.TB) {
	t.Helper()
	if tr.cfg.st != nil {
		t.Fatalf("trackertest: a tracker made WithStore cannot restart: its store is closed")
	}
	addr := tr.Addr()
	tr.stop(t)
	tr.start(t, addr)
}

// Stats returns the tracker's Stats now.
func (tr *Tracker) Stats(t testing.TB) tracker.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tr.cfg.wait)
	defer cancel()
	st, err := tr.running(t).Stats(ctx)
	if err != nil {
		t.Fatalf("trackertest: stats: %v", err)
	}
	return st
}

// WaitFor blocks until cond holds for the tracker's Stats and returns
// them; it fails the test if that takes longer than the wait timeout. cond
// runs in the tracker's loop each time the tracker is idle: keep it quick.
func (tr *Tracker) WaitFor(t testing.TB, cond func(tracker.Stats) bool) tracker.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), tr.cfg.wait)
	defer cancel()
	srv := tr.running(t)
	st, err := srv.WaitStats(ctx, cond)
	if err != nil {
		last, _ := srv.Stats(context.Background())
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("trackertest: the condition did not hold within %v; stats now: %+v", tr.cfg.wait, last)
		}
		t.Fatalf("trackertest: wait: %v", err)
	}
	return st
}

// Lookup returns the table's record of key and whether it has one, in
// any memo scope (tracker.Server.Lookup).
func (tr *Tracker) Lookup(t testing.TB, key workunit.Key) (table.Record, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tr.cfg.wait)
	defer cancel()
	rec, ok, err := tr.running(t).Lookup(ctx, key)
	if err != nil {
		t.Fatalf("trackertest: lookup: %v", err)
	}
	return rec, ok
}

// LookupIn is Lookup in one memo scope: that of the credential named
// scope, or "".
func (tr *Tracker) LookupIn(t testing.TB, scope string, key workunit.Key) (table.Record, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tr.cfg.wait)
	defer cancel()
	rec, ok, err := tr.running(t).LookupIn(ctx, scope, key)
	if err != nil {
		t.Fatalf("trackertest: lookup: %v", err)
	}
	return rec, ok
}

func (tr *Tracker) running(t testing.TB) *tracker.Server {
	t.Helper()
	srv := tr.Server()
	if srv == nil {
		t.Fatalf("trackertest: the tracker is stopped")
	}
	return srv
}
