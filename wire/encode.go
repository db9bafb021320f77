package wire

import (
	"fmt"
	"reflect"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/workunit"
)

// headRoom is the room an Encoder keeps before its messages for the
// frame's array head (at most 9 bytes).
const headRoom = 9

// maxKeep is the largest buffer an Encoder keeps across Reset.
const maxKeep = 4 << 20

// Encode returns the frame of msgs: a CBOR array of their arrays. It
// checks that each message can be encoded (not nil, no negative counts or
// durations, values in range) but applies no Limits; use an Encoder to
// build frames within a peer's Limits.
func Encode(msgs ...Msg) ([]byte, error) { return Append(nil, msgs...) }

// Append appends the frame of msgs to dst, as Encode, and returns the
// extended slice. On error it returns dst unchanged.
func Append(dst []byte, msgs ...Msg) ([]byte, error) {
	c := &encoder{lim: noLimits, w: *cbor.NewWriter(dst[len(dst):])}
	c.w.ArrayHeader(len(msgs))
	for _, m := range msgs {
		if err := c.msg(m); err != nil {
			return dst, err
		}
	}
	return join(dst, c.w.Bytes()), nil
}

// join returns dst extended by out, where out was written by a Writer over
// dst[len(dst):]: in place when the Writer never had to grow its buffer,
// by copying when it did.
func join(dst, out []byte) []byte {
	if len(out) <= cap(dst)-len(dst) {
		return dst[:len(dst)+len(out)]
	}
	return append(dst, out...)
}

// Encoder builds one frame at a time from messages, reusing its buffer, so
// that a connection's writer allocates nothing per message once warm. The
// zero Encoder is ready to use, with the default Limits. An Encoder is not
// safe for concurrent use: give each connection's writer goroutine its own.
//
// A writer adds every message that is ready, then sends Frame and calls
// Reset:
//
//	for _, m := range ready {
//		err := enc.Add(m)
//		if errors.Is(err, wire.ErrFrameFull) {
//			send(enc.Frame())
//			enc.Reset()
//			err = enc.Add(m)
//		}
//		if err != nil { ... } // m cannot be sent (ErrLimit, ErrMalformed)
//	}
//	send(enc.Frame())
//	enc.Reset()
type Encoder struct {
	// Limits are the receiver's (a client uses Welcome.Limits). Add refuses
	// a message with a field over them (ErrLimit) and a message that would
	// push the frame past them (ErrFrameFull). Zero fields take their
	// defaults. Change them only between frames.
	Limits Limits

	c   encoder // the Add in progress
	buf []byte  // headRoom bytes, then the messages' arrays
	n   int
}

// Add appends m to the frame. It returns an *EncodeError wrapping
// ErrMalformed or ErrLimit when m cannot be sent at all (a field over
// Limits, or m alone larger than a frame may be), and ErrFrameFull when m
// does not fit in this frame but would in an empty one. On error the frame
// is unchanged.
func (e *Encoder) Add(m Msg) error {
	if len(e.buf) < headRoom {
		e.buf = make([]byte, headRoom, 4096)
	}
	mark := len(e.buf)
	c := &e.c
	c.lim, c.w = e.Limits.WithDefaults(), *cbor.NewWriter(e.buf[mark:])
	err := c.msg(m)
	out := c.w.Bytes()
	c.w = cbor.Writer{}
	if err != nil {
		return err
	}
	l := &c.lim
	if e.n >= l.MaxMessages {
		return fmt.Errorf("%w: %d messages", ErrFrameFull, e.n)
	}
	e.buf = join(e.buf, out)
	if size := len(e.buf) - headRoom + cbor.HeadLen(uint64(e.n+1)); size > l.MaxFrameBytes {
		e.buf = e.buf[:mark]
		if e.n == 0 {
			return &EncodeError{Type: m.Type(), Err: ErrLimit,
				Detail: fmt.Sprintf("a frame of %d bytes, limit %d", size, l.MaxFrameBytes)}
		}
		return fmt.Errorf("%w: %d bytes", ErrFrameFull, len(e.buf)-headRoom)
	}
	e.n++
	return nil
}

// Len returns the number of messages added since the last Reset.
func (e *Encoder) Len() int { return e.n }

// Size returns the length in bytes of the frame that Frame would return.
func (e *Encoder) Size() int {
	if len(e.buf) < headRoom {
		return 1
	}
	return len(e.buf) - headRoom + cbor.HeadLen(uint64(e.n))
}

