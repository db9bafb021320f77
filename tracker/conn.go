package tracker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// closeGrace is how long a connection waits for the peer's close frame
// after sending its own, before it closes the TCP connection.
const closeGrace = 2 * time.Second

// keepFrameBytes is the frame size below which submission specs, which
// the table keeps only while their workunits wait or run, are kept
// aliasing their frame rather than copied (ownSpecs).
const keepFrameBytes = 16 << 10

// unpin returns b, which aliases a frame read into a buffer of held
// bytes, or a copy of it when the buffer is more than twice b's length:
// what the table keeps for good (a result, an error's value) must not
// keep the rest of the buffer alive. Small frames are no exception: a
// worker's Done of a small result comes in a frame of a few hundred
// bytes, read into a buffer of at least 512, which aliasing would keep
// for as long as the result (for good in the embedded default).
func unpin(b []byte, held int) []byte {
	if len(b) > 0 && len(b) < held/2 {
		return bytes.Clone(b)
	}
	return b
}

// ownSpecs copies the specs of a large frame's submissions (Submit,
// Child) into one allocation of their exact total size, which the table
// keeps while they wait or run, so that the frame itself (its other
// messages' bytes, and the slack of the buffer it was read into: up to a
// quarter of a large frame) is garbage once its messages are handled.
// A small frame's specs alias it, as unpin's results do.
func ownSpecs(msgs []wire.Msg, size int) {
	if size <= keepFrameBytes {
		return
	}
	n := 0
	for _, m := range msgs {
		switch m := m.(type) {
		case *wire.Submit:
			n += len(m.Spec)
		case *wire.Child:
			n += len(m.Spec)
		}
	}
	if n == 0 || n == size {
		return
	}
	arena := make([]byte, 0, n)
	own := func(b []byte) []byte {
		i := len(arena)
		arena = append(arena, b...)
		return arena[i:len(arena):len(arena)]
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *wire.Submit:
			m.Spec = own(m.Spec)
		case *wire.Child:
			m.Spec = own(m.Spec)
		}
	}
}

// maxCloseText is the most text a close frame carries (125 bytes of
// payload, 2 of them the code).
const maxCloseText = 123

// inKind says what an inbound brings to the table's loop.
type inKind uint8

const (
	inHello inKind = iota + 1 // a connection's hello: join it
	inFrame                   // messages for the table
	inGone                    // the connection has ended
)

// inbound is what a connection's reader hands to the table's loop. Each
// connection has one and reuses it: after an inHello or inFrame the reader
// waits for the loop's ack (conn.ack) before it touches it again; an
// inGone is its last and is not acked.
type inbound struct {
	kind   inKind
	c      *conn
	hello  *wire.Hello
	msgs   []wire.Msg // decoded messages for the loop; valid until the ack
	aux    []aux      // one per message
	reason string     // inGone: why
}

// aux is what the reader works out for a message, off the table's loop.
type aux struct {
	key workunit.Key // Submit: the key of its spec
	// blobs are the blobs its spec names (Submit, Child), read only when
	// the tracker frees blobs (blobBound.frees).
	blobs []blob.Hash
}

// qstate is the state of a connection's outgoing queue.
type qstate uint8

const (
	qOpen    qstate = iota // messages are taken
	qClosing               // flush what is queued, send a close frame, stop
	qDead                  // write nothing more
)

// conn is one websocket: a master or a worker. Its reader is a goroutine
// (serve); its writer (write) is a goroutine that runs only while there
// is something to write: messages, a ping, the close. Messages to send go
// through its queue, which the table's loop and the reader fill and the
// writer empties. An idle connection has its reader's goroutine, its
// websocket's read buffer and a ping timer, and no writer.
type conn struct {
	s      *Server
	id     uint64 // also its table.WorkerID and table.MasterID
	ws     *websocket.Conn
	remote string
	since  time.Time

	// From the Hello: set by the reader before it hands the hello to the
	// loop, read-only afterwards.
	role                  wire.Role
	session, agent        string
	slots, prefetch, gpus int
	job                   string // the Hello's job name
	memLimit              uint64 // the Hello's memory-limit
	// principal names the credential the Hello's token matched ("" when
	// the tracker checks none); rights say what it allows; scope is the
	// table's memo scope of its workunits (see scopeOf).
	principal string
	rights    rights
	scope     string

	// Set by the loop when it takes the hello, before it acks; the reader
	// reads accepted after the ack.
	accepted bool
	realm    string // the table Owner and Assign realm of its submissions
	quota    string // the table Quota of its submissions: see quotaOf

	ack chan struct{}
	inb inbound
	// inHandshake: the connection holds a place in Server.handshakes
	// (until its hello is accepted). Owned by the reader.
	inHandshake bool

	closeSent atomic.Bool   // the writer sent a close frame
	done      chan struct{} // closed when the writer has ended for good
	// pinger pings the peer every PingInterval: it sets pingDue and wakes
	// the writer, which sends the ping and sets it again. Set before the
	// reader starts.
	pinger *time.Timer
	// spare is the queue's other buffer; only the writer running holds it.
	spare []wire.Msg

	mu         sync.Mutex // guards what follows
	name       string     // unique; set by the loop at the hello
	queue      []wire.Msg
	qbytes     int
	state      qstate
	closeCode  int
	closeText  string
	dropReason string // why the server dropped it, if it did
	writing    bool   // a writer runs (or is starting): wakeup starts none
	ended      bool   // the writer has ended for good: done is closed
	pingDue    bool   // the writer is to send a ping

	// Owned by the loop.
	touched bool // has messages pushed in this round, to wake
	// For the status pages: whether it counts among its job's
	// connections (activity), the results and errors it reported, and
	// its last stats.
	inJob          bool
	nDone, nFailed uint64
	heap           uint64
	running        int
	statsSeen      bool
	// printMissed counts the console lines not passed on to this master
	// since its last Printed: its queue was too full (see offer).
	printMissed int
	// printed holds, for a worker, the console lines its leases streamed
	// (keepPrinted), by lease token, until their reports.
	printed map[uint64]*workunit.ConsoleBuilder

	// Owned by the reader: the blobs this connection is uploading in
	// pieces (blob-write), by hash; and the buffer of the last frame read,
	// for the next one, while the connection uploads (see reuse).
	uploads map[blob.Hash]store.BlobWriter
	// uploadSize is the size each upload's first piece gave, and
	// uploadReserved the bytes it holds of the memory bound (blobBound).
	uploadSize     map[blob.Hash]uint64
	uploadReserved map[blob.Hash]int64
	rbuf           []byte
	last           []byte // the frame read last
}

