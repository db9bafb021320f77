package tracker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/riot-go/riot/internal/logfmt"
	"github.com/riot-go/riot/internal/loopback"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/riot-go/riot/internal/cliflag"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/wire"
)

// Defaults for Options fields left zero.
const (
	// MinFrameBytes is the least Limits.MaxFrameBytes riotd takes: less
	// would refuse hellos, errors and most specs.
	MinFrameBytes = 64 << 10
	// DefaultTickInterval is how often the tracker gives the table the
	// time: lease deadlines are checked, and LastChange stamped, at this
	// resolution.
	DefaultTickInterval = 100 * time.Millisecond
	// DefaultWriteTimeout is how long a write of one frame may take before
	// the connection is dropped.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultShutdownTimeout bounds the graceful shutdown that Run does
	// when its context ends.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultLeaseTimeout is riotd's --lease-timeout: a worker that holds
	// a workunit without a time limit for an hour without progress loses
	// it. Generous: a workunit that runs longer needs a time limit of its
	// own, or a longer --lease-timeout.
	DefaultLeaseTimeout = time.Hour
	// DefaultQueueBytes bounds what may wait to be written to one
	// connection (about: each message counts 64 bytes plus its payload).
	DefaultQueueBytes = 256 << 20
	// DefaultMaxConns is riotd's --max-conns (Options.MaxConns zero means
	// no bound).
	DefaultMaxConns = 10000
	// DefaultMaxWatches is riotd's --max-watches (Options.MaxWatchesPerMaster
	// zero means no bound): 2^20 keys waited for per master connection.
	DefaultMaxWatches = table.DefaultMaxWatchesPerMaster
)

