package wire

import (
	"fmt"
	"time"
)

// ProtocolVersion is the version of the protocol this package speaks. A
// client sends it in Hello; a tracker refuses (CodeVersion) a Hello with any
// other version, naming both. Bump it on any change to a message's layout,
// and for a new message type. Version 2 added cancel, canceled and revoke;
// version 3 added blob-write, blob-written, blob-read and blob-part (blobs
// in pieces) and made max-blob-bytes the bound of a whole blob; version 4
// added Hello's job and memory-limit and the stats message; version 5
// added print and printed (console lines while a workunit runs); version
// 6 added Submit's retries and retry-on and a workunit error's attempts;
// version 7 added child and wait (workunits that submit workunits).
const ProtocolVersion = 7

// Transport constants: where and how a client connects. wire does no
// networking; these are the values the tracker and clients agree on.
const (
	// DefaultPort is the tracker's TCP port (Riot's).
	DefaultPort = 2355
	// Path is the URL path of the tracker's websocket endpoint:
	// ws://HOST:2355/riot.
	Path = "/riot"
	// Subprotocol is the websocket subprotocol (Sec-WebSocket-Protocol)
	// that clients ask for and the tracker selects. It carries no version:
	// versions are checked in Hello so that a mismatch gets a clear answer.
	Subprotocol = "riot"
	// DefaultPingInterval is how often a tracker sends a websocket ping
	// unless configured otherwise; Welcome says the interval in use.
	DefaultPingInterval = 5 * time.Second
)

// ReadTimeout returns how long either side waits to read something (a
// frame, a ping or a pong) before it drops the connection, for a tracker
// that pings every pingInterval: two intervals.
func ReadTimeout(pingInterval time.Duration) time.Duration { return 2 * pingInterval }

// Websocket close codes that riot uses (RFC 6455 section 7.4). A tracker
// that sends Refused closes with CloseRefused+Code.
const (
	// CloseNormal: the peer is done (a master that finished, a client's
	// Close).
	CloseNormal = 1000
	// CloseGoingAway: the tracker shuts down, or a worker leaves gracefully
	// (after Return).
	CloseGoingAway = 1001
	// CloseProtocolError: a frame did not decode, or a message came from
	// the wrong side or before Hello.
	CloseProtocolError = 1002
	// CloseUnsupportedData: a text websocket message (riot uses binary
	// messages only).
	CloseUnsupportedData = 1003
	// CloseTooBig: a frame passed MaxFrameBytes.
	CloseTooBig = 1009
	// CloseInternal: the tracker failed.
	CloseInternal = 1011
	// CloseRefused is added to a Refused's Code: 4001 version mismatch,
	// 4002 bad credentials, 4003 tracker full, ...
	CloseRefused = 4000
)

// Type is a message's type number, the first item of its CBOR array.
type Type uint8

// The message types. The numbers are the protocol; never reuse one.
// Hello, Welcome and Refused keep their numbers in every version.
const (
	TypeHello       Type = 1
	TypeWelcome     Type = 2
	TypeRefused     Type = 3
	TypeError       Type = 4
	TypeSubmit      Type = 5
	TypeAccepted    Type = 6
	TypeWatch       Type = 7
	TypeUnwatch     Type = 8
	TypeFinished    Type = 9
	TypeInfo        Type = 10
	TypeInfoReply   Type = 11
	TypeBlobHave    Type = 12
	TypeBlobNeed    Type = 13
	TypeBlobPut     Type = 14
	TypeBlobStored  Type = 15
	TypeCredit      Type = 16
	TypeAssign      Type = 17
	TypeDone        Type = 18
	TypeFailed      Type = 19
	TypeReturn      Type = 20
	TypeBlobGet     Type = 21
	TypeBlobData    Type = 22
	TypeCancel      Type = 23
	TypeCanceled    Type = 24
	TypeRevoke      Type = 25
	TypeBlobWrite   Type = 26
	TypeBlobWritten Type = 27
	TypeBlobRead    Type = 28
	TypeBlobPart    Type = 29
	TypeStats       Type = 30
	TypePrint       Type = 31
	TypePrinted     Type = 32
	TypeChild       Type = 33
	TypeWait        Type = 34

	maxType = TypeWait
)

