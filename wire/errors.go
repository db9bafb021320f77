package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/riot-go/riot/workunit"
)

// Errors that Decode and the Encoder report, wrapped with details; test
// with errors.Is.
var (
	// ErrMalformed: a frame or message is not what the protocol says: not
	// CBOR, truncated, bytes after the end, a wrong item count, a field of
	// the wrong type or out of range.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrUnknownType: a message's type number is not one of this version's.
	ErrUnknownType = errors.New("wire: unknown message type")
	// ErrLimit: a frame, a message count or a field passed a Limit.
	ErrLimit = errors.New("wire: limit passed")
	// ErrFrameFull: Encoder.Add could not add the message because the frame
	// would pass MaxFrameBytes or MaxMessages. Send the frame, Reset, and
	// add the message again.
	ErrFrameFull = errors.New("wire: frame full")
)

// DecodeError reports why Decode rejected a frame: where (the message's
// index in the frame, its type, the field, the byte offset) and what.
// errors.Is(err, ErrMalformed), ErrUnknownType or ErrLimit tells the kind.
type DecodeError struct {
	// Index is the index of the message in the frame; -1 for the frame as
	// a whole.
	Index int
	// Type is the message's type, when it was read (0 before).
	Type Type
	// Field names the field, as docs/protocol.md does; "" for the message
	// as a whole.
	Field string
	// Offset is the byte offset in the frame where the problem was found.
	Offset int
	// Req is the message's request id when it has one and it was read
	// before the problem, else 0: a tracker may answer it with an Error
	// before it closes the connection.
	Req uint64
	// Err is ErrMalformed, ErrUnknownType or ErrLimit.
	Err error
	// Detail says what was wrong, e.g. "want a byte string, have a text
	// string".
	Detail string
}

// Error returns e.g. "wire: message 2 (assign), field spec, byte 57: want
// a byte string, have a text string".
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("wire: ")
	if e.Index < 0 {
		b.WriteString("frame")
	} else {
		b.WriteString("message ")
		b.WriteString(strconv.Itoa(e.Index))
		if e.Type != 0 {
			b.WriteString(" (")
			b.WriteString(e.Type.String())
			b.WriteString(")")
		}
	}
	if e.Field != "" {
		b.WriteString(", field ")
		b.WriteString(e.Field)
	}
	b.WriteString(", byte ")
	b.WriteString(strconv.Itoa(e.Offset))
	b.WriteString(": ")
	b.WriteString(e.Detail)
	return b.String()
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError reports a message that cannot be encoded: a nil message, a
// negative count, a field out of range or over the Encoder's Limits.
type EncodeError struct {
	Type  Type
	Field string
	// Err is ErrMalformed for values the protocol cannot carry, ErrLimit
	// for values over the Encoder's Limits.
	Err    error
	Detail string
}

// Error returns e.g. "wire: cannot encode done, field result: 40 bytes,
// limit 32".
func (e *EncodeError) Error() string {
	s := "wire: cannot encode " + e.Type.String()
	if e.Field != "" {
		s += ", field " + e.Field
	}
	return s + ": " + e.Detail
}

// Unwrap returns Err.
func (e *EncodeError) Unwrap() error { return e.Err }

// Error returns "wire: <code>: <message>".
func (e *Error) Error() string {
	return "wire: " + e.Code.String() + ": " + e.Message
}

// ErrMemoryFull matches (errors.Is) an *Error or *Refused of code
// CodeMemoryFull: the tracker refused a new workunit because it holds as
// much for workunits as its memory bound allows. The *Error's Message
// says how much it holds and what to do. Only it and ErrUnknownBlob are
// codes with a sentinel; wire.IsCode tests any code.
var ErrMemoryFull = errors.New("wire: tracker memory full")

// ErrUnknownBlob matches (errors.Is) an *Error of code CodeUnknownBlob:
// the tracker refused a submission whose spec names a blob it does not
// hold (freed, or lost with a restart of riotd --memory); uploading the
// blob again and submitting again succeeds.
var ErrUnknownBlob = errors.New("wire: blob unknown to the tracker")

// Is reports whether target is the sentinel of e's code: ErrMemoryFull
// for CodeMemoryFull, ErrUnknownBlob for CodeUnknownBlob.
func (e *Error) Is(target error) bool { return isCode(target, e.Code) }

// Is reports whether target is the sentinel of r's code: ErrMemoryFull
// for CodeMemoryFull.
func (r *Refused) Is(target error) bool { return isCode(target, r.Code) }

// isCode reports whether target is the sentinel of code c.
func isCode(target error, c Code) bool {
	return target == ErrMemoryFull && c == CodeMemoryFull || target == ErrUnknownBlob && c == CodeUnknownBlob
}

// Error returns "wire: refused: <code>: <message>".
func (e *Refused) Error() string {
	return "wire: refused: " + e.Code.String() + ": " + e.Message
}

// IsCode reports whether err holds (errors.As) an *Error or a *Refused
// whose Code is one of codes, so that a client can branch on why the
// tracker said no:
//
//	if wire.IsCode(err, wire.CodeStore, wire.CodeShutdown) { retry later }
func IsCode(err error, codes ...Code) bool {
	c, ok := codeIn(err)
	if !ok {
		return false
	}
	for _, want := range codes {
		if c == want {
			return true
		}
	}
	return false
}

func codeIn(err error) (Code, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	var r *Refused
	if errors.As(err, &r) {
		return r.Code, true
	}
	return 0, false
}

// CodeOf returns the code a tracker should send for err: the code of an
// *Error or *Refused it holds; CodeLimit for ErrLimit and ErrFrameFull;
// CodeProtocol for ErrMalformed and ErrUnknownType; CodeInternal for
// anything else (and for nil).
func CodeOf(err error) Code {
	if c, ok := codeIn(err); ok {
		return c
	}
	switch {
	case errors.Is(err, ErrLimit), errors.Is(err, ErrFrameFull):
		return CodeLimit
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrUnknownType):
		return CodeProtocol
	}
	return CodeInternal
}

// VersionMismatch returns the Refused a tracker of ProtocolVersion sends to
// a Hello of version client: CodeVersion, with a message that names both.
func VersionMismatch(client uint32) *Refused {
	return &Refused{
		Code:    CodeVersion,
		Message: fmt.Sprintf("protocol version %d is not this tracker's version %d", client, ProtocolVersion),
		Version: ProtocolVersion,
	}
}

// WorkError returns err as a *workunit.Error: the one err holds
// (errors.As), or else a new one of kind workunit.Internal whose message is
// err's. It returns nil for nil. A worker uses it to turn whatever its
// evaluation returned into the Error of a Failed.
func WorkError(err error) *workunit.Error {
	if err == nil {
		return nil
	}
	var we *workunit.Error
	if errors.As(err, &we) {
		return we
	}
	return &workunit.Error{Kind: workunit.Internal, Name: "Error", Message: err.Error()}
}
