package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
)

// Defaults for Options fields left zero.
const (
	DefaultMinBackoff   = 50 * time.Millisecond
	DefaultMaxBackoff   = 5 * time.Second
	DefaultDialTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	// DefaultCloseTimeout bounds how long Close waits to flush what is
	// queued and for the tracker to answer the close.
	DefaultCloseTimeout = 5 * time.Second
)

// Agent is the default Hello agent of this client.
const Agent = "riot-go-client/0.1"

// Options configure a Client. The zero value is usable: every field has a
// default.
type Options struct {
	// Name is the name asked for in Hello; the tracker makes it unique
	// (alfred, alfred-2, ...) and Name() returns what it gave. Default:
	// the host name.
	Name string
	// Role is what the client says it is. Default: wire.RoleMaster.
	Role wire.Role
	// Session stays the same across the reconnects of this Client, so
	// that the tracker can recognize it. Default: 32 random hex digits.
	Session string
	// Slots and Prefetch are a worker's capacity (wire.Hello): it runs
	// Slots workunits at once and holds up to Prefetch more. A master
	// leaves them 0 unless it takes work itself (WaitForWork), when
	// Slots 1 is the right value.
	Slots, Prefetch int
	// GPUs lists the worker's GPU devices.
	GPUs []wire.GPU
	// Token is the tracker's credentials, "" when it needs none.
	Token string
	// Agent names the software in Hello. Default: Agent and the Go
	// version.
	Agent string
	// Job names what this master runs, for the tracker's status pages and
	// dashboard, which count work by job (docs/http.md): one Client's
	// session is one job. riot-worker eval gives the job script's file
	// name. Default: the program's name (os.Args[0] without its
	// directory) for a master, "" for a worker.
	Job string
	// MemoryLimit is the heap limit a worker enforces, in bytes, as its
	// Hello says it (0: none); status pages show it.
	MemoryLimit uint64
	// Logger receives the client's logs (connections lost and made).
	// Default: slog.Default().
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts: it starts at MinBackoff, doubles after each failed attempt
	// up to MaxBackoff, and each wait is jittered (between half and all of
	// it). Defaults: DefaultMinBackoff, DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds one connection attempt: dial, websocket upgrade,
	// Hello and Welcome. Default: DefaultDialTimeout.
	DialTimeout time.Duration
	// WriteTimeout bounds the write of one frame; a connection whose
	// writes take longer is dropped (and made again). Default:
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// TLSConfig is used for wss:// trackers; nil means the defaults (the
	// system's certificate authorities). When it is set, an address
	// without a scheme ("host", "host:port") means wss:// rather than
	// ws://. See TLSConfigWithCA.
	TLSConfig *tls.Config
	// OnRevoke, when set, is called when the tracker revokes an assignment
	// this client took (its master canceled the workunit), and, after a
	// reconnect, for each assignment of the lost connection that was not
	// answered (the tracker took them back), after Assignment.Revoked has
	// become true: a worker stops running it. It is called from the
	// client's reader goroutine or its reconnecting goroutine, without the
	// client's lock held, and must not block.
	OnRevoke func(*Assignment)
	// OnPrint, when set, is called with the console lines of running
	// workunits that this master watches, as their workers stream them
	// (wire.Printed; docs/protocol.md, print): lines a workunit printed
	// while it ran, which its outcome's console then no longer holds. It
	// is called on the client's callback goroutine, in order with the
	// Calls' callbacks (a workunit's lines before its OnDone), and must
	// not block for long. Without it, the client keeps the lines (up to
	// 1 MiB of text a workunit) and puts them back in front of the
	// outcome's console, so that Outcome.Console holds the whole run's.
	OnPrint func(*wire.Printed)
	// DropAcceptedSpecs, when set, has each Call drop its spec's encoding
	// once the tracker has accepted the submission, rather than keep it
	// for the life of the Call. The encoding still goes out again after a
	// reconnect until the tracker accepts it; but should the tracker
	// answer later that it no longer knows the key (it forgot the finished
	// workunit, riotd --keep-results, or restarted without a store), the
	// Call ends with that error (a *wire.Error of wire.CodeUnknownKey)
	// instead of being submitted again. It is for a tracker that cannot
	// forget what it accepted while this Client uses it, such as one in
	// the same process that keeps every result (riot-worker eval's
	// embedded default): a master with a million calls outstanding then
	// holds no spec bytes for them.
	DropAcceptedSpecs bool
}

