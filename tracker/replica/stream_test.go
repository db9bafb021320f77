package replica

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/riot-go/riot/tracker/trackertest"
)

// These tests use real TCP on loopback.

func listenLayer(t *testing.T, secret []byte) *authLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newAuthLayer(ln, secret, nil, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { l.Close() })
	return l
}

// accepted returns the next connection the layer hands raft, or nil if
// none comes within d.
func accepted(l *authLayer, d time.Duration) net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	select {
	case c := <-ch:
		return c
	case <-time.After(d):
		return nil
	}
}

func TestAuthLayer_SameSecret_Connects(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	srv := listenLayer(t, secret)
	dialer := listenLayer(t, secret)
	c, err := dialer.Dial(raft.ServerAddress(srv.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := accepted(srv, 5*time.Second)
	if s == nil {
		t.Fatal("the layer handed raft no connection")
	}
	defer s.Close()
	// After the handshake the stream is raft's, both ways.
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, []byte("ping")) {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestAuthLayer_WrongSecret_Refused(t *testing.T) {
	t.Parallel()
	srv := listenLayer(t, []byte("0123456789abcdef0123456789abcdef"))
	other := listenLayer(t, []byte("another secret of enough bytes!!"))
	_, err := other.Dial(raft.ServerAddress(srv.Addr().String()), time.Second)
	if !errors.Is(err, ErrHandshake) {
		t.Fatalf("Dial with another secret: %v, want ErrHandshake", err)
	}
	if c := accepted(srv, 200*time.Millisecond); c != nil {
		c.Close()
		t.Fatal("the layer handed raft a connection of a peer without the secret")
	}
}

func TestAuthLayer_Stranger_GetsNothing(t *testing.T) {
	t.Parallel()
	srv := listenLayer(t, []byte("0123456789abcdef0123456789abcdef"))
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// What raft's transport would send first: an AppendEntries RPC.
	if _, err := c.Write(append([]byte{0}, bytes.Repeat([]byte{0x80}, 200)...)); err != nil {
		t.Fatal(err)
	}
	if got := accepted(srv, 200*time.Millisecond); got != nil {
		got.Close()
		t.Fatal("the layer handed raft a stranger's bytes")
	}
	// The stranger is disconnected once its handshake fails.
	_ = c.SetReadDeadline(time.Now().Add(2 * handshakeTimeout))
	if _, err := io.Copy(io.Discard, c); errTimeout(err) != nil {
		t.Fatalf("the stranger's connection was not closed: %v", err)
	}
}

func TestAuthLayer_HandshakesBounded(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	srv := listenLayer(t, secret)
	// maxHandshakes peers that connect and say nothing hold every slot.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range maxHandshakes {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		// Its nonce is the sign that its handshake holds a slot.
		if _, err := io.ReadFull(c, make([]byte, nonceBytes)); err != nil {
			t.Fatal(err)
		}
	}
	// One more is closed at once, without a nonce.
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout / 2))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil || errTimeout(err) != nil {
		t.Fatalf("a connection past the bound read %d bytes, %v; want it closed at once", n, err)
	}
}

// errTimeout returns err when it is a timeout, else nil.
func errTimeout(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return nil
}

func TestConfig_Check(t *testing.T) {
	t.Parallel()
	peers := []Peer{{ID: "a", Raft: "10.0.0.1:2356", Client: "10.0.0.1:2355"}}
	local := []Peer{{ID: "a", Raft: "127.0.0.1:2356", Client: "127.0.0.1:2355"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no id", Config{DataDir: "d", Peers: local}, "--replica-id"},
		{"no data", Config{ID: "a", Peers: local}, "--data"},
		{"not a peer", Config{ID: "b", DataDir: "d", Peers: local}, "not among --peers"},
		{"open without a secret", Config{ID: "a", DataDir: "d", Peers: peers}, "--raft-secret-file"},
		{"listen open without a secret", Config{ID: "a", DataDir: "d", Peers: local, RaftListen: ":2356"}, "not on loopback"},
		{"short secret", Config{ID: "a", DataDir: "d", Peers: peers, Secret: []byte("short")}, "at least 16"},
		{"loopback", Config{ID: "a", DataDir: "d", Peers: local}, ""},
		{"secret", Config{ID: "a", DataDir: "d", Peers: peers, Secret: []byte("0123456789abcdef")}, ""},
	} {
		err := tc.cfg.check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want))):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

func TestParsePeers(t *testing.T) {
	t.Parallel()
	got, err := ParsePeers("a=h1:1=h1:2, b=h2:1=h2:2")
	if err != nil || len(got) != 2 || got[1] != (Peer{ID: "b", Raft: "h2:1", Client: "h2:2"}) {
		t.Fatalf("ParsePeers = %v, %v", got, err)
	}
	for _, bad := range []string{"", "a=h1:1", "a=h1=h1:2", "a=h1:1=h1:2,a=h2:1=h2:2", "=h:1=h:2"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) succeeded", bad)
		}
	}
}

func tlsLayer(t *testing.T, secret []byte, cert *trackertest.Cert, roots *trackertest.Cert) *authLayer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	client := &tls.Config{RootCAs: roots.Pool, MinVersion: tls.VersionTLS12}
	l := newAuthLayer(ln, secret, server, client, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAuthLayer_TLS(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	cert := trackertest.NewCert(t, "127.0.0.1")
	srv := tlsLayer(t, secret, cert, cert)
	dialer := tlsLayer(t, secret, cert, cert)
	c, err := dialer.Dial(raft.ServerAddress(srv.Addr().String()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*tls.Conn); !ok {
		t.Fatalf("the dialed connection is a %T, want TLS", c)
	}
	s := accepted(srv, 5*time.Second)
	if s == nil {
		t.Fatal("the layer handed raft no connection")
	}
	defer s.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v", got, err)
	}

	// A replica that trusts another authority refuses the certificate.
	other := trackertest.NewCert(t, "127.0.0.1")
	stranger := tlsLayer(t, secret, other, other)
	if _, err := stranger.Dial(raft.ServerAddress(srv.Addr().String()), time.Second); !errors.Is(err, ErrHandshake) {
		t.Fatalf("Dial trusting another authority: %v, want ErrHandshake", err)
	}
	// A peer without TLS gets nothing.
	plain := listenLayer(t, secret)
	if _, err := plain.Dial(raft.ServerAddress(srv.Addr().String()), time.Second); err == nil {
		t.Fatal("a peer without TLS passed the handshake")
	}
	if c := accepted(srv, 200*time.Millisecond); c != nil {
		c.Close()
		t.Fatal("the layer handed raft a connection that failed TLS")
	}
}
