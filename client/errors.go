package client

import (
	"errors"
	"fmt"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Errors the client returns, wrapped with details; test with errors.Is.
var (
	// ErrClosed: the Client was closed (Close), so the call cannot finish.
	ErrClosed = errors.New("client: closed")
	// ErrNotFinished: Outcome.Value was asked of a workunit that is not
	// finished (waiting, running or unknown).
	ErrNotFinished = errors.New("client: workunit not finished")
	// ErrMemoryFull: the tracker refused a submission because it holds as
	// much for workunits as its memory bound (riotd --max-memory) allows.
	// The error is also a *wire.Error of code wire.CodeMemoryFull, whose
	// message says how much the tracker holds and what to do. Nothing of
	// the refused workunit was kept, by the tracker or the client; work
	// accepted before it is served. Submit it again later.
	ErrMemoryFull = wire.ErrMemoryFull
	// ErrUnknownBlob: the tracker refused a submission whose spec names a
	// blob it does not hold (riotd --memory frees blobs nothing names,
	// and loses them when it restarts), and the client could not upload
	// it again (it was not given the bytes: SubmitBlobs). The error is
	// also a *wire.Error of code wire.CodeUnknownBlob that names the
	// blob. Upload the blobs again (EnsureBlobs) and submit again.
	ErrUnknownBlob = wire.ErrUnknownBlob
)

// VersionError reports that the tracker speaks another protocol version:
// it refused the Hello with wire.CodeVersion, or its Welcome carried
// another version. It names both versions. errors.As(err, &*wire.Refused)
// and wire.IsCode(err, wire.CodeVersion) also hold when the tracker sent
// a Refused.
type VersionError struct {
	// Client is this client's protocol version (wire.ProtocolVersion).
	Client uint32
	// Tracker is the tracker's protocol version.
	Tracker uint32
	// Refused is the tracker's answer, when it refused the Hello.
	Refused *wire.Refused
}

// Error returns e.g. "client: protocol version mismatch: this client
// speaks version 2, the tracker version 3".
func (e *VersionError) Error() string {
	s := fmt.Sprintf("client: protocol version mismatch: this client speaks version %d, the tracker version %d",
		e.Client, e.Tracker)
	if e.Refused != nil && e.Refused.Message != "" {
		s += " (tracker: " + e.Refused.Message + ")"
	}
	return s
}

// Unwrap returns the tracker's Refused, or nil.
func (e *VersionError) Unwrap() error {
	if e.Refused == nil {
		return nil
	}
	return e.Refused
}

// RefusedError reports that the tracker refused the connection (a Refused
// answering the Hello, or a close with code 4000 + code): bad credentials,
// tracker full, shutting down, ... A version mismatch is a *VersionError
// instead. errors.As(err, &*wire.Refused) and wire.IsCode work on it.
type RefusedError struct {
	// Addr is the tracker's URL.
	Addr string
	// Refused is the tracker's answer.
	Refused *wire.Refused
}

// Error returns e.g. "client: ws://alfred:2355/riot refused the connection:
// bad-credentials: unknown token".
func (e *RefusedError) Error() string {
	return "client: " + e.Addr + " refused the connection: " + e.Refused.Code.String() + ": " + e.Refused.Message
}

// Unwrap returns the tracker's Refused.
func (e *RefusedError) Unwrap() error { return e.Refused }

// refusedErr returns the error for a Refused from the tracker at addr.
func refusedErr(addr string, r *wire.Refused) error {
	cp := *r
	if r.Code == wire.CodeVersion {
		return &VersionError{Client: wire.ProtocolVersion, Tracker: r.Version, Refused: &cp}
	}
	return &RefusedError{Addr: addr, Refused: &cp}
}

// retryable reports whether a refusal may go away by itself, so that a
// reconnecting client keeps trying: the tracker is full or shutting down,
// or it throttles the client's address (strangers behind the same address
// failed too often).
func retryable(err error) bool {
	var ve *VersionError
	if errors.As(err, &ve) {
		return false
	}
	var re *RefusedError
	if !errors.As(err, &re) {
		return true // a network error
	}
	switch re.Refused.Code {
	case wire.CodeFull, wire.CodeShutdown, wire.CodeInternal, wire.CodeStore, wire.CodeThrottled:
		return true
	}
	return false
}

// copyErr copies a tracker's Error answering a request, so that it
// outlives the Decoder's next frame.
func copyErr(e *wire.Error) *wire.Error {
	cp := *e
	return &cp
}

// unknownKeyErr is the error of a watch or wait on a key the tracker does
// not know.
func unknownKeyErr(k workunit.Key) error {
	return fmt.Errorf("client: wait for workunit %s: %w", k.Short(), &wire.Error{
		Code: wire.CodeUnknownKey, Message: "the tracker does not know workunit " + k.String()})
}