func newConn(s *Server, ws *websocket.Conn, remote string) *conn {
	c := &conn{
		s:      s,
		id:     s.nextConn.Add(1),
		ws:     ws,
		remote: remote,
		since:  time.Now(),
		ack:    make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	c.inb.c = c
	return c
}

// label names the connection in logs.
func (c *conn) label() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.name != "" {
		return c.name
	}
	return c.remote
}

func (c *conn) setName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

// msgBytes estimates what m costs in a queue.
func msgBytes(m wire.Msg) int {
	const base = 64
	switch m := m.(type) {
	case *wire.Assign:
		return base + len(m.Spec)
	case *wire.Accepted:
		return base + outcomeBytes(&m.Outcome)
	case *wire.Finished:
		return base + outcomeBytes(&m.Outcome)
	case *wire.InfoReply:
		return base + outcomeBytes(&m.Outcome)
	case *wire.BlobData:
		return base + len(m.Data)
	case *wire.BlobPart:
		return base + len(m.Data)
	case *wire.BlobNeed:
		return base + 32*len(m.Missing)
	case *wire.Printed:
		return base + printBytes(m.Lines)
	}
	return base
}

func outcomeBytes(o *workunit.Outcome) int {
	n := len(o.Result) + len(o.Console)
	if o.Err != nil {
		n += len(o.Err.Message) + len(o.Err.Stack) + len(o.Err.Value)
		for _, a := range o.Err.Attempts {
			n += len(a.Worker) + len(a.Name) + len(a.Message)
		}
	}
	return n
}

// open reports whether the connection still takes messages to send.
func (c *conn) open() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == qOpen
}

// push queues m without waking the writer (see wakeup). It reports whether
// m was queued: not when the connection is closing, and not when the
// queue is full, which drops the connection.
func (c *conn) push(m wire.Msg) bool {
	n := msgBytes(m)
	c.mu.Lock()
	if c.state != qOpen {
		c.mu.Unlock()
		return false
	}
	if c.qbytes+n > c.s.opts.QueueBytes {
		reason := fmt.Sprintf("outgoing queue full (%d messages, %d bytes): the peer does not read", len(c.queue), c.qbytes)
		c.state = qDead
		c.dropReason = reason
		clear(c.queue)
		c.queue = c.queue[:0]
		c.qbytes = 0
		name := c.name
		c.mu.Unlock()
		c.s.counters.dropped.Add(1)
		c.s.log.Warn("dropping connection", "conn", name, "remote", c.remote, "reason", reason)
		c.ws.Close() // unblocks the writer and the reader
		c.wakeup()
		return false
	}
	c.queue = append(c.queue, m)
	c.qbytes += n
	c.mu.Unlock()
	return true
}

// offer queues m, like push, when the queue holds at most most bytes with
// it, and reports whether it did. Unlike push, a full queue does not drop
// the connection: m is not queued, and that is all. It is for messages
// that may be lost (console lines), which must not take a slow peer's
// queue.
func (c *conn) offer(m wire.Msg, most int) bool {
	n := msgBytes(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != qOpen || c.qbytes+n > most {
		return false
	}
	c.queue = append(c.queue, m)
	c.qbytes += n
	return true
}

// send queues m and wakes the writer.
func (c *conn) send(m wire.Msg) {
	if c.push(m) {
		c.wakeup()
	}
}

// wakeup starts the writer when it has something to do and none runs.
func (c *conn) wakeup() {
	c.mu.Lock()
	start := !c.writing && !c.ended && (len(c.queue) > 0 || c.state != qOpen || c.pingDue)
	if start {
		c.writing = true
	}
	c.mu.Unlock()
	if start {
		go c.write()
	}
}

// pingSoon is the pinger's function: the writer is to send a ping.
func (c *conn) pingSoon() {
	c.mu.Lock()
	c.pingDue = true
	c.mu.Unlock()
	c.wakeup()
}

// closeAfter makes the writer send what is queued, then a close frame
// with code and text, and stop. Nothing can be queued afterwards.
func (c *conn) closeAfter(code int, text string) {
	c.mu.Lock()
	if c.state == qOpen {
		c.state = qClosing
		c.closeCode = code
		c.closeText = clip(text, maxCloseText)
	}
	c.mu.Unlock()
	c.wakeup()
}

// stop makes the writer stop without writing anything more, unless it is
// closing the connection already.
func (c *conn) stop() {
	c.mu.Lock()
	if c.state == qOpen {
		c.state = qDead
	}
	c.mu.Unlock()
	c.wakeup()
}

// writeFailed drops the connection after a failed write. It counts a drop
// only when the connection was not dead already: a write fails too when
// push has just dropped the connection (counted there) or when the reader
// has ended (the peer is gone).
func (c *conn) writeFailed(err error) {
	c.mu.Lock()
	first := c.state != qDead
	if first && c.dropReason == "" {
		c.dropReason = "write failed: " + err.Error()
	}
	c.state = qDead
	c.mu.Unlock()
	if first {
		c.s.counters.dropped.Add(1)
	}
	c.ws.Close()
}

// write is the connection's writer: it writes every message that is
// ready, batched into as few frames as the limits allow, and a ping when
// one is due, until there is nothing left to write; then it returns, and
// the next wakeup starts it again. It ends for good (closing done) when
// the connection is dead, once it has sent the close frame, or when a
// write fails.
func (c *conn) write() {
	o := &c.s.opts
	for {
		c.mu.Lock()
		ping := c.pingDue && c.state == qOpen
		c.pingDue = false
		st, code, text := c.state, c.closeCode, c.closeText
		if st == qOpen && len(c.queue) == 0 && !ping {
			c.writing = false
			c.mu.Unlock()
			return
		}
		if st == qDead {
			c.mu.Unlock()
			c.endWriter()
			return
		}
		msgs := c.queue
		c.queue = c.spare[:0]
		c.spare = nil
		c.qbytes = 0
		c.mu.Unlock()
		if ping {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(o.WriteTimeout)); err != nil {
				c.writeFailed(err)
				c.endWriter()
				return
			}
			c.pinger.Reset(o.PingInterval)
		}
		if err := c.writeAll(msgs); err != nil {
			c.writeFailed(err)
			c.endWriter()
			return
		}
		clear(msgs)
		if cap(msgs) > maxSpareMsgs {
			msgs = nil // a burst's queue does not stay with an idle connection
		}
		c.spare = msgs[:0]
		if st == qClosing {
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text),
				time.Now().Add(o.WriteTimeout))
			// The reader waits a little for the peer's close, then ends.
			c.closeSent.Store(true)
			_ = c.ws.NetConn().SetReadDeadline(time.Now().Add(closeGrace))
			c.endWriter()
			return
		}
	}
}

