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
	"sync"
	"testing"
	"time"
)

// Replicas are riotd processes run as the replicas of one tracker
// (riotd --replica-id, docs/replicas.md), on loopback: each with its own
// --data directory, client port and replication port.
//
// A Replicas is safe for concurrent use.
type Replicas struct {
	bins    Bins
	opts    ReplicasOptions
	mu      sync.Mutex
	procs   []*Process
	ids     []string
	clients []string // client addresses, host:port
	rafts   []string // replication addresses, host:port
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
	// Netns, when set, runs each replica in its namespace of Netns (see
	// StartNetns), listening on its addresses there, with a shared
	// secret on the replication port and --unsafe-no-auth on the client
	// port (neither is on loopback); else every replica is on loopback.
	Netns *Netns
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
	rs := &Replicas{bins: bins, opts: opts, http: &http.Client{Timeout: 5 * time.Second,
		// A follower's redirect is what Leader looks for: not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	var peers []string
	for i := range opts.N {
		id := string(rune('a' + i))
		rs.ids = append(rs.ids, id)
		client, rft := fmt.Sprintf("127.0.0.1:%d", ports[2*i]), fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])
		if opts.Netns != nil {
			client, rft = opts.Netns.ClientHost(i)+":2355", opts.Netns.RaftHost(i)+":2356"
		}
		rs.clients = append(rs.clients, client)
		rs.rafts = append(rs.rafts, rft)
		peers = append(peers, id+"="+rft+"="+client)
	}
	more := opts.Args
	if opts.Netns != nil {
		secret := filepath.Join(opts.Dir, "raft-secret")
		if err := os.WriteFile(secret, []byte("e2e-netns-secret-0123456789abcdef\n"), 0o600); err != nil {
			return nil, fmt.Errorf("e2e: launch replicas: %w", err)
		}
		more = append([]string{"--raft-secret-file", secret, "--unsafe-no-auth"}, more...)
	}
	for i, id := range rs.ids {
		data := filepath.Join(opts.Dir, id)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return nil, fmt.Errorf("e2e: launch replicas: %w", err)
		}
		args := append([]string{"--replica-id", id, "--peers", strings.Join(peers, ","), "--data", data,
			"--listen", rs.clients[i], "--log-format", "json"}, more...)
		path := bins.Riotd
		if opts.Netns != nil {
			path, args = opts.Netns.Command(i, path, args...)
		}
		p := NewProcess("riotd "+id, path, args, nil, bins.Root)
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
	return b.StartReplicasWith(t, ReplicasOptions{N: n, Args: args})
}

// StartReplicasWith is StartReplicas with options (Dir is the test's
// t.TempDir() when empty).
func (b Bins) StartReplicasWith(t testing.TB, opts ReplicasOptions) *Replicas {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	rs, err := LaunchReplicas(ctx, b, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, p := range rs.procs {
		cleanupProcess(t, p)
	}
	return rs
}

// Len returns how many replicas there are.
func (rs *Replicas) Len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.procs)
}

// Proc returns replica i's process (to Kill it, Start it again, read its
// log).
func (rs *Replicas) Proc(i int) *Process {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.procs[i]
}

// ID returns replica i's ID.
func (rs *Replicas) ID(i int) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.ids[i]
}

// Client returns replica i's client address.
func (rs *Replicas) Client(i int) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.clients[i]
}

// Raft returns replica i's replication address.
func (rs *Replicas) Raft(i int) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.rafts[i]
}

// Addrs returns every replica's client address, separated by commas: what
// masters and workers are given (--tracker a,b,c).
func (rs *Replicas) Addrs() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return strings.Join(rs.clients, ",")
}

// Join starts one more replica, with --join (it waits to be added by the
// leader: POST /api/v1/replicas), and returns its index once it follows.
// The caller must end it (Close ends every replica).
func (rs *Replicas) Join(ctx context.Context) (int, error) {
	ports, err := freePorts(2)
	if err != nil {
		return -1, fmt.Errorf("e2e: join: %w", err)
	}
	rs.mu.Lock()
	i := len(rs.procs)
	id := string(rune('a' + i))
	client, rft := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	data := filepath.Join(rs.opts.Dir, id)
	rs.mu.Unlock()
	if err := os.MkdirAll(data, 0o700); err != nil {
		return -1, fmt.Errorf("e2e: join: %w", err)
	}
	args := []string{"--replica-id", id, "--join", "--peers", id + "=" + rft + "=" + client, "--data", data,
		"--listen", client, "--log-format", "json"}
	p := NewProcess("riotd "+id, rs.bins.Riotd, append(args, rs.opts.Args...), nil, rs.bins.Root)
	rs.mu.Lock()
	rs.procs, rs.ids, rs.clients, rs.rafts = append(rs.procs, p), append(rs.ids, id), append(rs.clients, client), append(rs.rafts, rft)
	rs.mu.Unlock()
	if err := p.Start(); err != nil {
		return -1, err
	}
	if _, err := p.WaitLog(ctx, LogMsg("replica: following: clients are sent to the leader")); err != nil {
		return -1, err
	}
	return i, nil
}

// Leader returns the replica that leads and serves now: the one whose
// /healthz is the tracker's ("ok"; a follower answers "follower"), or
// ErrNoLeader.
func (rs *Replicas) Leader(ctx context.Context) (int, error) {
	for i := range rs.Len() {
		if !rs.Proc(i).Running() {
			continue
		}
		// A replica that is stopped (SIGSTOP) takes the connection and
		// never answers: ask each for a moment only.
		hctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		req, err := http.NewRequestWithContext(hctx, http.MethodGet, "http://"+rs.Client(i)+"/healthz", nil)
		if err != nil {
			cancel()
			return -1, err
		}
		resp, err := rs.http.Do(req)
		if err != nil {
			cancel()
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
		resp.Body.Close()
		cancel()
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
			return fmt.Errorf("replica %s still leads", rs.ID(i))
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rs.Client(i)+"/replica", nil)
	if err != nil {
		return st, err
	}
	resp, err := rs.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("e2e: replica %s: GET /replica: %s", rs.ID(i), resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Close ends every replica.
func (rs *Replicas) Close() {
	for i := range rs.Len() {
		rs.Proc(i).Close()
	}
}

// Tracker returns replica i as a Tracker, to read its status page and
// metrics while it leads (Status, WaitStatus, Metrics; a follower
// redirects them). Restart does not apply to it: start the replica's
// process again (Proc(i).Start).
func (rs *Replicas) Tracker(i int) *Tracker {
	p := rs.Proc(i)
	return &Tracker{
		Process: p,
		opts:    TrackerOptions{Label: p.Label, Scheme: "http"},
		http:    &http.Client{Timeout: 5 * time.Second},
		addr:    rs.Client(i),
	}
}
