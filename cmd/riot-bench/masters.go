package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/value"
)

// mastersResult is one --masters run: n workunits from masters masters,
// each its own realm on the workers, their workunits interleaved.
type mastersResult struct {
	store   string
	masters int
	workers int
	n       int
	elapsed time.Duration
	// workerCPU is the CPU time (user and system) the workers spent on the
	// measured workunits, all together.
	workerCPU time.Duration
	// workerPeak is the largest peak resident memory (VmHWM) of the
	// workers, read after the measured run; 0 if it could not be read.
	workerPeak int64
}

func (r mastersResult) perSecond() float64 { return float64(r.n) / r.elapsed.Seconds() }

// cpuPerWorkunit is the workers' CPU time per workunit.
func (r mastersResult) cpuPerWorkunit() time.Duration { return r.workerCPU / time.Duration(r.n) }

// runMasters measures, for each --masters M in each store, --n trivial
// workunits from M Go client masters at once (--n/M each, pipelined, at
// most --in-flight waiting in all)
// against a fresh riotd and --workers workers: every master is a realm
// of its own, so the workers run workunits of M realms interleaved.
func (b *bench) runMasters(ctx context.Context, w io.Writer) error {
	var results []mastersResult
	for _, store := range b.cfg.stores {
		for _, m := range b.cfg.masters {
			r, err := b.mastersOnce(ctx, store, m)
			if err != nil {
				return b.failed(fmt.Errorf("--masters %d, %s: %w", m, store, err))
			}
			results = append(results, r)
		}
	}
	writeMasters(w, b.cfg, results)
	return nil
}

func writeMasters(w io.Writer, cfg *config, results []mastersResult) {
	fmt.Fprintf(w, "riot-bench %s\n%s, load %s\n\n", strings.Join(cfg.args, " "), environment(), loadAverage())
	fmt.Fprintln(w, "| store | masters | waiting a master | workers × slots | workunits | workunits/s | workers' CPU per workunit | CPU vs 1 master | a worker's peak RSS |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	one := map[string]time.Duration{}
	for _, r := range results {
		if r.masters == 1 {
			one[r.store] = r.cpuPerWorkunit()
		}
	}
	for _, r := range results {
		ratio := "–"
		if base, ok := one[r.store]; ok && base > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(r.cpuPerWorkunit())/float64(base))
		}
		peak := "–"
		if r.workerPeak > 0 {
			peak = fmt.Sprintf("%.0f MiB", float64(r.workerPeak)/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d × %d | %d | %.0f | %.1f µs | %s | %s |\n", r.store, r.masters, masterWindow(cfg, r.masters), r.workers, cfg.slots, r.n,
			r.perSecond(), float64(r.cpuPerWorkunit())/float64(time.Microsecond), ratio, peak)
	}
}

func (b *bench) mastersOnce(ctx context.Context, store string, masters int) (mastersResult, error) {
	res := mastersResult{store: store, masters: masters, workers: b.cfg.workers}
	tr, err := b.startTracker(ctx, store)
	if err != nil {
		return res, err
	}
	defer tr.Close()
	cl := &cluster{tr: tr}
	defer cl.closeWorkers()
	if err := b.addWorkers(ctx, cl, tr.Addr(), b.cfg.workers); err != nil {
		return res, err
	}
	logger := slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ms := make([]*client.Client, masters)
	for i := range ms {
		m, err := client.Dial(ctx, tr.Addr(), client.Options{Name: fmt.Sprintf("riot-bench-%d", i+1), Logger: logger})
		if err != nil {
			return res, fmt.Errorf("master %d: %w", i+1, err)
		}
		defer m.Close()
		ms[i] = m
	}
	per := max(b.cfg.n/masters, 1)
	// Warm up: every master's realm has run on the workers before the
	// measurement (as many workunits as --warmup, at least one a master).
	warm := max(b.cfg.warmup/masters, 1)
	fmt.Fprintf(b.log, "riot-bench: %s: %d masters, warm-up, %d workunits each\n", store, masters, warm)
	if _, err := b.interleaved(ctx, ms, warm); err != nil {
		return res, err
	}
	fmt.Fprintf(b.log, "riot-bench: %s: %d masters, %d workunits each, %d workers\n", store, masters, per, b.cfg.workers)
	cpu0 := b.workersCPU(cl)
	elapsed, err := b.interleaved(ctx, ms, per)
	if err != nil {
		return res, err
	}
	res.workerCPU = b.workersCPU(cl) - cpu0
	for _, w := range cl.workers {
		if hwm, err := procMem(w.Pid(), "VmHWM"); err == nil {
			res.workerPeak = max(res.workerPeak, hwm)
		}
	}
	res.n, res.elapsed = per*masters, elapsed
	return res, nil
}

// masterWindow is how many workunits each of masters masters keeps
// waiting at most: --in-flight shared out, one at least.
func masterWindow(cfg *config, masters int) int { return max(cfg.inFlight/masters, 1) }

// workersCPU is the CPU time the cluster's workers have used.
func (b *bench) workersCPU(cl *cluster) time.Duration {
	var t time.Duration
	for _, w := range cl.workers {
		t += procCPU(w.Pid())
	}
	return t
}

// interleaved has every master submit per trivial workunits at once, each
// from a goroutine of its own, keeping at most a share of --in-flight of
// them waiting at a time (so that the masters' workunits interleave in
// riotd's queue rather than come in one burst a master), and checks
// every result; it returns how long that took.
func (b *bench) interleaved(ctx context.Context, ms []*client.Client, per int) (time.Duration, error) {
	base := b.base
	b.base += per * len(ms)
	window := masterWindow(b.cfg, len(ms))
	fn := &value.Function{Source: trivialFn}
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	start := time.Now()
	for j, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := base + j*per
			calls := make([]*client.Call, per)
			for i := range calls {
				if i >= window {
					if err := checkResult(ctx, calls[i-window], first+i-window); err != nil {
						errs[j] = fmt.Errorf("master %d: %w", j+1, err)
						return
					}
				}
				k, err := m.DoWork(fn, first+i)
				if err != nil {
					errs[j] = fmt.Errorf("master %d: %w", j+1, err)
					return
				}
				calls[i] = k
			}
			for i := max(per-window, 0); i < per; i++ {
				if err := checkResult(ctx, calls[i], first+i); err != nil {
					errs[j] = fmt.Errorf("master %d: %w", j+1, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}
