package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/value"
)

// The original Riot's throughput, measured on the same 2-core machine,
// and riot's targets (docs/benchmarks.md, "Targets"): in memory, and
// durable (riotd --data).
const (
	riotOneWorker     = 22.7
	riotTwoWorkers    = 45.0
	targetRate        = 150_000.0
	targetDurableRate = 0.8 * targetRate
	targetP50         = 200 * time.Microsecond
	targetDurableP50  = 600 * time.Microsecond
	targetP99         = 2 * time.Millisecond
)

// trivialFn is the workunit of the throughput and latency runs.
const trivialFn = "(i) => i + 1"

// bench holds one riot-bench run: the binaries, a temporary directory,
// and every process started, to end them and show their logs.
type bench struct {
	cfg  *config
	log  io.Writer
	tmp  string
	bins e2e.Bins
	// base makes each run's arguments distinct from every other's, so that
	// no workunit is answered from the tracker's table.
	base  int
	procs []*e2e.Process
}

func (b *bench) setup(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "riot-bench-")
	if err != nil {
		return err
	}
	b.tmp = tmp
	if b.cfg.riotd == "" {
		fmt.Fprintln(b.log, "riot-bench: building riotd and riot-worker...")
	}
	b.bins, err = binsFor(ctx, b.cfg, tmp)
	return err
}

func (b *bench) cleanup() {
	for _, p := range slices.Backward(b.procs) {
		p.Close()
	}
	if b.cfg.verbose {
		for _, p := range b.procs {
			fmt.Fprintf(b.log, "--- log of %s:\n%s\n", p.Label, p.Log())
		}
	}
	os.RemoveAll(b.tmp)
}

// failed adds the last lines of every process's log to err.
func (b *bench) failed(err error) error {
	for _, p := range b.procs {
		log := p.Log()
		if len(log) > 4000 {
			log = "..." + log[len(log)-4000:]
		}
		fmt.Fprintf(b.log, "--- log of %s:\n%s\n", p.Label, log)
	}
	return err
}

// cluster is a riotd and its workers.
type cluster struct {
	tr      *e2e.Tracker
	workers []*e2e.Worker
}

// closeWorkers stops the cluster's workers.
func (c *cluster) closeWorkers() {
	for _, w := range c.workers {
		w.Close()
	}
}

func (b *bench) startTracker(ctx context.Context, store string) (*e2e.Tracker, error) {
	if store == "replicas" {
		return nil, errors.New("--stores replicas measures only the throughput, round-trip and --big runs")
	}
	opts := e2e.TrackerOptions{Label: "riotd (" + store + ")"}
	if store == "durable" {
		parent := b.cfg.dataDir
		if parent == "" {
			parent = b.tmp
		}
		dir, err := os.MkdirTemp(parent, "riotd-data-")
		if err != nil {
			return nil, err
		}
		opts.Data, _ = filepath.Abs(dir)
	}
	tr, err := e2e.LaunchTracker(ctx, b.bins, opts)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, tr.Process)
	return tr, nil
}

// served is a fresh riotd of a store, or three replicas: tr is the one
// that serves (the leader), addr what masters and workers are given.
type served struct {
	tr     *e2e.Tracker
	addr   string
	rs     *e2e.Replicas // nil but for replicas
	leader int           // rs's leader
	close  func()
}

// serve starts riotd with store ("replicas": three replicas, and waits
// for their leader).
func (b *bench) serve(ctx context.Context, store string) (*served, error) {
	if store != "replicas" {
		tr, err := b.startTracker(ctx, store)
		if err != nil {
			return nil, err
		}
		return &served{tr: tr, addr: tr.Addr(), close: func() { tr.Close() }}, nil
	}
	rs, err := b.startReplicas(ctx)
	if err != nil {
		return nil, err
	}
	leader, err := rs.Leader(ctx)
	if err != nil {
		rs.Close()
		return nil, err
	}
	return &served{tr: rs.Tracker(leader), addr: rs.Addrs(), rs: rs, leader: leader, close: rs.Close}, nil
}