// endWriter ends the writer for good: no other starts, and done is closed.
func (c *conn) endWriter() {
	c.mu.Lock()
	c.ended = true
	c.spare = nil
	c.mu.Unlock()
	if c.pinger != nil { // nil only for a connection never served
		c.pinger.Stop()
	}
	close(c.done)
}

// maxSpareMsgs is the capacity of the queue a writer keeps for the next
// round: a bigger one, from a burst, is let go.
const maxSpareMsgs = 256

// encoder returns an encoder for a frame, from the server's pool.
func (s *Server) encoder() *wire.Encoder {
	if e, _ := s.encoders.Get().(*wire.Encoder); e != nil {
		return e
	}
	return &wire.Encoder{Limits: s.opts.Limits}
}

// writeAll encodes msgs into frames and writes them. Welcome and Refused
// go alone in their frame; a BlobPart ends its frame, so that the client
// can handle each piece (and ask for the next) while the following ones
// are on their way. The encoder, and its buffer, come from the server's
// pool and go back to it: an idle connection holds none.
func (c *conn) writeAll(msgs []wire.Msg) error {
	if len(msgs) == 0 {
		return nil
	}
	enc := c.s.encoder()
	defer func() {
		enc.Reset()
		c.s.encoders.Put(enc)
	}()
	for _, m := range msgs {
		err := enc.Add(m)
		if errors.Is(err, wire.ErrFrameFull) {
			if err := c.writeFrame(enc); err != nil {
				return err
			}
			err = enc.Add(m)
		}
		if err != nil {
			// Cannot happen for what the tracker makes within its limits;
			// answer the request rather than leave it hanging.
			c.s.log.Error("cannot send a message", "conn", c.label(), "type", m.Type().String(), "err", err)
			if req := wire.ReqOf(m); req != 0 {
				e := &wire.Error{Req: req, Code: wire.CodeOf(err), Message: "tracker: cannot send the answer: " + err.Error()}
				if enc.Add(e) != nil {
					if err := c.writeFrame(enc); err != nil {
						return err
					}
					_ = enc.Add(e)
				}
			}
			continue
		}
		switch m := m.(type) {
		case *wire.Welcome, *wire.Refused:
			if err := c.writeFrame(enc); err != nil {
				return err
			}
		case *wire.BlobPart:
			// Its data is in the frame now: the buffer goes back.
			c.putPiece(m.Data)
			m.Data = nil
			if err := c.writeFrame(enc); err != nil {
				return err
			}
		}
	}
	if enc.Len() > 0 {
		return c.writeFrame(enc)
	}
	return nil
}

func (c *conn) writeFrame(enc *wire.Encoder) error {
	frame := enc.Frame()
	n := enc.Len()
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
	err := c.ws.WriteMessage(websocket.BinaryMessage, frame)
	enc.Reset()
	if err != nil {
		return err
	}
	c.s.counters.framesOut.Add(1)
	c.s.counters.messagesOut.Add(uint64(n))
	c.s.counters.bytesOut.Add(uint64(len(frame)))
	return nil
}

// serveWS is the handler of wire.Path: it upgrades to a websocket and
// starts serving it.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r) {
		refuseHost(w, r)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered, and logged
	}
	c := newConn(s, ws, r.RemoteAddr)
	if !s.enterHandshake(c) {
		return
	}
	switch s.track(c) {
	case trackClosing:
		c.leaveHandshake()
		refuseEarly(ws, wire.CodeShutdown, "tracker: shutting down")
		return
	case trackFull:
		s.counters.refusedFull.Add(1)
		s.connLog.logAt(time.Now(), slog.LevelWarn, "refused", "remote", r.RemoteAddr, "code", wire.CodeFull.String(),
			"why", "too many connections in their handshake")
		c.leaveHandshake()
		refuseEarly(ws, wire.CodeFull, fmt.Sprintf("tracker: full (%d connections)", s.opts.MaxConns))
		return
	}
	// The connection runs in a goroutine of its own, and the handler
	// returns: net/http then lets go of what it held for the request
	// (its HTTP connection's write buffer, the request, its context and
	// headers), which an idle websocket does not need. The websocket
	// reads through the HTTP connection's read buffer, which it took over.
	go func() {
		defer s.untrack(c)
		c.serve()
	}()
}

// refuseEarly refuses a websocket without starting its pumps or reading
// its hello: a Refused, then the close.
func refuseEarly(ws *websocket.Conn, code wire.Code, msg string) {
	frame, _ := wire.Encode(&wire.Refused{Code: code, Message: msg, Version: wire.ProtocolVersion})
	deadline := time.Now().Add(time.Second)
	_ = ws.SetWriteDeadline(deadline)
	_ = ws.WriteMessage(websocket.BinaryMessage, frame)
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(wire.CloseRefused+int(code), msg), deadline)
	ws.Close()
}

