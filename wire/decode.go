package wire

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
func Decode(frame []byte) ([]Msg, error) { return new(Decoder).decode(frame) }

// Decoder decodes frames, reusing the memory of the messages it returns
// from one frame to the next, so that a connection's reader allocates
// little per message once warm. The zero Decoder is ready to use, with the
// default Limits. A Decoder is not safe for concurrent use: give each
// connection's reader goroutine its own.
type Decoder struct {
	// Limits are enforced on every frame; zero fields take their defaults.
	Limits Limits
	// Keep is how many messages of each type the Decoder keeps the room
	// of from one frame to the next; 0 means 4096 (the room of one
	// chunk). A frame of more messages of a type makes room for the rest,
	// which the next frames reuse up to Keep: a reader that gets frames
	// of many thousands of answers (a master's) sets it higher, so as not
	// to make that room again for every frame.
	Keep int

	msgs []Msg
	s    slabs
	strs map[string]string
	c    decoder // the Decode in progress
}

// Decode decodes a frame as the function Decode does, with d's Limits. The
// returned slice and the messages in it belong to d and are valid until the
// next call of Decode: copy out what must live longer (byte-slice fields
// alias frame, not d, and stay valid as long as frame does). Strings that
// repeat from frame to frame (realms, worker names) are shared.
func (d *Decoder) Decode(frame []byte) ([]Msg, error) {
	clear(d.msgs)
	d.s.reset(max(d.Keep, maxChunk))
	if d.strs == nil {
		d.strs = make(map[string]string)
	}
	return d.decode(frame)
}

// decode decodes frame into d's messages, sharing strings in d.strs when
// it is not nil, and returns what Decode returns: nil and the error if
// there was one, nil for no messages.
func (d *Decoder) decode(frame []byte) ([]Msg, error) {
	c := &d.c
	*c = decoder{r: *cbor.NewReader(frame), lim: d.Limits.WithDefaults(), strs: d.strs, idx: -1}
	d.msgs = c.frame(d.msgs[:0], &d.s)
	err := c.err
	*c = decoder{}
	if err != nil {
		return nil, err
	}
	if len(d.msgs) == 0 {
		return nil, nil
	}
	return d.msgs, nil
}

// slab hands out *T from chunks it reuses after reset. Pointers it gave
// stay valid until reset: a full chunk is replaced, never grown in place.
type slab[T any] struct {
	buf  []T   // the chunk being filled
	full [][]T // the chunks filled since the last reset
	free [][]T // chunks kept by reset for reuse
}

const (
	firstChunk = 2
	maxChunk   = 4096
)

func (s *slab[T]) get() *T {
	if len(s.buf) == cap(s.buf) {
		if cap(s.buf) > 0 {
			s.full = append(s.full, s.buf)
		}
		if n := len(s.free); n > 0 {
			s.buf, s.free[n-1] = s.free[n-1], nil
			s.free = s.free[:n-1]
		} else {
			n := min(max(2*cap(s.buf), firstChunk), maxChunk)
			s.buf = make([]T, 0, n)
		}
	}
	s.buf = s.buf[:len(s.buf)+1]
	return &s.buf[len(s.buf)-1]
}

// reset takes back every message handed out, keeping the room of about
// keep messages: the chunk being filled, then the largest of the others
// filled since the last reset.
func (s *slab[T]) reset(keep int) {
	clear(s.buf)
	s.buf = s.buf[:0]
	if len(s.full) == 0 {
		return
	}
	room := cap(s.buf)
	for _, c := range s.free {
		room += cap(c)
	}
	for i := len(s.full) - 1; i >= 0; i-- { // the later, the larger
		c := s.full[i]
		s.full[i] = nil
		if room+cap(c) > keep {
			continue
		}
		clear(c)
		s.free = append(s.free, c[:0])
		room += cap(c)
	}
	s.full = s.full[:0]
	slices.Reverse(s.free) // get takes the largest first
}

