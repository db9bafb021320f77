package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

const (
	closeNormal    = wire.CloseNormal
	closeGoingAway = wire.CloseGoingAway
	// readSlack is added to the tracker's MaxFrameBytes for the websocket
	// read limit.
	readSlack = 64 << 10
	// maxRecentBytes and maxRecent bound the results kept to send again
	// after a reconnect (the tracker may not have read them).
	maxRecentBytes = 16 << 20
	maxRecent      = 4096
	// maxKeepRead is the largest read buffer kept between frames.
	maxKeepRead = 4 << 20
	// maxBatches bounds the Watch messages remembered per connection (a
	// batch whose keys were unwatched is never fully answered).
	maxBatches = 1 << 16
	// maxWatchKeys is the most keys put in one Watch message.
	maxWatchKeys = 8192
	// maxSpare is the largest batch whose array the writer keeps for the
	// next: a burst of a million submissions should not leave 24 MB
	// behind.
	maxSpare = 1 << 12
	// writeFrameBytes is the size past which the writer sends a frame
	// rather than add more to it: a burst of submissions goes out in
	// frames of about 1 MiB, not in frames of up to the tracker's
	// MaxFrameBytes, whose buffers (the writer's encoder's, the
	// tracker's read buffer) were too large to keep and were made again,
	// by doubling, for every frame.
	writeFrameBytes = 1 << 20
	// readKeepMessages is the reader's wire.Decoder.Keep: a tracker
	// answers a pipelining master in frames of thousands of accepted and
	// finished messages, whose room (about 150 B each, 2.5 MB at most
	// per type) the reader reuses rather than makes again per frame.
	readKeepMessages = 1 << 14
)

// conn is one websocket connection: its reader and writer goroutines and
// how it ended.
type conn struct {
	ws      *websocket.Conn
	welcome wire.Welcome

	once       sync.Once
	err        error
	done       chan struct{} // closed when the connection failed or was closed
	readerDone chan struct{}
	writerDone chan struct{}
}

// fail ends the connection with err (the first error wins) and closes the
// websocket, which stops both goroutines.
func (cn *conn) fail(err error) {
	cn.once.Do(func() {
		cn.err = err
		close(cn.done)
		_ = cn.ws.Close()
	})
}

// sendClose sends a close message (allowed concurrently with the writer).
func (cn *conn) sendClose(code int, timeout time.Duration) {
	_ = cn.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(timeout))
}

