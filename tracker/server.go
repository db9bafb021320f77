package tracker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/riot-go/riot/internal/loopback"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riot-go/riot/tracker/dashboard"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Errors of the Server's lifecycle; test with errors.Is.
var (
	// ErrRunning: Run was called on a Server that has run already.
	ErrRunning = errors.New("tracker: server has run already")
	// ErrClosed: the server is shut down (or shutting down), so it cannot
	// answer.
	ErrClosed = errors.New("tracker: server closed")
)

// Server is riotd: the websocket endpoint, the connections, the loop that
// drives the workunit table, the store, and the status page. Make one with
// New, serve with Run, stop by ending Run's context or with Shutdown.
//
// A Server is safe for concurrent use: its methods may be called from any
// goroutine. It owns every goroutine it starts: one for the table, one
// that writes the store, the HTTP server's, and a reader and a writer per
// websocket; all have ended when Run returns.
type Server struct {
	opts    Options
	log     *slog.Logger
	name    string
	started time.Time

	st      store.Store // the store: the loop's persister writes each Ready's records
	durable bool        // records are written (false: memory mode)
	values  *valueCache // with durable: the results kept in memory (the store has them all)
	blobs   *blobBound  // a Memory store's blobs, counted toward MaxMemory
	pieces  sync.Pool   // of *[]byte: buffers of blob-part data, back once written
	// writeBufs holds the websockets' write buffers between frames.
	writeBufs sync.Pool
	// encoders holds the connections' frame encoders (*wire.Encoder, with
	// the options' limits) between writes: a writer holds one, and its
	// buffer, only while it writes (see conn.writeAll).
	encoders sync.Pool

	ln       net.Listener
	tls      bool           // ln serves TLS
	auth     *authenticator // nil: no credentials checked
	throttle *throttle      // slows down addresses that fail to authenticate
	nonce    [16]byte       // random, per run: realms of connections without a session
	http     *http.Server
	upgrader websocket.Upgrader
	metrics  *prometheus.Registry
	hist     histograms // of workunits' waits and runs, in metrics

	// The table's loop: everything that goes to it goes through these.
	lp    *loop
	in    chan *inbound    // from readers: hellos, frames, goodbyes
	calls chan func(*loop) // from other goroutines: run this in the loop

	baseCtx    context.Context // for store calls; canceled by a forced stop
	cancelBase context.CancelFunc

	ready    chan struct{} // closed when Run serves
	quit     chan struct{} // closed when shutdown begins
	loopDone chan struct{} // closed when the loop has ended
	stopped  chan struct{} // closed when shutdown is complete
	stopOnce sync.Once
	stopErr  error
	// fenced receives the first store error of store.ErrFenced: Run
	// stops the Server then, and returns it.
	fenced chan error

	stateMu  sync.Mutex
	running  bool // Run has started the loop
	quitting bool // Shutdown has begun

	nextConn atomic.Uint64

	liveMu  sync.Mutex
	live    map[*conn]struct{} // every websocket, for a forced stop
	closing bool               // no more connections
	connWG  sync.WaitGroup     // the connections' goroutines

	// handshakes holds a token for each connection whose hello has not
	// been accepted yet (Options.MaxHandshakes of them at most).
	handshakes chan struct{}

	// The dashboard: its logins, and a place for each open event stream.
	sessions   *sessions
	eventSlots chan struct{}
	dash       *dashboard.Dashboard // its pages and files, made by routes

	counters ioCounters
	// connLog bounds the lines about connections (connected, refused,
	// protocol error): a flood of hellos logs a summary, not a line each.
	connLog *logLimiter
}

// ioCounters count traffic, for metrics. Updated atomically by readers and
// writers.
type ioCounters struct {
	framesIn, messagesIn, bytesIn    atomic.Uint64
	framesOut, messagesOut, bytesOut atomic.Uint64
	dropped                          atomic.Uint64 // connections dropped for a full queue or a failed write
	authFailures                     atomic.Uint64 // hellos refused for their credentials
	forbidden                        atomic.Uint64 // requests refused for the connection's credentials
	refusedFull                      atomic.Uint64 // connections refused: tracker full
}

// New checks opts, opens the store (DataDir, or opts.Store, or memory),
// restores the table from it, and listens on opts.Listen. Serve with Run.
// The store and the listener are the Server's: Run and Shutdown close
// them, and so does New when it fails.
// DefaultPackBudget is Options.PackBudget's default: a short workunit
// waits about a millisecond at most behind the others given to its
// worker at once.
const DefaultPackBudget = time.Millisecond

