package worker

import (
	"errors"
	"fmt"
	"github.com/riot-go/riot/internal/logfmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/internal/cliflag"
)

// Help is riot-worker's help for running a worker, before the list of its
// flags (AddFlags).
const Help = `Runs a riot worker: connects to the tracker at HOST (port 2355 unless
--port or HOST:PORT says otherwise; a ws:// or wss:// URL works too), takes
workunits from it, evaluates them, and sends their results back, until
SIGINT or SIGTERM. Riot's worker, as in

  riot-worker --port 1234 --name worker-name server-host

Flags may come before and after HOST. The tracker makes names unique: a
second worker named alfred is alfred-2. A worker that loses its tracker,
or whose tracker's name does not resolve yet, keeps trying to connect.

A tracker that checks credentials needs a worker's (or a master's) token:
--token or $RIOT_TOKEN. For a tracker that serves TLS, give a wss:// URL, or
--tls-ca FILE (the authority that signed its certificate), which makes HOST
mean wss:// too. See docs/security.md.

On SIGINT or SIGTERM the worker stops taking work, lets running workunits
finish for up to --grace, then hands the rest back to the tracker and
exits. A second signal exits at once. See docs/workers.md.

Exit status: 0 after a stop by signal, 1 when the worker cannot work (the
tracker refuses it for good) or stopped because --max-stuck workunits were
stuck in calls that do not return (a supervisor starts it again), 2 for
bad usage.
`

// Flags are riot-worker's flags for running a worker, registered on a
// FlagSet by AddFlags. Once the FlagSet has parsed a command line,
// Options returns the worker's Options.
type Flags struct {
	fs       *pflag.FlagSet
	getenv   func(string) string
	port     int
	name     string
	slots    cliflag.AutoInt
	prefetch cliflag.AutoInt
	maxStuck cliflag.AutoInt
	// maxWaiting is --max-waiting-parents.
	maxWaiting cliflag.AutoInt
	grace      time.Duration
	timeout    time.Duration
	memory     *cliflag.MemoryLimit
	cache      int
	token      string
	tlsCA      string
	noGPU      bool
	level      slog.Level
	format     string
	metrics    string
	debug      string
}

// AddFlags defines riot-worker's flags (docs/workers.md) on fs and returns
// them, for Options after fs has parsed the command line.
func AddFlags(fs *pflag.FlagSet) *Flags { return addFlags(fs, os.Getenv) }

func addFlags(fs *pflag.FlagSet, getenv func(string) string) *Flags {
	f := &Flags{fs: fs, getenv: getenv, grace: DefaultGrace, cache: DefaultBlobCacheBytes, level: slog.LevelInfo}
	fs.IntVar(&f.port, "port", 0, "the tracker's `port` (default 2355)")
	fs.StringVar(&f.name, "name", "", "the worker's `name` (default: the host name; the tracker makes it unique)")
	fs.Var(&f.slots, "slots", "run `N` workunits at once (default: one per CPU)")
	fs.Var(&f.prefetch, "prefetch", "hold `N` workunits queued beyond the slots; 0 for none (default: sized by the worker from its workunits' durations, 2 to 512 per slot, to cover the latency it measures)")
	fs.Var(&f.maxWaiting, "max-waiting-parents", "let at most `N` workunits wait for their children at once, each with its slot given up to others (default: 64); "+
		"a workunit that would wait past it throws a RangeError")
	fs.Var(&f.maxStuck, "max-stuck", "stop, and exit with status 1, once `N` workunits are stuck in calls that do not return, past their limit (default: one per slot)")
	fs.Var(cliflag.Duration(&f.grace), "grace", "how long running workunits may finish after SIGINT or SIGTERM, a `duration` such as 30s or 2m; 0 for none")
	fs.Var(cliflag.Duration(&f.timeout), "timeout", "time limit of workunits that set none, a `duration` such as 30s, 5m or 1d (default: none)")
	f.memory = cliflag.AddMemoryLimit(fs, "running workunits are")
	fs.Var(cliflag.Size(&f.cache), "blob-cache", "`size` of the blobs (modules, large values) kept, such as 512MiB or 2GiB")
	// The token's default is read by Options, so that --help never prints it.
	fs.StringVar(&f.token, "token", "", "the tracker's credentials, a `token` (default: $RIOT_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", getenv("RIOT_TLS_CA"),
		"PEM `file` of the authority that signed the tracker's certificate; implies wss:// (default: $RIOT_TLS_CA)")
	fs.BoolVar(&f.noGPU, "no-gpu", false, "offer no GPU devices, even when a CUDA driver is present")
	fs.Var(cliflag.LogLevel(&f.level), "log-level", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.format, "log-format", logfmt.Text, "log `format`: text or json (durations in seconds)")
	fs.StringVar(&f.metrics, "metrics-listen", "",
		"serve Prometheus metrics (/metrics) and the probes /healthz and /readyz over HTTP on this `HOST:PORT`; :PORT is every interface (default: off)")
	fs.StringVar(&f.debug, "debug-listen", "",
		"serve Go's profiler (/debug/pprof/) on this `HOST:PORT`, such as 127.0.0.1:6060; a port alone is on loopback (default: off)")
	return f
}

// ConfigureOptions defines riot-worker's flags on fs (AddFlags), parses
// args with it (one-dash long flags such as -port read as --port), and
// returns the worker's Options (Flags.Options), logging to logs. It
// returns pflag.ErrHelp for -h and --help, after fs's Usage.
func ConfigureOptions(fs *pflag.FlagSet, args []string, logs io.Writer) (Options, error) {
	f := AddFlags(fs)
	if err := fs.Parse(cliflag.NormalizeArgs(fs, args, true)); err != nil {
		return Options{}, fmt.Errorf("worker: %w", err)
	}
	return f.Options(fs.Args(), logs)
}