func (o *Options) setDefaults() error {
	if o.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "riot"
		}
		o.Name = h
	}
	if o.Job == "" && (o.Role == "" || o.Role == wire.RoleMaster) && len(os.Args) > 0 {
		o.Job = filepath.Base(os.Args[0])
	}
	if o.Role == "" {
		o.Role = wire.RoleMaster
	}
	if o.Session == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("client: session id: %w", err)
		}
		o.Session = hex.EncodeToString(b[:])
	}
	if o.Slots < 0 || o.Prefetch < 0 {
		return fmt.Errorf("client: negative slots (%d) or prefetch (%d)", o.Slots, o.Prefetch)
	}
	if o.Agent == "" {
		o.Agent = Agent + " " + runtime.Version()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return nil
}

// Client is a connection to a riot tracker that lives across reconnects:
// when the websocket drops, the Client dials again (with a capped,
// jittered backoff) under the same Session, sends again every request
// that was not answered (submissions are idempotent by key), watches again
// every key still waited for, and lets blocking calls go on waiting until
// their context ends. Close ends it.
//
// A Client is safe for concurrent use by any number of goroutines. Each
// connection has one reader goroutine and one writer goroutine; the writer
// puts every message that is ready into one frame, so that many calls made
// at once (10,000 Submits) share frames and round trips.
type Client struct {
	opts Options
	urls []string // the tracker's addresses: one, or its replicas
	log  *slog.Logger
	// good indexes the address in urls that answered last (only the
	// goroutine that dials uses it: Dial's, then the connection loop's).
	good int

	kick      chan struct{} // cap 1: the writer has messages to send
	assignSig chan struct{} // cap 1: an assignment was queued
	ended     chan struct{} // closed when the client ended (err set)
	runDone   chan struct{} // closed when the connection loop returned
	cb        callbacks
	scratch   scratchPool // buffers for encoding payloads (DoWork)
	// printsQueued counts the OnPrint callbacks queued and not yet run.
	printsQueued atomic.Int64

	mu sync.Mutex
	// Everything below is guarded by mu.
	cur     *conn // the live connection; nil while reconnecting
	welcome wire.Welcome
	err     error // why the client ended (ErrClosed, a fatal refusal); nil while it lives
	closing bool  // Close is flushing
	flushed chan struct{}

	out         []outMsg   // queued for the writer
	spare       []outMsg   // the writer's last batch, emptied, for reuse
	recent      []wire.Msg // results (Done, Failed) written on the current connection
	recentBytes int

	req     uint64                 // the last request id given
	pending reqTable               // requests awaiting their answer, by req
	watches watchTable             // keys waited for
	batches map[uint64]*watchBatch // Watch messages on this connection, by req
	gets    map[blob.Hash]*rpc     // blob fetches in flight, by hash
	puts    map[blob.Hash]*rpc     // blob uploads in flight, by hash
	stored  map[blob.Hash]struct{} // blobs the tracker holds
	credit  int                    // credit granted and not used by an Assign
	assigns []*Assignment          // assignments not yet taken
	live    map[uint64]*Assignment // assignments not yet answered, by token
}

// Dial connects to the tracker at addr ("host", "host:port", or a ws:// or
// wss:// URL; see TrackerURL), or at one of several addresses separated
// by commas (the replicas of a replicated tracker: Dial and every
// reconnect try them in turn, and follow a replica that names its leader
// when the leader is one of them (never from wss:// to ws://);
// see TrackerURLs), and returns the Client once the tracker has
// welcomed it. A tracker that refuses the Hello gives a *VersionError or a
// *RefusedError; a tracker that cannot be reached gives the network error
// (Dial does not retry: that is for reconnects, after a first success).
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	us, err := trackerURLs(addr, opts.TLSConfig != nil)
	if err != nil {
		return nil, err
	}
	c := newClient(opts, us...)
	cn, err := c.connect(ctx)
	if err != nil {
		c.cb.stop()
		return nil, err
	}
	c.startConn(cn) // nothing can end the client yet
	go c.run(cn)
	return c, nil
}