// withCtxErr adds ctx's error to err when ctx has ended: a dial or a
// handshake cut short by its deadline then says so (errors.Is with
// context.DeadlineExceeded), whatever the network error it ended with.
func withCtxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if d, ok := ctx.Deadline(); cerr == nil && ok && !time.Now().Before(d) {
		// The network deadline, set from ctx's, fired before ctx's timer.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// connect dials the tracker and does the Hello/Welcome handshake. Given
// several addresses (the replicas of a replicated tracker), it tries them
// in turn from the one that answered last, and follows a replica that
// names its leader (an HTTP 307 with LeaderHeader) there, but only to one
// of its own addresses, and never from wss:// to ws:// (see
// leaderAmong, leaderResolvesAmong): the Hello carries the client's token.
func (c *Client) connect(ctx context.Context) (*conn, error) {
	var errs []error
	n := len(c.urls)
	for i := range n {
		idx := (c.good + i) % n
		u := c.urls[idx]
		cn, leader, err := c.connectURL(ctx, u)
		if err == nil {
			c.good = idx
			return cn, nil
		}
		if leader != "" {
			j, rerr := leaderAmong(c.urls, u, leader)
			target := ""
			switch {
			case rerr == nil:
				target = c.urls[j]
			case errors.Is(rerr, errLeaderNotListed) && leaderResolvesAmong(ctx, c.urls, leader):
				// A listed DNS name (one for every replica) has the
				// leader's address among its own.
				target, j = leader, -1
			default:
				c.log.Warn("client: a replica's redirect not followed", "replica", u, "err", rerr)
				err = fmt.Errorf("%w; %w", err, rerr)
			}
			if target != "" {
				var lerr error
				if cn, _, lerr = c.connectURL(ctx, target); lerr == nil {
					if j >= 0 {
						c.good = j
					}
					return cn, nil
				}
				err = fmt.Errorf("%w; and its leader: %w", err, lerr)
			}
		}
		if !retryable(err) || ctx.Err() != nil || n == 1 {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// leaderAmong returns the index in urls of the leader that the replica
// at from redirected to (leader, a websocket URL): the address of urls
// with the same scheme and host:port (see endpointOf), whose path is the
// same when several are. It is an error when none is (a follower, or
// whoever answers on a listed address, would otherwise get the client and
// its token sent to any host), and when the redirect goes from wss:// to
// ws:// (the token would leave without TLS).
func leaderAmong(urls []string, from, leader string) (int, error) {
	lu, err := neturl.Parse(leader)
	if err != nil {
		return -1, fmt.Errorf("its redirect to %q is not a URL: not followed", leader)
	}
	shown := lu.Redacted()
	le, ok := endpointOf(lu)
	if !ok {
		return -1, fmt.Errorf("its redirect to %s is not a ws:// or wss:// URL with a host: not followed", shown)
	}
	if fu, err := neturl.Parse(from); err == nil && strings.EqualFold(fu.Scheme, "wss") && le.scheme == "ws" {
		return -1, fmt.Errorf("its redirect goes from wss:// to plain ws:// (%s): not followed, the token would go out without TLS; "+
			"give every replica the same --tls-cert and --tls-key", shown)
	}
	found := -1
	for j, u := range urls {
		pu, err := neturl.Parse(u)
		if err != nil {
			continue
		}
		if e, ok := endpointOf(pu); ok && e == le {
			if pu.Path == lu.Path {
				return j, nil
			}
			if found < 0 {
				found = j
			}
		}
	}
	if found < 0 {
		return -1, fmt.Errorf("it names its leader %s, which is not among the tracker's addresses (%s), nor an address of a name among them: not followed; "+
			"give the client every replica's address (--tracker, riot-worker's argument), as riotd's --peers names them (ID=RAFT=CLIENT), or one DNS name with all of them: %w",
			shown, strings.Join(urls, ","), errLeaderNotListed)
	}
	return found, nil
}

// errLeaderNotListed: a replica's redirect names a leader whose endpoint
// is not one of the client's addresses.
var errLeaderNotListed = errors.New("the leader is not listed")

// resolveTimeout bounds the DNS lookups of leaderResolvesAmong.
const resolveTimeout = 2 * time.Second

// leaderResolvesAmong reports whether the leader's host (a websocket URL
// of a replica's redirect) has an IP address that a host name of urls
// resolves to, with the same scheme and port: a DNS name listed for every
// replica (a headless Kubernetes Service) names the leader's address too,
// so the client would dial that address, with its token, through the
// listed name anyway. The leader's own URL is then dialed (its host name
// is what its TLS certificate names).
func leaderResolvesAmong(ctx context.Context, urls []string, leader string) bool {
	lu, err := neturl.Parse(leader)
	if err != nil {
		return false
	}
	le, ok := endpointOf(lu)
	if !ok {
		return false
	}
	_, port, _ := net.SplitHostPort(le.hostport)
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var leaderAddrs []netip.Addr // resolved when a listed name needs them
	for _, u := range urls {
		pu, err := neturl.Parse(u)
		if err != nil {
			continue
		}
		e, ok := endpointOf(pu)
		if !ok || e.scheme != le.scheme {
			continue
		}
		host, p, _ := net.SplitHostPort(e.hostport)
		if p != port {
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			continue // an address, not a name: leaderAmong compared it
		}
		if leaderAddrs == nil {
			if leaderAddrs = lookup(ctx, lu.Hostname()); len(leaderAddrs) == 0 {
				return false
			}
		}
		for _, a := range lookup(ctx, host) {
			if slices.Contains(leaderAddrs, a) {
				return true
			}
		}
	}
	return false
}

// lookup returns host's addresses (host itself when it is one), unmapped,
// or none when it does not resolve.
func lookup(ctx context.Context, host string) []netip.Addr {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs
}

// endpoint is where a websocket URL connects: its scheme and host:port,
// normalised (lower case, the scheme's default port made explicit, an IP
// address in its canonical form, a host name's final dot dropped).
type endpoint struct {
	scheme, hostport string
}

// endpointOf returns u's endpoint, or false when u is not a ws:// or
// wss:// URL with a host and a valid port.
func endpointOf(u *neturl.URL) (endpoint, bool) {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "ws" && scheme != "wss":
		return endpoint{}, false
	case port == "" && scheme == "ws":
		port = "80"
	case port == "":
		port = "443"
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return endpoint{}, false
	}
	port = strconv.Itoa(p) // "0080" is 80
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return endpoint{}, false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return endpoint{scheme: scheme, hostport: net.JoinHostPort(host, port)}, true
}

// LeaderHeader is the HTTP header in which a replica of a replicated
// tracker that does not lead names its leader's client address, when it
// answers a websocket's upgrade with a redirect (307) there (see
// docs/replicas.md).
const LeaderHeader = "Riot-Leader"

// ErrNotLeader: the address dialed is a replica of a replicated tracker
// that does not lead (it named its leader, which the client tried next
// when it was one of its addresses), or one that knows no leader yet
// (HTTP 503). It is retried like a network error.
var ErrNotLeader = errors.New("client: the replica does not lead")

// connectURL dials url and does the handshake. A replica that does not
// lead answers with its leader's websocket URL, returned with an error
// wrapping ErrNotLeader.
func (c *Client) connectURL(ctx context.Context, url string) (*conn, string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: c.opts.DialTimeout,
		Subprotocols:     []string{wire.Subprotocol},
		TLSClientConfig:  c.opts.TLSConfig,
		ReadBufferSize:   64 << 10,
		WriteBufferSize:  64 << 10,
	}
	ws, resp, err := d.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			switch resp.StatusCode {
			case http.StatusTemporaryRedirect:
				leader := resp.Header.Get("Location")
				if lu, perr := neturl.Parse(leader); perr != nil || (lu.Scheme != "ws" && lu.Scheme != "wss") || lu.Host == "" {
					return nil, "", fmt.Errorf("client: dial %s: %w, and its redirect %q is not a websocket URL", url, ErrNotLeader, leader)
				}
				return nil, leader, fmt.Errorf("client: dial %s: %w: the leader is at %s", url, ErrNotLeader, resp.Header.Get(LeaderHeader))
			case http.StatusServiceUnavailable:
				return nil, "", fmt.Errorf("client: dial %s: %w, and no leader is elected yet (HTTP 503)", url, ErrNotLeader)
			}
		}
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil && resp.StatusCode == http.StatusBadRequest &&
			strings.HasPrefix(url, "ws://") {
			// What a TLS server answers a plain HTTP request.
			return nil, "", fmt.Errorf("client: dial %s: %w (HTTP 400: does the tracker serve TLS? then reach it with wss://, or give --tls-ca / $RIOT_TLS_CA)", url, err)
		}
		var unknownCA x509.UnknownAuthorityError
		var notTLS tls.RecordHeaderError
		switch {
		case errors.As(err, &unknownCA):
			return nil, "", fmt.Errorf("client: dial %s: %w (give --tls-ca FILE or $RIOT_TLS_CA: the authority that signed the tracker's certificate)", url, err)
		case errors.As(err, &notTLS):
			return nil, "", fmt.Errorf("client: dial %s: %w (the tracker does not serve TLS: reach it with ws://, without --tls-ca)", url, err)
		}
		return nil, "", fmt.Errorf("client: dial %s: %w", url, withCtxErr(ctx, err))
	}
	stop := context.AfterFunc(ctx, func() { _ = ws.Close() })
	cn, err := c.handshake(ctx, ws, url)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = ws.Close()
		return nil, "", withCtxErr(ctx, err)
	}
	return cn, "", nil
}

