package replica

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
)

// TestReplica_Run_LeavesNoGoroutines: a replica that led, served a
// submission through Raft and stopped leaves no goroutine behind (raft's,
// the transport's, the tracker's, the follower's, the Store's waits).
// Not parallel: it counts the process's goroutines.
func TestReplica_Run_LeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	rp, err := New(ctx, Config{
		ID:      "a",
		DataDir: t.TempDir(),
		Peers:   []Peer{{ID: "a", Raft: "127.0.0.1:0", Client: "127.0.0.1:0"}},
		Tracker: tracker.Options{Listen: "127.0.0.1:0", Logger: log},
		Timing:  fastTiming,
		Logger:  log,
	})
	if err != nil {
		t.Fatal(err)
	}
	led := make(chan string, 1)
	rp.onLead = func(addr string) { led <- addr }
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rp.Run(runCtx) }()
	var addr string
	select {
	case addr = <-led:
	case err := <-done:
		t.Fatalf("Run ended before it led: %v", err)
	case <-ctx.Done():
		t.Fatal("the replica did not lead")
	}
	m, err := client.Dial(ctx, addr, client.Options{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	call, err := m.DoWork(&value.Function{Source: "(x) => x"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call.Accepted(ctx); err != nil { // written through Raft
		t.Fatal(err)
	}
	m.Close()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Goroutines end a little after what ended them: wait for the count
	// to come back, for a bounded time.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("%d goroutines before, %d after Run returned:\n%s", before, runtime.NumGoroutine(), buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
