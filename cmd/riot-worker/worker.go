package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/worker"
)

const workerUsage = `Usage: riot-worker [flags] HOST[:PORT]

Runs a riot worker: connects to the tracker at HOST (port 2355 unless
--port or HOST:PORT says otherwise; a ws:// or wss:// URL works too), takes
workunits from it, evaluates them, and sends their results back, until
SIGINT or SIGTERM. Riot's worker, as in

  riot-worker --port 1234 --name worker-name server-host

The tracker makes names unique: a second worker named alfred is alfred-2.
A worker that loses its tracker keeps trying to reconnect.

A tracker that checks credentials needs a worker's (or a master's) token:
--token or $RIOT_TOKEN. For a tracker that serves TLS, give a wss:// URL, or
--tls-ca FILE (the authority that signed its certificate), which makes HOST
mean wss:// too. See docs/security.md.

On SIGINT or SIGTERM the worker stops taking work, lets running workunits
finish for up to --grace, then hands the rest back to the tracker and
exits. A second signal exits at once. See docs/workers.md, and
'riot-worker help' for the other commands (eval).

Flags:
`

type workerFlags struct {
	port      int
	name      string
	slots     int
	slotsF    autoInt
	prefetch  int // -1: sized by the worker
	prefetchF autoInt
	grace     time.Duration
	timeout   time.Duration
	memory    uint64 // --memory-limit in bytes, 0 for none
	memLimit  sysmem.Limit
	cache     int
	token     string
	tlsCA     string
	noGPU     bool
	logLevel  string
	tracker   string
}

func parseWorkerFlags(args []string, stderr io.Writer) (*workerFlags, error) {
	fs := flag.NewFlagSet("riot-worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &workerFlags{}
	fs.IntVar(&f.port, "port", 0, "the tracker's `port` (default 2355)")
	fs.StringVar(&f.name, "name", "", "the worker's `name` (default: the host name; the tracker makes it unique)")
	fs.Var(&f.slotsF, "slots", "run `N` workunits at once (default: one per CPU)")
	fs.Var(&f.prefetchF, "prefetch", "hold `N` workunits queued beyond the slots; 0 for none (default: sized by the worker from its workunits' durations, 2 to 64 per slot)")
	f.grace = worker.DefaultGrace
	fs.Var((*units.Duration)(&f.grace), "grace", "how long running workunits may finish after SIGINT or SIGTERM, a `duration` such as 30s or 2m; 0 for none")
	fs.Var((*units.Duration)(&f.timeout), "timeout", "time limit of workunits that set none, a `duration` such as 30s, 5m or 1d (default: none)")
	memoryLimitFlag(fs, &f.memLimit, "running workunits are")
	f.cache = worker.DefaultBlobCacheBytes
	fs.Var((*units.Size)(&f.cache), "blob-cache", "`size` of the blobs (modules, large values) kept, such as 512MiB or 2GiB")
	// The token's default is read after parsing, so that --help never prints it.
	fs.StringVar(&f.token, "token", "", "the tracker's credentials, a `token` (default: $RIOT_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", os.Getenv("RIOT_TLS_CA"),
		"PEM `file` of the authority that signed the tracker's certificate; implies wss:// (default: $RIOT_TLS_CA)")
	fs.BoolVar(&f.noGPU, "no-gpu", false, "offer no GPU devices, even when a CUDA driver is present")
	fs.StringVar(&f.logLevel, "log-level", "", "log `level`: debug, info (the default), warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), workerUsage)
		fs.PrintDefaults()
	}
	// Flags may come before and after HOST.
	var hosts []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		hosts = append(hosts, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(hosts) != 1 {
		if len(hosts) == 0 {
			return nil, errors.New("the tracker's HOST is required")
		}
		return nil, fmt.Errorf("one HOST, not %d: %q", len(hosts), hosts)
	}
	if strings.TrimSpace(hosts[0]) == "" {
		return nil, errors.New("the tracker's HOST is empty (is $RIOT_TRACKER set, where a service passes it?)")
	}
	addr, err := trackerAddr(hosts[0], f.port)
	if err != nil {
		return nil, err
	}
	f.tracker = addr
	if f.token == "" {
		f.token = os.Getenv("RIOT_TOKEN")
	}
	if f.logLevel == "" {
		f.logLevel = "info"
	}
	if f.slots = f.slotsF.or(runtime.NumCPU()); f.slots <= 0 {
		return nil, fmt.Errorf("--slots %d: want at least 1", f.slots)
	}
	if f.prefetch = f.prefetchF.or(-1); f.prefetchF.set && f.prefetch < 0 {
		return nil, fmt.Errorf("--prefetch %d: want 0 or more", f.prefetch)
	}
	if f.memory, err = memoryLimitBytes(fs, f.memLimit); err != nil {
		return nil, err
	}
	return f, nil
}

// trackerAddr joins HOST and --port: a port given twice must agree.
func trackerAddr(host string, port int) (string, error) {
	if port < 0 || port > 65535 {
		return "", fmt.Errorf("--port %d: out of range", port)
	}
	if !strings.Contains(host, "://") {
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		if strings.Trim(h, "[]") == "" {
			return "", fmt.Errorf("%q names no host: give HOST or HOST:PORT", host)
		}
	}
	if port == 0 || strings.Contains(host, "://") {
		if port != 0 {
			return "", errors.New("--port does not go with a URL: put the port in the URL")
		}
		return host, nil
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p != strconv.Itoa(port) {
			return "", fmt.Errorf("the port is given twice: %s and --port %d", host, port)
		}
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func runWorker(ctx context.Context, args []string, stderr io.Writer) int {
	f, err := parseWorkerFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return usageFailure(stderr, "riot-worker", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageFailure(stderr, "riot-worker", fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel))
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	copts := client.Options{Token: f.token}
	if f.tlsCA != "" {
		conf, err := client.TLSConfigWithCA(f.tlsCA)
		if err != nil {
			fmt.Fprintf(stderr, "riot-worker: --tls-ca: %v\n", err)
			return 2
		}
		copts.TLSConfig = conf
	}
	eo := engine.Options{Timeout: f.timeout, MemoryLimit: f.memory}
	var drv *gpu.Driver
	if f.noGPU {
		logger.Info("riot-worker: GPUs disabled (--no-gpu)")
	} else {
		// Opened even when it has no devices, so that workunits asking
		// for one are told why there is none.
		drv = worker.OpenGPU(logger)
		defer drv.Close()
	}
	grace := f.grace
	if grace <= 0 {
		grace = -1 // no grace: interrupt at once
	}
	err = worker.Run(ctx, worker.Options{
		Tracker:        f.tracker,
		Name:           f.name,
		Slots:          f.slots,
		Prefetch:       prefetchOption(f.prefetch),
		Grace:          grace,
		Engine:         eo,
		GPU:            drv,
		BlobCacheBytes: int64(f.cache),
		Client:         copts,
		Logger:         logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker: %v\n", err)
		return 1
	}
	return 0
}

// prefetchOption maps --prefetch to worker.Options.Prefetch: the flag's
// default (-1) leaves the worker to size its prefetch (0 there), and 0
// means none (negative there).
func prefetchOption(flag int) int {
	switch {
	case flag < 0:
		return 0
	case flag == 0:
		return -1
	}
	return flag
}