func (c *Client) handshake(ctx context.Context, ws *websocket.Conn, url string) (*conn, error) {
	hello := &wire.Hello{
		Version:     wire.ProtocolVersion,
		Role:        c.opts.Role,
		Name:        c.opts.Name,
		Session:     c.opts.Session,
		Slots:       c.opts.Slots,
		Prefetch:    c.opts.Prefetch,
		GPUs:        c.opts.GPUs,
		Token:       c.opts.Token,
		Agent:       c.opts.Agent,
		Job:         c.opts.Job,
		MemoryLimit: c.opts.MemoryLimit,
	}
	frame, err := wire.Encode(hello)
	if err != nil {
		return nil, fmt.Errorf("client: hello: %w", err)
	}
	deadline, _ := ctx.Deadline()
	_ = ws.SetWriteDeadline(deadline)
	if err := ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
		return nil, fmt.Errorf("client: send hello to %s: %w", url, err)
	}
	_ = ws.SetReadDeadline(deadline)
	typ, frame, err := ws.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code > wire.CloseRefused && ce.Code < wire.CloseRefused+1000 {
			return nil, refusedErr(url, &wire.Refused{Code: wire.Code(ce.Code - wire.CloseRefused), Message: ce.Text})
		}
		return nil, fmt.Errorf("client: read welcome from %s: %w", url, err)
	}
	if typ != websocket.BinaryMessage {
		return nil, fmt.Errorf("client: %s answered the hello with a text message", url)
	}
	msgs, err := wire.Decode(frame)
	if err != nil {
		return nil, fmt.Errorf("client: welcome from %s: %w", url, err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("client: %s answered the hello with %d messages, want a welcome", url, len(msgs))
	}
	switch m := msgs[0].(type) {
	case *wire.Welcome:
		if m.Version != wire.ProtocolVersion {
			return nil, &VersionError{Client: wire.ProtocolVersion, Tracker: m.Version}
		}
		_ = ws.SetReadDeadline(time.Time{})
		_ = ws.SetWriteDeadline(time.Time{})
		w := *m
		w.Limits = w.Limits.WithDefaults()
		if w.PingInterval <= 0 {
			w.PingInterval = wire.DefaultPingInterval
		}
		return &conn{
			ws:         ws,
			welcome:    w,
			done:       make(chan struct{}),
			readerDone: make(chan struct{}),
			writerDone: make(chan struct{}),
		}, nil
	case *wire.Refused:
		return nil, refusedErr(url, m)
	default:
		return nil, fmt.Errorf("client: %s answered the hello with %s, want a welcome", url, m.Type())
	}
}