// Frame returns the frame of the messages added since the last Reset (an
// empty array when none). The bytes belong to the Encoder: they are valid
// until the next Add or Reset.
func (e *Encoder) Frame() []byte {
	if len(e.buf) < headRoom {
		e.buf = make([]byte, headRoom, 4096)
	}
	start := headRoom - cbor.HeadLen(uint64(e.n))
	w := cbor.NewWriter(e.buf[start:start])
	w.ArrayHeader(e.n)
	return e.buf[start:]
}

// Reset empties the frame, keeping the buffer unless it grew past a few
// MiB.
func (e *Encoder) Reset() {
	if cap(e.buf) > maxKeep {
		e.buf = nil
	} else if len(e.buf) > headRoom {
		e.buf = e.buf[:headRoom]
	}
	e.n = 0
}

// encoder is the state of one encoding. It checks each field (ranges,
// Limits) as it writes it: the first problem wins, as an *EncodeError, and
// the message is taken back.
type encoder struct {
	typ Type   // the message's type
	lim Limits // with defaults, or noLimits
	w   cbor.Writer
	err *EncodeError
}

// msg writes m's array, checking its fields against c's Limits, and
// returns the first problem, with what it wrote of m taken back.
func (c *encoder) msg(m Msg) error {
	if m == nil {
		return &EncodeError{Err: ErrMalformed, Detail: "nil message"}
	}
	c.typ = m.Type()
	if reflect.ValueOf(m).IsNil() {
		return &EncodeError{Type: c.typ, Err: ErrMalformed, Detail: "nil message"}
	}
	mark := c.w.Len()
	c.w.Raw(msgHeads[c.typ])
	c.err = nil
	m.encodeFields(c)
	if c.err != nil {
		c.w.Truncate(mark)
		return c.err
	}
	return nil
}

// invalid records a problem of the message being encoded; the first one
// wins.
func (c *encoder) invalid(field string, kind error, format string, args ...any) {
	if c.err == nil {
		c.err = &EncodeError{Type: c.typ, Field: field, Err: kind, Detail: fmt.Sprintf(format, args...)}
	}
}

// The field kinds (see codec), writing.

func (c *encoder) req(p *uint64) { c.w.Head(cbor.MajorUint, *p) }

func (c *encoder) uint(name string, p *uint64) { c.w.Head(cbor.MajorUint, *p) }

func (c *encoder) uint32(name string, p *uint32) { c.w.Head(cbor.MajorUint, uint64(*p)) }

func (c *encoder) code(name string, p *Code) { c.w.Head(cbor.MajorUint, uint64(*p)) }

func (c *encoder) count(name string, p *int) {
	if *p < 0 || *p > maxCount {
		c.invalid(name, ErrMalformed, "%d is out of range [0, %d]", *p, maxCount)
	}
	c.w.Head(cbor.MajorUint, uint64(*p))
}

func (c *encoder) limit(name string, p *int) {
	if *p < 0 {
		c.invalid("limits", ErrMalformed, "%d is out of range [0, %d]", *p, maxLimit)
	}
	c.w.Head(cbor.MajorUint, uint64(*p))
}

func (c *encoder) millis(name string, p *time.Duration) {
	n := *p / time.Millisecond
	if *p < 0 || n > maxMillis {
		c.invalid(name, ErrMalformed, "%v is out of range", *p)
	}
	c.w.Head(cbor.MajorUint, uint64(n))
}

func (c *encoder) micros(name string, p *time.Duration) {
	if *p < 0 {
		c.invalid(name, ErrMalformed, "%v is out of range", *p)
	}
	c.w.Head(cbor.MajorUint, uint64(*p/time.Microsecond))
}

func (c *encoder) time(name string, p *time.Time) {
	if p.IsZero() {
		c.w.Head(cbor.MajorUint, 0)
		return
	}
	ms := p.UnixMilli()
	if ms < 0 {
		c.invalid(name, ErrMalformed, "%v is before 1970", *p)
	}
	c.w.Head(cbor.MajorUint, uint64(ms))
}

func (c *encoder) bool(name string, p *bool) { c.w.Bool(*p) }

func (c *encoder) status(name string, p *workunit.Status) {
	if !p.Valid() {
		c.invalid(name, ErrMalformed, "status %d", *p)
	}
	c.w.Head(cbor.MajorUint, uint64(*p))
}

func (c *encoder) bytes(name string, p *[]byte, k sizeLimit) {
	if len(*p) > c.lim.size(k) {
		c.tooLarge(name, len(*p), k) // the message is taken back: no copy
		return
	}
	c.w.ByteString(*p)
}

func (c *encoder) bytesOrNull(name string, p *[]byte, null *bool, k sizeLimit) {
	if *null {
		c.w.Simple(cbor.SimpleNull)
		return
	}
	c.bytes(name, p, k)
}