// newClient returns a Client for the tracker at urls (one, or its
// replicas), not connected, with its callback goroutine started. opts
// have their defaults.
func newClient(opts Options, urls ...string) *Client {
	c := &Client{
		opts:      opts,
		urls:      urls,
		log:       opts.Logger.With("tracker", strings.Join(urls, ",")),
		kick:      make(chan struct{}, 1),
		assignSig: make(chan struct{}, 1),
		ended:     make(chan struct{}),
		runDone:   make(chan struct{}),
		live:      make(map[uint64]*Assignment),
		watches:   newWatchTable(),
		batches:   make(map[uint64]*watchBatch),
		gets:      make(map[blob.Hash]*rpc),
		puts:      make(map[blob.Hash]*rpc),
		stored:    make(map[blob.Hash]struct{}),
	}
	c.cb.init()
	return c
}

// Name returns the name the tracker gave this client (Riot's
// client-who-am-i), e.g. "alfred-2". It may change after a reconnect when
// the old name was still taken.
func (c *Client) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.welcome.Name
}

// WhoAmI is Riot's client-who-am-i: the same as Name.
func (c *Client) WhoAmI() string { return c.Name() }

// Tracker returns the tracker's name as its Welcome gave it.
func (c *Client) Tracker() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.welcome.Tracker
}

// Limits returns the tracker's limits (from its Welcome, with defaults for
// fields it left zero). Specs, results and blobs must stay within them.
func (c *Client) Limits() wire.Limits {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.welcome.Limits.WithDefaults()
}

// Connected reports whether the client has a live connection now (it is
// not between a drop and a reconnect).
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil
}

// Err returns why the client ended (ErrClosed after Close, or the fatal
// error that ended it, such as a *VersionError on reconnect), or nil while
// it lives.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Ended returns a channel that is closed when the client has ended (see
// Err).
func (c *Client) Ended() <-chan struct{} { return c.ended }

// Close ends the client: it sends what is queued (results, returns,
// requests) within DefaultCloseTimeout, closes the websocket (code 1000
// for a master, 1001 for a worker), and fails every call still waiting
// with ErrClosed. Callbacks already queued still run. Close returns nil,
// also when called again.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.err != nil || c.closing {
		c.mu.Unlock()
		<-c.runDone
		return nil
	}
	c.closing = true
	c.flushed = make(chan struct{})
	cn, flushed := c.cur, c.flushed
	c.mu.Unlock()

	if cn != nil {
		timer := time.NewTimer(DefaultCloseTimeout)
		defer timer.Stop()
		c.wake()
		select {
		case <-flushed:
			code := closeNormal
			if c.opts.Role == wire.RoleWorker {
				code = closeGoingAway
			}
			cn.sendClose(code, c.opts.WriteTimeout)
			select { // the tracker answers the close, then closes
			case <-cn.readerDone:
			case <-timer.C:
			}
		case <-cn.done:
		case <-timer.C:
		}
	}
	c.end(ErrClosed)
	<-c.runDone
	return nil
}

// end ends the client with err: every waiting call fails with it, the
// connection closes, and the connection loop stops.
func (c *Client) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.ended)
	cn := c.cur
	for _, r := range c.pending.takeAll() {
		r.fail(c, err)
	}
	c.eachWatchLocked(func(w *Call) { c.resolveLocked(w, nil, err) })
	for _, r := range c.gets {
		r.finish(nil, err)
	}
	for _, r := range c.puts {
		r.finish(nil, err)
	}
	c.out = nil
	c.recent = nil
	c.mu.Unlock()
	c.cb.stop()
	if cn != nil {
		cn.fail(err)
	}
}