// startConn makes cn the live connection: it queues again what a new
// connection must carry, then starts its reader and writer. It returns
// false, and closes cn, when the client is ending.
func (c *Client) startConn(cn *conn) bool {
	c.mu.Lock()
	if c.err != nil || c.closing {
		c.mu.Unlock()
		_ = cn.ws.Close()
		return false
	}
	c.cur = cn
	c.welcome = cn.welcome
	// The tracker may have freed, since the last connection ended, the
	// blobs it held for it (riotd --memory), or lost them all with a
	// restart: ask again (EnsureBlobs).
	clear(c.stored)
	lost := c.resumeLocked()
	c.mu.Unlock()
	if c.opts.OnRevoke != nil {
		for _, a := range lost {
			c.opts.OnRevoke(a)
		}
	}
	c.wake()
	go c.reader(cn)
	go c.writer(cn)
	return true
}

// run is the connection loop: it waits for the live connection to end,
// then dials again with backoff, until the client ends.
func (c *Client) run(cn *conn) {
	defer close(c.runDone)
	for {
		<-cn.done
		<-cn.readerDone
		<-cn.writerDone
		c.mu.Lock()
		c.cur = nil
		ended := c.err != nil || c.closing
		c.mu.Unlock()
		if ended {
			<-c.ended // Close ends the client
			return
		}
		c.log.Warn("client: connection lost; reconnecting", "name", cn.welcome.Name, "err", cn.err)
		if len(c.urls) > 1 {
			// Of a tracker's replicas, the one that was lost may be the
			// one that is gone, or hangs (a dial to it would wait the
			// whole DialTimeout): start with the next. If it still leads,
			// the next sends the client back to it.
			c.good = (c.good + 1) % len(c.urls)
		}
		if cn = c.redial(); cn == nil {
			return
		}
		if !c.startConn(cn) {
			<-c.ended // Close ends the client
			return
		}
		c.log.Info("client: reconnected", "name", cn.welcome.Name, "resumed", cn.welcome.Resumed)
	}
}

// redial dials until it connects (returning the connection) or the client
// ends (returning nil). A refusal that will not go away by itself (a
// version mismatch, bad credentials) ends the client with it.
func (c *Client) redial() *conn {
	delay := c.opts.MinBackoff
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a Close stops the attempt in progress
		select {
		case <-c.ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		wait := delay/2 + rand.N(delay/2+1)
		t := time.NewTimer(wait)
		select {
		case <-c.ended:
			t.Stop()
			return nil
		case <-t.C:
		}
		cn, err := c.connect(ctx)
		if err == nil {
			return cn
		}
		if !retryable(err) {
			c.log.Error("client: the tracker refused the connection", "err", err)
			c.end(err)
			return nil
		}
		c.log.Debug("client: reconnect failed", "err", err, "retry_in", delay)
		delay = min(delay*2, c.opts.MaxBackoff)
	}
}

