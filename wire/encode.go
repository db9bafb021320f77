package wire

import (
	"fmt"
	"math"
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
	for _, m := range msgs {
		if err := checkMsg(m, nil); err != nil {
			return dst, err
		}
	}
	w := cbor.NewWriter(dst[len(dst):])
	w.ArrayHeader(len(msgs))
	for _, m := range msgs {
		m.encode(w)
	}
	return join(dst, w.Bytes()), nil
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

func checkMsg(m Msg, l *Limits) error {
	if m == nil {
		return &EncodeError{Err: ErrMalformed, Detail: "nil message"}
	}
	return m.check(l)
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

	lim Limits // Limits with defaults, for the Add in progress
	buf []byte // headRoom bytes, then the messages' arrays
	w   cbor.Writer
	n   int
}

// Add appends m to the frame. It returns an *EncodeError wrapping
// ErrMalformed or ErrLimit when m cannot be sent at all (a field over
// Limits, or m alone larger than a frame may be), and ErrFrameFull when m
// does not fit in this frame but would in an empty one. On error the frame
// is unchanged.
func (e *Encoder) Add(m Msg) error {
	e.lim = e.Limits.WithDefaults()
	l := &e.lim
	if err := checkMsg(m, l); err != nil {
		return err
	}
	if e.n >= l.MaxMessages {
		return fmt.Errorf("%w: %d messages", ErrFrameFull, e.n)
	}
	if len(e.buf) < headRoom {
		e.buf = make([]byte, headRoom, 4096)
	}
	mark := len(e.buf)
	e.w = *cbor.NewWriter(e.buf[mark:])
	m.encode(&e.w)
	e.buf = join(e.buf, e.w.Bytes())
	e.w = cbor.Writer{}
	if size := len(e.buf) - headRoom + headLen(uint64(e.n+1)); size > l.MaxFrameBytes {
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
	return len(e.buf) - headRoom + headLen(uint64(e.n))
}

// Frame returns the frame of the messages added since the last Reset (an
// empty array when none). The bytes belong to the Encoder: they are valid
// until the next Add or Reset.
func (e *Encoder) Frame() []byte {
	if len(e.buf) < headRoom {
		e.buf = make([]byte, headRoom, 4096)
	}
	start := headRoom - headLen(uint64(e.n))
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

// headLen returns the length of the CBOR head of an array of n items.
func headLen(n uint64) int {
	switch {
	case n < 24:
		return 1
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}

// checker collects the first problem of a message to encode.
type checker struct {
	t   Type
	l   *Limits // nil: no limits
	err error
}

func (c *checker) fail(field string, kind error, format string, args ...any) {
	if c.err == nil {
		c.err = &EncodeError{Type: c.t, Field: field, Err: kind, Detail: fmt.Sprintf(format, args...)}
	}
}

func (c *checker) count(field string, n int, max uint64) {
	if n < 0 || uint64(n) > max {
		c.fail(field, ErrMalformed, "%d is out of range [0, %d]", n, max)
	}
}

func (c *checker) dur(field string, d time.Duration, unit time.Duration, max uint64) {
	if d < 0 || uint64(d/unit) > max {
		c.fail(field, ErrMalformed, "%v is out of range", d)
	}
}

func (c *checker) time(field string, t time.Time) {
	if !t.IsZero() && t.UnixMilli() < 0 {
		c.fail(field, ErrMalformed, "%v is before 1970", t)
	}
}

func (c *checker) size(field string, b []byte, limit func(*Limits) int) {
	if c.l != nil && len(b) > limit(c.l) {
		c.fail(field, ErrLimit, "%d bytes, limit %d", len(b), limit(c.l))
	}
}

func (c *checker) status(field string, s workunit.Status) {
	if !s.Valid() {
		c.fail(field, ErrMalformed, "status %d", s)
	}
}

// console checks that a console is in the form it must travel in (see
// workunit.Console).
func (c *checker) console(field string, con workunit.Console) {
	if len(con) == 0 {
		return
	}
	r := cbor.NewReader(con)
	if _, err := workunit.ReadConsole(r); err != nil || r.Remaining() != 0 {
		c.fail(field, ErrMalformed, "not a console: %v", err)
	}
}

func (c *checker) workError(field string, e *workunit.Error, required bool) {
	if e == nil {
		if required {
			c.fail(field, ErrMalformed, "nil error")
		}
		return
	}
	if e.Kind == 0 {
		c.fail(field, ErrMalformed, "error kind 0")
	}
	c.size(field+".value", e.Value, resultLimit)
}

func (c *checker) outcome(o *workunit.Outcome) {
	c.status("status", o.Status)
	c.size("result", o.Result, resultLimit)
	c.workError("error", o.Err, false)
	c.console("console", o.Console)
	c.time("last-change", o.LastChange)
	c.dur("elapsed", o.Elapsed, time.Microsecond, maxElapsedMicros)
}

func (c *checker) nilMsg(isNil bool) bool {
	if isNil {
		c.fail("", ErrMalformed, "nil message")
	}
	return isNil
}

func specLimit(l *Limits) int   { return l.MaxSpecBytes }
func resultLimit(l *Limits) int { return l.MaxResultBytes }
func blobLimit(l *Limits) int   { return l.MaxBlobBytes }

// Ranges of numeric fields.
const (
	maxCount         = math.MaxInt32
	maxMillis        = math.MaxUint32
	maxElapsedMicros = math.MaxInt64 / 1000
	maxLimit         = math.MaxInt64
)

// Writers of the pieces messages share.

func writeKey(w *cbor.Writer, k *workunit.Key) { w.ByteString(k[:]) }

func writeHash(w *cbor.Writer, h *blob.Hash) { w.ByteString(h[:]) }

func writeMillis(w *cbor.Writer, d time.Duration) {
	w.Head(cbor.MajorUint, uint64(d/time.Millisecond))
}

func writeMicros(w *cbor.Writer, d time.Duration) {
	w.Head(cbor.MajorUint, uint64(d/time.Microsecond))
}

func writeCount(w *cbor.Writer, n int) { w.Head(cbor.MajorUint, uint64(n)) }

func writeTime(w *cbor.Writer, t time.Time) {
	if t.IsZero() {
		w.Head(cbor.MajorUint, 0)
		return
	}
	w.Head(cbor.MajorUint, uint64(t.UnixMilli()))
}

func writeKeys(w *cbor.Writer, keys []workunit.Key) {
	w.ArrayHeader(len(keys))
	for i := range keys {
		w.ByteString(keys[i][:])
	}
}

func writeHashes(w *cbor.Writer, hs []blob.Hash) {
	w.ArrayHeader(len(hs))
	for i := range hs {
		w.ByteString(hs[i][:])
	}
}

// writeConsole writes a console's bytes as they are, or an empty array.
func writeConsole(w *cbor.Writer, c workunit.Console) {
	if len(c) == 0 {
		w.ArrayHeader(0)
		return
	}
	w.Raw(c)
}

// writeWorkError writes null or [kind, name, message, stack, value,
// worker, key], key empty when zero.
func writeWorkError(w *cbor.Writer, e *workunit.Error) {
	if e == nil {
		w.Simple(cbor.SimpleNull)
		return
	}
	w.ArrayHeader(7)
	w.Head(cbor.MajorUint, uint64(e.Kind))
	w.String(e.Name)
	w.String(e.Message)
	w.String(e.Stack)
	w.ByteString(e.Value)
	w.String(e.Worker)
	if e.Key == (workunit.Key{}) {
		w.ByteString(nil)
	} else {
		w.ByteString(e.Key[:])
	}
}

func writeOutcome(w *cbor.Writer, o *workunit.Outcome) {
	writeKey(w, &o.Key)
	w.Head(cbor.MajorUint, uint64(o.Status))
	w.String(o.Worker)
	w.ByteString(o.Result)
	writeWorkError(w, o.Err)
	writeConsole(w, o.Console)
	writeTime(w, o.LastChange)
	writeMicros(w, o.Elapsed)
}

func writeLimits(w *cbor.Writer, l *Limits) {
	w.ArrayHeader(5)
	writeCount(w, l.MaxFrameBytes)
	writeCount(w, l.MaxMessages)
	writeCount(w, l.MaxSpecBytes)
	writeCount(w, l.MaxResultBytes)
	writeCount(w, l.MaxBlobBytes)
}

func msgHead(w *cbor.Writer, t Type) {
	w.ArrayHeader(int(t.items()))
	w.Head(cbor.MajorUint, uint64(t))
}

// Per-message checks and encoders, in type order.

func (m *Hello) check(l *Limits) error {
	c := checker{t: TypeHello, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	// A Hello of another version carries only its version (see Decode).
	if m.Version == ProtocolVersion && m.Role != RoleMaster && m.Role != RoleWorker {
		c.fail("role", ErrMalformed, "role %q, want %q or %q", m.Role, RoleMaster, RoleWorker)
	}
	c.count("slots", m.Slots, maxCount)
	c.count("prefetch", m.Prefetch, maxCount)
	return c.err
}

func (m *Hello) encode(w *cbor.Writer) {
	msgHead(w, TypeHello)
	w.Head(cbor.MajorUint, uint64(m.Version))
	w.String(string(m.Role))
	w.String(m.Name)
	w.String(m.Session)
	writeCount(w, m.Slots)
	writeCount(w, m.Prefetch)
	w.ArrayHeader(len(m.GPUs))
	for i := range m.GPUs {
		w.ArrayHeader(2)
		w.String(m.GPUs[i].Name)
		w.Head(cbor.MajorUint, m.GPUs[i].Memory)
	}
	w.String(m.Token)
	w.String(m.Agent)
}

func (m *Welcome) check(l *Limits) error {
	c := checker{t: TypeWelcome, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.dur("ping-interval", m.PingInterval, time.Millisecond, maxMillis)
	c.count("limits", m.Limits.MaxFrameBytes, maxLimit)
	c.count("limits", m.Limits.MaxMessages, maxLimit)
	c.count("limits", m.Limits.MaxSpecBytes, maxLimit)
	c.count("limits", m.Limits.MaxResultBytes, maxLimit)
	c.count("limits", m.Limits.MaxBlobBytes, maxLimit)
	return c.err
}

func (m *Welcome) encode(w *cbor.Writer) {
	msgHead(w, TypeWelcome)
	w.Head(cbor.MajorUint, uint64(m.Version))
	w.String(m.Name)
	w.String(m.Tracker)
	writeMillis(w, m.PingInterval)
	w.Bool(m.Resumed)
	writeLimits(w, &m.Limits)
}

func (m *Refused) check(l *Limits) error {
	c := checker{t: TypeRefused, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Refused) encode(w *cbor.Writer) {
	msgHead(w, TypeRefused)
	w.Head(cbor.MajorUint, uint64(m.Code))
	w.String(m.Message)
	w.Head(cbor.MajorUint, uint64(m.Version))
}

func (m *Error) check(l *Limits) error {
	c := checker{t: TypeError, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Error) encode(w *cbor.Writer) {
	msgHead(w, TypeError)
	w.Head(cbor.MajorUint, m.Req)
	w.Head(cbor.MajorUint, uint64(m.Code))
	w.String(m.Message)
}

func (m *Submit) check(l *Limits) error {
	c := checker{t: TypeSubmit, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.size("spec", m.Spec, specLimit)
	c.count("gpus", m.Options.GPUs, maxCount)
	c.dur("timeout", m.Options.Timeout, time.Millisecond, maxMillis)
	return c.err
}

func (m *Submit) encode(w *cbor.Writer) {
	msgHead(w, TypeSubmit)
	w.Head(cbor.MajorUint, m.Req)
	w.ByteString(m.Spec)
	w.Bool(m.Options.NoCache)
	writeCount(w, m.Options.GPUs)
	writeMillis(w, m.Options.Timeout)
	w.Bool(m.Watch)
}

func (m *Accepted) check(l *Limits) error {
	c := checker{t: TypeAccepted, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.outcome(&m.Outcome)
	return c.err
}

func (m *Accepted) encode(w *cbor.Writer) {
	msgHead(w, TypeAccepted)
	w.Head(cbor.MajorUint, m.Req)
	writeOutcome(w, &m.Outcome)
}

func (m *Watch) check(l *Limits) error {
	c := checker{t: TypeWatch, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Watch) encode(w *cbor.Writer) {
	msgHead(w, TypeWatch)
	w.Head(cbor.MajorUint, m.Req)
	writeKeys(w, m.Keys)
}

func (m *Unwatch) check(l *Limits) error {
	c := checker{t: TypeUnwatch, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Unwatch) encode(w *cbor.Writer) {
	msgHead(w, TypeUnwatch)
	writeKeys(w, m.Keys)
}

func (m *Finished) check(l *Limits) error {
	c := checker{t: TypeFinished, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.outcome(&m.Outcome)
	return c.err
}

func (m *Finished) encode(w *cbor.Writer) {
	msgHead(w, TypeFinished)
	w.Head(cbor.MajorUint, m.Req)
	writeOutcome(w, &m.Outcome)
}

func (m *Info) check(l *Limits) error {
	c := checker{t: TypeInfo, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Info) encode(w *cbor.Writer) {
	msgHead(w, TypeInfo)
	w.Head(cbor.MajorUint, m.Req)
	writeKey(w, &m.Key)
}

func (m *InfoReply) check(l *Limits) error {
	c := checker{t: TypeInfoReply, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.outcome(&m.Outcome)
	return c.err
}

func (m *InfoReply) encode(w *cbor.Writer) {
	msgHead(w, TypeInfoReply)
	w.Head(cbor.MajorUint, m.Req)
	writeOutcome(w, &m.Outcome)
}

func (m *BlobHave) check(l *Limits) error {
	c := checker{t: TypeBlobHave, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *BlobHave) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobHave)
	w.Head(cbor.MajorUint, m.Req)
	writeHashes(w, m.Hashes)
}

func (m *BlobNeed) check(l *Limits) error {
	c := checker{t: TypeBlobNeed, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *BlobNeed) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobNeed)
	w.Head(cbor.MajorUint, m.Req)
	writeHashes(w, m.Missing)
}

func (m *BlobPut) check(l *Limits) error {
	c := checker{t: TypeBlobPut, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.size("data", m.Data, blobLimit)
	return c.err
}

func (m *BlobPut) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobPut)
	w.Head(cbor.MajorUint, m.Req)
	writeHash(w, &m.Hash)
	w.ByteString(m.Data)
}

func (m *BlobStored) check(l *Limits) error {
	c := checker{t: TypeBlobStored, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *BlobStored) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobStored)
	w.Head(cbor.MajorUint, m.Req)
	writeHash(w, &m.Hash)
}

func (m *Credit) check(l *Limits) error {
	c := checker{t: TypeCredit, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.count("n", m.N, maxCount)
	return c.err
}

func (m *Credit) encode(w *cbor.Writer) {
	msgHead(w, TypeCredit)
	writeCount(w, m.N)
}

func (m *Assign) check(l *Limits) error {
	c := checker{t: TypeAssign, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.size("spec", m.Spec, specLimit)
	c.dur("timeout", m.Timeout, time.Millisecond, maxMillis)
	c.count("gpus", m.GPUs, maxCount)
	return c.err
}

func (m *Assign) encode(w *cbor.Writer) {
	msgHead(w, TypeAssign)
	writeKey(w, &m.Key)
	w.Head(cbor.MajorUint, m.Token)
	w.ByteString(m.Spec)
	w.String(m.Realm)
	writeMillis(w, m.Timeout)
	writeCount(w, m.GPUs)
}

func (m *Done) check(l *Limits) error {
	c := checker{t: TypeDone, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.size("result", m.Result, resultLimit)
	c.console("console", m.Console)
	c.dur("elapsed", m.Elapsed, time.Microsecond, maxElapsedMicros)
	return c.err
}

func (m *Done) encode(w *cbor.Writer) {
	msgHead(w, TypeDone)
	writeKey(w, &m.Key)
	w.Head(cbor.MajorUint, m.Token)
	w.ByteString(m.Result)
	writeConsole(w, m.Console)
	writeMicros(w, m.Elapsed)
}

func (m *Failed) check(l *Limits) error {
	c := checker{t: TypeFailed, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	c.workError("error", m.Error, true)
	c.console("console", m.Console)
	c.dur("elapsed", m.Elapsed, time.Microsecond, maxElapsedMicros)
	return c.err
}

func (m *Failed) encode(w *cbor.Writer) {
	msgHead(w, TypeFailed)
	writeKey(w, &m.Key)
	w.Head(cbor.MajorUint, m.Token)
	writeWorkError(w, m.Error)
	writeConsole(w, m.Console)
	writeMicros(w, m.Elapsed)
}

func (m *Return) check(l *Limits) error {
	c := checker{t: TypeReturn, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Return) encode(w *cbor.Writer) {
	msgHead(w, TypeReturn)
	w.ArrayHeader(len(m.Leases))
	for i := range m.Leases {
		w.ArrayHeader(2)
		writeKey(w, &m.Leases[i].Key)
		w.Head(cbor.MajorUint, m.Leases[i].Token)
	}
}

func (m *BlobGet) check(l *Limits) error {
	c := checker{t: TypeBlobGet, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *BlobGet) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobGet)
	w.Head(cbor.MajorUint, m.Req)
	writeHash(w, &m.Hash)
}

func (m *BlobData) check(l *Limits) error {
	c := checker{t: TypeBlobData, l: l}
	if c.nilMsg(m == nil) {
		return c.err
	}
	if !m.Missing {
		c.size("data", m.Data, blobLimit)
	}
	return c.err
}

func (m *BlobData) encode(w *cbor.Writer) {
	msgHead(w, TypeBlobData)
	w.Head(cbor.MajorUint, m.Req)
	writeHash(w, &m.Hash)
	if m.Missing {
		w.Simple(cbor.SimpleNull)
	} else {
		w.ByteString(m.Data)
	}
}

func (m *Cancel) check(l *Limits) error {
	c := checker{t: TypeCancel, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Cancel) encode(w *cbor.Writer) {
	msgHead(w, TypeCancel)
	w.Head(cbor.MajorUint, m.Req)
	writeKeys(w, m.Keys)
}

func (m *Canceled) check(l *Limits) error {
	c := checker{t: TypeCanceled, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Canceled) encode(w *cbor.Writer) {
	msgHead(w, TypeCanceled)
	w.Head(cbor.MajorUint, m.Req)
	writeKeys(w, m.Keys)
}

func (m *Revoke) check(l *Limits) error {
	c := checker{t: TypeRevoke, l: l}
	c.nilMsg(m == nil)
	return c.err
}

func (m *Revoke) encode(w *cbor.Writer) {
	msgHead(w, TypeRevoke)
	writeKey(w, &m.Key)
	w.Head(cbor.MajorUint, m.Token)
}