func (c *encoder) tooLarge(name string, n int, k sizeLimit) {
	c.invalid(name, ErrLimit, "%d bytes, limit %d", n, c.lim.size(k))
}

func (c *encoder) text(name string, p *string) { c.w.String(*p) }

func (c *encoder) shared(name string, p *string) { c.w.String(*p) }

func (c *encoder) version(p *uint32) bool {
	c.w.Head(cbor.MajorUint, uint64(*p))
	return true
}

func (c *encoder) role(name string, p *Role, valid bool) {
	if valid && *p != RoleMaster && *p != RoleWorker {
		c.invalid(name, ErrMalformed, "role %q, want %q or %q", *p, RoleMaster, RoleWorker)
	}
	c.w.String(string(*p))
}

func (c *encoder) key(name string, p *workunit.Key) { c.w.ByteString(p[:]) }

func (c *encoder) hash(name string, p *blob.Hash) { c.w.ByteString(p[:]) }

func (c *encoder) optionalKey(name string, p *workunit.Key) {
	if *p == (workunit.Key{}) {
		c.w.ByteString(nil)
		return
	}
	c.w.ByteString(p[:])
}

func (c *encoder) console(name string, p *workunit.Console) {
	con := *p
	if len(con) == 0 {
		c.w.ArrayHeader(0)
		return
	}
	r := cbor.NewReader(con)
	if _, err := workunit.ReadConsole(r); err != nil {
		c.invalid(name, ErrMalformed, "not a console: %v", err)
	} else if r.Remaining() != 0 {
		c.invalid(name, ErrMalformed, "not a console: %d bytes after its lines", r.Remaining())
	}
	c.w.Raw(con)
}

func (c *encoder) limits(name string, l *Limits) {
	c.w.ArrayHeader(int(limitsItems))
	l.encodeFields(c)
}

func (c *encoder) workError(name string, p **workunit.Error, required bool) {
	e := *p
	if e == nil {
		if required {
			c.invalid(name, ErrMalformed, "nil error")
		}
		c.w.Simple(cbor.SimpleNull)
		return
	}
	if e.Kind == 0 {
		c.invalid(name, ErrMalformed, "error kind 0")
	}
	c.w.ArrayHeader(int(errorItems))
	encodeErrorFields(c, e)
}

func (c *encoder) errorKind(name string, p *workunit.ErrorKind) { c.w.Head(cbor.MajorUint, uint64(*p)) }

func (c *encoder) keys(name string, p *[]workunit.Key) { encodeHashes(c, *p) }

func (c *encoder) hashes(name string, p *[]blob.Hash) { encodeHashes(c, *p) }

func encodeHashes[T ~[32]byte](c *encoder, hs []T) {
	c.w.ArrayHeader(len(hs))
	for i := range hs {
		c.w.ByteString(hs[i][:])
	}
}

func (c *encoder) gpus(name string, p *[]GPU) {
	c.w.ArrayHeader(len(*p))
	for i := range *p {
		c.w.ArrayHeader(int(gpuItems))
		(*p)[i].encodeFields(c)
	}
}

func (c *encoder) lines(name string, p *[]Line) {
	c.w.ArrayHeader(len(*p))
	for i := range *p {
		c.w.ArrayHeader(int(lineItems))
		(*p)[i].encodeFields(c)
	}
}

func (c *encoder) level(name string, p *workunit.Level) {
	if _, ok := levelOf([]byte(*p)); !ok {
		c.invalid(name, ErrMalformed, "level %q (want log, info, debug, warn or error)", string(*p))
	}
	c.w.String(string(*p))
}

func (c *encoder) leases(name string, p *[]Lease) {
	c.w.ArrayHeader(len(*p))
	for i := range *p {
		c.w.ArrayHeader(int(leaseItems))
		(*p)[i].encodeFields(c)
	}
}

func (c *encoder) texts(name string, p *[]string) {
	if len(*p) > workunit.MaxRetryOn {
		c.invalid(name, ErrMalformed, "%d names, at most %d", len(*p), workunit.MaxRetryOn)
	}
	c.w.ArrayHeader(len(*p))
	for _, s := range *p {
		if len(s) > workunit.MaxRetryName {
			c.invalid(name, ErrMalformed, "a name of %d bytes, at most %d", len(s), workunit.MaxRetryName)
		}
		c.w.String(s)
	}
}

func (c *encoder) attempts(name string, p *[]workunit.Attempt) {
	c.w.ArrayHeader(len(*p))
	for i := range *p {
		c.w.ArrayHeader(int(attemptItems))
		encodeAttemptFields(c, &(*p)[i])
	}
}