// Options configure a Server. The zero Options are usable: every zero field
// takes its documented default, and no data directory means memory only.
// ConfigureOptions (or AddFlags and Flags.Options) fills Options from
// riotd's command-line flags.
type Options struct {
	// Listen is the address to listen on, HOST:PORT (HOST empty: every
	// interface; PORT 0: any free port, see Server.Addr). Default:
	// port 2355 (wire.DefaultPort) on every interface when credentials
	// are configured, else on 127.0.0.1 only. Without credentials, a HOST
	// that is not loopback needs UnsafeNoAuth.
	Listen string
	// TokenFile is a file of credentials (see ParseTokens), read by New;
	// Tokens adds more (for programs that embed the tracker). With
	// neither, no credentials are checked: anyone who can connect may
	// submit work and take it.
	TokenFile string
	Tokens    []Credential
	// UnsafeNoAuth allows a Listen address other than loopback without
	// credentials: anyone who can reach the address can run code on the
	// workers and read every result.
	UnsafeNoAuth bool
	// TLSCertFile and TLSKeyFile (PEM) make the tracker serve TLS (wss://
	// and https://). The files are read again when the certificate file
	// changes, so a renewed certificate needs no restart. TLSConfig, when
	// not nil, is used instead (its Certificates or GetCertificate).
	TLSCertFile, TLSKeyFile string
	TLSConfig               *tls.Config
	// DataDir is the directory of the durable store (store.FileName in
	// it), created if need be. Empty: nothing is written to disk, and a
	// restart forgets everything.
	DataDir string
	// Store, when not nil, is used instead of DataDir as the durable
	// store (for tests, e.g. a fake that blocks or fails). The Server owns
	// it from New on and closes it.
	Store store.Store
	// Name is the tracker's name in Welcome and on the status page.
	// Default: the host name and the port.
	Name string
	// PingInterval is how often the tracker pings each connection
	// (wire.DefaultPingInterval if zero). A connection that sends nothing,
	// not even a pong, for wire.ReadTimeout(PingInterval) is dropped.
	PingInterval time.Duration
	// WriteTimeout bounds the write of one frame (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// TickInterval is how often the table gets the time
	// (DefaultTickInterval).
	TickInterval time.Duration
	// MaxLost is how many lost deliveries fail a workunit
	// (table.DefaultMaxLost if zero).
	MaxLost int
	// LeaseTimeout takes a workunit without a time limit back from a
	// worker that holds it longer without progress: without answering it,
	// or a workunit it was given before it (see table.Config.LeaseTimeout).
	// 0: never; only a lost connection takes it back. riotd's
	// --lease-timeout defaults to DefaultLeaseTimeout. LeaseGrace is added
	// to a workunit's own time limit to get its lease
	// (table.DefaultLeaseGrace if zero).
	LeaseTimeout, LeaseGrace time.Duration
	// MaxWorkerWindow bounds what one worker may hold: its Hello's slots
	// plus prefetch. A worker that declares more connects, but holds at
	// most this many workunits (and runs at most this many at once),
	// whatever credit it grants; the log says so (a warning when its
	// slots alone pass the bound). table.DefaultMaxWorkerWindow if zero;
	// negative: no bound.
	MaxWorkerWindow int
	// SharedCache makes masters of different credentials share their
	// memoized results: a submission is answered from, or joins, a
	// workunit that any master submitted. By default (false), with
	// credentials, each master credential has its results to itself, so
	// that a master cannot make its result (or one its worker forged) the
	// answer of another credential's submissions. Without credentials
	// every master shares one cache either way.
	SharedCache bool
	// KeepResults is how long a finished workunit's result (or error) is
	// kept after it finished; then it is forgotten, in memory and in the
	// store, and a submission of its key runs it again. 0: kept for good
	// (Riot's memoization).
	KeepResults time.Duration
	// BlobGrace is how long, without a durable store, a blob that nothing
	// names any more (no workunit the tracker holds, no connection that
	// uploaded it) stays before it is freed: a master may still read a
	// result's blob just after its workunit is forgotten.
	// DefaultBlobGrace if zero.
	BlobGrace time.Duration
	// PackBudget lets the tracker give a worker several short workunits
	// at once (in one frame), rather than one to each of as many
	// workers: a worker with room takes up to PackBudget divided by the
	// mean run time of the same master's recent workunits, at most
	// table.MaxPack (see table.Config.PackBudget), so each waits behind
	// the others of its pack about PackBudget at most. It is what keeps
	// many workers of few slots fed with trivial work. A master whose
	// workunits turn from short to long at once may see up to
	// table.MaxPack of the first long ones given to one worker, run one
	// after the other there. DefaultPackBudget if zero; negative: one
	// workunit a worker in turn, always.
	PackBudget time.Duration
	// RestoreChunk is how many records a durable store's restore decodes
	// at a time, and the table takes at once, at the start: a store that
	// gives them a chunk at a time (store.Bolt) never holds all of them as
	// records. DefaultRestoreChunk if zero.
	RestoreChunk int
	// ValueCache bounds, in bytes, the finished results a tracker with a
	// durable store (DataDir, Store) keeps in memory, the most recently
	// used: the store has them all, and a result not in memory is read
	// from it when a master, worker or page asks for it.
	// DefaultValueCache if zero; negative: none kept.
	ValueCache int
	// MaxMemory bounds, in bytes, what the tracker holds in memory for
	// workunits: about 160 bytes a workunit it knows (table.RecordBytes),
	// the specs of waiting and running ones, the results of done ones
	// that are not in the store (all of them without a durable store;
	// with one, only those not written yet) and the errors of failed
	// ones; with a store that keeps its blobs in memory (no durable
	// store), the blobs it holds too (an upload that would pass it is
	// refused the same way). The value cache (ValueCache), connection
	// queues and blobs in files are bounded apart. A submission of a
	// new workunit that would pass it
	// is refused with wire.CodeMemoryFull (wire.ErrMemoryFull) and a
	// message that says how much is held and what to do; nothing of it
	// is stored. Submissions that join open work or are answered from a
	// kept result are served, and the results of accepted work are taken
	// past it. 0: no bound.
	MaxMemory int
	// QueueBytes bounds the messages waiting to be written to one
	// connection (DefaultQueueBytes); a connection whose peer does not
	// read them is dropped when they pass it. It is raised to at least
	// twice Limits.MaxFrameBytes.
	QueueBytes int
	// MaxConns bounds the connections at once; more are refused with
	// wire.CodeFull. Connections still in their handshake count too,
	// beyond MaxConns up to a small slack. 0: no bound.
	MaxConns int
	// MaxHandshakes bounds the connections whose hello has not been
	// accepted yet (DefaultMaxHandshakes if zero): more are refused at
	// once with wire.CodeFull, and clients try again. Each of them holds
	// at most a hello's frame (32 KiB) and its connection's buffers until
	// it says hello or its read timeout passes, so this bounds what peers
	// without credentials can make the tracker hold.
	MaxHandshakes int
	// MaxWaitingPerMaster bounds the workunits of one master that are
	// waiting or running: a Submit that would make one more is refused
	// with wire.CodeLimit, and stored nowhere. A master is a credential
	// (its name in the token file), whatever its sessions and
	// connections; without credentials, the name a Hello asks for. 0: no
	// bound.
	MaxWaitingPerMaster int
	// MaxWatchesPerMaster bounds the pending watches of one master
	// connection (the keys it waits for: a connection's watches of one
	// key are one): a watch, or a submit with watch, that would make one
	// more is refused with wire.CodeLimit. 0: no bound (riotd's
	// --max-watches defaults to DefaultMaxWatches).
	MaxWatchesPerMaster int
	// Limits are what the tracker enforces on frames and announces in
	// Welcome; zero fields take wire's defaults.
	Limits wire.Limits
	// ShutdownTimeout bounds the graceful shutdown that Run does when its
	// context ends (DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// Replicas, when not nil, reports the replicas of a replicated
	// tracker (package tracker/replica, which sets it) for the status
	// page: GET /status's "replicas", and a line each on GET /. It is
	// called on each request, off the table's loop. Nil for a single
	// riotd.
	Replicas func(ctx context.Context) []ReplicaStatus
	// AdminRoutes are more HTTP handlers that change state, by pattern
	// (http.ServeMux's, e.g. "POST /api/v1/replicas"): a replicated
	// tracker's membership changes. With credentials they need an admin's
	// token (RoleAdmin) in the request's Authorization header (not a
	// master's: a replica added gets every job's data); without, a
	// request for a loopback host from riotd's own origin.
	AdminRoutes map[string]http.HandlerFunc
	// Collectors are more Prometheus collectors for GET /metrics (a
	// replicated tracker's riot_replica_* metrics).
	Collectors []prometheus.Collector
	// Logger receives the tracker's logs. Nil: a handler of LogFormat at
	// LogLevel, writing to standard error.
	Logger *slog.Logger
	// LogLevel and LogFormat ("text" or "json"; "" is text) make the
	// logger when Logger is nil.
	LogLevel  slog.Level
	LogFormat string
}

