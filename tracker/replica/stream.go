package replica

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The replication port's handshake, before raft's own bytes, when the
// replicas share a secret (Config.Secret): the accepting side sends a
// random nonce (32 bytes); the dialing side answers with handshakeMagic,
// a nonce of its own and HMAC-SHA256(secret, "dial" | both nonces); the
// accepting side checks it and answers HMAC-SHA256(secret, "accept" |
// both nonces), which the dialing side checks. So neither side hands raft
// a stream from a peer that does not know the secret, and a recorded
// handshake cannot be replayed (the nonces differ each time). The secret
// authenticates peers; it does not encrypt the stream (see
// docs/replicas.md: run replication on a private network, or add TLS).
const (
	handshakeMagic = "riot-raft-1\n"
	nonceBytes     = 32
	macBytes       = sha256.Size
	// handshakeTimeout bounds a peer's handshake: a peer that connects
	// and says nothing holds its slot this long at most.
	handshakeTimeout = 5 * time.Second
	// maxHandshakes bounds the handshakes in progress at once; connections
	// beyond are closed at once. With handshakeTimeout, that bounds what
	// peers without the secret cost: this many sockets and goroutines.
	maxHandshakes = 32
)

// ErrHandshake: a peer of the replication port failed its handshake (it
// does not know the secret, or is not a riotd replica).
var ErrHandshake = errors.New("replica: replication handshake failed")

// authLayer is a raft.StreamLayer over TCP that hands raft only the
// connections of peers that passed the handshake (or, without a secret,
// every connection: Config.check allows that on loopback only).
type authLayer struct {
	ln     net.Listener
	secret []byte
	log    *slog.Logger
	// serverTLS and clientTLS, when not nil, wrap every connection in
	// TLS before the handshake (Config.RaftTLS): the accepting side
	// shows its certificate, the dialing side checks it.
	serverTLS, clientTLS *tls.Config

	conns     chan net.Conn
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var _ raft.StreamLayer = (*authLayer)(nil)

func newAuthLayer(ln net.Listener, secret []byte, serverTLS, clientTLS *tls.Config, log *slog.Logger) *authLayer {
	l := &authLayer{
		ln:        ln,
		secret:    secret,
		serverTLS: serverTLS,
		clientTLS: clientTLS,
		log:       log,
		conns:     make(chan net.Conn),
		slots:     make(chan struct{}, maxHandshakes),
		closed:    make(chan struct{}),
	}
	l.wg.Go(l.acceptLoop)
	return l
}

func (l *authLayer) acceptLoop() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.log.Error("replica: replication port: accept failed; the port is closed", "err", err)
			_ = l.Close()
			return
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.log.Debug("replica: replication port: too many handshakes at once; connection closed", "remote", c.RemoteAddr().String())
			c.Close()
			continue
		}
		go func() {
			defer func() { <-l.slots }()
			c, err := l.serverHandshake(c)
			if err != nil {
				l.log.Warn("replica: replication port: a peer failed its handshake", "remote", c.RemoteAddr().String(), "err", err)
				c.Close()
				return
			}
			select {
			case l.conns <- c:
			case <-l.closed:
				c.Close()
			}
		}()
	}
}

func (l *authLayer) mac(label string, a, b []byte) []byte {
	m := hmac.New(sha256.New, l.secret)
	m.Write([]byte(label))
	m.Write(a)
	m.Write(b)
	return m.Sum(nil)
}

// serverHandshake runs TLS (when configured) and the secret's handshake
// on an accepted connection, and returns the connection to hand raft.
func (l *authLayer) serverHandshake(raw net.Conn) (net.Conn, error) {
	_ = raw.SetDeadline(time.Now().Add(handshakeTimeout))
	defer raw.SetDeadline(time.Time{})
	c := raw
	if l.serverTLS != nil {
		tc := tls.Server(raw, l.serverTLS)
		if err := tc.Handshake(); err != nil {
			return raw, fmt.Errorf("%w: TLS: %w", ErrHandshake, err)
		}
		c = tc
	}
	return c, l.secretServer(c)
}

func (l *authLayer) secretServer(c net.Conn) error {
	if l.secret == nil {
		return nil
	}
	var ours [nonceBytes]byte
	_, _ = rand.Read(ours[:])
	if _, err := c.Write(ours[:]); err != nil {
		return err
	}
	msg := make([]byte, len(handshakeMagic)+nonceBytes+macBytes)
	if _, err := io.ReadFull(c, msg); err != nil {
		return fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	if string(msg[:len(handshakeMagic)]) != handshakeMagic {
		return fmt.Errorf("%w: not a riotd replica", ErrHandshake)
	}
	theirs := msg[len(handshakeMagic) : len(handshakeMagic)+nonceBytes]
	if !hmac.Equal(msg[len(handshakeMagic)+nonceBytes:], l.mac("dial", ours[:], theirs)) {
		return fmt.Errorf("%w: the peer does not know the replicas' secret", ErrHandshake)
	}
	_, err := c.Write(l.mac("accept", ours[:], theirs))
	return err
}

// clientHandshake runs TLS (when configured) and the secret's handshake
// on a dialed connection to address, and returns the connection to hand
// raft.
func (l *authLayer) clientHandshake(raw net.Conn, address string, timeout time.Duration) (net.Conn, error) {
	_ = raw.SetDeadline(time.Now().Add(max(timeout, handshakeTimeout)))
	defer raw.SetDeadline(time.Time{})
	c := raw
	if l.clientTLS != nil {
		conf := l.clientTLS.Clone()
		if conf.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return raw, err
			}
			conf.ServerName = host
		}
		tc := tls.Client(raw, conf)
		if err := tc.Handshake(); err != nil {
			return raw, fmt.Errorf("%w: TLS: %w", ErrHandshake, err)
		}
		c = tc
	}
	return c, l.secretClient(c)
}

func (l *authLayer) secretClient(c net.Conn) error {
	if l.secret == nil {
		return nil
	}
	var server [nonceBytes]byte
	if _, err := io.ReadFull(c, server[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	var ours [nonceBytes]byte
	_, _ = rand.Read(ours[:])
	msg := make([]byte, 0, len(handshakeMagic)+nonceBytes+macBytes)
	msg = append(append(append(msg, handshakeMagic...), ours[:]...), l.mac("dial", server[:], ours[:])...)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	answer := make([]byte, macBytes)
	if _, err := io.ReadFull(c, answer); err != nil {
		return fmt.Errorf("%w: the peer refused the secret: %w", ErrHandshake, err)
	}
	if !hmac.Equal(answer, l.mac("accept", server[:], ours[:])) {
		return fmt.Errorf("%w: the peer does not know the replicas' secret", ErrHandshake)
	}
	return nil
}

// Accept implements net.Listener: the next connection that passed its
// handshake.
func (l *authLayer) Accept() (net.Conn, error) {
	select {
	case c, ok := <-l.conns:
		if !ok {
			return nil, net.ErrClosed
		}
		return c, nil // conns is never closed: ok is always true
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *authLayer) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		err = l.ln.Close()
	})
	return err
}

// Addr implements net.Listener.
func (l *authLayer) Addr() net.Addr { return l.ln.Addr() }

// Dial implements raft.StreamLayer: a TCP connection to address that
// passed the handshake.
func (l *authLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	tc, err := l.clientHandshake(c, string(address), timeout)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("replica: dial %s: %w", address, err)
	}
	return tc, nil
}
