package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/riot-go/riot/tracker"
)

// replicaQueryTimeout bounds the leader's question to another replica for
// its state (GET /replica), for the status page.
const replicaQueryTimeout = time.Second

// replicas returns every replica of the configuration for the leader's
// status page: this one from its raft, the others as their GET /replica
// says (a follower answers it on its client address), asked at once.
func (rp *Replica) replicas(ctx context.Context) []tracker.ReplicaStatus {
	r := rp.node.raft
	clients := map[raft.ServerID]string{}
	for _, p := range rp.cfg.Peers {
		clients[raft.ServerID(p.ID)] = p.Client
	}
	var servers []raft.Server
	if f := r.GetConfiguration(); f.Error() == nil {
		servers = f.Configuration().Servers
	}
	out := make([]tracker.ReplicaStatus, 0, len(servers))
	self := tracker.ReplicaStatus{ID: rp.cfg.ID, Client: rp.self.Client, Raft: rp.self.Raft, State: r.State().String(),
		Voter: true, Term: statUint(r.Stats(), "term"), AppliedIndex: rp.node.fsm.Applied()}
	out = append(out, self)
	for _, s := range servers {
		if s.ID == raft.ServerID(rp.cfg.ID) {
			continue
		}
		// The log's client address first (a replica added while the
		// cluster serves is in no --peers), as leaderClient.
		client := rp.node.fsm.peerClient(string(s.ID))
		if client == "" {
			client = clients[s.ID]
		}
		out = append(out, tracker.ReplicaStatus{ID: string(s.ID), Client: client, Raft: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	// At once: a call takes one query's timeout at most, however many
	// replicas do not answer.
	var wg sync.WaitGroup
	for i := 1; i < len(out); i++ {
		wg.Go(func() {
			if err := rp.queryReplica(ctx, &out[i]); err != nil {
				out[i].State, out[i].Error = "unreachable", err.Error()
			}
		})
	}
	wg.Wait()
	return out
}

// queryReplica fills st from the replica's GET /replica.
func (rp *Replica) queryReplica(ctx context.Context, st *tracker.ReplicaStatus) error {
	if st.Client == "" {
		return fmt.Errorf("its client address is not in --peers")
	}
	if rp.cfg.Tracker.TLSCertFile != "" || rp.cfg.Tracker.TLSConfig != nil {
		return fmt.Errorf("not asked over TLS yet (docs/replicas.md)")
	}
	ctx, cancel := context.WithTimeout(ctx, replicaQueryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.Client+"/replica", nil)
	if err != nil {
		return err
	}
	resp, err := rp.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /replica: %s", resp.Status)
	}
	var s Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return fmt.Errorf("GET /replica: %w", err)
	}
	st.State, st.AppliedIndex = s.State, s.Applied
	st.Term, _ = strconv.ParseUint(s.Term, 10, 64)
	return nil
}

func statUint(stats map[string]string, key string) uint64 {
	n, _ := strconv.ParseUint(stats[key], 10, 64)
	return n
}

// collectors are the replica's metrics, on the leader's /metrics (with
// the tracker's) and a follower's.
func (rp *Replica) collectors() []prometheus.Collector {
	r := func() *raft.Raft { return rp.node.raft }
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"replica": rp.cfg.ID}}, f)
	}
	return []prometheus.Collector{
		gauge("riot_replica_leader", "1 while this replica leads, else 0.", func() float64 {
			if r().State() == raft.Leader {
				return 1
			}
			return 0
		}),
		gauge("riot_replica_term", "This replica's Raft term.", func() float64 { return float64(statUint(r().Stats(), "term")) }),
		gauge("riot_replica_last_log_index", "The index of the last entry of this replica's Raft log.", func() float64 {
			return float64(r().LastIndex())
		}),
		gauge("riot_replica_commit_index", "The index of the last entry this replica knows committed.", func() float64 {
			return float64(statUint(r().Stats(), "commit_index"))
		}),
		gauge("riot_replica_applied_index", "The index of the last entry this replica applied to its store.", func() float64 {
			return float64(rp.node.fsm.Applied())
		}),
		gauge("riot_replica_servers", "The replicas in the Raft configuration.", func() float64 {
			if f := r().GetConfiguration(); f.Error() == nil {
				return float64(len(f.Configuration().Servers))
			}
			return 0
		}),
		gauge("riot_replica_last_contact_seconds", "Seconds since this replica last heard from the leader (0 on the leader).", func() float64 {
			if r().State() == raft.Leader {
				return 0
			}
			return time.Since(r().LastContact()).Seconds()
		}),
	}
}