// DefaultDataDir returns where riotd keeps its store unless told
// otherwise: $XDG_STATE_HOME/riot, else $HOME/.local/state/riot, else
// ./riot-data. getenv reads the environment (os.Getenv).
func DefaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "riot")
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "riot")
	}
	return "riot-data"
}

const helpText = `riotd: the riot tracker

Usage:
  riotd [--port 2355] [--listen HOST[:PORT]] [--data DIR | --memory]
        [--token-file FILE] [--tls-cert FILE --tls-key FILE] [flags]
  riotd --version                       print the version and the build
  riotd completion bash|zsh|fish        print a shell completion script

riotd hands workunits from masters to workers and results back. Masters and
workers connect to ws://HOST:PORT/riot (wss:// with --tls-cert); GET /status
shows the tracker's state and GET /metrics serves Prometheus metrics, on the
same port.

Without --token-file, riotd checks no credentials and listens on 127.0.0.1
only; anyone who can connect may run code on the workers. With it, masters
and workers must give a token (--token or RIOT_TOKEN). See docs/security.md.

Workunits and results are kept in DIR/tracker.db (default %s),
so finished results survive a restart. --memory (or --data "") keeps
everything in memory instead: nothing is written, and a restart forgets all.

Exit status: 0 after a clean stop (SIGINT or SIGTERM), 1 on failure, 2 for
bad usage.
`

// Flags are riotd's command-line flags, registered on a FlagSet by
// AddFlags. Once the FlagSet has parsed a command line, Options returns
// the Options they give.
type Flags struct {
	fs      *pflag.FlagSet
	o       Options
	port    int
	memory  bool
	pack    time.Duration
	defData string
}

