package wire

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/workunit"
)

// Decode decodes a frame with the default Limits. It never panics: any
// input gives messages or a *DecodeError.
//
// The messages are new and belong to the caller, but their byte-slice
// fields (Spec, Result, Data, an error's Value) alias frame: the caller
// must not modify or reuse frame while it uses them. Empty byte strings and
// empty arrays decode as nil.
//
// A Hello whose Version is not ProtocolVersion decodes as a Hello with only
// Version set, and ends the frame: Decode ignores what follows it, so that
// a tracker can refuse a client of any version with a clear message.
func Decode(frame []byte) ([]Msg, error) {
	s := new(slabs)
	dc := dec{r: *cbor.NewReader(frame), l: Limits{}.WithDefaults(), s: s, idx: -1}
	return dc.result(dc.frame(nil))
}

// Decoder decodes frames, reusing the memory of the messages it returns
// from one frame to the next, so that a connection's reader allocates
// little per message once warm. The zero Decoder is ready to use, with the
// default Limits. A Decoder is not safe for concurrent use: give each
// connection's reader goroutine its own.
type Decoder struct {
	// Limits are enforced on every frame; zero fields take their defaults.
	Limits Limits

	msgs []Msg
	s    slabs
	strs map[string]string
}

// Decode decodes a frame as the function Decode does, with d's Limits. The
// returned slice and the messages in it belong to d and are valid until the
// next call of Decode: copy out what must live longer (byte-slice fields
// alias frame, not d, and stay valid as long as frame does). Strings that
// repeat from frame to frame (realms, worker names) are shared.
func (d *Decoder) Decode(frame []byte) ([]Msg, error) {
	clear(d.msgs)
	d.s.reset()
	if d.strs == nil {
		d.strs = make(map[string]string)
	}
	dc := dec{r: *cbor.NewReader(frame), l: d.Limits.WithDefaults(), s: &d.s, strs: d.strs, idx: -1}
	d.msgs = dc.frame(d.msgs[:0])
	return dc.result(d.msgs)
}