type slabs struct {
	hello       slab[Hello]
	welcome     slab[Welcome]
	refused     slab[Refused]
	error       slab[Error]
	submit      slab[Submit]
	accepted    slab[Accepted]
	watch       slab[Watch]
	unwatch     slab[Unwatch]
	finished    slab[Finished]
	info        slab[Info]
	infoReply   slab[InfoReply]
	blobHave    slab[BlobHave]
	blobNeed    slab[BlobNeed]
	blobPut     slab[BlobPut]
	blobStored  slab[BlobStored]
	credit      slab[Credit]
	assign      slab[Assign]
	done        slab[Done]
	failed      slab[Failed]
	ret         slab[Return]
	blobGet     slab[BlobGet]
	blobData    slab[BlobData]
	cancel      slab[Cancel]
	canceled    slab[Canceled]
	revoke      slab[Revoke]
	blobWrite   slab[BlobWrite]
	blobWritten slab[BlobWritten]
	blobRead    slab[BlobRead]
	blobPart    slab[BlobPart]
	stats       slab[Stats]
	print       slab[Print]
	printed     slab[Printed]
	child       slab[Child]
	wait        slab[Wait]
}

// reset resets every slab, keeping the room of keep messages of each type.
func (s *slabs) reset(keep int) {
	s.hello.reset(keep)
	s.welcome.reset(keep)
	s.refused.reset(keep)
	s.error.reset(keep)
	s.submit.reset(keep)
	s.accepted.reset(keep)
	s.watch.reset(keep)
	s.unwatch.reset(keep)
	s.finished.reset(keep)
	s.info.reset(keep)
	s.infoReply.reset(keep)
	s.blobHave.reset(keep)
	s.blobNeed.reset(keep)
	s.blobPut.reset(keep)
	s.blobStored.reset(keep)
	s.credit.reset(keep)
	s.assign.reset(keep)
	s.done.reset(keep)
	s.failed.reset(keep)
	s.ret.reset(keep)
	s.blobGet.reset(keep)
	s.blobData.reset(keep)
	s.cancel.reset(keep)
	s.canceled.reset(keep)
	s.revoke.reset(keep)
	s.blobWrite.reset(keep)
	s.blobWritten.reset(keep)
	s.blobRead.reset(keep)
	s.blobPart.reset(keep)
	s.stats.reset(keep)
	s.print.reset(keep)
	s.printed.reset(keep)
	s.child.reset(keep)
	s.wait.reset(keep)
}

// get returns a new message of type t, nil for an unknown type.
func (s *slabs) get(t Type) Msg {
	switch t {
	case TypeHello:
		return s.hello.get()
	case TypeWelcome:
		return s.welcome.get()
	case TypeRefused:
		return s.refused.get()
	case TypeError:
		return s.error.get()
	case TypeSubmit:
		return s.submit.get()
	case TypeAccepted:
		return s.accepted.get()
	case TypeWatch:
		return s.watch.get()
	case TypeUnwatch:
		return s.unwatch.get()
	case TypeFinished:
		return s.finished.get()
	case TypeInfo:
		return s.info.get()
	case TypeInfoReply:
		return s.infoReply.get()
	case TypeBlobHave:
		return s.blobHave.get()
	case TypeBlobNeed:
		return s.blobNeed.get()
	case TypeBlobPut:
		return s.blobPut.get()
	case TypeBlobStored:
		return s.blobStored.get()
	case TypeCredit:
		return s.credit.get()
	case TypeAssign:
		return s.assign.get()
	case TypeDone:
		return s.done.get()
	case TypeFailed:
		return s.failed.get()
	case TypeReturn:
		return s.ret.get()
	case TypeBlobGet:
		return s.blobGet.get()
	case TypeBlobData:
		return s.blobData.get()
	case TypeCancel:
		return s.cancel.get()
	case TypeCanceled:
		return s.canceled.get()
	case TypeRevoke:
		return s.revoke.get()
	case TypeBlobWrite:
		return s.blobWrite.get()
	case TypeBlobWritten:
		return s.blobWritten.get()
	case TypeBlobRead:
		return s.blobRead.get()
	case TypeBlobPart:
		return s.blobPart.get()
	case TypeStats:
		return s.stats.get()
	case TypePrint:
		return s.print.get()
	case TypePrinted:
		return s.printed.get()
	case TypeChild:
		return s.child.get()
	case TypeWait:
		return s.wait.get()
	}
	return nil
}

// maxInterned bounds a Decoder's table of shared strings; it is emptied
// when full.
const maxInterned = 1024