func New(opts Options) (*Server, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	s := &Server{
		opts:     o,
		log:      o.logger(os.Stderr),
		started:  time.Now(),
		in:       make(chan *inbound, 256),
		calls:    make(chan func(*loop)),
		ready:    make(chan struct{}),
		quit:     make(chan struct{}),
		fenced:   make(chan error, 1),
		loopDone: make(chan struct{}),
		stopped:  make(chan struct{}),
		live:     make(map[*conn]struct{}),
	}
	s.handshakes = make(chan struct{}, o.MaxHandshakes)
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.connLog = newLogLimiter(s.log, logInterval, logBurst)
	s.throttle = newThrottle(time.Now)
	s.sessions = newSessions()
	s.eventSlots = make(chan struct{}, maxEventStreams)
	_, _ = rand.Read(s.nonce[:])
	creds := o.Tokens
	var tokenWarn string
	if o.TokenFile != "" {
		fc, warn, err := LoadTokenFile(o.TokenFile)
		if err != nil {
			return nil, err
		}
		creds, tokenWarn = append(slices.Clip(creds), fc...), warn
	}
	auth, err := newAuthenticator(creds)
	if err != nil {
		return nil, err
	}
	s.auth = auth
	tlsConf, err := o.serverTLS(s.log)
	if err != nil {
		return nil, err
	}

	// Listen first: a port that is taken fails before any store is made.
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("tracker: listen: %w", err)
	}
	var st store.Store
	switch {
	case o.Store != nil:
		st, s.durable = o.Store, true
	case o.DataDir != "":
		b, err := store.OpenBolt(s.baseCtx, o.DataDir, store.BoltOptions{Logger: s.log})
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("tracker: %w", err)
		}
		st, s.durable = b, true
	default:
		st = store.NewMemory()
	}
	s.st = st
	s.blobs = newBlobBound(o.MaxMemory, st, !s.durable, o.BlobGrace)
	if s.durable {
		s.values = newValueCache(o.ValueCache)
	}
	tab, restored, err := s.restore()
	if err != nil {
		s.st.Close()
		ln.Close()
		return nil, err
	}
	s.ln = ln
	if tlsConf != nil {
		s.ln, s.tls = tls.NewListener(ln, tlsConf), true
	}
	s.name = o.Name
	if s.name == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "riotd"
		}
		s.name = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	s.lp = newLoop(s, tab)
	if js, ok := s.st.(store.JobStore); ok {
		if jobs, err := js.LoadJobs(s.baseCtx); err != nil {
			s.log.Warn("riotd: the jobs of the last run could not be read; the status pages start without them", "err", err)
		} else {
			s.lp.act.restoreJobs(jobs, time.Now())
		}
	}
	s.upgrader = websocket.Upgrader{
		// What an idle connection holds (see docs/security.md): its
		// reads go through the 4 KiB buffer of the HTTP connection it
		// was (ReadBufferSize 0 reuses it; a frame's payload bigger than
		// it is read past it, into the frame), and it holds a write
		// buffer only while it writes a frame (WriteBufferPool; a
		// frame bigger than the buffer is written past it, from the
		// frame). With 64 KiB of each per connection, 1000 connections
		// that never said hello held 163 MiB.
		ReadBufferSize:  0,
		WriteBufferSize: writeBufferBytes,
		WriteBufferPool: &s.writeBufs,
		Subprotocols:    []string{wire.Subprotocol},
		// CheckOrigin nil: requests without an Origin header (every
		// non-browser client) and same-origin ones are allowed.
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "status", status, "err", reason)
			http.Error(w, http.StatusText(status)+": "+reason.Error(), status)
		},
	}
	s.metrics = s.newMetrics()
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
	where := o.DataDir
	if o.Store != nil {
		where = "(given store)"
	} else if !s.durable {
		where = "(memory: nothing is written)"
	}
	s.log.Info("riotd listening", "addr", s.Addr().String(), "url", s.URL(), "name", s.name, "data", where,
		"done", restored.Done, "error", restored.Error, "waiting", restored.Waiting)
	if o.KeepResults > 0 {
		s.log.Info("riotd: finished workunits are forgotten after a while", "keep_results", units.FormatDuration(o.KeepResults))
	}
	switch {
	case s.auth != nil:
		s.log.Info("riotd: masters and workers need a token", "credentials", len(s.auth.creds), "file", o.TokenFile)
		if tokenWarn != "" {
			s.log.Warn("riotd: " + tokenWarn)
		}
	case o.UnsafeNoAuth && !loopback.Host(hostOf(o.Listen)):
		s.log.Warn("riotd: no credentials (--unsafe-no-auth): anyone who can reach this address can run code on the workers and read every result",
			"addr", s.Addr().String())
	default:
		s.log.Warn("riotd: no credentials (no --token-file): listening on loopback only; anyone on this machine can run code on the workers",
			"addr", s.Addr().String())
	}
	if !s.tls && s.auth != nil && !loopback.Host(hostOf(o.Listen)) {
		s.log.Warn("riotd: tokens travel in clear text without TLS (--tls-cert, --tls-key), or put riotd behind a TLS proxy")
	}
	return s, nil
}