// serve runs the connection: its reader here, its writer in a goroutine
// when there is something to write (see write).
func (c *conn) serve() {
	c.pinger = time.AfterFunc(c.s.opts.PingInterval, c.pingSoon)
	reason := c.readLoop()
	c.leaveHandshake()
	c.abortUploads()
	c.unholdBlobs()
	c.stop()
	if c.accepted {
		c.inb.kind = inGone
		c.inb.reason = reason
		select {
		case c.s.in <- &c.inb:
		case <-c.s.loopDone:
		}
	} else {
		c.s.log.Debug("connection ended before its hello was taken", "remote", c.remote, "reason", reason)
	}
	<-c.done
	c.ws.Close()
}

// hand gives the loop c.inb and waits until the loop has taken it. It
// reports false when the loop has ended.
func (c *conn) hand() bool {
	select {
	case c.s.in <- &c.inb:
	case <-c.s.loopDone:
		return false
	}
	select {
	case <-c.ack:
		return true
	case <-c.s.loopDone:
		return false
	}
}

// extend moves the read deadline to d from now, unless the connection is
// closing.
func (c *conn) extend(d time.Duration) {
	if c.closeSent.Load() {
		return
	}
	_ = c.ws.SetReadDeadline(time.Now().Add(d))
	if c.closeSent.Load() { // the writer shortened it meanwhile
		_ = c.ws.SetReadDeadline(time.Now().Add(closeGrace))
	}
}

// readLoop is the connection's reader: the handshake, then every frame,
// until the connection ends. It returns why it ended.
func (c *conn) readLoop() string {
	s := c.s
	timeout := wire.ReadTimeout(s.opts.PingInterval)
	// Before its hello, a connection has one read timeout in all: control
	// frames do not extend it, so that a peer that only answers pings
	// cannot hold a handshake slot. The handlers run in this goroutine
	// (inside its reads), so greeted needs no lock.
	greeted := false
	c.ws.SetPongHandler(func(string) error {
		if greeted {
			c.extend(timeout)
		}
		return nil
	})
	c.ws.SetPingHandler(func(data string) error {
		if greeted {
			c.extend(timeout)
		}
		err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.opts.WriteTimeout))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil
		}
		return err
	})
	dec := wire.Decoder{Limits: s.opts.Limits}

	c.extend(timeout)
	msgs, _, reason, ok := c.readFrame(&dec, timeout, s.firstFrameBytes())
	if !ok {
		return reason
	}
	greeted = true
	hello, isHello := msgs[0].(*wire.Hello)
	if !isHello || len(msgs) != 1 {
		return c.violation(&wire.Error{Code: wire.CodeProtocol,
			Message: "tracker: the first frame must hold a hello and nothing else"}, wire.CloseProtocolError)
	}
	if hello.Version != wire.ProtocolVersion {
		return c.refuse(wire.VersionMismatch(hello.Version))
	}
	if r := c.authenticate(hello); r != nil {
		return c.refuse(r)
	}
	if err := checkHello(hello); err != nil {
		return c.refuse(&wire.Refused{Code: wire.CodeInvalid, Message: err.Error(), Version: wire.ProtocolVersion})
	}
	c.role, c.session, c.agent = hello.Role, hello.Session, hello.Agent
	c.job, c.memLimit = clip(hello.Job, 200), hello.MemoryLimit
	c.slots, c.prefetch, c.gpus = hello.Slots, hello.Prefetch, len(hello.GPUs)
	ib := &c.inb
	ib.kind, ib.hello = inHello, hello
	if !c.hand() {
		return c.refuse(&wire.Refused{Code: wire.CodeShutdown, Message: "tracker: shutting down", Version: wire.ProtocolVersion})
	}
	ib.hello = nil
	if !c.accepted {
		// The loop queued a Refused and the close.
		c.discard()
		return "refused"
	}
	c.leaveHandshake()

	for {
		msgs, size, reason, ok := c.readFrame(&dec, timeout, s.opts.Limits.MaxFrameBytes)
		if !ok {
			return reason
		}
		// What a message's bytes kept for good would hold: the whole
		// buffer the frame was read into (see unpin).
		held := max(size, cap(c.last))
		ib.kind = inFrame
		ib.msgs, ib.aux = ib.msgs[:0], ib.aux[:0]
		for _, m := range msgs {
			if need, what := needs(m); c.rights&need == 0 {
				c.forbid(m, what)
				continue
			}
			if zeroReq(m) {
				c.send(&wire.Error{Code: wire.CodeInvalid, Message: fmt.Sprintf(
					"tracker: %s with req 0 refused: a request's req must not be 0 (an error with req 0 is about the connection); number requests from 1", m.Type())})
				continue
			}
			var a aux
			switch m := m.(type) {
			case *wire.BlobHave, *wire.BlobPut, *wire.BlobGet, *wire.BlobWrite, *wire.BlobRead:
				c.blob(m)
				continue
			case *wire.Submit:
				key, blobs, err := c.specKey(m.Spec)
				if err != nil {
					c.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "tracker: submit: " + err.Error()})
					continue
				}
				a.key, a.blobs = key, blobs
			case *wire.Child:
				key, blobs, err := c.specKey(m.Spec)
				if err != nil {
					c.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "tracker: child: " + err.Error()})
					continue
				}
				a.key, a.blobs = key, blobs
			case *wire.Done:
				// The table keeps the result for good; a result that aliases a
				// buffer much larger than itself would keep the whole buffer
				// alive, so copy it out.
				m.Result = unpin(m.Result, held)
				// The console (like the rest of the message) aliases the frame,
				// which is the reader's alone: the table keeps it only until the
				// notifications it goes into have been sent.
			case *wire.Failed:
				// The table keeps the error for good too, and its value with it.
				if m.Error != nil {
					m.Error.Value = unpin(m.Error.Value, held)
				}
			case *wire.Watch, *wire.Unwatch, *wire.Info, *wire.Cancel, *wire.Credit, *wire.Return, *wire.Stats, *wire.Print, *wire.Wait:
			case *wire.Hello:
				return c.violation(&wire.Error{Code: wire.CodeProtocol, Message: "tracker: a second hello"}, wire.CloseProtocolError)
			default:
				return c.violation(&wire.Error{Code: wire.CodeProtocol,
					Message: fmt.Sprintf("tracker: a %s message goes from the tracker to clients, not back", m.Type())}, wire.CloseProtocolError)
			}
			ib.msgs = append(ib.msgs, m)
			ib.aux = append(ib.aux, a)
		}
		if len(ib.msgs) == 0 {
			c.reuse(c.last)
		}
		c.last = nil
		ownSpecs(ib.msgs, size)
		if len(ib.msgs) > 0 && !c.hand() {
			c.discard()
			return "tracker shutting down"
		}
		clear(ib.msgs)
		clear(ib.aux)
	}
}