// result returns what Decode returns for msgs: nil and the error if there
// was one, nil for no messages.
func (d *dec) result(msgs []Msg) ([]Msg, error) {
	if d.err != nil {
		return nil, d.err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return msgs, nil
}

// slab hands out *T from chunks it reuses after reset. Pointers it gave
// stay valid until reset: a full chunk is replaced, never grown in place.
type slab[T any] struct {
	buf []T
}

const (
	firstChunk = 2
	maxChunk   = 4096
)

func (s *slab[T]) get() *T {
	if len(s.buf) == cap(s.buf) {
		n := min(max(2*cap(s.buf), firstChunk), maxChunk)
		s.buf = make([]T, 0, n)
	}
	s.buf = s.buf[:len(s.buf)+1]
	return &s.buf[len(s.buf)-1]
}

func (s *slab[T]) reset() {
	clear(s.buf)
	s.buf = s.buf[:0]
}

type slabs struct {
	hello      slab[Hello]
	welcome    slab[Welcome]
	refused    slab[Refused]
	error      slab[Error]
	submit     slab[Submit]
	accepted   slab[Accepted]
	watch      slab[Watch]
	unwatch    slab[Unwatch]
	finished   slab[Finished]
	info       slab[Info]
	infoReply  slab[InfoReply]
	blobHave   slab[BlobHave]
	blobNeed   slab[BlobNeed]
	blobPut    slab[BlobPut]
	blobStored slab[BlobStored]
	credit     slab[Credit]
	assign     slab[Assign]
	done       slab[Done]
	failed     slab[Failed]
	ret        slab[Return]
	blobGet    slab[BlobGet]
	blobData   slab[BlobData]
	cancel     slab[Cancel]
	canceled   slab[Canceled]
	revoke     slab[Revoke]
}

func (s *slabs) reset() {
	s.hello.reset()
	s.welcome.reset()
	s.refused.reset()
	s.error.reset()
	s.submit.reset()
	s.accepted.reset()
	s.watch.reset()
	s.unwatch.reset()
	s.finished.reset()
	s.info.reset()
	s.infoReply.reset()
	s.blobHave.reset()
	s.blobNeed.reset()
	s.blobPut.reset()
	s.blobStored.reset()
	s.credit.reset()
	s.assign.reset()
	s.done.reset()
	s.failed.reset()
	s.ret.reset()
	s.blobGet.reset()
	s.blobData.reset()
	s.cancel.reset()
	s.canceled.reset()
	s.revoke.reset()
}

// maxInterned bounds a Decoder's table of shared strings; it is emptied
// when full.
const maxInterned = 1024

// dec is the state of one decoding: the reader, where it is (for errors),
// and the first error, after which every read returns a zero value.
type dec struct {
	r    cbor.Reader
	l    Limits
	s    *slabs
	strs map[string]string

	idx  int    // message index, -1 for the frame
	typ  Type   // message type, 0 before it is read
	req  uint64 // the message's Req, once read
	stop bool   // a foreign Hello ends the frame
	err  *DecodeError
}

func (d *dec) fail(field string, kind error, off int, format string, args ...any) {
	if d.err != nil {
		return
	}
	d.err = &DecodeError{Index: d.idx, Type: d.typ, Field: field, Offset: off, Req: d.req,
		Err: kind, Detail: fmt.Sprintf(format, args...)}
}

// syntax records an error of the value Reader.
func (d *dec) syntax(field string, err error) {
	var se *cbor.SyntaxError
	if errors.As(err, &se) {
		detail := se.Msg
		if se.Err != nil {
			detail += ": " + se.Err.Error()
		}
		d.fail(field, ErrMalformed, se.Offset, "%s", detail)
		return
	}
	d.fail(field, ErrMalformed, d.r.Offset(), "%v", err)
}

func (d *dec) head(field string) (cbor.Head, int, bool) {
	if d.err != nil {
		return cbor.Head{}, 0, false
	}
	off := d.r.Offset()
	h, err := d.r.Next()
	if err != nil {
		d.syntax(field, err)
		return h, off, false
	}
	return h, off, true
}

// describe names the kind of item a head starts, for messages.
func describe(h cbor.Head) string {
	switch h.Major {
	case cbor.MajorUint:
		return "an unsigned integer"
	case cbor.MajorNeg:
		return "a negative integer"
	case cbor.MajorBytes:
		return "a byte string"
	case cbor.MajorText:
		return "a text string"
	case cbor.MajorArray:
		return "an array"
	case cbor.MajorMap:
		return "a map"
	case cbor.MajorTag:
		return "a tag"
	}
	switch {
	case h.IsFloat:
		return "a float"
	case h.Arg == cbor.SimpleFalse || h.Arg == cbor.SimpleTrue:
		return "a boolean"
	case h.Arg == cbor.SimpleNull:
		return "null"
	case h.Arg == cbor.SimpleUndefined:
		return "undefined"
	}
	return "a simple value"
}

func isNull(h cbor.Head) bool {
	return h.Major == cbor.MajorSimple && !h.IsFloat && h.Arg == cbor.SimpleNull
}

func (d *dec) uintMax(field string, max uint64) uint64 {
	h, off, ok := d.head(field)
	if !ok {
		return 0
	}
	if h.Major != cbor.MajorUint {
		d.fail(field, ErrMalformed, off, "want an unsigned integer, have %s", describe(h))
		return 0
	}
	if h.Arg > max {
		d.fail(field, ErrMalformed, off, "%d is out of range [0, %d]", h.Arg, max)
		return 0
	}
	return h.Arg
}

func (d *dec) uint(field string) uint64 { return d.uintMax(field, math.MaxUint64) }

func (d *dec) reqField() uint64 {
	d.req = d.uint("req")
	return d.req
}

func (d *dec) count(field string) int { return int(d.uintMax(field, maxCount)) }

func (d *dec) millis(field string) time.Duration {
	return time.Duration(d.uintMax(field, maxMillis)) * time.Millisecond
}

func (d *dec) micros(field string) time.Duration {
	return time.Duration(d.uintMax(field, maxElapsedMicros)) * time.Microsecond
}

func (d *dec) time(field string) time.Time {
	ms := d.uintMax(field, math.MaxInt64)
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

func (d *dec) bool(field string) bool {
	h, off, ok := d.head(field)
	if !ok {
		return false
	}
	if h.Major != cbor.MajorSimple || h.IsFloat || (h.Arg != cbor.SimpleFalse && h.Arg != cbor.SimpleTrue) {
		d.fail(field, ErrMalformed, off, "want a boolean, have %s", describe(h))
		return false
	}
	return h.Arg == cbor.SimpleTrue
}

// bytesAfter reads the payload of a byte string whose head is h, checking
// it against limit (-1: none). Empty gives nil.
func (d *dec) bytesAfter(field string, h cbor.Head, off, limit int) []byte {
	if h.Major != cbor.MajorBytes {
		d.fail(field, ErrMalformed, off, "want a byte string, have %s", describe(h))
		return nil
	}
	if limit >= 0 && h.Arg > uint64(limit) {
		d.fail(field, ErrLimit, off, "%d bytes, limit %d", h.Arg, limit)
		return nil
	}
	b, err := d.r.Bytes(h.Arg)
	if err != nil {
		d.syntax(field, err)
		return nil
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

func (d *dec) bytes(field string, limit int) []byte {
	h, off, ok := d.head(field)
	if !ok {
		return nil
	}
	return d.bytesAfter(field, h, off, limit)
}

// hash32 reads a byte string of exactly 32 bytes into dst.
func (d *dec) hash32(field string, dst *[32]byte) {
	h, off, ok := d.head(field)
	if !ok {
		return
	}
	if h.Major == cbor.MajorBytes && h.Arg != 32 {
		d.fail(field, ErrMalformed, off, "%d bytes, want 32", h.Arg)
		return
	}
	if b := d.bytesAfter(field, h, off, -1); b != nil {
		copy(dst[:], b)
	}
}

func (d *dec) key(field string, k *workunit.Key) { d.hash32(field, (*[32]byte)(k)) }

func (d *dec) hash(field string, h *blob.Hash) { d.hash32(field, (*[32]byte)(h)) }

// textBytes reads a text string's UTF-8 bytes, aliasing the frame.
func (d *dec) textBytes(field string) []byte {
	h, off, ok := d.head(field)
	if !ok {
		return nil
	}
	if h.Major != cbor.MajorText {
		d.fail(field, ErrMalformed, off, "want a text string, have %s", describe(h))
		return nil
	}
	b, err := d.r.Bytes(h.Arg)
	if err != nil {
		d.syntax(field, err)
		return nil
	}
	if !utf8.Valid(b) {
		d.fail(field, ErrMalformed, off, "text string is not valid UTF-8")
		return nil
	}
	return b
}

func (d *dec) text(field string) string { return string(d.textBytes(field)) }

// shared reads a text string that repeats from frame to frame, sharing
// one copy of it when the Decoder keeps a table.
func (d *dec) shared(field string) string {
	b := d.textBytes(field)
	if len(b) == 0 || d.strs == nil {
		return string(b)
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	if len(d.strs) >= maxInterned {
		clear(d.strs)
	}
	s := string(b)
	d.strs[s] = s
	return s
}

// array reads an array head and checks that its n items, each at least
// minBytes long, fit in what is left.
func (d *dec) array(field string, minBytes int) uint64 {
	h, off, ok := d.head(field)
	if !ok {
		return 0
	}
	return d.arrayAfter(field, h, off, minBytes)
}

func (d *dec) arrayAfter(field string, h cbor.Head, off, minBytes int) uint64 {
	if h.Major != cbor.MajorArray {
		d.fail(field, ErrMalformed, off, "want an array, have %s", describe(h))
		return 0
	}
	if err := d.r.CheckCount(h.Arg, minBytes); err != nil {
		d.syntax(field, err)
		return 0
	}
	return h.Arg
}

// tuple reads the head of an array of exactly n items.
func (d *dec) tuple(field string, n uint64) bool {
	h, off, ok := d.head(field)
	if !ok {
		return false
	}
	if h.Major != cbor.MajorArray || h.Arg != n {
		if h.Major == cbor.MajorArray {
			d.fail(field, ErrMalformed, off, "want an array of %d items, have %d", n, h.Arg)
		} else {
			d.fail(field, ErrMalformed, off, "want an array of %d items, have %s", n, describe(h))
		}
		return false
	}
	return true
}

// Minimum encoded sizes of list items, for CheckCount, and the nesting
// allowed in the fields of a foreign Hello.
const (
	minHashItem  = 2 + 32 // a 32-byte byte string
	minGPUItem   = 3      // [name, memory]
	minLeaseItem = 2 + 34 // [key, token]
	minMsgItem   = 2      // [type, ...]
	skipDepth    = 64
)

func (d *dec) keys(field string) []workunit.Key {
	n := d.array(field, minHashItem)
	if n == 0 || d.err != nil {
		return nil
	}
	ks := make([]workunit.Key, n)
	for i := range ks {
		d.key(field, &ks[i])
	}
	return ks
}

func (d *dec) hashes(field string) []blob.Hash {
	n := d.array(field, minHashItem)
	if n == 0 || d.err != nil {
		return nil
	}
	hs := make([]blob.Hash, n)
	for i := range hs {
		d.hash(field, &hs[i])
	}
	return hs
}

// console reads a console item, checked, aliasing the frame (see
// workunit.ReadConsole).
func (d *dec) console(field string) workunit.Console {
	if d.err != nil {
		return nil
	}
	c, err := workunit.ReadConsole(&d.r)
	if err != nil {
		d.syntax(field, err)
		return nil
	}
	return c
}

// workError reads null (when nullable) or a workunit error.
func (d *dec) workError(nullable bool) *workunit.Error {
	h, off, ok := d.head("error")
	if !ok {
		return nil
	}
	if isNull(h) {
		if !nullable {
			d.fail("error", ErrMalformed, off, "want an error, have null")
		}
		return nil
	}
	if h.Major != cbor.MajorArray || h.Arg != 7 {
		d.fail("error", ErrMalformed, off, "want null or an error array of 7 items, have %s", describe(h))
		return nil
	}
	e := &workunit.Error{}
	kind := d.uintMax("error.kind", math.MaxUint8)
	if kind == 0 && d.err == nil {
		d.fail("error.kind", ErrMalformed, d.r.Offset(), "error kind 0")
	}
	e.Kind = workunit.ErrorKind(kind)
	e.Name = d.text("error.name")
	e.Message = d.text("error.message")
	e.Stack = d.text("error.stack")
	e.Value = d.bytes("error.value", d.l.MaxResultBytes)
	e.Worker = d.shared("error.worker")
	kh, koff, ok := d.head("error.key")
	if !ok {
		return nil
	}
	if kh.Major == cbor.MajorBytes && kh.Arg != 0 && kh.Arg != 32 {
		d.fail("error.key", ErrMalformed, koff, "%d bytes, want 0 or 32", kh.Arg)
		return nil
	}
	if b := d.bytesAfter("error.key", kh, koff, -1); b != nil {
		copy(e.Key[:], b)
	}
	if d.err != nil {
		return nil
	}
	return e
}

func (d *dec) outcome(o *workunit.Outcome) {
	d.key("key", &o.Key)
	o.Status = workunit.Status(d.uintMax("status", uint64(workunit.StatusError)))
	o.Worker = d.shared("worker")
	o.Result = d.bytes("result", d.l.MaxResultBytes)
	o.Err = d.workError(true)
	o.Console = d.console("console")
	o.LastChange = d.time("last-change")
	o.Elapsed = d.micros("elapsed")
}

func (d *dec) limits(l *Limits) {
	if !d.tuple("limits", 5) {
		return
	}
	l.MaxFrameBytes = int(d.uintMax("limits.max-frame-bytes", maxLimit))
	l.MaxMessages = int(d.uintMax("limits.max-messages", maxLimit))
	l.MaxSpecBytes = int(d.uintMax("limits.max-spec-bytes", maxLimit))
	l.MaxResultBytes = int(d.uintMax("limits.max-result-bytes", maxLimit))
	l.MaxBlobBytes = int(d.uintMax("limits.max-blob-bytes", maxLimit))
}

// frame decodes the whole frame, appending its messages to msgs.
func (d *dec) frame(msgs []Msg) []Msg {
	if n := d.r.Remaining(); n > d.l.MaxFrameBytes {
		d.fail("", ErrLimit, 0, "a frame of %d bytes, limit %d", n, d.l.MaxFrameBytes)
		return msgs
	}
	h, off, ok := d.head("")
	if !ok {
		return msgs
	}
	if h.Major != cbor.MajorArray {
		d.fail("", ErrMalformed, off, "want an array of messages, have %s", describe(h))
		return msgs
	}
	if h.Arg > uint64(d.l.MaxMessages) {
		d.fail("", ErrLimit, off, "%d messages, limit %d", h.Arg, d.l.MaxMessages)
		return msgs
	}
	if err := d.r.CheckCount(h.Arg, minMsgItem); err != nil {
		d.syntax("", err)
		return msgs
	}
	for i := 0; i < int(h.Arg); i++ {
		d.idx, d.typ, d.req = i, 0, 0
		m := d.msg()
		if d.err != nil {
			return msgs
		}
		msgs = append(msgs, m)
		if d.stop {
			return msgs
		}
	}
	d.idx, d.typ, d.req = -1, 0, 0
	if n := d.r.Remaining(); n != 0 {
		d.fail("", ErrMalformed, d.r.Offset(), "%d bytes after the frame", n)
	}
	return msgs
}

// msg decodes one message.
func (d *dec) msg() Msg {
	h, off, ok := d.head("")
	if !ok {
		return nil
	}
	if h.Major != cbor.MajorArray || h.Arg == 0 {
		d.fail("", ErrMalformed, off, "want a message array, have %s", describe(h))
		return nil
	}
	toff := d.r.Offset()
	t := d.uint("type")
	if d.err != nil {
		return nil
	}
	if t == 0 || t > uint64(maxType) {
		d.fail("type", ErrUnknownType, toff, "unknown message type %d", t)
		return nil
	}
	d.typ = Type(t)
	if d.typ == TypeHello {
		return d.hello(h.Arg, off)
	}
	if want := d.typ.items(); h.Arg != want {
		d.fail("", ErrMalformed, off, "want an array of %d items, have %d", want, h.Arg)
		return nil
	}
	switch d.typ {
	case TypeWelcome:
		m := d.s.welcome.get()
		m.Version = uint32(d.uintMax("version", math.MaxUint32))
		m.Name = d.text("name")
		m.Tracker = d.text("tracker")
		m.PingInterval = d.millis("ping-interval")
		m.Resumed = d.bool("resumed")
		d.limits(&m.Limits)
		return m
	case TypeRefused:
		m := d.s.refused.get()
		m.Code = Code(d.uintMax("code", math.MaxUint16))
		m.Message = d.text("message")
		m.Version = uint32(d.uintMax("version", math.MaxUint32))
		return m
	case TypeError:
		m := d.s.error.get()
		m.Req = d.reqField()
		m.Code = Code(d.uintMax("code", math.MaxUint16))
		m.Message = d.text("message")
		return m
	case TypeSubmit:
		m := d.s.submit.get()
		m.Req = d.reqField()
		m.Spec = d.bytes("spec", d.l.MaxSpecBytes)
		m.Options.NoCache = d.bool("no-cache")
		m.Options.GPUs = d.count("gpus")
		m.Options.Timeout = d.millis("timeout")
		m.Watch = d.bool("watch")
		return m
	case TypeAccepted:
		m := d.s.accepted.get()
		m.Req = d.reqField()
		d.outcome(&m.Outcome)
		return m
	case TypeWatch:
		m := d.s.watch.get()
		m.Req = d.reqField()
		m.Keys = d.keys("keys")
		return m
	case TypeUnwatch:
		m := d.s.unwatch.get()
		m.Keys = d.keys("keys")
		return m
	case TypeFinished:
		m := d.s.finished.get()
		m.Req = d.reqField()
		d.outcome(&m.Outcome)
		return m
	case TypeInfo:
		m := d.s.info.get()
		m.Req = d.reqField()
		d.key("key", &m.Key)
		return m
	case TypeInfoReply:
		m := d.s.infoReply.get()
		m.Req = d.reqField()
		d.outcome(&m.Outcome)
		return m
	case TypeBlobHave:
		m := d.s.blobHave.get()
		m.Req = d.reqField()
		m.Hashes = d.hashes("hashes")
		return m
	case TypeBlobNeed:
		m := d.s.blobNeed.get()
		m.Req = d.reqField()
		m.Missing = d.hashes("missing")
		return m
	case TypeBlobPut:
		m := d.s.blobPut.get()
		m.Req = d.reqField()
		d.hash("hash", &m.Hash)
		m.Data = d.bytes("data", d.l.MaxBlobBytes)
		return m
	case TypeBlobStored:
		m := d.s.blobStored.get()
		m.Req = d.reqField()
		d.hash("hash", &m.Hash)
		return m
	case TypeCredit:
		m := d.s.credit.get()
		m.N = d.count("n")
		return m
	case TypeAssign:
		m := d.s.assign.get()
		d.key("key", &m.Key)
		m.Token = d.uint("token")
		m.Spec = d.bytes("spec", d.l.MaxSpecBytes)
		m.Realm = d.shared("realm")
		m.Timeout = d.millis("timeout")
		m.GPUs = d.count("gpus")
		return m
	case TypeDone:
		m := d.s.done.get()
		d.key("key", &m.Key)
		m.Token = d.uint("token")
		m.Result = d.bytes("result", d.l.MaxResultBytes)
		m.Console = d.console("console")
		m.Elapsed = d.micros("elapsed")
		return m
	case TypeFailed:
		m := d.s.failed.get()
		d.key("key", &m.Key)
		m.Token = d.uint("token")
		m.Error = d.workError(false)
		m.Console = d.console("console")
		m.Elapsed = d.micros("elapsed")
		return m
	case TypeReturn:
		m := d.s.ret.get()
		n := d.array("leases", minLeaseItem)
		if n == 0 || d.err != nil {
			return m
		}
		m.Leases = make([]Lease, n)
		for i := range m.Leases {
			if !d.tuple("leases", 2) {
				break
			}
			d.key("key", &m.Leases[i].Key)
			m.Leases[i].Token = d.uint("token")
		}
		return m
	case TypeBlobGet:
		m := d.s.blobGet.get()
		m.Req = d.reqField()
		d.hash("hash", &m.Hash)
		return m
	case TypeBlobData:
		m := d.s.blobData.get()
		m.Req = d.reqField()
		d.hash("hash", &m.Hash)
		h, off, ok := d.head("data")
		if !ok {
			return m
		}
		if isNull(h) {
			m.Missing = true
			return m
		}
		m.Data = d.bytesAfter("data", h, off, d.l.MaxBlobBytes)
		return m
	case TypeCancel:
		m := d.s.cancel.get()
		m.Req = d.reqField()
		m.Keys = d.keys("keys")
		return m
	case TypeCanceled:
		m := d.s.canceled.get()
		m.Req = d.reqField()
		m.Keys = d.keys("keys")
		return m
	case TypeRevoke:
		m := d.s.revoke.get()
		d.key("key", &m.Key)
		m.Token = d.uint("token")
		return m
	}
	d.fail("type", ErrUnknownType, toff, "unknown message type %d", t)
	return nil
}

// hello decodes a Hello of n items whose type was read. A Hello of another
// version keeps only its version and ends the frame.
func (d *dec) hello(n uint64, off int) Msg {
	if n < 2 {
		d.fail("", ErrMalformed, off, "want a hello of at least 2 items, have %d", n)
		return nil
	}
	m := d.s.hello.get()
	m.Version = uint32(d.uintMax("version", math.MaxUint32))
	if d.err != nil {
		return nil
	}
	if m.Version != ProtocolVersion {
		for i := uint64(2); i < n; i++ {
			if err := d.r.Skip(skipDepth); err != nil {
				d.syntax("", err)
				return nil
			}
		}
		d.stop = true
		return m
	}
	if want := TypeHello.items(); n != want {
		d.fail("", ErrMalformed, off, "want an array of %d items, have %d", want, n)
		return nil
	}
	roff := d.r.Offset()
	switch role := d.textBytes("role"); string(role) {
	case string(RoleMaster):
		m.Role = RoleMaster
	case string(RoleWorker):
		m.Role = RoleWorker
	default:
		d.fail("role", ErrMalformed, roff, "role %q, want %q or %q", role, RoleMaster, RoleWorker)
	}
	m.Name = d.text("name")
	m.Session = d.text("session")
	m.Slots = d.count("slots")
	m.Prefetch = d.count("prefetch")
	if g := d.array("gpus", minGPUItem); g > 0 && d.err == nil {
		m.GPUs = make([]GPU, g)
		for i := range m.GPUs {
			if !d.tuple("gpus", 2) {
				break
			}
			m.GPUs[i].Name = d.text("gpus.name")
			m.GPUs[i].Memory = d.uint("gpus.memory")
		}
	}
	m.Token = d.text("token")
	m.Agent = d.text("agent")
	return m
}