// chunkLoader is a store that gives its records back a chunk at a time
// (store.Bolt).
type chunkLoader interface {
	LoadStoredChunks(ctx context.Context, n int, fn func([]table.Record) error) error
}

// DefaultRestoreChunk is Options.RestoreChunk's default.
const DefaultRestoreChunk = 4096

// load restores tab from the store: a durable store's results stay in it
// until asked for, and one that gives its records a chunk at a time
// (chunkLoader) never holds them all as Records.
func (s *Server) load(tab *table.Table) error {
	if cl, ok := s.st.(chunkLoader); ok && s.durable {
		rs, err := tab.BeginRestore()
		if err != nil {
			return fmt.Errorf("tracker: restore: %w", err)
		}
		var addErr error
		err = cl.LoadStoredChunks(s.baseCtx, cmp.Or(s.opts.RestoreChunk, DefaultRestoreChunk), func(recs []table.Record) error {
			addErr = rs.Add(recs)
			return addErr
		})
		switch {
		case addErr != nil:
			return fmt.Errorf("tracker: restore: %w", addErr)
		case err != nil:
			return fmt.Errorf("tracker: load: %w", err)
		}
		rs.End()
		return nil
	}
	load := s.st.Load
	if s.durable {
		load = s.st.LoadStored
	}
	recs, err := load(s.baseCtx)
	if err != nil {
		return fmt.Errorf("tracker: load: %w", err)
	}
	if err := tab.Restore(recs); err != nil {
		return fmt.Errorf("tracker: restore: %w", err)
	}
	return nil
}

// restore makes the table and loads the stored records into it.
func (s *Server) restore() (*table.Table, table.Stats, error) {
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails
	maxWatches := s.opts.MaxWatchesPerMaster
	if maxWatches == 0 {
		maxWatches = -1 // no bound
	}
	tab := table.New(table.Config{
		MaxLost:             s.opts.MaxLost,
		MaxOpenPerOwner:     s.opts.MaxWaitingPerMaster,
		MaxWatchesPerMaster: maxWatches,
		LeaseTimeout:        s.opts.LeaseTimeout,
		LeaseGrace:          s.opts.LeaseGrace,
		MaxWorkerWindow:     s.opts.MaxWorkerWindow,
		KeepFinished:        s.opts.KeepResults,
		MaxBytes:            int64(s.opts.MaxMemory),
		// A durable store keeps every result: memory keeps a cache.
		ResultsInStore: s.durable,
		// Short workunits go to a worker several at a time (one frame).
		PackBudget: packBudget(s.opts.PackBudget),
		// Tokens of this run start above any an earlier run reached.
		FirstToken: table.Token(time.Now().UnixNano()),
		HashSeed:   binary.LittleEndian.Uint64(seed[:]),
	})
	if err := s.load(tab); err != nil {
		return nil, table.Stats{}, err
	}
	if st := tab.Stats(); s.opts.MaxMemory > 0 && st.Bytes >= int64(s.opts.MaxMemory) {
		s.log.Warn("the stored workunits fill --max-memory: new workunits are refused until some are forgotten (--keep-results) or the bound is raised",
			"held", units.FormatBytes(st.Bytes), "max_memory", units.FormatBytes(int64(s.opts.MaxMemory)), "workunits", st.Waiting+st.Running+st.Done+st.Error)
	}
	return tab, tab.Stats(), nil
}

