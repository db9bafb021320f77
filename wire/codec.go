package wire

import (
	"math"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/workunit"
)

// Each message lists its fields once, in wire order, with their names and
// kinds, in its fields method (msg.go); the pieces messages share are field
// lists too (below). A list is written against codec, the field kinds, and
// is the one place a message's layout, checks, Limits and error names are
// given.
//
// The lists run as two copies generated from them (fields_gen.go, written
// by internal/fieldgen and checked by TestFieldsGenerated): encodeFields
// for an *encoder, which checks
// each field as it writes it, and decodeFields for a *decoder, which reads
// it. The copies call the concrete field kinds of encode.go and decode.go,
// which the compiler inlines, so that a message costs what a hand-written
// encoder and decoder would: nothing escapes, nothing allocates. The lists
// themselves run at init, with an encoder, to count the items of each
// message and tuple.
//
//go:generate go test ./internal/fieldgen -run TestWrite -write

// codec is the field kinds a field list uses: each codes one item of the
// list it is in, and the name is the field's as docs/protocol.md gives it,
// which names the field in errors. *encoder and *decoder implement it.
type codec interface {
	// req codes a request id, which a DecodeError reports once read.
	req(p *uint64)
	uint(name string, p *uint64)
	// uint32 codes a version.
	uint32(name string, p *uint32)
	code(name string, p *Code)
	// count codes a count in [0, maxCount].
	count(name string, p *int)
	// limit codes one of Limits' fields, in [0, maxLimit]; an encoding's
	// error names the limits as a whole.
	limit(name string, p *int)
	// millis codes a duration in whole milliseconds, at most maxMillis.
	millis(name string, p *time.Duration)
	// micros codes a duration in whole microseconds, at most
	// maxElapsedMicros.
	micros(name string, p *time.Duration)
	// time codes a time in milliseconds since 1970, 0 for the zero time.
	time(name string, p *time.Time)
	bool(name string, p *bool)
	status(name string, p *workunit.Status)
	// bytes codes a byte string within the Limit k; decoded, it aliases
	// the frame, and empty gives nil.
	bytes(name string, p *[]byte, k sizeLimit)
	// bytesOrNull codes a byte string within the Limit k, or null when
	// *null is set (BlobData's data, null when missing).
	bytesOrNull(name string, p *[]byte, null *bool, k sizeLimit)
	// text codes a text string; decoded, it is a copy.
	text(name string, p *string)
	// shared codes a text string that repeats from frame to frame (a
	// realm, a worker's name): decoded, a Decoder shares one copy of it.
	shared(name string, p *string)
	// version codes a Hello's version and reports whether the rest of the
	// Hello follows. Decoded, a Hello of another version ends after it,
	// its other items skipped, and so does the frame (see Decode); a Hello
	// of this version must have all its items.
	version(p *uint32) bool
	// role codes a Hello's role, master or worker when valid is set (a
	// Hello of another version may carry any).
	role(name string, p *Role, valid bool)
	// key and hash code a byte string of exactly 32 bytes.
	key(name string, p *workunit.Key)
	hash(name string, p *blob.Hash)
	// optionalKey codes a key that may be absent: an empty byte string
	// for the zero key.
	optionalKey(name string, p *workunit.Key)
	// console codes a console as the bytes it travels in
	// (workunit.Console), checked with workunit.ReadConsole both ways. Nil
	// travels as an empty array, and decodes as nil; decoded, it aliases
	// the frame.
	console(name string, p *workunit.Console)
	// limits codes Limits as one item, [max-frame-bytes, ...].
	limits(name string, l *Limits)
	// workError codes null or a workunit error (errorFields); required:
	// never null (a Failed's).
	workError(name string, p **workunit.Error, required bool)
	// errorKind codes a workunit error's kind, never 0 (an encoding
	// checks it in workError, naming the error).
	errorKind(name string, p *workunit.ErrorKind)
	// keys, hashes, gpus and leases code lists, each item named name.
	keys(name string, p *[]workunit.Key)
	hashes(name string, p *[]blob.Hash)
	gpus(name string, p *[]GPU)
	leases(name string, p *[]Lease)
	// lines codes a list of console lines, [[level, text, time]...].
	lines(name string, p *[]Line)
	// level codes a console line's level: one of workunit's five.
	level(name string, p *workunit.Level)
	// texts codes a list of text strings (Submit's retry-on), at most
	// workunit.MaxRetryOn of at most workunit.MaxRetryName bytes each.
	texts(name string, p *[]string)
	// attempts codes a workunit error's attempts, [[worker, name,
	// message]...] (attemptFields).
	attempts(name string, p *[]workunit.Attempt)
}

var (
	_ codec = (*encoder)(nil)
	_ codec = (*decoder)(nil)
)

// Field lists of the pieces messages share.