// resumeLocked rebuilds the writer's queue for a new connection: results
// and returns that may not have reached the tracker, the credit not yet
// used, then every request still waiting for its answer, in the order it
// was first made, and a watch of every key still waited for. A tracker
// that did not resume the old connection took back its leases: the
// assignments of it that were handed out and not yet answered are revoked,
// and returned for Options.OnRevoke.
func (c *Client) resumeLocked() (lost []*Assignment) {
	out := make([]outMsg, 0, len(c.recent)+len(c.out)+c.pending.len()+1)
	for _, m := range c.recent {
		out = append(out, outMsg{msg: m})
	}
	c.recent, c.recentBytes = nil, 0
	for _, m := range c.out {
		switch m.msg.(type) {
		case *wire.Done, *wire.Failed, *wire.Return:
			out = append(out, m)
		}
	}
	if !c.welcome.Resumed && len(c.assigns) > 0 {
		// Leases of the old connection that nobody took yet: the tracker
		// has given them back to the queue. Drop them, and ask for as
		// much work again.
		c.credit += len(c.assigns)
		for _, a := range c.assigns {
			delete(c.live, a.Token)
		}
		clear(c.assigns)
		c.assigns = c.assigns[:0]
	}
	if !c.welcome.Resumed && len(c.live) > 0 {
		// Handed out and not answered: the tracker gave them to others
		// and will discard their answers. Stop them like revoked ones;
		// their answers (discarded) still bring their room back.
		for tok, a := range c.live {
			a.revoked.Store(true)
			lost = append(lost, a)
			delete(c.live, tok)
		}
	}
	if c.credit > 0 {
		out = append(out, outMsg{msg: &wire.Credit{N: c.credit}})
	}
	reqs := c.pending.reqs()
	// Watches that a submission sent again carries: they need no Watch
	// of their own.
	covered := make(map[*Call]bool)
	for _, req := range reqs {
		r, _ := c.pending.get(req)
		switch r := r.(type) {
		case *Call:
			if w := r.watch(); w != nil {
				covered[w] = true
			}
			c.markQueuedLocked(r)
			out = append(out, outMsg{call: r})
		case *rpc:
			switch r.msg.(type) {
			case *wire.BlobWrite, *wire.BlobRead:
				// A piece means nothing on a new connection (an upload
				// lives on one): its transfer starts again (putPieces,
				// fetchPieces).
				c.pending.delete(req)
				r.finish(nil, fmt.Errorf("client: %s: %w", r.op, errPieceLost))
				continue
			}
			out = append(out, outMsg{msg: r.msg})
		}
	}
	clear(c.batches)
	var keys []workunit.Key
	c.eachWatchLocked(func(w *Call) {
		if !covered[w] {
			keys = append(keys, w.Key)
		}
	})
	for len(keys) > 0 {
		n := min(len(keys), maxWatchKeys)
		out = append(out, outMsg{msg: c.watchMsgLocked(keys[:n])})
		keys = keys[n:]
	}
	c.out = out
	return lost
}

// watchMsgLocked returns a Watch of keys under a new request id, noting
// the batch so that an Error answering it can fail its keys.
func (c *Client) watchMsgLocked(keys []workunit.Key) *wire.Watch {
	req := c.nextReqLocked()
	ks := slices.Clone(keys)
	if len(c.batches) < maxBatches { // else an Error answering it is only logged
		c.batches[req] = &watchBatch{keys: ks, left: len(ks)}
	}
	return &wire.Watch{Req: req, Keys: ks}
}

