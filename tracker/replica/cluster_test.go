package replica

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