// storedResult returns the result of done record id, which the table left
// in the store: from the value cache, else read from the store (and
// cached).
func (s *Server) storedResult(ctx context.Context, id uint64) ([]byte, error) {
	if s.values != nil {
		if v, ok := s.values.get(id); ok {
			return v, nil
		}
	}
	v, err := s.st.Result(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.values != nil {
		s.values.put(id, v)
	}
	return v, nil
}

// Addr returns the address the Server listens on, with the port it got
// when asked for port 0.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL returns the tracker's websocket URL: ws://ADDR/riot, or wss:// when
// it serves TLS.
func (s *Server) URL() string {
	scheme := "ws://"
	if s.tls {
		scheme = "wss://"
	}
	return scheme + s.Addr().String() + wire.Path
}

// Name returns the tracker's name, as Welcome gives it.
func (s *Server) Name() string { return s.name }

// Logger returns the logger the Server writes to (Options.Logger, or the
// one its LogLevel and LogFormat made).
func (s *Server) Logger() *slog.Logger { return s.log }

// Ready returns a channel that is closed once Run serves: the table's loop
// runs and connections are accepted. (Connections made between New and
// Run wait in the listen queue.)
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx ends or Shutdown is called, then shuts down
// gracefully within Options.ShutdownTimeout (see Shutdown), and returns
// the shutdown's error. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	s.stateMu.Lock()
	if s.running {
		s.stateMu.Unlock()
		return ErrRunning
	}
	if s.quitting {
		// Shut down before it ran.
		s.stateMu.Unlock()
		<-s.stopped
		return s.stopErr
	}
	s.running = true
	s.stateMu.Unlock()
	var wg sync.WaitGroup
	wg.Go(s.lp.run)
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- s.http.Serve(s.ln) })
	close(s.ready)
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("riotd: context ended", "why", context.Cause(ctx))
	case <-s.quit:
	case err = <-s.fenced:
		s.log.Warn("riotd: another tracker writes the store now: stopping (clients go to it and send again what was not acknowledged)", "err", err)
		err = fmt.Errorf("tracker: %w", err)
	case err = <-serveErr:
		if errors.Is(err, http.ErrServerClosed) {
			// Shutdown closed it: quit is closed too, and the select
			// took this case of the two.
			err = nil
			break
		}
		s.log.Error("riotd: serving failed", "err", err)
		err = fmt.Errorf("tracker: serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if serr := s.Shutdown(sctx); err == nil {
		err = serr
	}
	wg.Wait()
	return err
}

// fencedBy reports whether err says that another tracker writes the
// store now (store.ErrFenced); the first such error makes Run stop the
// Server.
func (s *Server) fencedBy(err error) bool {
	if !errors.Is(err, store.ErrFenced) {
		return false
	}
	select {
	case s.fenced <- err:
	default:
	}
	return true
}

// fencedNow asks a store that is a store.Fencer whether another tracker
// writes it now, and stops the Server if so (fencedBy).
func (s *Server) fencedNow() bool {
	f, ok := s.st.(store.Fencer)
	if !ok {
		return false
	}
	err := f.Fenced()
	return err != nil && s.fencedBy(err)
}

// Shutdown stops the Server gracefully: it stops accepting connections,
// lets the table's loop persist and send what it has, closes every
// websocket with CloseGoingAway (http.Server.Shutdown does not close
// hijacked connections such as websockets, so the Server does), waits for
// their goroutines, and flushes and closes the store. If ctx ends first,
// it closes what is left at once and returns ctx's error; the store is
// then closed only if no write is in flight. Run returns once the
// shutdown is complete. Calls after the first wait for it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stateMu.Lock()
		s.quitting = true
		running := s.running
		s.stateMu.Unlock()
		s.log.Info("riotd shutting down")
		close(s.quit)
		s.stopErr = s.shutdown(ctx, running)
		close(s.stopped)
	})
	select {
	case <-s.stopped:
		return s.stopErr
	case <-ctx.Done():
		return fmt.Errorf("tracker: shutdown: %w", ctx.Err())
	}
}

func (s *Server) shutdown(ctx context.Context, running bool) error {
	var errs []error
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tracker: shutdown: http: %w", err))
		s.http.Close()
	}
	if !running {
		s.ln.Close() // http.Shutdown closes only listeners it serves
		close(s.loopDone)
	}
	loopEnded := wait(ctx, s.loopDone)
	// The loop closed the connections it knew; close the others (those
	// still in their handshake) too.
	s.liveMu.Lock()
	s.closing = true
	for c := range s.live {
		c.closeAfter(wire.CloseGoingAway, "tracker shutting down")
	}
	s.liveMu.Unlock()
	connsDone := make(chan struct{})
	go func() { s.connWG.Wait(); close(connsDone) }()
	if !wait(ctx, connsDone) {
		s.log.Warn("riotd: shutdown timed out: closing connections at once")
		s.liveMu.Lock()
		for c := range s.live {
			c.ws.Close()
		}
		s.liveMu.Unlock()
		s.cancelBase()
		errs = append(errs, fmt.Errorf("tracker: shutdown: %w", ctx.Err()))
	}
	if loopEnded {
		if err := s.st.Close(); err != nil {
			errs = append(errs, fmt.Errorf("tracker: shutdown: %w", err))
		}
	} else {
		errs = append(errs, fmt.Errorf("tracker: shutdown: the table's loop did not end (a store write hangs): %w", ctx.Err()))
	}
	s.cancelBase()
	s.log.Info("riotd stopped")
	return errors.Join(errs...)
}