// authenticate checks the Hello's token, when the tracker has
// credentials, and sets the connection's principal and rights. It returns
// the Refused to answer with when the Hello may not connect. The token is
// checked first: a valid one connects at once, whatever its address did
// before; a wrong one from an address that failed too often is answered
// late, and throttled (see throttle).
func (c *conn) authenticate(h *wire.Hello) *wire.Refused {
	s := c.s
	if s.auth == nil {
		c.rights = allRights
		return nil
	}
	refused := func(code wire.Code, msg string) *wire.Refused {
		s.counters.authFailures.Add(1)
		return &wire.Refused{Code: code, Message: msg, Version: wire.ProtocolVersion}
	}
	cred, ok := s.auth.check(h.Token)
	if ok {
		if cred.role == RoleViewer {
			return refused(wire.CodeAuth, "tracker: a viewer's token is for the dashboard and the HTTP API (docs/http.md), not for masters or workers: use a master's or a worker's token")
		}
		if cred.role == RoleAdmin {
			return refused(wire.CodeAuth, "tracker: an admin's token is for a replicated tracker's membership changes and the dashboard, not for masters or workers: use a master's or a worker's token")
		}
		if cred.role == wire.RoleWorker && h.Role != wire.RoleWorker {
			return refused(wire.CodeAuth, fmt.Sprintf("tracker: a worker's token cannot connect as %q: workers take work, masters submit it", string(h.Role)))
		}
		if cred.role == wire.RoleMaster && (h.Role == wire.RoleWorker || h.Slots+h.Prefetch > 0) {
			return refused(wire.CodeAuth, fmt.Sprintf("tracker: a master's token cannot take work (a hello as %q with %d slots and %d prefetch): "+
				"workers need a worker's token (a line \"worker TOKEN\" in riotd's --token-file)", string(h.Role), h.Slots, h.Prefetch))
		}
		c.principal, c.rights = cred.name, rightsOf(cred.role)
		c.scope = scopeOf(cred.name, s.opts.SharedCache)
		return nil
	}
	if wait := s.throttle.failed(hostOf(c.remote)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.quit:
			t.Stop()
			return &wire.Refused{Code: wire.CodeShutdown, Message: "tracker: shutting down", Version: wire.ProtocolVersion}
		}
		return refused(wire.CodeThrottled, "tracker: too many failed hellos from this address, and this one's token is not accepted either: "+
			"check the token (--token or $RIOT_TOKEN), wait and try again")
	}
	if h.Token == "" {
		return refused(wire.CodeAuth, "tracker: this tracker needs a token: give the token of a master or a worker (--token or $RIOT_TOKEN)")
	}
	return refused(wire.CodeAuth, "tracker: unknown token: give a token from riotd's --token-file (--token or $RIOT_TOKEN)")
}

// forbid answers a message that the connection's credentials do not allow:
// an Error with wire.CodeForbidden for its request (the connection as a
// whole for those without one). The connection stays open.
func (c *conn) forbid(m wire.Msg, what string) {
	c.s.counters.forbidden.Add(1)
	c.s.log.Warn("request refused: the credentials do not allow it", "conn", c.label(), "principal", c.principal,
		"remote", c.remote, "type", m.Type().String())
	msg := fmt.Sprintf("tracker: %s refused: a worker's token may take work, not %s", m.Type(), what)
	if c.rights&maySubmit != 0 {
		msg = fmt.Sprintf("tracker: %s refused: a master's token may submit work, not %s: "+
			"taking work needs a worker's token (a line \"worker TOKEN\" in riotd's --token-file)", m.Type(), what)
	}
	c.send(&wire.Error{Req: wire.ReqOf(m), Code: wire.CodeForbidden, Message: msg})
}

// zeroReq reports whether m is a request whose req is 0, which the
// protocol does not allow: its answer could not be told from an error
// about the connection.
func zeroReq(m wire.Msg) bool {
	switch m.(type) {
	case *wire.Submit, *wire.Watch, *wire.Info, *wire.BlobHave, *wire.BlobPut, *wire.BlobGet, *wire.BlobWrite, *wire.BlobRead, *wire.Cancel, *wire.Child:
		return wire.ReqOf(m) == 0
	}
	return false
}

// checkHello checks what the table cannot take.
func checkHello(h *wire.Hello) error {
	switch {
	case h.Role != wire.RoleMaster && h.Role != wire.RoleWorker:
		return fmt.Errorf("tracker: unknown role %q (want %q or %q)", h.Role, wire.RoleMaster, wire.RoleWorker)
	case len(h.GPUs) > table.MaxGPUs:
		return fmt.Errorf("tracker: %d GPUs (at most %d)", len(h.GPUs), table.MaxGPUs)
	case h.Slots > 1<<20 || h.Prefetch > 1<<20:
		return fmt.Errorf("tracker: %d slots and %d prefetch: too many", h.Slots, h.Prefetch)
	}
	return nil
}

