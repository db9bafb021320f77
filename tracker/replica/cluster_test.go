package replica

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestReplicas_AddedReplicaIsAsked: a replica added while the cluster
// serves (POST /api/v1/replicas records its client address in the log,
// not in --peers) is asked for its state by the Replicas page's route, as
// leaderClient finds it, rather than shown unreachable.
func TestReplicas_AddedReplicaIsAsked(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 2, fastTiming)
	l := c.leader(ctx)
	other := fmt.Sprintf("r%d", 1-l)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/replica" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(Status{ID: other, State: "Follower", Term: "7", Applied: 42})
	}))
	defer srv.Close()
	c.nodes[l].fsm.setPeer(peerCmd{ID: other, Client: strings.TrimPrefix(srv.URL, "http://")})
	self := fmt.Sprintf("r%d", l)
	rp := &Replica{node: c.nodes[l], cfg: Config{ID: self, Peers: []Peer{{ID: self, Client: "127.0.0.1:1"}}}, http: srv.Client()}
	for _, st := range rp.replicas(ctx) {
		if st.ID != other {
			continue
		}
		if st.State != "Follower" || st.Term != 7 || st.AppliedIndex != 42 || st.Error != "" {
			t.Errorf("the added replica: %+v", st)
		}
		return
	}
	t.Errorf("replica %s not listed", other)
}

// TestReplicas_AskedAtOnce: GET /api/v1/replicas asks the other replicas
// at once, not one after another: with replicas that do not answer, a
// call took a query's timeout for each, past the Replicas page's reload
// every 3 s with three of them. Each replica here answers only once both
// were asked.
func TestReplicas_AskedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c := newInmemCluster(t, 3, fastTiming)
	l := c.leader(ctx)
	var arrived sync.WaitGroup
	arrived.Add(2)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(Status{ID: r.URL.Query().Get("id"), State: "Follower", Term: "3", Applied: 5})
	}))
	defer srv.Close()
	self := fmt.Sprintf("r%d", l)
	var peers []Peer
	for i := range c.nodes {
		peers = append(peers, Peer{ID: fmt.Sprintf("r%d", i), Client: strings.TrimPrefix(srv.URL, "http://")})
	}
	rp := &Replica{node: c.nodes[l], cfg: Config{ID: self, Peers: peers}, http: srv.Client()}
	rs := rp.replicas(ctx)
	if len(rs) != 3 {
		t.Fatalf("%d replicas listed: %+v", len(rs), rs)
	}
	for i, st := range rs {
		if i == 0 {
			if st.ID != self {
				t.Errorf("the first listed is %s, not this replica %s", st.ID, self)
			}
			continue
		}
		if st.State != "Follower" || st.Error != "" {
			t.Errorf("replica %s: %+v", st.ID, st)
		}
	}
}