// wait waits for ch to be closed or ctx to end, and reports which.
func wait(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// handshakeSlack is how many websockets beyond Options.MaxConns may be
// open at once, in their handshake: the loop refuses those past MaxConns
// at their hello, with a reason; past the slack they are refused at once.
func handshakeSlack(maxConns int) int { return min(max(maxConns/4, 16), 1024) }

// trackResult is what track decided.
type trackResult uint8

const (
	tracked      trackResult = iota
	trackClosing             // the server is shutting down
	trackFull                // too many websockets
)

// track registers a new websocket, unless the server is closing or has
// too many.
func (s *Server) track(c *conn) trackResult {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if s.closing {
		return trackClosing
	}
	if n := s.opts.MaxConns; n > 0 && len(s.live) >= n+handshakeSlack(n) {
		return trackFull
	}
	s.live[c] = struct{}{}
	s.connWG.Add(1)
	return tracked
}

func (s *Server) untrack(c *conn) {
	s.liveMu.Lock()
	delete(s.live, c)
	s.liveMu.Unlock()
	s.connWG.Done()
}

// do runs f in the table's loop and waits for it.
func (s *Server) do(ctx context.Context, f func(*loop)) error {
	done := make(chan struct{})
	call := func(l *loop) { f(l); close(done) }
	select {
	case s.calls <- call:
	case <-s.loopDone:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("tracker: %w", ctx.Err())
	}
	<-done
	return nil
}

// Stats returns counts of what the tracker holds now.
func (s *Server) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.do(ctx, func(l *loop) { st = l.stats() })
	return st, err
}

// WaitStats waits until cond holds for the tracker's Stats, and returns
// them. cond is called in the table's loop whenever the tracker is idle
// (every Ready it made is persisted, sent and advanced), after whatever
// changed; it must be quick and must not call the Server. So when
// WaitStats returns, the state it saw is durable and its messages are on
// their way. It returns ErrClosed when the server stops first, or ctx's
// error.
func (s *Server) WaitStats(ctx context.Context, cond func(Stats) bool) (Stats, error) {
	w := &waiter{cond: cond, ch: make(chan Stats, 1)}
	if err := s.do(ctx, func(l *loop) { l.addWaiter(w) }); err != nil {
		return Stats{}, err
	}
	select {
	case st := <-w.ch:
		return st, nil
	case <-s.loopDone:
		select {
		case st := <-w.ch:
			return st, nil
		default:
			return Stats{}, ErrClosed
		}
	case <-ctx.Done():
		_ = s.do(context.Background(), func(l *loop) { l.removeWaiter(w) })
		return Stats{}, fmt.Errorf("tracker: %w", ctx.Err())
	}
}

// Lookup returns the table's record of key as it stands, and whether the
// table has it: for inspection (tests, admin tools). Masters ask with
// Info. The record's byte slices are shared with the table: read them,
// never modify them. It looks in every memo scope, the scope "" (that of
// every master without credentials or with SharedCache) first; LookupIn
// looks in one.
func (s *Server) Lookup(ctx context.Context, key workunit.Key) (table.Record, bool, error) {
	var rec table.Record
	var ok bool
	err := s.do(ctx, func(l *loop) { rec, ok = l.tab.Lookup(key) })
	return rec, ok, err
}

// LookupIn is Lookup in the memo scope of a credential's masters: its
// name (see Credential.Name and Options.SharedCache).
func (s *Server) LookupIn(ctx context.Context, scope string, key workunit.Key) (table.Record, bool, error) {
	var rec table.Record
	var ok bool
	err := s.do(ctx, func(l *loop) { rec, ok = l.tab.LookupIn(scope, key) })
	return rec, ok, err
}

// packBudget is the table's Config.PackBudget for Options.PackBudget.
func packBudget(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultPackBudget
	case d < 0:
		return 0
	}
	return d
}