// readFrame reads and decodes the next frame that holds messages, and
// returns them with the frame's size. Each frame is read into a buffer of
// its own, which the messages' byte slices alias (the table keeps a
// small frame's specs and results without copying them; a large frame's
// are copied out: ownSpecs, unpin). When the connection ends or the
// frame is bad, it returns why and false. A frame of more than most bytes
// is bad: the reader stops at its most+1st byte. Before the hello, most is
// firstFrameBytes, so that a peer without credentials cannot make the
// tracker hold a large frame.
func (c *conn) readFrame(dec *wire.Decoder, timeout time.Duration, most int) ([]wire.Msg, int, string, bool) {
	for {
		if c.accepted {
			// Before the hello, the one deadline readLoop set stands:
			// empty frames do not extend it either.
			c.extend(timeout)
		}
		mt, r, err := c.ws.NextReader()
		if err != nil {
			return nil, 0, c.readErrReason(err, timeout), false
		}
		if mt != websocket.BinaryMessage {
			return nil, 0, c.violation(nil, wire.CloseUnsupportedData), false
		}
		// The limit is enforced here rather than by the websocket's read
		// limit, so that the peer learns why (an Error, and the close
		// frame's text) instead of a bare 1009.
		frame, err := readAll(c.rbuf[:0], io.LimitReader(r, int64(most)+1))
		c.rbuf, c.last = nil, frame // the frame's messages may alias it: see reuse
		if err != nil {
			return nil, 0, c.readErrReason(err, timeout), false
		}
		if len(frame) > most {
			msg := fmt.Sprintf("tracker: a frame of more than %d bytes: over max-frame-bytes", most)
			if !c.accepted {
				msg = fmt.Sprintf("tracker: a first frame of more than %d bytes: the first frame holds the hello alone, "+
					"which is smaller (a token of at most %d bytes, short names)", most, maxTokenBytes)
			}
			return nil, 0, c.violation(&wire.Error{Code: wire.CodeLimit, Message: msg}, wire.CloseTooBig), false
		}
		c.s.counters.framesIn.Add(1)
		c.s.counters.bytesIn.Add(uint64(len(frame)))
		msgs, err := dec.Decode(frame)
		if err != nil {
			var de *wire.DecodeError
			var req uint64
			code := wire.CloseProtocolError
			if errors.As(err, &de) {
				req = de.Req
				if errors.Is(err, wire.ErrLimit) && de.Index < 0 {
					code = wire.CloseTooBig
				}
			}
			return nil, 0, c.violation(&wire.Error{Req: req, Code: wire.CodeOf(err), Message: err.Error()}, code), false
		}
		c.s.counters.messagesIn.Add(uint64(len(msgs)))
		if len(msgs) > 0 {
			return msgs, len(frame), "", true
		}
	}
}

// reasonSilent starts the reason of a connection that ended because its
// peer sent nothing, not even a pong, for its read timeout.
const reasonSilent = "missed its ping deadline"

// readErrReason says why a read failed, for the log.
func (c *conn) readErrReason(err error, timeout time.Duration) string {
	c.mu.Lock()
	dropped := c.dropReason
	c.mu.Unlock()
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case dropped != "":
		return dropped
	case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
		return "connection lost (no close frame)"
	case errors.As(err, &ce):
		if ce.Text != "" {
			return fmt.Sprintf("closed by the peer (%d: %s)", ce.Code, ce.Text)
		}
		return fmt.Sprintf("closed by the peer (%d)", ce.Code)
	case c.closeSent.Load():
		return "closed by the tracker"
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("%s: nothing read for %v", reasonSilent, timeout)
	case errors.Is(err, websocket.ErrReadLimit):
		return fmt.Sprintf("a frame over max-frame-bytes (%d)", c.s.opts.Limits.MaxFrameBytes)
	}
	return "connection lost: " + err.Error()
}

// violation answers a protocol violation: the Error e (when not nil), then
// a close frame with code. It returns the reason for the log.
func (c *conn) violation(e *wire.Error, code int) string {
	text := "text messages are not riot frames"
	if e != nil {
		text = e.Message
		c.send(e)
	}
	c.closeAfter(code, text)
	c.s.connLog.logAt(time.Now(), slog.LevelInfo, "protocol error", "conn", c.label(), "remote", c.remote, "err", text)
	c.discard()
	return "protocol error: " + text
}

// refuse answers a hello with r and closes the connection with
// wire.CloseRefused + r.Code.
func (c *conn) refuse(r *wire.Refused) string {
	c.send(r)
	c.closeAfter(wire.CloseRefused+int(r.Code), r.Message)
	c.s.connLog.logAt(time.Now(), slog.LevelInfo, "refused", "remote", c.remote, "code", r.Code.String(), "why", r.Message)
	c.discard()
	return "refused: " + r.Message
}

// discard reads and drops frames until the connection ends: after the
// tracker has decided to close it, until the peer's close arrives or the
// grace after the tracker's own passes.
func (c *conn) discard() {
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			return
		}
	}
}

