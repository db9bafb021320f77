package replica

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/riot-go/riot/internal/logfmt"
	"github.com/riot-go/riot/internal/loopback"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/store"
)

// Peer is one replica of the cluster: its stable ID, the address of its
// replication port (Raft) and its client address (where masters and
// workers reach the tracker when it leads).
type Peer struct {
	ID     string
	Raft   string // host:port
	Client string // host:port
}

// ParsePeers parses riotd's --peers: a comma-separated list of
// ID=RAFTADDR=CLIENTADDR, e.g. "a=10.0.0.1:2356=10.0.0.1:2355,b=...".
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "=")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("replica: --peers item %d %q: want ID=RAFTHOST:PORT=CLIENTHOST:PORT", i+1, item)
		}
		for _, a := range parts[1:] {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("replica: --peers item %d %q: address %q: %w", i+1, item, a, err)
			}
		}
		if seen[parts[0]] {
			return nil, fmt.Errorf("replica: --peers: replica ID %q appears twice", parts[0])
		}
		seen[parts[0]] = true
		peers = append(peers, Peer{ID: parts[0], Raft: parts[1], Client: parts[2]})
	}
	if len(peers) == 0 {
		return nil, errors.New("replica: --peers is empty: list every replica as ID=RAFTHOST:PORT=CLIENTHOST:PORT")
	}
	return peers, nil
}

// Config configures a Replica.
type Config struct {
	// ID is this replica's stable ID: one of Peers.
	ID string
	// DataDir is the replica's directory (raft's log and snapshots, and
	// the local store); required.
	DataDir string
	// Peers are every replica of the cluster, this one included: the
	// first configuration of a new cluster, and where clients are sent to
	// find the leader.
	Peers []Peer
	// Join makes a new replica wait to be added by the leader (POST
	// /api/v1/replicas) instead of bootstrapping a cluster of Peers; a
	// replica with Raft state ignores it.
	Join bool
	// Restore, when set, is a backup (GET /api/v1/replicas/backup) that
	// a new cluster starts from: this replica's data directory must have
	// no Raft state, and it must not Join. Give every replica of the new
	// cluster the same backup (or start one with it and Peers of itself
	// alone, and add the others).
	Restore string
	// RaftListen is the address the replication port listens on
	// (default: this replica's Raft address in Peers, which the others
	// dial; set it to listen on every interface, e.g. ":2356").
	RaftListen string
	// Secret authenticates the replicas to each other on the replication
	// port (see stream.go). Without it, the replication port must be on
	// loopback: anyone who reaches it could append to the log.
	Secret []byte
	// RaftTLS, when not nil, wraps the replication port in TLS: its
	// Certificates are this replica's (naming its host in Peers' Raft
	// address), and its RootCAs the authority that signed every
	// replica's; a replica checks the certificate of each it dials.
	// Entries are then encrypted as well as authenticated (Secret).
	RaftTLS *tls.Config
	// Tracker are the options of the tracker this replica runs while it
	// leads; its Listen is the client address (this replica's in Peers).
	// Store and DataDir are set by the Replica.
	Tracker tracker.Options
	// Timing are raft's timeouts (zero: hashicorp/raft's defaults).
	Timing Timing
	// ApplyTimeout bounds one write through Raft (DefaultApplyTimeout).
	ApplyTimeout time.Duration
	// Logger receives the replica's and raft's logs; nil: Tracker's
	// logger, or slog's default handler on standard error.
	Logger *slog.Logger
}

func (c *Config) self() (Peer, bool) {
	for _, p := range c.Peers {
		if p.ID == c.ID {
			return p, true
		}
	}
	return Peer{}, false
}

func (c *Config) check() error {
	if c.ID == "" {
		return errors.New("replica: no replica ID (--replica-id)")
	}
	if c.DataDir == "" {
		return errors.New("replica: a replica needs --data DIR (its Raft log, snapshots and store): it cannot run with --memory")
	}
	self, ok := c.self()
	if !ok {
		return fmt.Errorf("replica: --replica-id %q is not among --peers: list this replica there too", c.ID)
	}
	if c.Secret == nil {
		for _, a := range []string{self.Raft, c.RaftListen} {
			if a == "" {
				continue
			}
			host, _, err := net.SplitHostPort(a)
			if err != nil {
				return fmt.Errorf("replica: replication address %q: %w", a, err)
			}
			if !loopback.Host(host) {
				return fmt.Errorf("replica: the replication port %s is not on loopback, and there is no --raft-secret-file: anyone who reaches it could write the tracker's state; give the replicas a shared secret file", a)
			}
		}
	}
	if c.Restore != "" && c.Join {
		return errors.New("replica: --raft-restore starts a new cluster from a backup, and --join joins one that serves: give one of them")
	}
	if c.RaftTLS != nil && (len(c.RaftTLS.Certificates) == 0 || c.RaftTLS.RootCAs == nil) {
		return errors.New("replica: the replication port's TLS needs this replica's certificate and key and the authority that signed the replicas' (--raft-tls-cert, --raft-tls-key, --raft-tls-ca)")
	}
	if c.Secret != nil && len(c.Secret) < 16 {
		return fmt.Errorf("replica: the replicas' secret has %d bytes: at least 16 (e.g. openssl rand -hex 32)", len(c.Secret))
	}
	return nil
}

