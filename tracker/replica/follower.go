package replica

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/riot-go/riot/wire"
)

// LeaderHeader is the HTTP header in which a replica that does not lead
// names the leader's client address (host:port), beside the Location of
// its redirect.
const LeaderHeader = "Riot-Leader"

// follower answers masters, workers and browsers on the client address
// while this replica does not lead: a request (the websocket's upgrade
// included) is redirected (307) to the same path on the leader, with
// LeaderHeader; while no leader is known it is refused with 503 and
// Retry-After. GET /healthz answers "follower" (200), GET /replica the
// replica's state as JSON, and GET /metrics its riot_replica_* metrics.
type follower struct {
	srv *http.Server
	ln  net.Listener
}

func (rp *Replica) startFollower() (*follower, error) {
	ln, err := net.Listen("tcp", rp.cfg.Tracker.Listen)
	if err != nil {
		return nil, err
	}
	scheme := "ws"
	if rp.cfg.Tracker.TLSCertFile != "" || rp.cfg.Tracker.TLSConfig != nil {
		conf := rp.cfg.Tracker.TLSConfig
		if conf == nil {
			cert, err := tls.LoadX509KeyPair(rp.cfg.Tracker.TLSCertFile, rp.cfg.Tracker.TLSKeyFile)
			if err != nil {
				ln.Close()
				return nil, fmt.Errorf("replica: follower: %w", err)
			}
			conf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
		ln, scheme = tls.NewListener(ln, conf), "wss"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "follower")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(rp.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /replica", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rp.Status())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		leader := rp.leaderClient()
		if leader == "" || leader == rp.self.Client {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "riotd replica "+rp.cfg.ID+": no leader is elected yet; try again in a moment", http.StatusServiceUnavailable)
			return
		}
		u := url.URL{Scheme: "http", Host: leader, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		if r.URL.Path == wire.Path {
			u.Scheme = scheme
		} else if scheme == "wss" {
			u.Scheme = "https"
		}
		w.Header().Set(LeaderHeader, leader)
		w.Header().Set("Location", u.String())
		w.WriteHeader(http.StatusTemporaryRedirect)
		fmt.Fprintf(w, "riotd replica %s does not lead: the leader is at %s\n", rp.cfg.ID, leader)
	})
	f := &follower{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       30 * time.Second,
		},
	}
	go func() { _ = f.srv.Serve(ln) }()
	rp.log.Info("replica: following: clients are sent to the leader", "addr", ln.Addr().String())
	return f, nil
}

// close stops answering, at once: the leader's tracker takes the address.
func (f *follower) close() {
	_ = f.srv.Close()
}

// Status is a replica's state, as GET /replica gives it.
type Status struct {
	ID           string       `json:"id"`
	State        string       `json:"state"` // Leader, Follower, Candidate, Shutdown
	Leader       string       `json:"leader,omitempty"`
	LeaderClient string       `json:"leader_client,omitempty"`
	Term         string       `json:"term"`
	LastIndex    string       `json:"last_log_index"`
	Applied      uint64       `json:"applied_index"`
	Servers      []ServerInfo `json:"servers"`
}

// ServerInfo is one replica of the configuration.
type ServerInfo struct {
	ID       string `json:"id"`
	Raft     string `json:"raft"`
	Suffrage string `json:"suffrage"`
}

// Status returns the replica's state.
func (rp *Replica) Status() Status {
	r := rp.node.raft
	stats := r.Stats()
	_, id := r.LeaderWithID()
	st := Status{
		ID:           rp.cfg.ID,
		State:        r.State().String(),
		Leader:       string(id),
		LeaderClient: rp.leaderClient(),
		Term:         stats["term"],
		LastIndex:    stats["last_log_index"],
		Applied:      rp.node.fsm.Applied(),
	}
	if f := r.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			st.Servers = append(st.Servers, ServerInfo{ID: string(s.ID), Raft: string(s.Address), Suffrage: suffrage(s.Suffrage)})
		}
	}
	return st
}

func suffrage(s raft.ServerSuffrage) string {
	if s == raft.Voter {
		return "voter"
	}
	return "nonvoter"
}