// NoGPU reports whether --no-gpu was given: the worker offers no GPU
// devices. Without it, the caller opens the driver (OpenGPU) for
// Options.GPU.
func (f *Flags) NoGPU() bool { return f.noGPU }

// Options checks the parsed flags and the command line's positional
// arguments, args, which must be the tracker's HOST[:PORT] alone, and
// returns the worker's Options: its Logger writes to logs, as text, at
// --log-level; its Client reads --tls-ca's file now. GPU is left for the
// caller (NoGPU).
func (f *Flags) Options(args []string, logs io.Writer) (Options, error) {
	switch {
	case len(args) == 0:
		return Options{}, errors.New("the tracker's HOST is required")
	case len(args) > 1:
		return Options{}, fmt.Errorf("one HOST, not %d: %q", len(args), args)
	case strings.TrimSpace(args[0]) == "":
		return Options{}, errors.New("the tracker's HOST is empty (is $RIOT_TRACKER set, where a service passes it?)")
	}
	addr, err := trackerAddr(args[0], f.port)
	if err != nil {
		return Options{}, err
	}
	slots := f.slots.Or(runtime.NumCPU())
	if slots <= 0 {
		return Options{}, fmt.Errorf("--slots %d: want at least 1", slots)
	}
	prefetch := f.prefetch.Or(-1)
	if f.prefetch.Given() && prefetch < 0 {
		return Options{}, fmt.Errorf("--prefetch %d: want 0 or more", prefetch)
	}
	maxStuck := f.maxStuck.Or(0)
	if f.maxStuck.Given() && maxStuck <= 0 {
		return Options{}, fmt.Errorf("--max-stuck %d: want at least 1", maxStuck)
	}
	maxWaiting := f.maxWaiting.Or(0)
	if f.maxWaiting.Given() && maxWaiting <= 0 {
		return Options{}, fmt.Errorf("--max-waiting-parents %d: want at least 1", maxWaiting)
	}
	memory, err := f.memory.Bytes()
	if err != nil {
		return Options{}, err
	}
	token := f.token
	if token == "" {
		token = f.getenv("RIOT_TOKEN")
	}
	copts := client.Options{Token: token}
	if f.tlsCA != "" {
		if copts.TLSConfig, err = client.TLSConfigWithCA(f.tlsCA); err != nil {
			return Options{}, fmt.Errorf("--tls-ca: %w", err)
		}
	}
	grace := f.grace
	if grace <= 0 {
		grace = -1 // no grace: interrupt at once
	}
	for _, l := range []struct{ flag, addr, example string }{
		{"--metrics-listen", f.metrics, ":9090"},
		{"--debug-listen", f.debug, "127.0.0.1:6060"},
	} {
		if l.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return Options{}, fmt.Errorf("%s %q: want HOST:PORT or :PORT, such as %s: %w", l.flag, l.addr, l.example, err)
		}
	}
	logger, err := logfmt.New(logs, f.format, f.level)
	if err != nil {
		return Options{}, fmt.Errorf("--log-format: %w", err)
	}
	return Options{
		Tracker:        addr,
		Name:           f.name,
		Slots:          slots,
		Prefetch:       prefetchOption(prefetch),
		Grace:          grace,
		MaxStuck:       maxStuck,
		Engine:         engine.Options{Timeout: f.timeout, MemoryLimit: memory, MaxSeceded: maxWaiting},
		BlobCacheBytes: int64(f.cache),
		Client:         copts,
		Logger:         logger,
		MetricsListen:  f.metrics,
		DebugListen:    f.debug,
		// riot-worker has its process to itself: it paces the collector,
		// unless the user set it.
		GCPacing: GCPacing{Percent: f.getenv("GOGC") == "", SoftLimit: f.getenv("GOMEMLIMIT") == ""},
	}, nil
}

// trackerAddr joins HOST and --port: a port given twice must agree.
func trackerAddr(host string, port int) (string, error) {
	if port < 0 || port > 65535 {
		return "", fmt.Errorf("--port %d: out of range", port)
	}
	if strings.Contains(host, ",") {
		// The replicas of a replicated tracker, each with its port.
		if port != 0 {
			return "", errors.New("--port does not go with several addresses: put each one's port in it (HOST:PORT,HOST:PORT)")
		}
		if _, err := client.TrackerURLs(host); err != nil {
			return "", fmt.Errorf("%s: give HOST:PORT,HOST:PORT,... (the replicas of the tracker)", strings.TrimPrefix(err.Error(), "client: "))
		}
		return host, nil
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
		// An address that can never be dialed (http://, no host, a bad
		// port) is bad usage, not a tracker that is down to wait for.
		if _, err := client.TrackerURL(host); err != nil {
			return "", fmt.Errorf("%s: give HOST, HOST:PORT, ws://HOST[:PORT] or wss://HOST[:PORT]", strings.TrimPrefix(err.Error(), "client: "))
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

// prefetchOption maps --prefetch to Options.Prefetch: the flag's default
// (-1) leaves the worker to size its prefetch (0 there), and 0 means none
// (negative there).
func prefetchOption(flag int) int {
	switch {
	case flag < 0:
		return 0
	case flag == 0:
		return -1
	}
	return flag
}
