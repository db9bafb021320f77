// Command riot-bench measures riot end to end with real processes: it
// starts riotd and riot-worker processes on loopback and drives them with
// a Go client master (package client), then prints what it measured.
//
//	riot-bench [--riotd PATH --riot-worker PATH] [--n 200000] [--latency-n 2000]
//	           [--stores memory,durable] [--dict-limits 3000,7500] [--peers dask]
//	           [--format text|markdown]
//
// It measures, for each store (riotd --memory, riotd --data DIR):
//
//   - throughput: fn workunits `(i) => i + 1` with distinct arguments,
//     submitted pipelined and all waited for, --n-one with one worker and
//     --n with --workers; in workunits per second, beside the original
//     Riot's 22.7 (one worker) and 45 (two) and riot's target of 150,000
//     in memory, 80% of that durable (docs/benchmarks.md, "Targets");
//   - round-trip latency: --latency-n such workunits one at a time, p50
//     and p99 (targets 0.2 ms in memory, 0.6 ms durable, and 2 ms);
//
// and, for each --dict-limits L, the bytes on the wire of
// `riot-worker eval scripts/dict.js --limit L` over --words, counted by
// two counting TCP proxies that riot-bench puts between riotd and the
// master, and between riotd and the workers, beside the dictionary's size;
// and the same for a variant of dict.js whose dictionary is the whole word
// list, with --dict-whole workunits; and, with --peers dask, the same
// trivial tasks on Dask distributed (a LocalCluster of as many worker
// processes and threads, through a Python script of riot-bench's) beside
// riot's figures.
//
// With --conns N1,N2 it measures instead, for each N, a fresh riotd
// --memory holding N one-slot worker connections (lean protocol peers in
// riot-bench's own process): riotd's resident memory, heap and
// goroutines per idle connection, then --n trivial workunits through
// them, answered at once: throughput, riotd's CPU and frames per
// workunit. It raises its open-files limit to fit, or says why it cannot.
//
// With --restart N1,N2 it measures instead, for each N, a fresh durable
// riotd filled with N finished workunits through --workers workers, then
// killed (SIGKILL: its store's log is replayed) and started again, then
// stopped and started again: the time from each start until it serves
// (its status page answers) and until a master's first memoized answer,
// and its resident memory and heap in use beside the same records built
// live.
//
// With --masters M1,M2 it measures instead, for each M, --n such
// workunits from M Go client masters at once, each a realm of its own on
// the workers, interleaved: throughput and the workers' CPU per workunit
// (from /proc/PID/stat), beside one master's, and the largest peak
// resident memory of a worker (VmHWM, from /proc/PID/status).
//
// Without --riotd and --riot-worker it builds both with `go build` into a
// temporary directory; it must then run inside riot's module.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/units"
)

const usage = `riot-bench: measure riot end to end with riotd and riot-worker processes

Usage:
  riot-bench [flags]

Starts riotd and riot-worker processes on loopback and measures, with a Go
client master: throughput of trivial workunits with one worker and with
--workers, round-trip latency of one workunit at a time, each with riotd in
memory and durable; and the bytes on the wire of scripts/dict.js. Prints
tables (--format markdown for docs/benchmarks.md).

Flags:
`

