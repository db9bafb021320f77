package tracker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logLines is a slog.Handler that keeps the records it gets (debug and
// up), for tests.
type logLines struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *logLines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

func (h *logLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logLines) WithGroup(string) slog.Handler      { return h }

// count returns how many records of msg came at level.
func (h *logLines) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}

// summaries returns the "more" counts of the summary lines of msg.
func (h *logLines) summaries(msg string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, r := range h.recs {
		if r.Message != msg+": more, not logged one by one (--log-level debug logs each)" {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "more" {
				out = append(out, a.Value.Int64())
			}
			return true
		})
	}
	return out
}

func TestLogLimiter(t *testing.T) {
	t.Parallel()
	h := &logLines{}
	l := newLogLimiter(slog.New(h), 10*time.Second, 3)
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		l.logAt(t0.Add(time.Duration(i)*time.Millisecond), slog.LevelInfo, "refused", "n", i)
	}
	l.logAt(t0, slog.LevelInfo, "connected")
	assert.Equal(t, 3, h.count(slog.LevelInfo, "refused"), "the burst, one by one")
	assert.Equal(t, 97, h.count(slog.LevelDebug, "refused"), "the rest at debug level")
	assert.Equal(t, 1, h.count(slog.LevelInfo, "connected"), "kinds are counted apart")
	l.flush(t0.Add(9 * time.Second))
	assert.Empty(t, h.summaries("refused"), "not before the interval ends")
	l.flush(t0.Add(10 * time.Second))
	assert.Equal(t, []int64{97}, h.summaries("refused"), "one summary line for the interval")
	assert.Empty(t, h.summaries("connected"), "none when nothing was held back")
	l.flush(t0.Add(20 * time.Second))
	assert.Equal(t, []int64{97}, h.summaries("refused"), "a quiet interval: no summary")
	// A new interval starts with a burst again; a line after the interval
	// ends it too.
	t1 := t0.Add(30 * time.Second)
	for i := range 5 {
		l.logAt(t1.Add(time.Duration(i)), slog.LevelInfo, "refused")
	}
	l.logAt(t1.Add(11*time.Second), slog.LevelInfo, "refused")
	assert.Equal(t, []int64{97, 2}, h.summaries("refused"))
	assert.Equal(t, 3+3+1, h.count(slog.LevelInfo, "refused"))
}

// TestServer_HelloFloodLogs: a flood of refused hellos, and of accepted
// ones that disconnect at once, logs a bounded number of info lines (one
// per accepted hello at most) and a summary line for the rest.
func TestServer_HelloFloodLogs(t *testing.T) {
	t.Parallel()
	h := &logLines{}
	srv := startServer(t, Options{Logger: slog.New(h)}, func(s *Server) { s.connLog.interval = 200 * time.Millisecond })
	hello := func(version uint32) wire.Msg {
		ws := rawDial(t, srv)
		defer ws.Close() // gone at once, not at the test's end
		frame, err := wire.Encode(&wire.Hello{Version: version, Role: wire.RoleMaster, Name: "flood"})
		require.NoError(t, err)
		require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, frame))
		_, in, err := ws.ReadMessage()
		require.NoError(t, err)
		msgs, err := wire.Decode(in)
		require.NoError(t, err)
		return msgs[0]
	}
	const n = 40
	start := time.Now()
	for range n {
		_, refused := hello(wire.ProtocolVersion + 1).(*wire.Refused)
		require.True(t, refused)
		_, welcome := hello(wire.ProtocolVersion).(*wire.Welcome)
		require.True(t, welcome)
	}
	took := time.Since(start)
	eventually(t, "every connection gone", func() bool {
		st, err := srv.Stats(context.Background())
		return err == nil && st.Connections == 0
	})
	// Each interval of 200 ms logs at most logBurst of each one by one.
	most := logBurst * (1 + int(took/(200*time.Millisecond)))
	refused, connected := h.count(slog.LevelInfo, "refused"), h.count(slog.LevelInfo, "connected")
	assert.LessOrEqual(t, refused, most)
	assert.LessOrEqual(t, connected, most)
	assert.Zero(t, h.count(slog.LevelInfo, "disconnected"), "one info line per accepted hello at most")
	assert.Equal(t, n, h.count(slog.LevelDebug, "disconnected"))
	// What was held back is summed up once its interval ends.
	eventually(t, "the summaries", func() bool {
		sum := func(xs []int64) (s int) {
			for _, x := range xs {
				s += int(x)
			}
			return s
		}
		return refused+sum(h.summaries("refused")) == n && connected+sum(h.summaries("connected")) == n
	})
}