// nextReqLocked returns a new request id.
func (c *Client) nextReqLocked() uint64 {
	c.req++
	return c.req
}

// outMsg is a message queued for the writer: msg, or the submission of
// call, which the writer encodes from the Call (Call.submission) so that
// a Call holds no message of its own.
type outMsg struct {
	msg  wire.Msg
	call *Call
}

// sendLocked queues m for the writer. While disconnected, requests stay
// in their tables and go out again on reconnect; sendLocked still queues
// everything, and the reconnect keeps only what must be sent again.
func (c *Client) sendLocked(m wire.Msg) { c.queueLocked(outMsg{msg: m}) }

// sendCallLocked queues k's submission for the writer.
func (c *Client) sendCallLocked(k *Call) {
	c.markQueuedLocked(k)
	c.queueLocked(outMsg{call: k})
}

// markQueuedLocked notes, for Options.DropAcceptedSpecs, that k is in the
// writer's queue: its spec is the writer's to read until the writer is done
// with the batch that holds it (dropSpecsLocked).
func (c *Client) markQueuedLocked(k *Call) {
	if c.opts.DropAcceptedSpecs {
		k.st.Or(stQueued)
	}
}

// dropSpecLocked drops k's spec once the tracker accepted it
// (Options.DropAcceptedSpecs): at once, or, when k is in the writer's
// queue or batch, when the writer is done with it.
func (c *Client) dropSpecLocked(k *Call) {
	if k.has(stQueued) {
		k.st.Or(stDropSpec)
		return
	}
	k.spec = nil
}

// doneWithLocked is the writer's, when it is done with batch: the Calls in
// it are no longer queued, and those accepted meanwhile drop their specs.
func (c *Client) doneWithLocked(batch []outMsg) {
	if !c.opts.DropAcceptedSpecs {
		return
	}
	for _, m := range batch {
		if k := m.call; k != nil {
			if k.has(stDropSpec) {
				k.spec = nil
			}
			k.st.And(^(stQueued | stDropSpec))
		}
	}
}

func (c *Client) queueLocked(m outMsg) {
	c.out = append(c.out, m)
	if len(c.out) == 1 {
		c.wake()
	}
}

// wake tells the writer it has work.
func (c *Client) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// callbacks runs user callbacks one at a time, in order, on one goroutine
// of the client's, so that they never run on (and never stall) the reader.
type callbacks struct {
	mu      sync.Mutex
	queue   []func()
	sig     chan struct{}
	stopped bool
	done    chan struct{}
}

func (q *callbacks) init() {
	q.sig = make(chan struct{}, 1)
	q.done = make(chan struct{})
	go q.loop()
}

// push queues fn. After stop, fn runs on a goroutine of its own.
func (q *callbacks) push(fn func()) {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		go fn()
		return
	}
	q.queue = append(q.queue, fn)
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

// stop lets the loop end once the queue is empty.
func (q *callbacks) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

func (q *callbacks) loop() {
	defer close(q.done)
	var batch []func()
	for {
		q.mu.Lock()
		batch, q.queue = q.queue, batch[:0]
		stopped := q.stopped
		q.mu.Unlock()
		for i, fn := range batch {
			fn()
			batch[i] = nil
		}
		if len(batch) == 0 {
			if stopped {
				return
			}
			<-q.sig
		}
	}
}

// scratchPool holds buffers for encodings that are copied once made (a
// DoWork payload, which the spec's encoding copies).
type scratchPool struct{ p sync.Pool }

type scratch struct {
	b    []byte
	args []any
}

// maxScratch is the largest buffer put back in a scratchPool.
const maxScratch = 64 << 10

func (s *scratchPool) get() *scratch {
	if b, ok := s.p.Get().(*scratch); ok {
		return b
	}
	return &scratch{b: make([]byte, 0, 512)}
}

func (s *scratchPool) put(b *scratch) {
	if cap(b.b) <= maxScratch && cap(b.args) <= maxScratch/16 {
		s.p.Put(b)
	}
}