// decoder is the state of one decoding. It reads each field into the
// message: the first problem wins, as a *DecodeError, after which every
// read gives a zero value.
type decoder struct {
	typ    Type   // the message's type, 0 before it is read
	lim    Limits // with defaults
	r      cbor.Reader
	strs   map[string]string // shared strings; nil: none shared
	idx    int               // message index, -1 for the frame
	msgReq uint64            // the message's Req, once read
	items  uint64            // the message's item count, as its head says
	off    int               // the offset of the message's head
	stop   bool              // a foreign Hello ends the frame
	err    *DecodeError
}

// Reading: each read records the first problem and gives a zero value
// once there is one.

func (c *decoder) fail(field string, kind error, off int, format string, args ...any) {
	if c.err != nil {
		return
	}
	c.err = &DecodeError{Index: c.idx, Type: c.typ, Field: field, Offset: off, Req: c.msgReq,
		Err: kind, Detail: fmt.Sprintf(format, args...)}
}

// syntax records an error of the Reader.
func (c *decoder) syntax(field string, err error) {
	var se *cbor.SyntaxError
	if errors.As(err, &se) {
		detail := se.Msg
		if se.Err != nil {
			detail += ": " + se.Err.Error()
		}
		c.fail(field, ErrMalformed, se.Offset, "%s", detail)
		return
	}
	c.fail(field, ErrMalformed, c.r.Offset(), "%v", err)
}

