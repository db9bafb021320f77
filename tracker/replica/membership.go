package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
)

// membershipTimeout bounds a configuration change (raft's AddVoter,
// RemoveServer): the new replica must be reachable.
const membershipTimeout = 30 * time.Second

// addPeer records a replica's client address in the log (cmdPeer).
func (rp *Replica) addPeer(ctx context.Context, c peerCmd) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	st := newStore(rp.node.raft, rp.node.fsm, rp.leaderClient, rp.cfg.ApplyTimeout, 0)
	return st.apply(ctx, "record a replica", append([]byte{cmdPeer}, body...))
}

// recordPeers writes the client addresses of --peers that the log does
// not have yet: a new leader does it once, so that every replica knows
// them (and a replica added later learns them from the log).
func (rp *Replica) recordPeers(ctx context.Context) error {
	for _, p := range rp.cfg.Peers {
		if rp.node.fsm.peerClient(p.ID) != "" {
			continue
		}
		if err := rp.addPeer(ctx, peerCmd{ID: p.ID, Client: p.Client}); err != nil {
			return err
		}
	}
	return nil
}

// AddRequest is the body of POST /api/v1/replicas: the replica to add,
// started beforehand with --join.
type AddRequest struct {
	ID     string `json:"id"`
	Raft   string `json:"raft"`
	Client string `json:"client"`
}

// adminRoutes are the leader's membership changes, on its tracker's HTTP
// port (tracker.Options.AdminRoutes: an admin's token, tracker.RoleAdmin):
//
//	POST   /api/v1/replicas        {"id", "raft", "client"}: add a voter
//	DELETE /api/v1/replicas/{id}   remove a replica
//	GET    /api/v1/replicas/backup a backup of the store (backup.go)
//
// Each answers 200 with the configuration after the change (JSON), 400
// for a bad request, 409 when this replica no longer leads (with
// LeaderHeader), 500 when raft failed (the change may or may not have
// happened: GET /status shows the configuration).
func (rp *Replica) adminRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"POST /api/v1/replicas":        rp.serveAdd,
		"DELETE /api/v1/replicas/{id}": rp.serveRemove,
		"GET /api/v1/replicas/backup":  rp.serveBackup,
	}
}

func (rp *Replica) serveAdd(w http.ResponseWriter, r *http.Request) {
	var req AddRequest
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		adminError(w, http.StatusBadRequest, "riotd: POST /api/v1/replicas: the body must be JSON {\"id\", \"raft\", \"client\"}: %v", err)
		return
	}
	if req.ID == "" {
		adminError(w, http.StatusBadRequest, "riotd: POST /api/v1/replicas: no id")
		return
	}
	for _, a := range []string{req.Raft, req.Client} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			adminError(w, http.StatusBadRequest, "riotd: POST /api/v1/replicas: replica %s: address %q: want HOST:PORT (%v)", req.ID, a, err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), membershipTimeout)
	defer cancel()
	if err := rp.addPeer(ctx, peerCmd{ID: req.ID, Client: req.Client}); err != nil {
		rp.adminFailed(w, "add replica "+req.ID, err)
		return
	}
	if err := rp.node.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.Raft), 0, membershipTimeout).Error(); err != nil {
		rp.adminFailed(w, "add replica "+req.ID, err)
		return
	}
	rp.log.Info("replica: a replica was added", "id", req.ID, "raft", req.Raft, "client", req.Client)
	rp.serveConfiguration(w, r)
}

func (rp *Replica) serveRemove(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	known := false
	if f := rp.node.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			known = known || s.ID == raft.ServerID(id)
		}
	}
	if !known {
		adminError(w, http.StatusBadRequest, "riotd: DELETE /api/v1/replicas/%s: no replica %q in the configuration", id, id)
		return
	}
	if err := rp.node.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error(); err != nil {
		rp.adminFailed(w, "remove replica "+id, err)
		return
	}
	rp.log.Info("replica: a replica was removed", "id", id)
	if id != rp.cfg.ID { // a leader that removed itself steps down
		ctx, cancel := context.WithTimeout(r.Context(), membershipTimeout)
		defer cancel()
		if err := rp.addPeer(ctx, peerCmd{ID: id}); err != nil {
			rp.log.Warn("replica: the removed replica's client address stays in the log", "id", id, "err", err)
		}
	}
	rp.serveConfiguration(w, r)
}

func (rp *Replica) serveConfiguration(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"replicas": rp.replicas(r.Context())})
}

func (rp *Replica) adminFailed(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		if l := rp.leaderClient(); l != "" && l != rp.self.Client {
			w.Header().Set(LeaderHeader, l)
		}
		adminError(w, http.StatusConflict, "riotd: %s: this replica no longer leads: ask the leader (%v)", what, err)
		return
	}
	adminError(w, http.StatusInternalServerError, "riotd: %s: %v (the change may or may not have been made: GET /status shows the replicas)", what, err)
}

func adminError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}
