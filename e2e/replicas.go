package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Replicas are riotd processes run as the replicas of one tracker
// (riotd --replica-id, docs/replicas.md), on loopback: each with its own
// --data directory, client port and replication port.
//
// A Replicas is safe for concurrent use.
type Replicas struct {
	procs   []*Process
	ids     []string
	clients []string // client addresses, host:port
	http    *http.Client
}

// ReplicasOptions configure LaunchReplicas.
type ReplicasOptions struct {
	// N is how many replicas (default 3).
	N int
	// Dir holds each replica's data directory (Dir/ID); required.
	Dir string
	// Args are more flags for every riotd.
	Args []string
}

// ErrNoLeader: no replica leads (yet).
var ErrNoLeader = errors.New("e2e: no replica leads")

// freePorts returns n ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// LaunchReplicas starts the replicas and returns once one of them leads
// and serves, or fails when ctx ends first. The caller must end the
// processes (Close). Tests use Bins.StartReplicas.
func LaunchReplicas(ctx context.Context, bins Bins, opts ReplicasOptions) (*Replicas, error) {
	if opts.N == 0 {
		opts.N = 3
	}
	if opts.Dir == "" {
		return nil, errors.New("e2e: launch replicas: no Dir")
	}
	ports, err := freePorts(2 * opts.N)
	if err != nil {
		return nil, fmt.Errorf("e2e: launch replicas: %w", err)
	}
	rs := &Replicas{http: &http.Client{Timeout: 5 * time.Second,
		// A follower's redirect is what Leader looks for: not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	var peers []string
	for i := range opts.N {
		id := string(rune('a' + i))
		rs.ids = append(rs.ids, id)
		rs.clients = append(rs.clients, fmt.Sprintf("127.0.0.1:%d", ports[2*i]))
		peers = append(peers, fmt.Sprintf("%s=127.0.0.1:%d=%s", id, ports[2*i+1], rs.clients[i]))
	}
	for i, id := range rs.ids {
		data := filepath.Join(opts.Dir, id)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return nil, fmt.Errorf("e2e: launch replicas: %w", err)
		}
		args := []string{"--replica-id", id, "--peers", strings.Join(peers, ","), "--data", data,
			"--listen", rs.clients[i], "--log-format", "json"}
		p := NewProcess("riotd "+id, bins.Riotd, append(args, opts.Args...), nil, bins.Root)
		rs.procs = append(rs.procs, p)
		if err := p.Start(); err != nil {
			rs.Close()
			return nil, err
		}
	}
	if _, err := rs.WaitLeader(ctx, -1); err != nil {
		rs.Close()
		return nil, err
	}
	return rs, nil
}

// StartReplicas starts n replicas for the test (in t.TempDir()), waits
// until one leads, stops them when the test ends, and writes their logs
// to the test's output if the test failed (or always with RIOT_E2E_LOG=1).
func (b Bins) StartReplicas(t testing.TB, n int, args ...string) *Replicas {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	rs, err := LaunchReplicas(ctx, b, ReplicasOptions{N: n, Dir: t.TempDir(), Args: args})
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, p := range rs.procs {
		cleanupProcess(t, p)
	}
	return rs
}

// Len returns how many replicas there are.
func (rs *Replicas) Len() int { return len(rs.procs) }

// Proc returns replica i's process (to Kill it, Start it again, read its
// log).
func (rs *Replicas) Proc(i int) *Process { return rs.procs[i] }

// ID returns replica i's ID.
func (rs *Replicas) ID(i int) string { return rs.ids[i] }

// Client returns replica i's client address.
func (rs *Replicas) Client(i int) string { return rs.clients[i] }

// Addrs returns every replica's client address, separated by commas: what
// masters and workers are given (--tracker a,b,c).
func (rs *Replicas) Addrs() string { return strings.Join(rs.clients, ",") }

// Leader returns the replica that leads and serves now: the one whose
// /healthz is the tracker's ("ok"; a follower answers "follower"), or
// ErrNoLeader.
func (rs *Replicas) Leader(ctx context.Context) (int, error) {
	for i, p := range rs.procs {
		if !p.Running() {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rs.clients[i]+"/healthz", nil)
		if err != nil {
			return -1, err
		}
		resp, err := rs.http.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
			return i, nil
		}
	}
	return -1, ErrNoLeader
}

// WaitLeader waits until a replica other than not (-1: any) leads and
// serves, and returns it.
func (rs *Replicas) WaitLeader(ctx context.Context, not int) (int, error) {
	leader := -1
	err := CheckFor(ctx, 5*time.Millisecond, func() error {
		i, err := rs.Leader(ctx)
		if err != nil {
			return err
		}
		if i == not {
			return fmt.Errorf("replica %s still leads", rs.ids[i])
		}
		leader = i
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("e2e: waiting for a leader: %w", err)
	}
	return leader, nil
}

// ReplicaStatus is what a follower's GET /replica says (see package
// tracker/replica's Status).
type ReplicaStatus struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	Leader       string `json:"leader"`
	LeaderClient string `json:"leader_client"`
	Applied      uint64 `json:"applied_index"`
}

// Status returns follower i's GET /replica.
func (rs *Replicas) Status(ctx context.Context, i int) (ReplicaStatus, error) {
	var st ReplicaStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rs.clients[i]+"/replica", nil)
	if err != nil {
		return st, err
	}
	resp, err := rs.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("e2e: replica %s: GET /replica: %s", rs.ids[i], resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Close ends every replica.
func (rs *Replicas) Close() {
	for _, p := range rs.procs {
		p.Close()
	}
}

// Tracker returns replica i as a Tracker, to read its status page and
// metrics while it leads (Status, WaitStatus, Metrics; a follower
// redirects them). Restart does not apply to it: start the replica's
// process again (Proc(i).Start).
func (rs *Replicas) Tracker(i int) *Tracker {
	return &Tracker{
		Process: rs.procs[i],
		opts:    TrackerOptions{Label: rs.procs[i].Label, Scheme: "http"},
		http:    &http.Client{Timeout: 5 * time.Second},
		addr:    rs.clients[i],
	}
}