func (c *decoder) readHead(field string) (cbor.Head, int, bool) {
	if c.err != nil {
		return cbor.Head{}, 0, false
	}
	off := c.r.Offset()
	h, err := c.r.Next()
	if err != nil {
		c.syntax(field, err)
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

// readUint reads an unsigned integer of at most most.
func (c *decoder) readUint(field string, most uint64) uint64 {
	// readHead's work, done here: this is the most frequent read.
	if c.err != nil {
		return 0
	}
	off := c.r.Offset()
	h, err := c.r.Next()
	if err != nil {
		c.syntax(field, err)
		return 0
	}
	if h.Major != cbor.MajorUint || h.Arg > most {
		c.badUint(field, h, off, most)
		return 0
	}
	return h.Arg
}

func (c *decoder) badUint(field string, h cbor.Head, off int, most uint64) {
	if h.Major != cbor.MajorUint {
		c.fail(field, ErrMalformed, off, "want an unsigned integer, have %s", describe(h))
		return
	}
	c.fail(field, ErrMalformed, off, "%d is out of range [0, %d]", h.Arg, most)
}

func (c *decoder) readBool(field string) bool {
	h, off, ok := c.readHead(field)
	if !ok {
		return false
	}
	if h.Major != cbor.MajorSimple || h.IsFloat || (h.Arg != cbor.SimpleFalse && h.Arg != cbor.SimpleTrue) {
		c.fail(field, ErrMalformed, off, "want a boolean, have %s", describe(h))
		return false
	}
	return h.Arg == cbor.SimpleTrue
}

// readBytesAfter reads the payload of a byte string whose head is h,
// checking it against limit (-1: none). Empty gives nil.
func (c *decoder) readBytesAfter(field string, h cbor.Head, off, limit int) []byte {
	if h.Major != cbor.MajorBytes {
		c.fail(field, ErrMalformed, off, "want a byte string, have %s", describe(h))
		return nil
	}
	if limit >= 0 && h.Arg > uint64(limit) {
		c.fail(field, ErrLimit, off, "%d bytes, limit %d", h.Arg, limit)
		return nil
	}
	b, err := c.r.Bytes(h.Arg)
	if err != nil {
		c.syntax(field, err)
		return nil
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

// readText reads a text string's UTF-8 bytes, aliasing the frame.
func (c *decoder) readText(field string) []byte {
	h, off, ok := c.readHead(field)
	if !ok {
		return nil
	}
	if h.Major != cbor.MajorText {
		c.fail(field, ErrMalformed, off, "want a text string, have %s", describe(h))
		return nil
	}
	b, err := c.r.Bytes(h.Arg)
	if err != nil {
		c.syntax(field, err)
		return nil
	}
	if !utf8.Valid(b) {
		c.fail(field, ErrMalformed, off, "text string is not valid UTF-8")
		return nil
	}
	return b
}

// readArray reads an array head and checks that its n items, each at
// least minBytes long, fit in what is left.
func (c *decoder) readArray(field string, minBytes int) uint64 {
	h, off, ok := c.readHead(field)
	if !ok {
		return 0
	}
	if h.Major != cbor.MajorArray {
		c.fail(field, ErrMalformed, off, "want an array, have %s", describe(h))
		return 0
	}
	if err := c.r.CheckCount(h.Arg, minBytes); err != nil {
		c.syntax(field, err)
		return 0
	}
	return h.Arg
}

// readTuple reads the head of an array of exactly n items.
func (c *decoder) readTuple(field string, n uint64) bool {
	h, off, ok := c.readHead(field)
	if !ok {
		return false
	}
	if h.Major != cbor.MajorArray || h.Arg != n {
		if h.Major == cbor.MajorArray {
			c.fail(field, ErrMalformed, off, "want an array of %d items, have %d", n, h.Arg)
		} else {
			c.fail(field, ErrMalformed, off, "want an array of %d items, have %s", n, describe(h))
		}
		return false
	}
	return true
}

// The minimum encoded size of a message, for CheckCount, and the nesting
// allowed in the fields of a foreign Hello.
const (
	minMsgItem = 2 // [type, ...]
	skipDepth  = 64
)

// frame decodes the whole frame, appending its messages, from s, to msgs.
func (c *decoder) frame(msgs []Msg, s *slabs) []Msg {
	if n := c.r.Remaining(); n > c.lim.MaxFrameBytes {
		c.fail("", ErrLimit, 0, "a frame of %d bytes, limit %d", n, c.lim.MaxFrameBytes)
		return msgs
	}
	h, off, ok := c.readHead("")
	if !ok {
		return msgs
	}
	if h.Major != cbor.MajorArray {
		c.fail("", ErrMalformed, off, "want an array of messages, have %s", describe(h))
		return msgs
	}
	if h.Arg > uint64(c.lim.MaxMessages) {
		c.fail("", ErrLimit, off, "%d messages, limit %d", h.Arg, c.lim.MaxMessages)
		return msgs
	}
	if err := c.r.CheckCount(h.Arg, minMsgItem); err != nil {
		c.syntax("", err)
		return msgs
	}
	for i := 0; i < int(h.Arg); i++ {
		c.idx, c.typ, c.msgReq = i, 0, 0
		m := c.msg(s)
		if c.err != nil {
			return msgs
		}
		msgs = append(msgs, m)
		if c.stop {
			return msgs
		}
	}
	c.idx, c.typ, c.msgReq = -1, 0, 0
	if n := c.r.Remaining(); n != 0 {
		c.fail("", ErrMalformed, c.r.Offset(), "%d bytes after the frame", n)
	}
	return msgs
}

// msg decodes one message, from s: its head and type here, then its
// fields. A Hello's item count is checked by its version field.
func (c *decoder) msg(s *slabs) Msg {
	h, off, ok := c.readHead("")
	if !ok {
		return nil
	}
	if h.Major != cbor.MajorArray || h.Arg == 0 {
		c.fail("", ErrMalformed, off, "want a message array, have %s", describe(h))
		return nil
	}
	toff := c.r.Offset()
	t := c.readUint("type", math.MaxUint64)
	if c.err != nil {
		return nil
	}
	if t == 0 || t > uint64(maxType) {
		c.fail("type", ErrUnknownType, toff, "unknown message type %d", t)
		return nil
	}
	c.typ, c.items, c.off = Type(t), h.Arg, off
	if c.typ == TypeHello {
		if h.Arg < 2 {
			c.fail("", ErrMalformed, off, "want a hello of at least 2 items, have %d", h.Arg)
			return nil
		}
	} else if want := c.typ.items(); h.Arg != want {
		c.fail("", ErrMalformed, off, "want an array of %d items, have %d", want, h.Arg)
		return nil
	}
	m := s.get(c.typ)
	m.decodeFields(c)
	return m
}

// The field kinds (see codec), reading.

func (c *decoder) req(p *uint64) {
	*p = c.readUint("req", math.MaxUint64)
	c.msgReq = *p
}

func (c *decoder) uint(name string, p *uint64) { *p = c.readUint(name, math.MaxUint64) }

func (c *decoder) uint32(name string, p *uint32) { *p = uint32(c.readUint(name, math.MaxUint32)) }

func (c *decoder) code(name string, p *Code) { *p = Code(c.readUint(name, math.MaxUint16)) }

func (c *decoder) count(name string, p *int) { *p = int(c.readUint(name, maxCount)) }

func (c *decoder) limit(name string, p *int) { *p = int(c.readUint(name, maxLimit)) }

func (c *decoder) millis(name string, p *time.Duration) {
	*p = time.Duration(c.readUint(name, maxMillis)) * time.Millisecond
}

func (c *decoder) micros(name string, p *time.Duration) {
	*p = time.Duration(c.readUint(name, maxElapsedMicros)) * time.Microsecond
}

func (c *decoder) time(name string, p *time.Time) {
	if ms := c.readUint(name, math.MaxInt64); ms != 0 {
		*p = time.UnixMilli(int64(ms)).UTC()
	}
}

func (c *decoder) bool(name string, p *bool) { *p = c.readBool(name) }

func (c *decoder) status(name string, p *workunit.Status) {
	*p = workunit.Status(c.readUint(name, uint64(workunit.StatusError)))
}

func (c *decoder) bytes(name string, p *[]byte, k sizeLimit) {
	if h, off, ok := c.readHead(name); ok {
		*p = c.readBytesAfter(name, h, off, c.lim.size(k))
	}
}

func (c *decoder) bytesOrNull(name string, p *[]byte, null *bool, k sizeLimit) {
	h, off, ok := c.readHead(name)
	if !ok {
		return
	}
	if isNull(h) {
		*null = true
		return
	}
	*p = c.readBytesAfter(name, h, off, c.lim.size(k))
}

func (c *decoder) text(name string, p *string) { *p = string(c.readText(name)) }

func (c *decoder) shared(name string, p *string) {
	b := c.readText(name)
	if len(b) == 0 || c.strs == nil {
		*p = string(b)
		return
	}
	if s, ok := c.strs[string(b)]; ok {
		*p = s
		return
	}
	if len(c.strs) >= maxInterned {
		clear(c.strs)
	}
	s := string(b)
	c.strs[s] = s
	*p = s
}

func (c *decoder) version(p *uint32) bool {
	c.uint32("version", p)
	if c.err != nil {
		return false
	}
	if *p != ProtocolVersion {
		for i := uint64(2); i < c.items; i++ {
			if err := c.r.Skip(skipDepth); err != nil {
				c.syntax("", err)
				return false
			}
		}
		c.stop = true
		return false
	}
	if want := TypeHello.items(); c.items != want {
		c.fail("", ErrMalformed, c.off, "want an array of %d items, have %d", want, c.items)
		return false
	}
	return true
}

func (c *decoder) role(name string, p *Role, valid bool) {
	off := c.r.Offset()
	switch role := c.readText(name); string(role) {
	case string(RoleMaster):
		*p = RoleMaster
	case string(RoleWorker):
		*p = RoleWorker
	default:
		c.fail(name, ErrMalformed, off, "role %q, want %q or %q", role, RoleMaster, RoleWorker)
	}
}

func (c *decoder) key(name string, p *workunit.Key) { c.hash32(name, (*[32]byte)(p)) }

func (c *decoder) hash(name string, p *blob.Hash) { c.hash32(name, (*[32]byte)(p)) }

// hash32 reads a byte string of exactly 32 bytes into p.
func (c *decoder) hash32(name string, p *[32]byte) {
	h, off, ok := c.readHead(name)
	if !ok {
		return
	}
	if h.Major == cbor.MajorBytes && h.Arg != 32 {
		c.fail(name, ErrMalformed, off, "%d bytes, want 32", h.Arg)
		return
	}
	if b := c.readBytesAfter(name, h, off, -1); b != nil {
		copy(p[:], b)
	}
}

func (c *decoder) optionalKey(name string, p *workunit.Key) {
	h, off, ok := c.readHead(name)
	if !ok {
		return
	}
	if h.Major == cbor.MajorBytes && h.Arg != 0 && h.Arg != 32 {
		c.fail(name, ErrMalformed, off, "%d bytes, want 0 or 32", h.Arg)
		return
	}
	if b := c.readBytesAfter(name, h, off, -1); b != nil {
		copy(p[:], b)
	}
}

func (c *decoder) console(name string, p *workunit.Console) {
	if c.err != nil {
		return
	}
	con, err := workunit.ReadConsole(&c.r)
	if err != nil {
		c.syntax(name, err)
		return
	}
	*p = con
}

func (c *decoder) limits(name string, l *Limits) {
	if c.readTuple(name, limitsItems) {
		l.decodeFields(c)
	}
}

func (c *decoder) workError(name string, p **workunit.Error, required bool) {
	h, off, ok := c.readHead(name)
	if !ok {
		return
	}
	if isNull(h) {
		if required {
			c.fail(name, ErrMalformed, off, "want an error, have null")
		}
		return
	}
	if h.Major != cbor.MajorArray || h.Arg != errorItems {
		c.fail(name, ErrMalformed, off, "want null or an error array of %d items, have %s", errorItems, describe(h))
		return
	}
	e := &workunit.Error{}
	decodeErrorFields(c, e)
	if c.err == nil {
		*p = e
	}
}

func (c *decoder) errorKind(name string, p *workunit.ErrorKind) {
	off := c.r.Offset()
	kind := c.readUint(name, math.MaxUint8)
	if kind == 0 && c.err == nil {
		c.fail(name, ErrMalformed, off, "error kind 0")
	}
	*p = workunit.ErrorKind(kind)
}

// Minimum encoded sizes of list items, for CheckCount.
const (
	minHashItem  = 2 + 32 // a 32-byte byte string
	minGPUItem   = 3      // [name, memory]
	minLeaseItem = 2 + 34 // [key, token]
	minLineItem  = 4      // [level, text, time]
	minTextItem  = 1      // a text string
	minAttempt   = 4      // [worker, name, message]
)

func (c *decoder) keys(name string, p *[]workunit.Key) { decodeHashes(c, name, p) }

func (c *decoder) hashes(name string, p *[]blob.Hash) { decodeHashes(c, name, p) }

func decodeHashes[T ~[32]byte](c *decoder, name string, p *[]T) {
	if !decodeList(c, name, p, minHashItem) {
		return
	}
	for i := range *p {
		c.hash32(name, (*[32]byte)((*p)[i][:]))
	}
}

func (c *decoder) gpus(name string, p *[]GPU) {
	if !decodeList(c, name, p, minGPUItem) {
		return
	}
	for i := range *p {
		if !c.readTuple(name, gpuItems) {
			return
		}
		(*p)[i].decodeFields(c)
	}
}

func (c *decoder) lines(name string, p *[]Line) {
	if !decodeList(c, name, p, minLineItem) {
		return
	}
	for i := range *p {
		if !c.readTuple(name, lineItems) {
			return
		}
		(*p)[i].decodeFields(c)
	}
}

func (c *decoder) level(name string, p *workunit.Level) {
	b := c.readText(name)
	if c.err != nil {
		return
	}
	l, ok := levelOf(b)
	if !ok {
		c.fail(name, ErrMalformed, c.r.Offset(), "level %q (want log, info, debug, warn or error)", b)
		return
	}
	*p = l
}

func (c *decoder) leases(name string, p *[]Lease) {
	if !decodeList(c, name, p, minLeaseItem) {
		return
	}
	for i := range *p {
		if !c.readTuple(name, leaseItems) {
			return
		}
		(*p)[i].decodeFields(c)
	}
}

// decodeList reads the head of a list and makes *p for its items, each at
// least minBytes long. It reports whether there are items to read.
func decodeList[T any](c *decoder, name string, p *[]T, minBytes int) bool {
	n := c.readArray(name, minBytes)
	if n == 0 || c.err != nil {
		return false
	}
	*p = make([]T, n)
	return true
}

func (c *decoder) texts(name string, p *[]string) {
	off := c.r.Offset()
	if !decodeList(c, name, p, minTextItem) {
		return
	}
	if len(*p) > workunit.MaxRetryOn {
		c.fail(name, ErrMalformed, off, "%d names, at most %d", len(*p), workunit.MaxRetryOn)
		return
	}
	for i := range *p {
		off := c.r.Offset()
		c.text(name, &(*p)[i])
		if len((*p)[i]) > workunit.MaxRetryName && c.err == nil {
			c.fail(name, ErrMalformed, off, "a name of %d bytes, at most %d", len((*p)[i]), workunit.MaxRetryName)
			return
		}
	}
}

func (c *decoder) attempts(name string, p *[]workunit.Attempt) {
	if !decodeList(c, name, p, minAttempt) {
		return
	}
	for i := range *p {
		if !c.readTuple(name, attemptItems) {
			return
		}
		decodeAttemptFields(c, &(*p)[i])
	}
}
