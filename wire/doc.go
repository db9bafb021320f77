// Package wire is riot's protocol: the messages that masters, workers and
// the tracker exchange, and their encoding. It does no networking.
//
// Riot speaks over websockets (path Path, subprotocol Subprotocol, port
// DefaultPort), in binary messages. One websocket message is one frame, and
// a frame is a CBOR array of messages: a sender puts every message that is
// ready into one frame. Each message is a CBOR array whose first item is
// its Type and whose other items are its fields, in a fixed order.
// docs/protocol.md describes the transport, every message's layout and the
// flows between them, for people who write a client in another language.
//
// # Messages
//
// Each message is a struct; a *Hello, *Assign, ... is a Msg. Requests that
// expect an answer carry a Req chosen by the sender (non-zero, unique among
// its outstanding requests) that the answer echoes.
//
//	handshake      Hello → Welcome | Refused
//	masters        Submit → Accepted; Watch → Finished...; Unwatch;
//	               Info → InfoReply; BlobHave → BlobNeed; BlobPut → BlobStored;
//	               Cancel → Canceled
//	workers        Credit → Assign...; Done; Failed; Return; BlobGet → BlobData;
//	               Revoke (from the tracker, for a lease it holds)
//	either         Error answers a request the tracker refuses
//
// Workunit specs and results are opaque bytes here: a spec is what
// workunit.Spec.MarshalBinary writes, a result a value document (package
// value). Workunit errors travel as *workunit.Error.
//
// # Usage
//
// Encode and Decode convert between a batch of messages and a frame:
//
//	frame, err := wire.Encode(&wire.Credit{N: 10})
//	msgs, err := wire.Decode(frame)
//
// A connection's hot path uses an Encoder and a Decoder, which reuse their
// memory from frame to frame and allocate nothing per message once warm:
//
//	var enc wire.Encoder // one per writer goroutine
//	for each message m that is ready {
//		if err := enc.Add(m); errors.Is(err, wire.ErrFrameFull) {
//			send(enc.Frame()); enc.Reset(); err = enc.Add(m)
//		}
//	}
//	send(enc.Frame()); enc.Reset()
//
//	var dec wire.Decoder // one per reader goroutine; Keep for frames of many thousands
//	msgs, err := dec.Decode(frame)
//	for _, m := range msgs {
//		switch m := m.(type) {
//		case *wire.Assign: ...
//		}
//	}
//
// Decode never panics. It enforces Limits (frame size, messages per frame,
// spec, result and blob sizes) and rejects unknown types, wrong item counts,
// fields of the wrong type or out of range, and bytes after the frame, with
// a *DecodeError that names the message, its type and the field.
//
// # The caller's duties
//
//  1. Decoded byte slices (Spec, Result, Data, an error's Value) alias the
//     frame: do not reuse or modify a frame's buffer while its messages are
//     in use. Messages from a Decoder are valid until its next Decode.
//     Frame's bytes are valid until the Encoder's next Add or Reset.
//  2. Send the Hello alone in the client's first frame, and Refused alone
//     in the tracker's. Check Hello.Version: Decode gives a Hello of another
//     version with only its Version set (and ignores the rest of its frame),
//     so that the tracker can answer VersionMismatch.
//  3. A receiver checks that each message came from the right side
//     (Type.FromClient) and, for the tracker, that Hello came first; a
//     frame that fails to decode closes the connection with
//     CloseProtocolError (CloseTooBig for ErrLimit on the frame), after an
//     Error{Req: DecodeError.Req, Code: CodeOf(err)} when the tracker can.
//  4. A client encodes with the tracker's Limits (Welcome.Limits), so that
//     a field over them is caught before sending (ErrLimit): a worker sends
//     a Failed with workunit.ResultLimit instead of a Done too large.
//  5. The tracker checks what wire cannot: that a BlobPut's data hashes to
//     its Hash, that a spec decodes, that tokens are current.
//
// Encoders and Decoders are not safe for concurrent use; the functions and
// message types are plain values, safe to share once built.
package wire