// String returns the type's name as docs/protocol.md gives it, such as
// "assign" or "blob-put".
func (t Type) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeWelcome:
		return "welcome"
	case TypeRefused:
		return "refused"
	case TypeError:
		return "error"
	case TypeSubmit:
		return "submit"
	case TypeAccepted:
		return "accepted"
	case TypeWatch:
		return "watch"
	case TypeUnwatch:
		return "unwatch"
	case TypeFinished:
		return "finished"
	case TypeInfo:
		return "info"
	case TypeInfoReply:
		return "info-reply"
	case TypeBlobHave:
		return "blob-have"
	case TypeBlobNeed:
		return "blob-need"
	case TypeBlobPut:
		return "blob-put"
	case TypeBlobStored:
		return "blob-stored"
	case TypeCredit:
		return "credit"
	case TypeAssign:
		return "assign"
	case TypeDone:
		return "done"
	case TypeFailed:
		return "failed"
	case TypeReturn:
		return "return"
	case TypeBlobGet:
		return "blob-get"
	case TypeBlobData:
		return "blob-data"
	case TypeCancel:
		return "cancel"
	case TypeCanceled:
		return "canceled"
	case TypeRevoke:
		return "revoke"
	case TypeBlobWrite:
		return "blob-write"
	case TypeBlobWritten:
		return "blob-written"
	case TypeBlobRead:
		return "blob-read"
	case TypeBlobPart:
		return "blob-part"
	case TypeStats:
		return "stats"
	case TypePrint:
		return "print"
	case TypePrinted:
		return "printed"
	case TypeChild:
		return "child"
	case TypeWait:
		return "wait"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// FromClient reports whether messages of type t go from a client (master
// or worker) to the tracker. The others go from the tracker to clients. A
// receiver should treat a message from the wrong side as a protocol error.
func (t Type) FromClient() bool {
	switch t {
	case TypeHello, TypeSubmit, TypeWatch, TypeUnwatch, TypeInfo, TypeBlobHave,
		TypeBlobPut, TypeCredit, TypeDone, TypeFailed, TypeReturn, TypeBlobGet, TypeCancel,
		TypeBlobWrite, TypeBlobRead, TypeStats, TypePrint, TypeChild, TypeWait:
		return true
	}
	return false
}

// items returns the number of items of a message of type t, the type
// number included, as its field list gives them; 0 for an unknown type.
func (t Type) items() uint64 {
	if t > maxType {
		return 0
	}
	return msgItems[t]
}

// Role is what a client says it is in Hello. Any connection may use both
// halves of the protocol; the role names it in logs, picks defaults and,
// later, what its token allows.
type Role string

// The roles.
const (
	RoleMaster Role = "master"
	RoleWorker Role = "worker"
)

// Code says why the tracker refused a connection (Refused) or a request
// (Error). Codes travel as numbers; never reuse one.
type Code uint16

// The codes.
const (
	// CodeVersion: the client's ProtocolVersion is not the tracker's.
	CodeVersion Code = 1
	// CodeAuth: bad or missing credentials.
	CodeAuth Code = 2
	// CodeFull: the tracker takes no more connections.
	CodeFull Code = 3
	// CodeProtocol: a frame did not decode, a message came from the wrong
	// side, or before Hello. The connection is closed after it.
	CodeProtocol Code = 4
	// CodeInvalid: a well-formed request that makes no sense: a spec that
	// does not decode, a blob whose bytes do not match its hash, a GPU
	// count out of range.
	CodeInvalid Code = 5
	// CodeLimit: a limit passed (a size, a count, a quota).
	CodeLimit Code = 6
	// CodeUnknownKey: the request names a workunit the tracker does not
	// know.
	CodeUnknownKey Code = 7
	// CodeStore: the tracker could not make the request durable; nothing
	// was stored. Retrying later may succeed.
	CodeStore Code = 8
	// CodeShutdown: the tracker is shutting down.
	CodeShutdown Code = 9
	// CodeInternal: the tracker failed; a bug to report.
	CodeInternal Code = 10
	// CodeForbidden: the connection's credentials do not allow the
	// request (a worker token that submits, watches or asks for infos).
	// The request had no effect; the connection stays open.
	CodeForbidden Code = 11
	// CodeThrottled: in a Refused, the Hello's token is not accepted and
	// its address has failed too often of late; the answer was delayed.
	// A client retries it with backoff. A valid token is never throttled.
	// Clients that do not know the code treat it as final, as they treat
	// bad-credentials.
	CodeThrottled Code = 12
	// CodeMemoryFull: in an Error answering a submission (Submit or
	// Child), the tracker holds as much for workunits as its memory bound
	// (riotd --max-memory) allows, and refused the new workunit: nothing
	// was stored. Work already accepted is kept and served; a submission
	// may succeed once results are forgotten or the bound is raised. In an
	// Error answering a BlobPut or a BlobWrite's first piece, a tracker
	// that keeps its blobs in memory (riotd --memory) refused a blob that
	// would pass that bound, its workunits' bytes and its blobs' together.
	// Unlike CodeFull, which refuses a connection, the connection stays
	// open. Clients that do not know the code treat it as final.
	CodeMemoryFull Code = 13
	// CodeUnknownBlob: in an Error answering a submission (Submit or
	// Child), the spec names a blob the tracker does not hold (one it
	// freed once nothing named it, or lost with a restart of riotd
	// --memory): nothing was stored. The client forgets what it believed
	// stored; uploading the blob again and submitting again succeeds.
	// Clients that do not know the code treat it as final.
	CodeUnknownBlob Code = 14
)

