package tracker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/wire"
)

// What a connection may make the tracker hold before it has authenticated
// (before its Hello is accepted): one frame of at most maxHelloBytes, and
// at most Options.MaxHandshakes such connections at once. Both bound what
// a peer without a token can make riotd allocate.
const (
	// helloTextBytes is the length of a Hello's name, session and agent
	// that maxHelloBytes makes room for: a host name is at most 255 bytes,
	// a session 32 hex digits, an agent a program and a version.
	helloTextBytes = 256
	// helloGPUNameBytes is the length of a GPU's name that maxHelloBytes
	// makes room for: NVML's bound on a device name (96 bytes).
	helloGPUNameBytes = 96
	// maxHelloBytes bounds the frame of a Hello: room for a token of
	// maxTokenBytes, a name, session and agent of helloTextBytes each, and
	// table.MaxGPUs GPUs each with a name of helloGPUNameBytes and its
	// memory, every field with its CBOR head (9 bytes at most for a
	// number, 3 for a text of up to 64 KiB), with 64 bytes for the frame's
	// and the message's heads, the type, version, role, slots and
	// prefetch: 32,483 bytes.
	maxHelloBytes = 64 +
		3 + maxTokenBytes + 3*(3+helloTextBytes) +
		3 + table.MaxGPUs*(1+2+helloGPUNameBytes+9) // each GPU: a tuple head, its name, its memory
	// helloFrameBytes is the limit on a connection's first frame that
	// the reader enforces, maxHelloBytes rounded up to 32 KiB: a bigger
	// first frame closes the connection with wire.CloseTooBig at its
	// 32,769th byte, before any more of it is read.
	helloFrameBytes = 32 << 10

	// writeBufferBytes is the size of the write buffers that the
	// websockets share (Server.writeBufs).
	writeBufferBytes = 16 << 10

	// DefaultMaxHandshakes is Options.MaxHandshakes when zero, and
	// riotd's --max-handshakes.
	DefaultMaxHandshakes = 256
)

// Compile-time check: the frame limit has room for the largest Hello.
var _ [helloFrameBytes - maxHelloBytes]struct{}

// firstFrameBytes is the limit on a connection's first frame under the
// options' limits.
func (s *Server) firstFrameBytes() int { return min(helloFrameBytes, s.opts.Limits.MaxFrameBytes) }

// enterHandshake takes one of the Options.MaxHandshakes places of
// connections that have not had their hello accepted, for c. It reports
// false, and refuses the websocket with wire.CodeFull, when they are all
// taken.
func (s *Server) enterHandshake(c *conn) bool {
	select {
	case s.handshakes <- struct{}{}:
		c.inHandshake = true
		return true
	default:
	}
	s.counters.refusedFull.Add(1)
	s.connLog.logAt(time.Now(), slog.LevelWarn, "refused", "remote", c.remote, "code", wire.CodeFull.String(),
		"why", "too many connections before their hello (--max-handshakes)")
	refuseEarly(c.ws, wire.CodeFull, fmt.Sprintf(
		"tracker: full (%d connections before their hello): try again in a moment", cap(s.handshakes)))
	return false
}

// leaveHandshake gives c's place back, once: when its hello is accepted
// or when it ends. Called by c's reader only.
func (c *conn) leaveHandshake() {
	if c.inHandshake {
		c.inHandshake = false
		<-c.s.handshakes
	}
}