// Replica is one riotd of a replicated tracker: it runs Raft with the
// other replicas; while it leads it serves masters and workers with a
// tracker.Server whose store is the replicated Store, and while it follows
// it answers them on the same address with where the leader is (see
// follower.go). Make one with New, serve with Run.
type Replica struct {
	cfg   Config
	log   *slog.Logger
	self  Peer
	node  *node
	fatal chan error
	http  *http.Client // asks the other replicas for their state
	// metrics are the replica's collectors, and a registry of them for a
	// follower's /metrics.
	metrics  []prometheus.Collector
	registry *prometheus.Registry
	// onLead, when not nil, is told the tracker's address each time it
	// serves (for tests).
	onLead func(addr string)
}

// New checks cfg, opens the replica's Raft in cfg.DataDir (a new
// cluster's replica bootstraps it with cfg.Peers) and listens on its
// replication port. Serve with Run.
func New(ctx context.Context, cfg Config) (*Replica, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = cfg.Tracker.Logger
	}
	if log == nil {
		l, err := logfmt.New(os.Stderr, cfg.Tracker.LogFormat, cfg.Tracker.LogLevel)
		if err != nil {
			return nil, fmt.Errorf("replica: %w", err)
		}
		log = l
	}
	log = log.With("replica", cfg.ID)
	if cfg.Tracker.Logger == nil {
		cfg.Tracker.Logger = log
	}
	self, _ := cfg.self()
	rp := &Replica{cfg: cfg, log: log, self: self, fatal: make(chan error, 1)}
	ln, err := net.Listen("tcp", cmp.Or(cfg.RaftListen, self.Raft))
	if err != nil {
		return nil, fmt.Errorf("replica: replication port: %w", err)
	}
	var serverTLS, clientTLS *tls.Config
	if cfg.RaftTLS != nil {
		serverTLS = cfg.RaftTLS.Clone()
		clientTLS = &tls.Config{RootCAs: cfg.RaftTLS.RootCAs, MinVersion: tls.VersionTLS12}
	}
	layer := newAuthLayer(ln, cfg.Secret, serverTLS, clientTLS, log)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  newHCLogger(log, "raft-net"),
	})
	var servers []raft.Server
	for _, p := range cfg.Peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Raft), Suffrage: raft.Voter})
	}
	if cfg.Join {
		servers = nil // no bootstrap: the leader adds this replica
	}
	n, err := openNode(ctx, nodeConfig{
		id: raft.ServerID(cfg.ID), dir: cfg.DataDir, trans: trans, log: log, timing: cfg.Timing,
		bootstrap: servers, restore: cfg.Restore,
		fatal: func(err error) {
			select {
			case rp.fatal <- err:
			default:
			}
		},
	})
	if err != nil {
		trans.Close()
		return nil, err
	}
	rp.node = n
	rp.http = &http.Client{Timeout: replicaQueryTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rp.metrics = rp.collectors()
	rp.registry = prometheus.NewRegistry()
	rp.registry.MustRegister(rp.metrics...)
	log.Info("replica started", "raft", self.Raft, "client", self.Client, "peers", len(cfg.Peers), "data", cfg.DataDir)
	return rp, nil
}

// leaderClient returns the client address of the leader, or "".
func (rp *Replica) leaderClient() string {
	_, id := rp.node.raft.LeaderWithID()
	if id == "" {
		return ""
	}
	if c := rp.node.fsm.peerClient(string(id)); c != "" {
		return c
	}
	for _, p := range rp.cfg.Peers {
		if raft.ServerID(p.ID) == id {
			return p.Client
		}
	}
	return ""
}

