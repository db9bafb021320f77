package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/value"
)

// restartChunk is how many workunits a --restart run keeps outstanding
// while it fills the store: the Go client holds each outstanding call,
// and a million at once would measure the client's memory, not riotd's.
const restartChunk = 50_000

// restartResult is one --restart run: a durable riotd filled with n
// finished workunits, then ended (killed, or stopped) and started again
// on its store.
type restartResult struct {
	n    int
	fill time.Duration
	// live is riotd's memory with the n records built live, its workers
	// gone; after* are the same once a restarted riotd has answered a
	// memoized workunit.
	live restartMem
	// runs are the restarts, in order: after a SIGKILL (the log of the
	// store replayed), then after a stop.
	runs []restartRun
}

type restartRun struct {
	how string
	// serving is the time from the new process's start to its status
	// page answering; answered, to a master's first memoized answer.
	serving, answered time.Duration
	mem               restartMem
}

// restartMem is what riotd holds: resident memory (VmRSS), and the Go
// heap in use (go_memstats_heap_inuse_bytes of /metrics).
type restartMem struct {
	rss, heap int64
}

// runRestart measures, for each --restart N, riotd's restart on a store
// of N finished workunits.
func (b *bench) runRestart(ctx context.Context, w io.Writer) error {
	var results []restartResult
	for _, n := range b.cfg.restart {
		r, err := b.restartOnce(ctx, n)
		if err != nil {
			return b.failed(fmt.Errorf("--restart %d: %w", n, err))
		}
		results = append(results, r)
	}
	writeRestart(w, b.cfg, results)
	return nil
}

func writeRestart(w io.Writer, cfg *config, results []restartResult) {
	mib := func(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	fmt.Fprintf(w, "riot-bench %s\n%s, load %s\n\n", strings.Join(cfg.args, " "), environment(), loadAverage())
	fmt.Fprintln(w, "| records | riotd ended by | serving after | first memoized answer after | RSS (live) | heap in use (live) | RSS ÷ live |")
	fmt.Fprintln(w, "| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | (built live in %s) | | | %s | %s | 1.00 |\n", r.n, r.fill.Round(time.Millisecond), mib(r.live.rss), mib(r.live.heap))
		for _, run := range r.runs {
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %.2f |\n", r.n, run.how, ms(run.serving), ms(run.answered),
				mib(run.mem.rss), mib(run.mem.heap), float64(run.mem.rss)/float64(r.live.rss))
		}
	}
}

// restartOnce fills a fresh durable riotd with n finished workunits
// through --workers workers, notes its memory, then kills it and starts
// it again, and stops it and starts it again, timing each start and
// noting its memory.
func (b *bench) restartOnce(ctx context.Context, n int) (restartResult, error) {
	res := restartResult{n: n}
	tr, err := b.startTracker(ctx, "durable")
	if err != nil {
		return res, err
	}
	defer tr.Close()
	cl := &cluster{tr: tr}
	if err := b.addWorkers(ctx, cl, tr.Addr(), b.cfg.workers); err != nil {
		cl.closeWorkers()
		return res, err
	}
	m, err := b.dialQuiet(ctx, tr.Addr())
	if err != nil {
		cl.closeWorkers()
		return res, err
	}
	fmt.Fprintf(b.log, "riot-bench: restart: filling a durable riotd with %d finished workunits\n", n)
	base := b.base
	start := time.Now()
	for done := 0; done < n; done += restartChunk {
		if _, err := b.throughput(ctx, m, min(restartChunk, n-done)); err != nil {
			m.Close()
			cl.closeWorkers()
			return res, err
		}
	}
	res.fill = time.Since(start)
	m.Close()
	cl.closeWorkers()
	if res.live, err = trackerMem(ctx, tr); err != nil {
		return res, err
	}

	for _, how := range []string{"SIGKILL", "stop (SIGTERM)"} {
		if how == "SIGKILL" {
			err = tr.Kill()
		} else {
			_, err = tr.Stop(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", how, err)
		}
		fmt.Fprintf(b.log, "riot-bench: restart: riotd ended by %s, starting it again\n", how)
		run := restartRun{how: how}
		t0 := time.Now()
		if err := tr.Restart(ctx); err != nil {
			return res, err
		}
		run.serving = time.Since(t0)
		restored, err := tr.Restored(ctx)
		if err != nil {
			return res, err
		}
		if restored.Done != n {
			return res, fmt.Errorf("after %s, riotd restored %d finished workunits, not %d", how, restored.Done, n)
		}
		// A master asks for the first workunit again: the answer is the
		// store's (no worker is connected to run it).
		m, err := b.dialQuiet(ctx, tr.Addr())
		if err != nil {
			return res, err
		}
		k, err := m.DoWork(&value.Function{Source: trivialFn}, base)
		if err == nil {
			err = checkResult(ctx, k, base)
		}
		run.answered = time.Since(t0)
		m.Close()
		if err != nil {
			return res, fmt.Errorf("after %s, the memoized answer: %w", how, err)
		}
		if run.mem, err = trackerMem(ctx, tr); err != nil {
			return res, err
		}
		res.runs = append(res.runs, run)
	}
	return res, nil
}

// dialQuiet dials a Go client master that logs warnings only.
func (b *bench) dialQuiet(ctx context.Context, addr string) (*client.Client, error) {
	return client.Dial(ctx, addr, client.Options{Name: "riot-bench",
		Logger: slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

// trackerMem reads riotd's resident memory and heap in use.
func trackerMem(ctx context.Context, tr *e2e.Tracker) (restartMem, error) {
	var m restartMem
	var err error
	if m.rss, err = procMem(tr.Pid(), "VmRSS"); err != nil {
		return m, err
	}
	metrics, err := tr.Metrics(ctx)
	if err != nil {
		return m, err
	}
	m.heap = int64(metrics["go_memstats_heap_inuse_bytes"])
	return m, nil
}