// writer sends what is queued, every message that is ready in one frame
// (several when they pass the tracker's limits), until cn ends.
func (c *Client) writer(cn *conn) {
	defer close(cn.writerDone)
	enc := wire.Encoder{Limits: cn.welcome.Limits}
	// Submissions are encoded from their Calls through these.
	var sub wire.Submit
	var child wire.Child
	send := func() error {
		if enc.Len() == 0 {
			return nil
		}
		_ = cn.ws.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
		err := cn.ws.WriteMessage(websocket.BinaryMessage, enc.Frame())
		enc.Reset()
		return err
	}
	for {
		select {
		case <-c.kick:
		case <-cn.done:
			return
		}
		c.mu.Lock()
		if c.cur != cn {
			c.mu.Unlock()
			c.wake() // for the next connection's writer
			return
		}
		batch := c.out
		c.out = c.spare[:0]
		c.spare = nil
		c.keepRecentLocked(batch)
		c.mu.Unlock()

		var err error
		var instead wire.Msg // the Failed sent in place of an unsendable report
		for i := 0; i < len(batch); i++ {
			m := batch[i].msg
			if k := batch[i].call; k != nil {
				m = k.submission(&sub, &child)
			}
			aerr := enc.Add(m)
			if errors.Is(aerr, wire.ErrFrameFull) {
				if err = send(); err != nil {
					break
				}
				aerr = enc.Add(m)
			}
			if aerr != nil {
				if alt := c.unsendable(m, aerr); alt != nil && m != instead {
					batch[i], instead = outMsg{msg: alt}, alt
					i-- // send it now
				}
				continue
			}
			if _, ok := m.(*wire.BlobWrite); ok || enc.Size() >= writeFrameBytes {
				// A piece ends its frame: the tracker stores it (and
				// answers) while the next ones are on their way. So
				// does a frame of writeFrameBytes.
				if err = send(); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = send()
		}
		c.mu.Lock()
		c.doneWithLocked(batch)
		clear(batch)
		if c.spare == nil && cap(batch) <= maxSpare {
			c.spare = batch[:0]
		}
		if c.closing && len(c.out) == 0 && err == nil && c.flushed != nil {
			close(c.flushed)
			c.flushed = nil
		}
		c.mu.Unlock()
		if err != nil {
			cn.fail(fmt.Errorf("client: write: %w", err))
			return
		}
	}
}

// keepRecentLocked remembers the results in batch, to send them again
// after a reconnect: the tracker may not have read them. Only the latest
// are kept (maxRecent, maxRecentBytes).
func (c *Client) keepRecentLocked(batch []outMsg) {
	for _, m := range batch {
		var n int
		switch m := m.msg.(type) {
		case *wire.Done:
			n = len(m.Result) + 64
		case *wire.Failed:
			n = len(m.Error.Message) + len(m.Error.Stack) + 64
		default:
			continue
		}
		c.recent = append(c.recent, m.msg)
		c.recentBytes += n
	}
	if len(c.recent) > maxRecent || c.recentBytes > maxRecentBytes {
		drop := len(c.recent) / 2
		c.recent = slices.Delete(c.recent, 0, drop)
		c.recentBytes /= 2
	}
}

// unsendable handles a message the encoder refused (a field over the
// tracker's limits): the request it carried fails; a report (Done, Failed)
// that cannot be sent returns the Failed to send instead, which says why
// (see failedInstead).
func (c *Client) unsendable(m wire.Msg, err error) wire.Msg {
	c.log.Error("client: cannot send a message", "type", m.Type(), "err", err)
	if alt := failedInstead(m, err); alt != nil {
		return alt
	}
	req := wire.ReqOf(m)
	if req == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.pending.take(req); ok {
		r.fail(c, fmt.Errorf("client: %w", err))
	}
	return nil
}

// reader reads and handles the tracker's frames until cn ends. It keeps
// the read deadline at wire.ReadTimeout of the tracker's ping interval,
// renewed by every frame and ping, and answers pings with pongs.
func (c *Client) reader(cn *conn) {
	defer close(cn.readerDone)
	ws := cn.ws
	timeout := wire.ReadTimeout(cn.welcome.PingInterval)
	ws.SetReadLimit(int64(cn.welcome.Limits.MaxFrameBytes) + readSlack)
	_ = ws.SetReadDeadline(time.Now().Add(timeout))
	ws.SetPingHandler(func(data string) error {
		_ = ws.SetReadDeadline(time.Now().Add(timeout))
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.opts.WriteTimeout))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	ws.SetPongHandler(func(string) error {
		_ = ws.SetReadDeadline(time.Now().Add(timeout))
		return nil
	})
	dec := wire.Decoder{Limits: cn.welcome.Limits, Keep: readKeepMessages}
	var buf bytes.Buffer // frames are read into it, and what is kept is copied out
	for {
		typ, r, err := ws.NextReader()
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		if err != nil {
			cn.fail(fmt.Errorf("client: read: %w", err))
			return
		}
		frame := buf.Bytes()
		if buf.Cap() > maxKeepRead && buf.Len() < buf.Cap()/4 {
			buf = bytes.Buffer{} // do not keep a huge buffer for small frames
		}
		_ = ws.SetReadDeadline(time.Now().Add(timeout))
		if typ != websocket.BinaryMessage {
			cn.sendClose(wire.CloseUnsupportedData, c.opts.WriteTimeout)
			cn.fail(errors.New("client: the tracker sent a text message"))
			return
		}
		msgs, err := dec.Decode(frame)
		if err != nil {
			c.log.Error("client: bad frame from the tracker", "err", err)
			cn.sendClose(wire.CloseProtocolError, c.opts.WriteTimeout)
			cn.fail(err)
			return
		}
		if err := c.handle(cn, msgs); err != nil {
			c.log.Error("client: bad message from the tracker", "err", err)
			cn.sendClose(wire.CloseProtocolError, c.opts.WriteTimeout)
			cn.fail(err)
			return
		}
	}
}

// handle applies the messages of one frame, in order, under one lock.
// Decoded messages belong to the Decoder, and their byte slices to the
// reader's buffer: what is kept is copied.
func (c *Client) handle(cn *conn, msgs []wire.Msg) error {
	var revoked []*Assignment
	if c.opts.OnRevoke != nil {
		// After the unlock: the callback runs without the lock.
		defer func() {
			for _, a := range revoked {
				c.opts.OnRevoke(a)
			}
		}()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != cn {
		return nil
	}
	queued := false
	for _, m := range msgs {
		if m.Type().FromClient() {
			return fmt.Errorf("client: the tracker sent %s, a client's message", m.Type())
		}
		switch m := m.(type) {
		case *wire.Accepted:
			c.onAcceptedLocked(m)
		case *wire.Finished:
			c.onFinishedLocked(m)
		case *wire.InfoReply, *wire.BlobNeed, *wire.BlobStored, *wire.BlobData, *wire.Canceled, *wire.BlobWritten, *wire.BlobPart:
			c.onAnswerLocked(m)
		case *wire.Assign:
			a := &Assignment{Key: m.Key, Token: m.Token, Spec: bytes.Clone(m.Spec), Realm: m.Realm, Timeout: m.Timeout, GPUs: m.GPUs}
			c.assigns = append(c.assigns, a)
			c.live[a.Token] = a
			if c.credit > 0 {
				c.credit--
			}
			queued = true
		case *wire.Revoke:
			if a := c.live[m.Token]; a != nil && a.Key == m.Key {
				delete(c.live, m.Token)
				a.revoked.Store(true)
				revoked = append(revoked, a)
			}
		case *wire.Printed:
			if fn := c.opts.OnPrint; fn != nil {
				p := *m // the message is the decoder's; its lines are its own
				c.printsQueued.Add(1)
				c.cb.push(func() {
					defer c.printsQueued.Add(-1)
					fn(&p)
				})
			} else {
				c.keepStreamedLocked(m)
			}
		case *wire.Error:
			c.onErrorLocked(m)
		default:
			return fmt.Errorf("client: the tracker sent %s after its welcome", m.Type())
		}
	}
	if queued {
		c.signalAssign()
	}
	return nil
}

// onErrorLocked handles an Error: it answers the request with its Req, or
// the connection as a whole (Req 0). A shutting-down tracker's refusal
// leaves the request waiting: it goes out again on the next connection.
func (c *Client) onErrorLocked(m *wire.Error) {
	if m.Req == 0 {
		c.log.Warn("client: the tracker reports an error", "code", m.Code, "message", m.Message)
		return
	}
	if m.Code == wire.CodeShutdown {
		return
	}
	if r, ok := c.pending.take(m.Req); ok {
		if k, ok := r.(*Call); ok && m.Code == wire.CodeUnknownBlob {
			c.unknownBlobLocked(k, copyErr(m))
			return
		}
		r.fail(c, copyErr(m))
		return
	}
	if b, ok := c.batches[m.Req]; ok {
		delete(c.batches, m.Req)
		err := fmt.Errorf("client: watch: %w", copyErr(m))
		for _, k := range b.keys {
			if w := c.watchOfLocked(k); w != nil && w.minReq <= m.Req {
				c.resolveLocked(w, nil, err)
			}
		}
		return
	}
	c.log.Debug("client: an error for no pending request", "req", m.Req, "code", m.Code, "message", m.Message)
}