// Run serves until ctx ends: it follows, and leads when raft elects it,
// until ctx ends or the replica fails (a committed entry that does not
// apply to its local store). It closes Raft and the stores before it
// returns.
func (rp *Replica) Run(ctx context.Context) (err error) {
	defer func() {
		if cerr := rp.node.close(); cerr != nil && err == nil {
			err = cerr
		}
		rp.log.Info("replica stopped")
	}()
	var (
		fol     *follower
		lead    *leadership
		leadEnd <-chan error
	)
	startFollower := func() {
		if fol != nil {
			return
		}
		f, ferr := rp.startFollower()
		if ferr != nil {
			// The address may still be held for a moment by the tracker
			// that just stopped; the next event tries again.
			rp.log.Warn("replica: cannot answer clients on the client address", "addr", rp.self.Client, "err", ferr)
			return
		}
		fol = f
	}
	stop := func() {
		if lead != nil {
			lead.stop()
			lead, leadEnd = nil, nil
		}
		if fol != nil {
			fol.close()
			fol = nil
		}
	}
	defer stop()
	startFollower()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ferr := <-rp.fatal:
			return ferr
		case isLeader := <-rp.node.notify:
			switch {
			case isLeader && lead == nil:
				if fol != nil {
					fol.close()
					fol = nil
				}
				l, lerr := rp.lead(ctx)
				if lerr != nil {
					rp.log.Error("replica: elected, but cannot serve: handing the lead on", "err", lerr)
					_ = rp.node.raft.LeadershipTransfer()
					startFollower()
					continue
				}
				lead, leadEnd = l, l.done
				if rp.onLead != nil {
					rp.onLead(l.srv.Addr().String())
				}
			case !isLeader && lead != nil:
				rp.log.Info("replica: lost the lead: the tracker stops; clients go to the new leader")
				lead.stop()
				lead, leadEnd = nil, nil
				startFollower()
			}
		case lerr := <-leadEnd:
			lead, leadEnd = nil, nil
			if errors.Is(lerr, store.ErrFenced) {
				// Its writes failed as this replica no longer leads (in its
				// term): raft says so on notify too; if it won the lead
				// again, a new tracker opens then.
				rp.log.Info("replica: the tracker stopped: this replica lost the lead it was opened in", "err", lerr)
				startFollower()
				continue
			}
			// The tracker ended by itself while this replica leads.
			rp.log.Error("replica: the tracker stopped while leading: handing the lead on", "err", lerr)
			_ = rp.node.raft.LeadershipTransfer()
			startFollower()
		case <-retry.C:
			if lead == nil {
				startFollower()
			}
		}
	}
}

// stepDownTimeout bounds the shutdown of the tracker of a replica that
// stops leading.
const stepDownTimeout = 2 * time.Second

// leadership is the tracker a leader runs.
type leadership struct {
	srv    *tracker.Server
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// stop shuts the tracker down and waits for it.
func (l *leadership) stop() {
	l.once.Do(func() {
		l.cancel()
		<-l.done
	})
}

// lead waits until this replica has applied every entry committed before
// its term (raft.Barrier), then opens a tracker on the replicated store,
// as riotd restarts on its store, and serves.
func (rp *Replica) lead(ctx context.Context) (*leadership, error) {
	start := time.Now()
	// The term first: if raft loses the lead and wins it again before
	// the barrier, the barrier is of the newer term, and the tracker's
	// writes, of this term, fail (errStaleTerm) rather than land on what
	// another leader wrote in between, which the tracker did not load.
	r := rp.node.raft
	term := r.CurrentTerm()
	if err := r.Barrier(30 * time.Second).Error(); err != nil {
		return nil, fmt.Errorf("replica: barrier: %w", err)
	}
	if r.State() != raft.Leader || r.CurrentTerm() != term {
		return nil, fmt.Errorf("replica: lost the lead (term %d, now %d, %s) while applying what earlier leaders committed", term, r.CurrentTerm(), r.State())
	}
	if err := rp.recordPeers(ctx); err != nil {
		return nil, fmt.Errorf("replica: record the replicas' client addresses: %w", err)
	}
	st := newStore(r, rp.node.fsm, rp.leaderClient, rp.cfg.ApplyTimeout, term)
	opts := rp.cfg.Tracker
	opts.Store = st
	opts.Replicas = rp.replicas
	opts.AdminRoutes = rp.adminRoutes()
	opts.Collectors = append(slices.Clip(opts.Collectors), rp.metrics...)
	opts.DataDir = ""
	if opts.Name == "" {
		opts.Name = rp.self.Client
	}
	// A tracker that stops because this replica lost the lead has nothing
	// left worth writing (its writes fail, and nothing unwritten was
	// acknowledged): it need not wait the whole ShutdownTimeout.
	opts.ShutdownTimeout = min(cmp.Or(opts.ShutdownTimeout, tracker.DefaultShutdownTimeout), stepDownTimeout)
	var srv *tracker.Server
	var err error
	// The follower's listener has just closed: the address is free.
	srv, err = tracker.New(opts)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &leadership{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- srv.Run(tctx) }()
	select {
	case <-srv.Ready():
	case err := <-l.done:
		cancel()
		return nil, fmt.Errorf("replica: tracker: %w", err)
	}
	rp.log.Info("replica: leading: the tracker serves", "addr", srv.Addr().String(), "after", time.Since(start).Round(time.Millisecond))
	return l, nil
}

// Logger returns the logger the replica writes to.
func (rp *Replica) Logger() *slog.Logger { return rp.log }

// Raft returns the replica's raft, for inspection (tests, status).
func (rp *Replica) Raft() *raft.Raft { return rp.node.raft }
