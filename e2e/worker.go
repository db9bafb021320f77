package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
)

// WorkerOptions configure a riot-worker process.
type WorkerOptions struct {
	// Name is the name the worker asks for (--name); the tracker makes it
	// unique. Default: the host name, as riot-worker's.
	Name string
	// Slots is --slots (0: riot-worker's default, one per CPU).
	Slots int
	// Prefetch is --prefetch (0: riot-worker's default).
	Prefetch int
	// Args are more flags, e.g. "--grace", "0", "--log-level", "debug".
	Args []string
	// Env is added to the worker's environment.
	Env []string
	// Label names the process in logs (default "riot-worker NAME").
	Label string
}

// Worker is a riot-worker process in worker mode.
//
// A Worker is safe for concurrent use.
type Worker struct {
	*Process
	tracker string

	mu   sync.Mutex
	name string
}

// LaunchWorker starts riot-worker for the tracker at addr and returns once
// the worker is ready (its "worker: ready" log line: connected, with its
// name), or fails when ctx ends first. The caller must end the process.
// Tests use Bins.StartWorker.
func LaunchWorker(ctx context.Context, bins Bins, addr string, opts WorkerOptions) (*Worker, error) {
	var args []string
	if opts.Name != "" {
		args = append(args, "--name", opts.Name)
	}
	if opts.Slots != 0 {
		args = append(args, "--slots", strconv.Itoa(opts.Slots))
	}
	if opts.Prefetch != 0 {
		args = append(args, "--prefetch", strconv.Itoa(opts.Prefetch))
	}
	args = append(args, opts.Args...)
	args = append(args, addr)
	label := opts.Label
	if label == "" {
		label = "riot-worker " + opts.Name
	}
	w := &Worker{tracker: addr, Process: NewProcess(label, bins.RiotWorker, args, opts.Env, bins.Root)}
	if err := w.start(ctx); err != nil {
		w.Process.Close()
		return nil, err
	}
	return w, nil
}

// StartWorker starts riot-worker for the tracker at addr for the test,
// waits until it is ready, stops it when the test ends, and writes its log
// to the test's output if the test failed (or always with RIOT_E2E_LOG=1).
func (b Bins) StartWorker(t testing.TB, addr string, opts WorkerOptions) *Worker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	w, err := LaunchWorker(ctx, b, addr, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cleanupProcess(t, w.Process)
	return w
}

// readyRE matches the worker's "worker: ready" line (log/slog's text
// format) and takes the name the tracker gave it.
var readyRE = regexp.MustCompile(`msg="worker: ready".* worker=("(?:[^"\\]|\\.)*"|\S+)`)

func (w *Worker) start(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	m, err := w.WaitLog(ctx, readyRE)
	if err != nil {
		return err
	}
	name := m[1]
	if u, err := strconv.Unquote(name); err == nil {
		name = u
	}
	w.mu.Lock()
	w.name = name
	w.mu.Unlock()
	return nil
}

// Name returns the name the tracker gave the worker (riot.worker.name in
// its workunits, Outcome.Worker for masters).
func (w *Worker) Name() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.name
}

// Restart starts the worker again with the same flags (after a Kill or
// Stop; a running one is stopped first) and waits until it is ready. The
// tracker may give it another name if the old connection is still known.
func (w *Worker) Restart(ctx context.Context) error {
	if w.Running() {
		if _, err := w.Stop(ctx); err != nil {
			return err
		}
	}
	if err := w.start(ctx); err != nil {
		return fmt.Errorf("e2e: %s: restart: %w", w.Label, err)
	}
	return nil
}