// startReplicas starts three riotd replicas on loopback (docs/replicas.md),
// each on a data directory of its own, and waits for a leader.
func (b *bench) startReplicas(ctx context.Context) (*e2e.Replicas, error) {
	parent := b.cfg.dataDir
	if parent == "" {
		parent = b.tmp
	}
	dir, err := os.MkdirTemp(parent, "riotd-replicas-")
	if err != nil {
		return nil, err
	}
	rs, err := e2e.LaunchReplicas(ctx, b.bins, e2e.ReplicasOptions{N: 3, Dir: dir})
	if err != nil {
		return nil, err
	}
	for i := range rs.Len() {
		b.procs = append(b.procs, rs.Proc(i))
	}
	return rs, nil
}

// addWorkers starts workers for addr until the tracker at tr has n.
func (b *bench) addWorkers(ctx context.Context, cl *cluster, addr string, n int) error {
	for i := len(cl.workers); i < n; i++ {
		w, err := e2e.LaunchWorker(ctx, b.bins, addr, e2e.WorkerOptions{
			Name:     fmt.Sprintf("bench-%d", i+1),
			Slots:    b.cfg.slots,
			Prefetch: b.cfg.prefetch,
			Label:    fmt.Sprintf("riot-worker bench-%d (%s)", i+1, cl.tr.Label),
		})
		if err != nil {
			return err
		}
		b.procs = append(b.procs, w.Process)
		cl.workers = append(cl.workers, w)
	}
	_, err := cl.tr.WaitStatus(ctx, func(s tracker.Status) bool { return len(s.Workers) == n })
	return err
}

// storeResult is what one store's runs measured.
type storeResult struct {
	store      string
	one, many  rate
	latency    latency
	commits    float64 // store commits (fsyncs) during the throughput run, from /metrics
	commitRecs float64
	// dash is the many-worker throughput again with a dashboard open
	// (--dashboard), and dashEvents and dashRequests what it saw and did.
	dash                     rate
	dashEvents, dashRequests int64
}

type rate struct {
	workers int
	n       int
	elapsed time.Duration
}

func (r rate) perSecond() float64 { return float64(r.n) / r.elapsed.Seconds() }

type latency struct {
	n                        int
	p50, p90, p99, max, mean time.Duration
}