// String returns the code's name, such as "version-mismatch".
func (c Code) String() string {
	switch c {
	case CodeVersion:
		return "version-mismatch"
	case CodeAuth:
		return "bad-credentials"
	case CodeFull:
		return "tracker-full"
	case CodeProtocol:
		return "protocol-error"
	case CodeInvalid:
		return "invalid-request"
	case CodeLimit:
		return "limit-passed"
	case CodeUnknownKey:
		return "unknown-key"
	case CodeStore:
		return "store-failed"
	case CodeShutdown:
		return "shutting-down"
	case CodeInternal:
		return "internal-error"
	case CodeForbidden:
		return "forbidden"
	case CodeThrottled:
		return "throttled"
	case CodeMemoryFull:
		return "memory-full"
	case CodeUnknownBlob:
		return "unknown-blob"
	}
	return fmt.Sprintf("Code(%d)", uint16(c))
}

// Default limits; see Limits.
const (
	DefaultMaxFrameBytes  = 64 << 20
	DefaultMaxMessages    = 1 << 16
	DefaultMaxSpecBytes   = 16 << 20
	DefaultMaxResultBytes = 32 << 20
	DefaultMaxBlobBytes   = 1 << 30
)

// MaxPieceBytes is the most data a client puts in one BlobWrite, and asks
// for in one BlobRead; a frame may bound a piece further (PieceBytes).
const MaxPieceBytes = 1 << 20

// Limits bound what a frame may hold. The tracker enforces its Limits on
// every frame it reads and tells clients what they are in Welcome; clients
// encode with those Limits so that they never send a frame the tracker
// rejects. A zero field takes its default (see WithDefaults).
//
// MaxFrameBytes should exceed each of MaxSpecBytes and MaxResultBytes by
// some room (64 KiB is plenty), so that one message that carries the
// largest allowed field fits in a frame. Blobs larger than a frame travel
// in pieces (BlobWrite, BlobRead) of PieceBytes.
type Limits struct {
	// MaxFrameBytes bounds a frame's length in bytes (a websocket read
	// limit of the same size is the transport's half of it).
	MaxFrameBytes int
	// MaxMessages bounds the number of messages in a frame.
	MaxMessages int
	// MaxSpecBytes bounds a workunit spec (Submit, Assign).
	MaxSpecBytes int
	// MaxResultBytes bounds a result (Done, Accepted, Finished, InfoReply)
	// and the thrown value of a workunit error (workunit.Error.Value).
	MaxResultBytes int
	// MaxBlobBytes bounds a whole blob: a value stored as a blob (a
	// captured variable, an argument, a result), or a module. A blob
	// larger than PieceBytes travels in pieces; the data of one BlobPut
	// or BlobData is bounded by the frame too.
	MaxBlobBytes int
}

// WithDefaults returns l with every field that is zero or negative set to
// its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultMaxMessages
	}
	if l.MaxSpecBytes <= 0 {
		l.MaxSpecBytes = DefaultMaxSpecBytes
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = DefaultMaxResultBytes
	}
	if l.MaxBlobBytes <= 0 {
		l.MaxBlobBytes = DefaultMaxBlobBytes
	}
	return l
}

// PieceBytes returns the size of the pieces a blob travels in under l: at
// most MaxPieceBytes, and small enough that a BlobWrite or BlobPart of one
// piece fits in a frame (l.MaxFrameBytes less 1/4 of it, at most 64 KiB,
// for the rest of the message and of the frame).
func (l Limits) PieceBytes() int {
	l = l.WithDefaults()
	room := min(64<<10, l.MaxFrameBytes/4)
	return max(1, min(MaxPieceBytes, l.MaxFrameBytes-room))
}