// blob answers a blob message, from the reader: blobs go to the store
// directly, not through the table.
func (c *conn) blob(m wire.Msg) {
	if !c.open() {
		// Dropped (its queue filled, say) while its frame is handled: the
		// answers could not go out, so the store is not read for them.
		return
	}
	ctx := c.s.baseCtx
	st := c.s.st
	switch m := m.(type) {
	case *wire.BlobHave:
		var missing, unheld []blob.Hash
		for _, h := range m.Hashes {
			fresh := c.holdBlob(h) // before asking: a blob said held stays so
			ok, err := st.HasBlob(ctx, h)
			if err != nil {
				c.storeFailed(m.Req, "blob-have", err)
				return
			}
			if !ok {
				missing = append(missing, h)
				if fresh {
					unheld = append(unheld, h)
				}
			}
		}
		// A blob the store lacks is not held for this ask: holding it
		// protects nothing, and a connection that asks about many it never
		// uploads would grow the holds without bound. (One it held before,
		// an upload in progress say, stays held.)
		if len(unheld) > 0 {
			c.s.blobs.releaseHolds(c.id, unheld, time.Now())
		}
		c.send(&wire.BlobNeed{Req: m.Req, Missing: missing})
	case *wire.BlobPut:
		if sum := blob.Sum(m.Data); sum != m.Hash {
			c.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid,
				Message: fmt.Sprintf("tracker: blob-put: the data hashes to %s, not %s", sum, m.Hash)})
			return
		}
		// Held before the store is asked: not freed between has and the
		// store, nor between the store and the answer.
		c.holdBlob(m.Hash)
		if n := int64(len(m.Data)); c.s.blobs.counts() && !c.has(m.Hash) {
			if refusal := c.s.blobs.reserve("blob-put", m.Req, m.Hash, n); refusal != nil {
				c.unholdUnstored(m.Hash)
				c.refuseBlob(refusal)
				return
			}
			defer c.s.blobs.release(n) // once stored, the store counts it
		}
		if err := st.PutBlob(ctx, m.Hash, m.Data); err != nil {
			c.unholdUnstored(m.Hash)
			c.storeFailed(m.Req, "blob-put", err)
			return
		}
		c.send(&wire.BlobStored{Req: m.Req, Hash: m.Hash})
	case *wire.BlobWrite:
		c.blobWrite(m)
	case *wire.BlobRead:
		c.blobRead(m)
	case *wire.BlobGet:
		size, _, err := st.ReadBlob(ctx, m.Hash, 0, nil)
		if piece := c.s.opts.Limits.PieceBytes(); err == nil && size > int64(piece) {
			c.send(&wire.Error{Req: m.Req, Code: wire.CodeLimit,
				Message: fmt.Sprintf("tracker: blob-get: blob %s is %d bytes, more than one message carries (%d): read it in pieces with blob-read", m.Hash.Short(), size, piece)})
			return
		}
		data, err := st.GetBlob(ctx, m.Hash)
		switch {
		case errors.Is(err, blob.ErrNotFound):
			c.send(&wire.BlobData{Req: m.Req, Hash: m.Hash, Missing: true})
		case err != nil:
			c.storeFailed(m.Req, "blob-get", err)
		default:
			if data == nil {
				data = []byte{}
			}
			c.send(&wire.BlobData{Req: m.Req, Hash: m.Hash, Data: data})
		}
	}
}

// maxUploads bounds the blobs one connection uploads in pieces at once.
const maxUploads = 64

// blobWrite stores one piece of a blob: pieces come in order, from offset
// 0; the last commits the blob (its hash checked, durable). Any error
// drops the upload: the client starts again from offset 0.
func (c *conn) blobWrite(m *wire.BlobWrite) {
	lim := c.s.opts.Limits
	refuse := func(code wire.Code, format string, args ...any) {
		c.dropUpload(m.Hash)
		c.send(&wire.Error{Req: m.Req, Code: code, Message: fmt.Sprintf("tracker: blob-write: blob %s: ", m.Hash.Short()) + fmt.Sprintf(format, args...)})
	}
	if m.Size > uint64(lim.MaxBlobBytes) {
		refuse(wire.CodeLimit, "%d bytes, over this tracker's max-blob-bytes (%d)", m.Size, lim.MaxBlobBytes)
		return
	}
	if m.Offset+uint64(len(m.Data)) > m.Size {
		refuse(wire.CodeInvalid, "a piece of %d bytes at offset %d passes its size of %d", len(m.Data), m.Offset, m.Size)
		return
	}
	w := c.uploads[m.Hash]
	if m.Offset == 0 && w != nil {
		c.dropUpload(m.Hash) // the client starts again
		w = nil
	}
	if w == nil {
		if m.Offset != 0 {
			refuse(wire.CodeInvalid, "a piece at offset %d, and no upload of it is in progress on this connection (the first piece has offset 0)", m.Offset)
			return
		}
		if len(c.uploads) >= maxUploads {
			refuse(wire.CodeLimit, "%d uploads in progress on this connection already", len(c.uploads))
			return
		}
		// The first piece gives the size: the whole blob is counted
		// toward the memory bound now, before the store holds a byte.
		var reserved int64
		// Held before the store is asked: not freed between has and the
		// commit, nor between the commit and the answer.
		c.holdBlob(m.Hash)
		if c.s.blobs.counts() && !c.has(m.Hash) {
			if refusal := c.s.blobs.reserve("blob-write", m.Req, m.Hash, int64(m.Size)); refusal != nil {
				c.unholdUnstored(m.Hash)
				c.refuseBlob(refusal)
				return
			}
			reserved = int64(m.Size)
		}
		var err error
		if w, err = c.s.st.CreateBlob(c.s.baseCtx, m.Hash, int64(m.Size)); err != nil {
			c.s.blobs.release(reserved)
			c.unholdUnstored(m.Hash)
			c.storeFailed(m.Req, "blob-write", err)
			return
		}
		if c.uploads == nil {
			c.uploads = make(map[blob.Hash]store.BlobWriter)
			c.uploadSize = make(map[blob.Hash]uint64)
			c.uploadReserved = make(map[blob.Hash]int64)
		}
		c.uploads[m.Hash] = w
		c.uploadSize[m.Hash] = m.Size
		if reserved > 0 {
			c.uploadReserved[m.Hash] = reserved
		}
	}
	if size := c.uploadSize[m.Hash]; m.Size != size {
		refuse(wire.CodeInvalid, "a piece that gives a size of %d, after a first piece that gave %d (every piece gives the blob's size)", m.Size, size)
		return
	}
	if got := uint64(w.Written()); m.Offset != got {
		refuse(wire.CodeInvalid, "a piece at offset %d, after %d bytes (pieces go in order, without gaps)", m.Offset, got)
		return
	}
	if _, err := w.Write(m.Data); err != nil {
		c.dropUpload(m.Hash)
		c.storeFailed(m.Req, "blob-write", err)
		return
	}
	written := uint64(w.Written())
	if written == m.Size {
		err := w.Commit(c.s.baseCtx)
		c.dropUpload(m.Hash) // after Commit: the store counts the blob now
		if err != nil {
			if errors.Is(err, store.ErrBlobMismatch) {
				c.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "tracker: blob-write: " + err.Error()})
				return
			}
			c.storeFailed(m.Req, "blob-write", err)
			return
		}
	}
	c.send(&wire.BlobWritten{Req: m.Req, Hash: m.Hash, Written: written})
}