// AddFlags defines riotd's flags on fs (their names, defaults and help are
// riotd's, documented in docs/riotd.md) and returns them, for Options
// after fs has parsed the command line.
func AddFlags(fs *pflag.FlagSet) *Flags { return addFlags(fs, os.Getenv) }

func addFlags(fs *pflag.FlagSet, getenv func(string) string) *Flags {
	f := &Flags{fs: fs, defData: DefaultDataDir(getenv), pack: DefaultPackBudget}
	o := &f.o
	fs.IntVar(&f.port, "port", wire.DefaultPort, "TCP `port` to listen on")
	fs.StringVar(&o.Listen, "listen", "", "address to listen on, `HOST[:PORT]` (default: every interface with --token-file, else 127.0.0.1; --port)")
	fs.StringVar(&o.TokenFile, "token-file", "", "`file` of credentials, lines of \"master TOKEN\", \"worker TOKEN\", \"viewer TOKEN\" or \"admin TOKEN\" (default: none checked, loopback only)")
	fs.BoolVar(&o.UnsafeNoAuth, "unsafe-no-auth", false,
		"allow --listen on an address other than loopback without --token-file: anyone who reaches it can run code on the workers")
	fs.StringVar(&o.TLSCertFile, "tls-cert", "", "serve TLS (wss://) with this certificate chain `file` (PEM); needs --tls-key")
	fs.StringVar(&o.TLSKeyFile, "tls-key", "", "the private key `file` (PEM) of --tls-cert")
	fs.StringVar(&o.DataDir, "data", f.defData, "`directory` of the durable store; \"\" keeps everything in memory")
	fs.BoolVar(&f.memory, "memory", false, "keep everything in memory, write nothing (same as --data \"\")")
	fs.StringVar(&o.Name, "name", "", "the tracker's `name` in welcomes and on the status page (default: host:port)")
	o.PingInterval, o.WriteTimeout = wire.DefaultPingInterval, DefaultWriteTimeout
	o.LeaseGrace, o.ShutdownTimeout = table.DefaultLeaseGrace, DefaultShutdownTimeout
	o.LeaseTimeout, o.MaxWorkerWindow = DefaultLeaseTimeout, table.DefaultMaxWorkerWindow
	o.QueueBytes, o.Limits.MaxFrameBytes = DefaultQueueBytes, wire.DefaultMaxFrameBytes
	o.Limits.MaxBlobBytes = wire.DefaultMaxBlobBytes
	o.LogLevel = slog.LevelInfo
	fs.Var(cliflag.Duration(&o.PingInterval), "ping-interval",
		"how often to ping each connection (a `duration`); one silent for twice this is dropped")
	fs.Var(cliflag.Duration(&o.WriteTimeout), "write-timeout", "drop a connection whose frame takes longer than this `duration` to write")
	fs.IntVar(&o.MaxLost, "max-lost", table.DefaultMaxLost, "fail a workunit after `N` lost deliveries")
	fs.Var(cliflag.Duration(&o.LeaseTimeout), "lease-timeout",
		"take a workunit without a time limit back from a worker that holds it this `duration` without progress (0: never)")
	fs.IntVar(&o.MaxWorkerWindow, "max-worker-window", table.DefaultMaxWorkerWindow,
		"a worker holds at most `N` workunits (running and queued), whatever slots and prefetch it declares")
	fs.BoolVar(&o.SharedCache, "shared-cache", false,
		"masters of different credentials trust each other: share memoized results between them (default: each master credential has its own)")
	fs.Var(cliflag.Duration(&o.LeaseGrace), "lease-grace",
		"`duration` added to a workunit's time limit before the tracker takes it back")
	fs.Var(cliflag.Duration(&o.KeepResults), "keep-results",
		"keep a finished workunit's result for this `duration` after it finished, e.g. 30d or 12h, then forget it (0: keep every result)")
	fs.Var(cliflag.Duration(&o.BlobGrace), "blob-grace",
		"with --memory: free a blob this `duration` after nothing names it any more (no workunit held, no connection that uploaded it)")
	fs.Var(cliflag.Duration(&f.pack), "pack-budget",
		"give a worker several short workunits at once, each waiting behind the others at most about this `duration` "+
			"(by the recent run times of its master's workunits; 0: one at a time to each worker in turn)")
	fs.Var(cliflag.Size(&o.ValueCache), "value-cache",
		"with --data, keep at most this many `bytes` of finished results in memory, e.g. 256MiB (the store has them all; 0: the default)")
	fs.Var(cliflag.Size(&o.MaxMemory), "max-memory",
		"refuse new workunits while the tracker holds this many `bytes` for workunits, e.g. 2GiB: about 160 bytes each, "+
			"the specs of waiting and running ones, and the results and errors of finished ones (with --data, results written to the store "+
			"are not counted: --value-cache bounds those kept in memory); work already accepted is kept (0: no limit)")
	fs.IntVar(&o.MaxConns, "max-conns", DefaultMaxConns, "refuse connections beyond `N` (0: no limit)")
	fs.IntVar(&o.MaxHandshakes, "max-handshakes", DefaultMaxHandshakes,
		"refuse connections beyond `N` that have not said hello yet, at once (they try again)")
	fs.IntVar(&o.MaxWaitingPerMaster, "max-waiting", 0,
		"refuse submissions of a master (a credential; without tokens, a master name) that has `N` workunits waiting or running (0: no limit)")
	fs.IntVar(&o.MaxWatchesPerMaster, "max-watches", DefaultMaxWatches,
		"refuse a watch of a master connection that waits for `N` workunits already (0: no limit)")
	fs.Var(cliflag.Size(&o.QueueBytes), "queue-bytes",
		"drop a connection when this many `bytes` wait to be written to it, e.g. 256MiB")
	fs.Var(cliflag.Size(&o.Limits.MaxFrameBytes), "max-frame-bytes", "largest frame accepted, in `bytes`, e.g. 64MiB")
	fs.Var(cliflag.Size(&o.Limits.MaxBlobBytes), "max-blob-bytes",
		"largest value (captured variable, argument, result) or module accepted, in `bytes`, e.g. 4GiB; larger than a frame travels in pieces")
	fs.Var(cliflag.Duration(&o.ShutdownTimeout), "shutdown-timeout", "bound on the graceful shutdown, a `duration`")
	fs.Var(cliflag.LogLevel(&o.LogLevel), "log-level", "log `level`: debug, info, warn or error")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log `format`: text or json")
	return f
}