// config is riot-bench's flags.
type config struct {
	riotd, worker string
	workers       int
	slots         int
	prefetch      int
	n, warmup     int
	nOne          int
	latencyN      int
	stores        []string
	dataDir       string
	dictLimits    []int
	dictWhole     int
	words         string
	scripts       string
	format        string
	timeout       time.Duration
	verbose       bool
	peers         []string
	peerN         int
	peerLatencyN  int
	python        string
	args          []string // as given, for the report
	// big, when set, is the size of the one value the --big run sends
	// (it replaces the other runs).
	big int64
	// dashboard: measure the many-worker throughput again with a
	// dashboard open (openDashboard).
	dashboard bool
	// masters, when set, are the numbers of masters of the --masters
	// runs (they replace the other runs).
	masters []int
	// inFlight is how many workunits the --masters masters keep waiting
	// at most, all together.
	inFlight int
	// conns, when set, are the numbers of worker connections of the
	// --conns runs (they replace the other runs).
	conns []int
	// restart, when set, are the numbers of finished workunits of the
	// --restart runs (they replace the other runs).
	restart []int
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("riot-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{args: args}
	var stores, limits, peers string
	fs.StringVar(&c.riotd, "riotd", "", "riotd binary `path` (default: go build it)")
	fs.StringVar(&c.worker, "riot-worker", "", "riot-worker binary `path` (default: go build it)")
	fs.IntVar(&c.workers, "workers", 2, "riot-worker processes in the throughput and latency runs")
	fs.IntVar(&c.slots, "slots", runtime.NumCPU(), "--slots of each worker")
	fs.IntVar(&c.prefetch, "prefetch", 0, "--prefetch of each worker (0: riot-worker's default, sized from the workunits' durations)")
	fs.IntVar(&c.n, "n", 200_000, "workunits in the throughput run with --workers workers")
	fs.IntVar(&c.nOne, "n-one", 0, "workunits in the throughput run with one worker (default: a quarter of --n)")
	fs.IntVar(&c.warmup, "warmup", 2_000, "workunits run before each measurement, not measured")
	fs.IntVar(&c.latencyN, "latency-n", 2_000, "workunits in the latency run, one at a time")
	fs.StringVar(&stores, "stores", "memory,durable", "riotd stores to measure: `memory,durable` (and replicas: three riotd --replica-id on loopback, throughput, round trip and --big only)")
	fs.StringVar(&c.dataDir, "data", "", "parent `directory` of the durable stores (default: a temporary directory)")
	fs.StringVar(&limits, "dict-limits", "3000,7500", "scripts/dict.js --limit values to measure the bytes of, `L1,L2`; empty: none")
	fs.IntVar(&c.dictWhole, "dict-whole", 200, "workunits of the whole-list variant of dict.js (every workunit captures the whole --words); 0: skip")
	fs.StringVar(&c.words, "words", "/usr/share/dict/words", "the word list of scripts/dict.js")
	fs.StringVar(&c.scripts, "scripts", "", "riot's scripts `directory` (default: the module's scripts/)")
	fs.StringVar(&c.format, "format", "text", "output `format`: text or markdown")
	fs.StringVar(&peers, "peers", "", "peers to measure on the same tasks: `dask` (Dask distributed, through Python); empty: none")
	fs.IntVar(&c.peerN, "peer-n", 20_000, "tasks in a peer's throughput run")
	fs.IntVar(&c.peerLatencyN, "peer-latency-n", 1_000, "tasks in a peer's latency run, one at a time")
	fs.StringVar(&c.python, "python", "", "the Python `path` for --peers dask (default: python3, then /usr/bin/python3, the first that has dask.distributed)")
	var big string
	fs.StringVar(&big, "big", "", "instead of the other runs, send one Float64Array of this `size` (e.g. 512MiB) through riotd to a worker and back, in each of --stores, and report the time and the peak memory of the master, riotd and the worker")
	var masters string
	fs.StringVar(&masters, "masters", "", "instead of the other runs, measure --n trivial workunits from each of these numbers of Go client masters at once (`M1,M2`, e.g. 1,50,500), every master a realm of its own, against --workers workers in each of --stores: throughput, the workers' CPU per workunit and their peak resident memory")
	var conns string
	fs.StringVar(&conns, "conns", "", "instead of the other runs, hold each of these numbers of one-slot worker connections (`N1,N2`, e.g. 1000,10000; lean peers in riot-bench's process) on a fresh riotd --memory: its memory per idle connection, then --n trivial workunits through them (--prefetch: each connection's prefetch)")
	var restart string
	fs.StringVar(&restart, "restart", "", "instead of the other runs, fill a fresh durable riotd with each of these numbers of finished trivial workunits (`N1,N2`, e.g. 1000000) through --workers workers, then kill it and start it again, and stop it and start it again: the time until it serves and answers a memoized workunit, and its memory beside the same records built live")
	fs.IntVar(&c.inFlight, "in-flight", 4000, "workunits the --masters masters keep waiting at most, all together (each a share), so that their workunits interleave")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "bound on the whole run")
	fs.BoolVar(&c.verbose, "v", false, "print the processes' logs when done")
	fs.BoolVar(&c.dashboard, "dashboard", false, "also measure the throughput with --workers workers with a dashboard open: an event stream and, on each update, the requests a page makes")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (c.riotd == "") != (c.worker == "") {
		return nil, errors.New("give both --riotd and --riot-worker, or neither")
	}
	if c.workers < 1 || c.slots < 1 || c.n < 1 || c.latencyN < 1 || c.warmup < 0 || c.prefetch < 0 || c.dictWhole < 0 || c.nOne < 0 {
		return nil, errors.New("--workers, --slots, --n and --latency-n must be at least 1; --warmup, --prefetch, --n-one and --dict-whole at least 0")
	}
	if c.nOne == 0 {
		c.nOne = max(c.n/4, 1)
	}
	for _, s := range splitList(stores) {
		if s != "memory" && s != "durable" && s != "replicas" {
			return nil, fmt.Errorf("--stores: %q is not memory, durable or replicas", s)
		}
		c.stores = append(c.stores, s)
	}
	for _, s := range splitList(limits) {
		l, err := strconv.Atoi(s)
		if err != nil || l < 0 {
			return nil, fmt.Errorf("--dict-limits: %q is not a count", s)
		}
		if l > 0 {
			c.dictLimits = append(c.dictLimits, l)
		}
	}
	for _, p := range splitList(peers) {
		if p != "dask" {
			return nil, fmt.Errorf("--peers: %q is not a peer riot-bench knows (dask)", p)
		}
		c.peers = append(c.peers, p)
	}
	if c.peerN < 1 || c.peerLatencyN < 1 {
		return nil, errors.New("--peer-n and --peer-latency-n must be at least 1")
	}
	if big != "" {
		n, err := units.ParseSize(big)
		if err != nil || n < 8 || n > 4<<30 {
			return nil, fmt.Errorf("--big %q: want a size from 8 bytes to 4GiB, such as 512MiB", big)
		}
		c.big = int64(n / 8 * 8)
	}
	if c.inFlight < 1 {
		return nil, errors.New("--in-flight must be at least 1")
	}
	for _, s := range splitList(masters) {
		m, err := strconv.Atoi(s)
		if err != nil || m < 1 {
			return nil, fmt.Errorf("--masters: %q is not a number of masters (1 or more)", s)
		}
		c.masters = append(c.masters, m)
	}
	for _, s := range splitList(conns) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1<<20 {
			return nil, fmt.Errorf("--conns: %q is not a number of connections (1 to %d)", s, 1<<20)
		}
		c.conns = append(c.conns, n)
	}
	for _, s := range splitList(restart) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--restart: %q is not a number of workunits (1 or more)", s)
		}
		c.restart = append(c.restart, n)
	}
	if c.format != "text" && c.format != "markdown" {
		return nil, fmt.Errorf("--format %q: want text or markdown", c.format)
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs riot-bench and returns its exit status: 0 done, 1 failed, 2 bad
// flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "riot-bench: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	b := &bench{cfg: cfg, log: stderr}
	if err := b.setup(ctx); err != nil {
		fmt.Fprintf(stderr, "riot-bench: %v\n", err)
		return 1
	}
	defer b.cleanup()
	if cfg.big > 0 {
		if err := b.runBig(ctx, stdout); err != nil {
			fmt.Fprintf(stderr, "riot-bench: %v\n", err)
			return 1
		}
		return 0
	}
	if len(cfg.conns) > 0 {
		if err := b.runConns(ctx, stdout); err != nil {
			fmt.Fprintf(stderr, "riot-bench: %v\n", err)
			return 1
		}
		return 0
	}
	if len(cfg.restart) > 0 {
		if err := b.runRestart(ctx, stdout); err != nil {
			fmt.Fprintf(stderr, "riot-bench: %v\n", err)
			return 1
		}
		return 0
	}
	if len(cfg.masters) > 0 {
		if err := b.runMasters(ctx, stdout); err != nil {
			fmt.Fprintf(stderr, "riot-bench: %v\n", err)
			return 1
		}
		return 0
	}
	rep, err := b.run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "riot-bench: %v\n", err)
		return 1
	}
	rep.write(stdout, cfg.format)
	return 0
}

// environment describes where the figures come from.
func environment() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// loadAverage returns the one-minute load average (Linux), or "?": how
// busy the machine was, besides riot-bench.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// binsFor returns the binaries riot-bench runs: the ones given, or fresh
// ones built into dir.
func binsFor(ctx context.Context, cfg *config, dir string) (e2e.Bins, error) {
	if cfg.riotd != "" {
		root, _ := e2e.ModuleRoot() // only a working directory for the processes
		return e2e.Bins{Riotd: cfg.riotd, RiotWorker: cfg.worker, Root: root}, nil
	}
	bins, err := e2e.Build(ctx, dir)
	if err != nil {
		return e2e.Bins{}, fmt.Errorf("%w (or give --riotd and --riot-worker)", err)
	}
	return bins, nil
}