// errorFields lists a workunit error's items: [kind, name, message, stack,
// value, worker, key, attempts], key empty when zero, attempts empty
// without retries.
func errorFields(c codec, e *workunit.Error) {
	c.errorKind("error.kind", &e.Kind)
	c.text("error.name", &e.Name)
	c.text("error.message", &e.Message)
	c.text("error.stack", &e.Stack)
	c.bytes("error.value", &e.Value, resultLimit)
	c.shared("error.worker", &e.Worker)
	c.optionalKey("error.key", &e.Key)
	c.attempts("error.attempts", &e.Attempts)
}

// attemptFields lists one failed attempt's items: [worker, name, message].
func attemptFields(c codec, a *workunit.Attempt) {
	c.shared("error.attempts.worker", &a.Worker)
	c.text("error.attempts.name", &a.Name)
	c.text("error.attempts.message", &a.Message)
}

// outcomeFields lists a workunit.Outcome's items, its key first; they are
// items of the message that carries it (Accepted, Finished, InfoReply).
func outcomeFields(c codec, o *workunit.Outcome) {
	c.key("key", &o.Key)
	c.status("status", &o.Status)
	c.shared("worker", &o.Worker)
	c.bytes("result", &o.Result, resultLimit)
	c.workError("error", &o.Err, false)
	c.console("console", &o.Console)
	c.time("last-change", &o.LastChange)
	c.micros("elapsed", &o.Elapsed)
}

func (l *Limits) fields(c codec) {
	c.limit("limits.max-frame-bytes", &l.MaxFrameBytes)
	c.limit("limits.max-messages", &l.MaxMessages)
	c.limit("limits.max-spec-bytes", &l.MaxSpecBytes)
	c.limit("limits.max-result-bytes", &l.MaxResultBytes)
	c.limit("limits.max-blob-bytes", &l.MaxBlobBytes)
}

func (g *GPU) fields(c codec) {
	c.text("gpus.name", &g.Name)
	c.uint("gpus.memory", &g.Memory)
}

func (l *Lease) fields(c codec) {
	c.key("key", &l.Key)
	c.uint("token", &l.Token)
}

// Item counts of the messages (the type included) and of the tuples inside
// them, counted from their field lists at init, and each message's head
// (its array head and type), written once.
var (
	msgItems     [maxType + 1]uint64
	msgHeads     [maxType + 1][]byte
	limitsItems  uint64
	errorItems   uint64
	gpuItems     uint64
	leaseItems   uint64
	lineItems    uint64
	attemptItems uint64
)

func init() {
	// The tuples first: the messages' lists write their heads.
	limitsItems = countItems((&Limits{}).fields)
	errorItems = countItems(func(c codec) { errorFields(c, &workunit.Error{}) })
	gpuItems = countItems((&GPU{}).fields)
	leaseItems = countItems((&Lease{}).fields)
	lineItems = countItems((&Line{}).fields)
	attemptItems = countItems(func(c codec) { attemptFields(c, &workunit.Attempt{}) })
	var s slabs
	for t := Type(1); t <= maxType; t++ {
		msgItems[t] = 1 + countItems(s.get(t).fields)
		var w cbor.Writer
		w.ArrayHeader(int(msgItems[t]))
		w.Head(cbor.MajorUint, uint64(t))
		msgHeads[t] = w.Bytes()
	}
}

// countItems returns the number of items the field list fields has: it
// encodes them, from zero values, and counts what it wrote.
func countItems(fields func(c codec)) uint64 {
	e := &encoder{lim: noLimits}
	fields(e)
	r := cbor.NewReader(e.w.Bytes())
	n := uint64(0)
	for ; r.Remaining() > 0; n++ {
		if err := r.Skip(skipDepth); err != nil {
			panic("wire: a field list wrote malformed CBOR: " + err.Error())
		}
	}
	return n
}

// levelOf returns the console level b names, sharing the constant's
// string, and whether it is one.
func levelOf(b []byte) (workunit.Level, bool) {
	switch string(b) {
	case "log":
		return workunit.LevelLog, true
	case "info":
		return workunit.LevelInfo, true
	case "warn":
		return workunit.LevelWarn, true
	case "error":
		return workunit.LevelError, true
	case "debug":
		return workunit.LevelDebug, true
	}
	return "", false
}

// Ranges of numeric fields.
const (
	maxCount         = math.MaxInt32
	maxMillis        = math.MaxUint32
	maxElapsedMicros = math.MaxInt64 / 1000
	maxLimit         = math.MaxInt64
)

// noLimits are the Limits of an encoding that applies none (Encode).
var noLimits = Limits{math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt}

// sizeLimit names the Limit that bounds a byte-string field.
type sizeLimit uint8

const (
	specLimit sizeLimit = iota
	resultLimit
	blobLimit
)

func (l *Limits) size(k sizeLimit) int {
	switch k {
	case specLimit:
		return l.MaxSpecBytes
	case resultLimit:
		return l.MaxResultBytes
	}
	return l.MaxBlobBytes
}
