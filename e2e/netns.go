package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Netns is a small network of Linux network namespaces, one a replica,
// made for a test (it needs root, or CAP_NET_ADMIN and CAP_SYS_ADMIN):
// each namespace has two links, one to a bridge of replication traffic
// (Raft) and one to a bridge of client traffic, which the test's own
// namespace is on too (masters and workers run there). Cutting a
// replica's replication link partitions it from the other replicas while
// its clients still reach it: the case where a leader that lost its
// majority must stop serving.
//
// Each namespace, bridge and link is named with a random suffix, so that
// tests running at once do not meet, and is removed by Close.
type Netns struct {
	ip     string // the ip(8) binary
	suffix string
	n      int
	subnet int // the second octet of the test's addresses, 10.S.x.y
	made   [][]string
}

// ErrNoNetns: network namespaces cannot be made here (not root, no
// ip(8), or a container that forbids them).
var ErrNoNetns = errors.New("e2e: network namespaces are not available")

// NewNetns makes the namespaces of n replicas and their links. It fails
// with an error wrapping ErrNoNetns where namespaces cannot be made.
func NewNetns(ctx context.Context, n int) (*Netns, error) {
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoNetns, err)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not root", ErrNoNetns)
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	nn := &Netns{ip: ip, suffix: hex.EncodeToString(b[:2]), n: n, subnet: 100 + int(b[2])%150}
	// A subnet the host uses already (or another test's namespaces) is
	// passed for the next.
	if out, err := exec.CommandContext(ctx, ip, "-o", "addr", "show").Output(); err == nil {
		for i := 0; i < 150 && strings.Contains(string(out), fmt.Sprintf(" 10.%d.", nn.subnet)); i++ {
			nn.subnet = 100 + (nn.subnet-100+1)%150
		}
	}
	if err := nn.build(ctx); err != nil {
		nn.Close()
		return nil, err
	}
	return nn, nil
}

// StartNetns makes the namespaces of n replicas for the test and removes
// them when it ends; it skips the test where namespaces cannot be made.
func StartNetns(t testing.TB, n int) *Netns {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	nn, err := NewNetns(ctx, n)
	if errors.Is(err, ErrNoNetns) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(nn.Close)
	return nn
}

func (nn *Netns) run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nn.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("e2e: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// undo records what Close removes, latest first.
func (nn *Netns) undo(args ...string) { nn.made = append(nn.made, args) }

func (nn *Netns) ns(i int) string       { return fmt.Sprintf("riot%s-%d", nn.suffix, i) }
func (nn *Netns) bridge(net int) string { return fmt.Sprintf("rb%s%d", nn.suffix, net) }

// hostLink is the name of the link of replica i on net (0: replication,
// 1: clients) on the bridge's side.
func (nn *Netns) hostLink(i, net int) string { return fmt.Sprintf("rv%s%d%d", nn.suffix, net, i) }

func (nn *Netns) build(ctx context.Context) error {
	// The first ip command tells whether namespaces may be made here.
	if err := nn.run(ctx, "netns", "add", nn.ns(0)); err != nil {
		return fmt.Errorf("%w: %w", ErrNoNetns, err)
	}
	nn.undo("netns", "del", nn.ns(0))
	for i := 1; i < nn.n; i++ {
		if err := nn.run(ctx, "netns", "add", nn.ns(i)); err != nil {
			return err
		}
		nn.undo("netns", "del", nn.ns(i))
	}
	for net := range 2 {
		br := nn.bridge(net)
		if err := nn.run(ctx, "link", "add", br, "type", "bridge"); err != nil {
			return fmt.Errorf("%w: %w", ErrNoNetns, err) // namespaces, but no bridges
		}
		nn.undo("link", "del", br)
		if err := nn.run(ctx, "link", "set", br, "up"); err != nil {
			return err
		}
	}
	// The test's namespace is on the clients' network.
	if err := nn.run(ctx, "addr", "add", fmt.Sprintf("10.%d.1.1/24", nn.subnet), "dev", nn.bridge(1)); err != nil {
		return err
	}
	for i := range nn.n {
		ns := nn.ns(i)
		if err := nn.run(ctx, "-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
		for net := range 2 {
			host, inner := nn.hostLink(i, net), fmt.Sprintf("eth%d", net)
			if err := nn.run(ctx, "link", "add", host, "type", "veth", "peer", "name", inner, "netns", ns); err != nil {
				return err
			}
			nn.undo("link", "del", host)
			for _, args := range [][]string{
				{"link", "set", host, "master", nn.bridge(net)},
				{"link", "set", host, "up"},
				{"-n", ns, "addr", "add", nn.addr(i, net) + "/24", "dev", inner},
				{"-n", ns, "link", "set", inner, "up"},
			} {
				if err := nn.run(ctx, args...); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// addr is replica i's address on net (0: replication, 1: clients).
func (nn *Netns) addr(i, net int) string { return fmt.Sprintf("10.%d.%d.%d", nn.subnet, net, 10+i) }

// RaftHost is replica i's address on the replication network.
func (nn *Netns) RaftHost(i int) string { return nn.addr(i, 0) }

// ClientHost is replica i's address on the clients' network, which the
// test's namespace reaches.
func (nn *Netns) ClientHost(i int) string { return nn.addr(i, 1) }

// Command returns the command line that runs path with args in replica
// i's namespace.
func (nn *Netns) Command(i int, path string, args ...string) (string, []string) {
	return nn.ip, append([]string{"netns", "exec", nn.ns(i), path}, args...)
}

// CutRaft cuts replica i off the replication network: it no longer
// reaches the other replicas, nor they it; its clients still reach it.
func (nn *Netns) CutRaft(ctx context.Context, i int) error {
	return nn.run(ctx, "link", "set", nn.hostLink(i, 0), "down")
}

// HealRaft puts replica i back on the replication network.
func (nn *Netns) HealRaft(ctx context.Context, i int) error {
	return nn.run(ctx, "link", "set", nn.hostLink(i, 0), "up")
}

// Close removes the namespaces, bridges and links (the processes in the
// namespaces must have ended).
func (nn *Netns) Close() {
	for i := len(nn.made) - 1; i >= 0; i-- {
		_ = nn.run(context.Background(), nn.made[i]...)
	}
	nn.made = nil
}