// Help is riotd's help, before the list of its flags: what it does, the
// data directory it will use, and its exit status.
func (f *Flags) Help() string { return fmt.Sprintf(helpText, f.defData) }

// ConfigureOptions defines riotd's flags on fs (AddFlags), parses args
// with it, and returns the Options they give, defaults applied and
// checked. One-dash long flags (-port) are read as two-dash ones
// (cliflag.NormalizeArgs). It returns pflag.ErrHelp (wrapped) for -h and
// --help, after printing the help (Help and the flags) to fs.Output().
// Positional arguments are an error: riotd takes none.
func ConfigureOptions(fs *pflag.FlagSet, args []string) (Options, error) {
	return configureOptions(fs, args, os.Getenv)
}

func configureOptions(fs *pflag.FlagSet, args []string, getenv func(string) string) (Options, error) {
	f := addFlags(fs, getenv)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "%s\nFlags:\n%s", f.Help(), fs.FlagUsages()) }
	if err := fs.Parse(cliflag.NormalizeArgs(fs, args, true)); err != nil {
		return Options{}, fmt.Errorf("tracker: %w", err)
	}
	return f.Options(fs.Args())
}

// Options returns the Options that the parsed flags give, defaults
// applied and checked; args are the command line's positional arguments,
// an error unless there are none (riotd takes only flags). A token file
// is read, so that a bad one is a usage error.
func (f *Flags) Options(args []string) (Options, error) {
	if len(args) > 0 {
		return Options{}, fmt.Errorf("tracker: unexpected argument %q (riotd takes only flags)", args[0])
	}
	o, set := f.o, f.fs.Changed
	// In Options, zero means the default; on the command line it would
	// say the opposite of what it does.
	for name, zero := range map[string]bool{
		"ping-interval": o.PingInterval == 0, "write-timeout": o.WriteTimeout == 0,
		"shutdown-timeout": o.ShutdownTimeout == 0, "queue-bytes": o.QueueBytes == 0,
		"max-frame-bytes": o.Limits.MaxFrameBytes == 0, "max-blob-bytes": o.Limits.MaxBlobBytes == 0,
		"max-handshakes": o.MaxHandshakes == 0, "max-worker-window": o.MaxWorkerWindow == 0,
	} {
		if set(name) && zero {
			return Options{}, fmt.Errorf("tracker: --%s 0: want more than 0 (leave the flag out for its default)", name)
		}
	}
	// --pack-budget 0 is off (negative in Options; the flag takes no
	// negative duration).
	o.PackBudget = f.pack
	if f.pack == 0 {
		o.PackBudget = -1
	}
	if f.memory {
		if set("data") && o.DataDir != "" {
			return Options{}, errors.New("tracker: --memory and --data DIR disagree: choose one")
		}
		o.DataDir = ""
	}
	listen, err := listenAddr(o.Listen, f.port, set("port"))
	if err != nil {
		return Options{}, err
	}
	if o.Listen == "" && !o.authConfigured() {
		listen = net.JoinHostPort(loopbackAddr, strconv.Itoa(f.port))
	}
	o.Listen = listen
	if o.TokenFile != "" {
		// Read it now too, so that a bad file is a usage error.
		if _, _, err := LoadTokenFile(o.TokenFile); err != nil {
			return Options{}, err
		}
	}
	if err := o.check(); err != nil {
		return Options{}, err
	}
	return o, nil
}