// runStore measures throughput with one worker, then with cfg.workers,
// then latency, against a fresh riotd with store.
func (b *bench) runStore(ctx context.Context, store string) (storeResult, error) {
	res := storeResult{store: store}
	sv, err := b.serve(ctx, store)
	if err != nil {
		return res, err
	}
	defer sv.close()
	tr, addr := sv.tr, sv.addr
	cl := &cluster{tr: tr}
	defer cl.closeWorkers()
	if err := b.addWorkers(ctx, cl, addr, 1); err != nil {
		return res, err
	}
	m, err := client.Dial(ctx, addr, client.Options{Name: "riot-bench",
		Logger: slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return res, err
	}
	defer m.Close()

	fmt.Fprintf(b.log, "riot-bench: %s: throughput, 1 worker, %d workunits\n", store, b.cfg.nOne)
	if _, err := b.throughput(ctx, m, b.cfg.warmup); err != nil {
		return res, err
	}
	if res.one, err = b.throughput(ctx, m, b.cfg.nOne); err != nil {
		return res, err
	}
	res.one.workers = 1

	if err := b.addWorkers(ctx, cl, addr, b.cfg.workers); err != nil {
		return res, err
	}
	fmt.Fprintf(b.log, "riot-bench: %s: throughput, %d workers, %d workunits\n", store, b.cfg.workers, b.cfg.n)
	if _, err := b.throughput(ctx, m, b.cfg.warmup); err != nil {
		return res, err
	}
	before, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	if res.many, err = b.throughput(ctx, m, b.cfg.n); err != nil {
		return res, err
	}
	res.many.workers = b.cfg.workers
	after, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	res.commits = after["riot_store_commits_total"] - before["riot_store_commits_total"]
	res.commitRecs = after["riot_store_records_total"] - before["riot_store_records_total"]

	if b.cfg.dashboard {
		fmt.Fprintf(b.log, "riot-bench: %s: throughput, %d workers, %d workunits, with a dashboard open\n", store, b.cfg.workers, b.cfg.n)
		d := openDashboard(ctx, tr.Addr())
		res.dash, err = b.throughput(ctx, m, b.cfg.n)
		events, requests, derr := d.close()
		if err != nil {
			return res, err
		}
		if derr != nil {
			return res, fmt.Errorf("the dashboard's requests: %w", derr)
		}
		res.dash.workers, res.dashEvents, res.dashRequests = b.cfg.workers, events, requests
	}

	fmt.Fprintf(b.log, "riot-bench: %s: latency, %d workunits one at a time\n", store, b.cfg.latencyN)
	if res.latency, err = b.latency(ctx, m, b.cfg.latencyN); err != nil {
		return res, err
	}
	return res, nil
}

// throughput submits n trivial workunits pipelined, waits for them all,
// and checks every result.
func (b *bench) throughput(ctx context.Context, m *client.Client, n int) (rate, error) {
	if n == 0 {
		return rate{}, nil
	}
	base := b.base
	b.base += n
	fn := &value.Function{Source: trivialFn}
	calls := make([]*client.Call, n)
	start := time.Now()
	for i := range calls {
		k, err := m.DoWork(fn, base+i)
		if err != nil {
			return rate{}, err
		}
		calls[i] = k
	}
	for i, k := range calls {
		if err := checkResult(ctx, k, base+i); err != nil {
			return rate{}, err
		}
	}
	return rate{n: n, elapsed: time.Since(start)}, nil
}

func checkResult(ctx context.Context, k *client.Call, i int) error {
	out, err := k.Wait(ctx)
	if err != nil {
		return fmt.Errorf("workunit %d: %w", i, err)
	}
	v, err := out.Value()
	if err != nil {
		return fmt.Errorf("workunit %d: %w", i, err)
	}
	if v != float64(i+1) {
		return fmt.Errorf("workunit %d: result %v, want %d", i, v, i+1)
	}
	return nil
}

// latency runs n trivial workunits one at a time, after a warm-up of a
// tenth as many, and returns the round trips' distribution.
func (b *bench) latency(ctx context.Context, m *client.Client, n int) (latency, error) {
	fn := &value.Function{Source: trivialFn}
	warm := n / 10
	lat := make([]time.Duration, 0, n)
	for j := range n + warm {
		i := b.base
		b.base++
		t0 := time.Now()
		k, err := m.DoWork(fn, i)
		if err != nil {
			return latency{}, err
		}
		if err := checkResult(ctx, k, i); err != nil {
			return latency{}, err
		}
		if j >= warm {
			lat = append(lat, time.Since(t0))
		}
	}
	return distribution(lat), nil
}

// distribution sorts lat and returns its percentiles.
func distribution(lat []time.Duration) latency {
	if len(lat) == 0 {
		return latency{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	at := func(p float64) time.Duration {
		i := int(p*float64(len(lat))+0.5) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	return latency{
		n:   len(lat),
		p50: at(0.50), p90: at(0.90), p99: at(0.99),
		max:  lat[len(lat)-1],
		mean: sum / time.Duration(len(lat)),
	}
}

// run does every measurement the flags ask for.
func (b *bench) run(ctx context.Context) (*report, error) {
	rep := &report{cfg: b.cfg, env: environment(), started: time.Now()}
	rep.load[0] = loadAverage()
	for _, store := range b.cfg.stores {
		res, err := b.runStore(ctx, store)
		if err != nil {
			return nil, b.failed(fmt.Errorf("%s: %w", store, err))
		}
		rep.stores = append(rep.stores, res)
	}
	for _, limit := range b.cfg.dictLimits {
		res, err := b.runDict(ctx, limit)
		if err != nil {
			return nil, b.failed(fmt.Errorf("dict.js --limit %d: %w", limit, err))
		}
		rep.dicts = append(rep.dicts, res)
	}
	for _, name := range b.cfg.peers {
		if name == "dask" {
			p, err := b.runDask(ctx)
			if err != nil {
				return nil, fmt.Errorf("--peers dask: %w", err)
			}
			rep.peers = append(rep.peers, p)
		}
	}
	if b.cfg.dictWhole > 0 {
		res, err := b.runFullDict(ctx, b.cfg.dictWhole)
		if err != nil {
			return nil, b.failed(fmt.Errorf("dict.js, whole list: %w", err))
		}
		rep.dicts = append(rep.dicts, res)
	}
	rep.elapsed = time.Since(rep.started)
	rep.load[1] = loadAverage()
	return rep, nil
}