// blobRead answers a blob-read with one piece of the blob, at most
// PieceBytes.
func (c *conn) blobRead(m *wire.BlobRead) {
	piece := c.s.opts.Limits.PieceBytes()
	n := int(min(m.Length, uint64(piece)))
	var buf []byte
	if p, _ := c.s.pieces.Get().(*[]byte); p != nil && cap(*p) >= n {
		buf = (*p)[:n]
	} else {
		buf = make([]byte, n, piece)
	}
	size, got, err := c.s.st.ReadBlob(c.s.baseCtx, m.Hash, int64(min(m.Offset, math.MaxInt64)), buf)
	if err != nil || got == 0 {
		c.putPiece(buf)
	}
	switch {
	case errors.Is(err, blob.ErrNotFound):
		c.send(&wire.BlobPart{Req: m.Req, Hash: m.Hash, Missing: true})
	case err == nil && got == 0:
		c.send(&wire.BlobPart{Req: m.Req, Hash: m.Hash, Size: uint64(size), Offset: m.Offset, Data: []byte{}})
	case err == nil:
		c.send(&wire.BlobPart{Req: m.Req, Hash: m.Hash, Size: uint64(size), Offset: m.Offset, Data: buf[:got]})
	case m.Offset > uint64(size):
		c.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid,
			Message: fmt.Sprintf("tracker: blob-read: blob %s: offset %d is past its end (%d bytes)", m.Hash.Short(), m.Offset, size)})
	default:
		c.storeFailed(m.Req, "blob-read", err)
	}
}

// reuse keeps frame's buffer for the next frame when nothing refers to it
// any more (every message of the frame was a blob message, handled and
// done with) and the connection is uploading a blob in pieces: one buffer
// per upload rather than a new one per piece.
func (c *conn) reuse(frame []byte) {
	if len(c.uploads) > 0 {
		c.rbuf = frame[:0]
	}
}

// readAll reads r to its end into buf (grown as needed), as io.ReadAll
// does into a new slice.
func readAll(buf []byte, r io.Reader) ([]byte, error) {
	if cap(buf) == 0 {
		return io.ReadAll(r)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// putPiece gives a blob-part buffer back for the next blob-read.
func (c *conn) putPiece(b []byte) {
	if cap(b) >= c.s.opts.Limits.PieceBytes() {
		b = b[:0]
		c.s.pieces.Put(&b)
	}
}

// abortUploads drops the uploads the connection left unfinished.
func (c *conn) abortUploads() {
	for h := range c.uploads {
		c.dropUpload(h)
	}
}

// dropUpload ends the connection's upload of blob h, if any: aborts it
// (nothing after a Commit) and gives back its part of the memory bound.
func (c *conn) dropUpload(h blob.Hash) {
	w := c.uploads[h]
	if w != nil {
		w.Abort()
	}
	c.s.blobs.release(c.uploadReserved[h])
	delete(c.uploads, h)
	delete(c.uploadSize, h)
	delete(c.uploadReserved, h)
	if w != nil {
		c.unholdUnstored(h) // committed: held still; else dropped
	}
}

// holdBlob makes the connection hold blob h, when the tracker frees
// blobs (blobFree): from an upload, or a blob-need that leaves it out,
// until the connection names it in a submission or a result, or closes.
func (c *conn) holdBlob(h blob.Hash) bool {
	return c.s.blobs.frees() && c.s.blobs.hold(c.id, h)
}

// unholdUnstored ends the connection's hold of blob h, taken for an
// upload that was refused or dropped, when the store does not hold h: a
// hold protects a stored blob from being freed, and one of a blob never
// stored protects nothing, while a connection whose uploads were refused
// again and again would grow its holds without bound. (When the store
// cannot say, the hold stays until the connection closes.) An upload of h
// in pieces still in progress on the connection keeps the hold: a refused
// blob-put of h must not leave that upload's blob unheld once it commits.
func (c *conn) unholdUnstored(h blob.Hash) {
	if !c.s.blobs.frees() || c.uploads[h] != nil {
		return
	}
	if ok, err := c.s.st.HasBlob(c.s.baseCtx, h); err == nil && !ok {
		c.s.blobs.releaseHolds(c.id, []blob.Hash{h}, time.Now())
	}
}

// unholdBlobs ends the connection's holds, as it closes.
func (c *conn) unholdBlobs() {
	if c.s.blobs.frees() {
		c.s.blobs.unholdConn(c.id, time.Now())
	}
}

// specKey returns the key of a submitted spec and, when the tracker frees
// blobs, the blobs it names.
func (c *conn) specKey(spec []byte) (workunit.Key, []blob.Hash, error) {
	if c.s.blobs.frees() {
		return workunit.BlobsOf(spec)
	}
	key, err := workunit.KeyOf(spec)
	return key, nil, err
}

// has reports whether the store holds blob h already: an upload of it
// then needs no room. An error reads as no.
func (c *conn) has(h blob.Hash) bool {
	ok, err := c.s.st.HasBlob(c.s.baseCtx, h)
	return err == nil && ok
}

// refuseBlob sends the memory bound's refusal of an upload, and logs it.
func (c *conn) refuseBlob(e *wire.Error) {
	c.s.log.Debug("blob upload refused: memory full", "conn", c.label(), "message", e.Message)
	c.send(e)
}

func (c *conn) storeFailed(req uint64, op string, err error) {
	if c.s.fencedBy(err) {
		c.s.log.Warn("store fenced: another tracker writes the store now", "op", op, "conn", c.label(), "err", err)
		c.send(storeRefusal(req, op, err))
		return
	}
	c.s.log.Error("store failed", "op", op, "conn", c.label(), "err", err)
	c.send(&wire.Error{Req: req, Code: wire.CodeStore, Message: "tracker: " + op + ": " + err.Error()})
}

// clip cuts s to at most n bytes, at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