// listenAddr merges --listen and --port into HOST:PORT.
func listenAddr(listen string, port int, portSet bool) (string, error) {
	if port < 0 || port > 65535 {
		return "", fmt.Errorf("tracker: --port %d: not a TCP port", port)
	}
	ps := strconv.Itoa(port)
	if listen == "" {
		return net.JoinHostPort("", ps), nil
	}
	host, lp, err := net.SplitHostPort(listen)
	if err != nil {
		// No port: HOST alone, maybe an IPv6 address, maybe in brackets.
		host = strings.TrimSuffix(strings.TrimPrefix(listen, "["), "]")
		if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
			return "", fmt.Errorf("tracker: --listen %q: want HOST or HOST:PORT", listen)
		}
		return net.JoinHostPort(host, ps), nil
	}
	n, err := strconv.Atoi(lp)
	if err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("tracker: --listen %q: %q is not a TCP port", listen, lp)
	}
	if portSet && n != port {
		return "", fmt.Errorf("tracker: --port %d and --listen %s disagree", port, listen)
	}
	return net.JoinHostPort(host, lp), nil
}

// check reports options that make no sense.
func (o *Options) check() error {
	switch {
	case o.PingInterval < 0:
		return fmt.Errorf("tracker: ping interval %v is negative", o.PingInterval)
	case o.WriteTimeout < 0:
		return fmt.Errorf("tracker: write timeout %v is negative", o.WriteTimeout)
	case o.TickInterval < 0:
		return fmt.Errorf("tracker: tick interval %v is negative", o.TickInterval)
	case o.MaxLost < 0:
		return fmt.Errorf("tracker: max lost %d is negative", o.MaxLost)
	case o.LeaseTimeout < 0 || o.LeaseGrace < 0:
		return errors.New("tracker: lease timeout and grace must not be negative")
	case o.KeepResults < 0:
		return fmt.Errorf("tracker: keep results %v is negative", o.KeepResults)
	case o.BlobGrace < 0:
		return fmt.Errorf("tracker: blob grace %v is negative", o.BlobGrace)
	case o.QueueBytes < 0:
		return fmt.Errorf("tracker: queue bytes %d is negative", o.QueueBytes)
	case o.MaxConns < 0:
		return fmt.Errorf("tracker: max conns %d is negative", o.MaxConns)
	case o.MaxHandshakes < 0:
		return fmt.Errorf("tracker: max handshakes %d is negative", o.MaxHandshakes)
	case o.Limits.MaxFrameBytes > 0 && o.Limits.MaxFrameBytes < MinFrameBytes:
		return fmt.Errorf("tracker: max frame bytes %d: at least %d, or no hello fits", o.Limits.MaxFrameBytes, MinFrameBytes)
	case o.PingInterval > 0 && o.PingInterval < time.Millisecond:
		return fmt.Errorf("tracker: ping interval %v is under a millisecond", o.PingInterval)
	case o.PingInterval > time.Duration(1<<32-1)*time.Millisecond:
		return fmt.Errorf("tracker: ping interval %v is too long", o.PingInterval)
	}
	switch o.LogFormat {
	case "", "text", "json":
	default:
		return fmt.Errorf("tracker: log format %q: want text or json", o.LogFormat)
	}
	switch {
	case o.MaxWaitingPerMaster < 0:
		return fmt.Errorf("tracker: max waiting %d is negative", o.MaxWaitingPerMaster)
	case o.MaxMemory < 0:
		return fmt.Errorf("tracker: max memory %d is negative (0: no limit)", o.MaxMemory)
	case o.MaxWatchesPerMaster < 0:
		return fmt.Errorf("tracker: max watches %d is negative (0: no limit)", o.MaxWatchesPerMaster)
	case (o.TLSCertFile == "") != (o.TLSKeyFile == ""):
		return errors.New("tracker: --tls-cert and --tls-key go together: give both or neither")
	}
	if !o.authConfigured() && !o.UnsafeNoAuth && o.Listen != "" {
		host, _, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return fmt.Errorf("tracker: listen address %q: %w", o.Listen, err)
		}
		if !loopback.Host(host) {
			shown := host
			if shown == "" {
				shown = "every interface"
			}
			return fmt.Errorf("tracker: listening on %s (%s) without --token-file lets anyone who reaches it run code on your workers; "+
				"give --token-file FILE, or --unsafe-no-auth if that is what you want", shown, o.Listen)
		}
	}
	return nil
}

// loopbackAddr is the host riotd listens on by default without credentials.
const loopbackAddr = "127.0.0.1"

// authConfigured reports whether the options give credentials to check.
func (o *Options) authConfigured() bool { return o.TokenFile != "" || len(o.Tokens) > 0 }

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Listen == "" {
		host := ""
		if !o.authConfigured() {
			host = loopbackAddr
		}
		o.Listen = net.JoinHostPort(host, strconv.Itoa(wire.DefaultPort))
	}
	if o.PingInterval == 0 {
		o.PingInterval = wire.DefaultPingInterval
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.TickInterval == 0 {
		o.TickInterval = DefaultTickInterval
	}
	if o.BlobGrace == 0 {
		o.BlobGrace = DefaultBlobGrace
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.MaxHandshakes == 0 {
		o.MaxHandshakes = DefaultMaxHandshakes
	}
	if o.MaxWorkerWindow == 0 {
		o.MaxWorkerWindow = table.DefaultMaxWorkerWindow
	}
	o.Limits = o.Limits.WithDefaults()
	// One message carrying the largest field must fit in a frame.
	room := min(64<<10, o.Limits.MaxFrameBytes/4)
	most := o.Limits.MaxFrameBytes - room
	o.Limits.MaxSpecBytes = min(o.Limits.MaxSpecBytes, most)
	o.Limits.MaxResultBytes = min(o.Limits.MaxResultBytes, most)
	// Blobs larger than a frame travel in pieces: MaxBlobBytes bounds a
	// whole blob, not a message.
	if o.ValueCache == 0 {
		o.ValueCache = DefaultValueCache
	}
	if o.ValueCache < 0 {
		o.ValueCache = 0
	}
	if o.QueueBytes == 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	o.QueueBytes = max(o.QueueBytes, 2*o.Limits.MaxFrameBytes)
	return o
}

// logger returns the logger the options ask for.
func (o *Options) logger(stderr io.Writer) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	log, err := logfmt.New(stderr, o.LogFormat, o.LogLevel)
	if err != nil { // checked by validate: not reached
		log, _ = logfmt.New(stderr, logfmt.Text, o.LogLevel)
	}
	return log
}
