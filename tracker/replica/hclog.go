package replica

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogger adapts a slog.Logger to hclog.Logger, the logger hashicorp/raft
// takes, so that raft's lines go where riotd's go, in riotd's format.
// Raft's Info lines (elections, configurations) are worth riotd's info;
// its Trace lines go to slog's debug.
type hclogger struct {
	log  *slog.Logger
	name string
	args []any
}

func newHCLogger(l *slog.Logger, name string) hclog.Logger {
	return &hclogger{log: l.With("component", name), name: name}
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	h.log.Log(context.Background(), slogLevel(level), msg, args...)
}
func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled(l hclog.Level) bool {
	return h.log.Enabled(context.Background(), slogLevel(l))
}
func (h *hclogger) IsTrace() bool         { return h.enabled(hclog.Trace) }
func (h *hclogger) IsDebug() bool         { return h.enabled(hclog.Debug) }
func (h *hclogger) IsInfo() bool          { return h.enabled(hclog.Info) }
func (h *hclogger) IsWarn() bool          { return h.enabled(hclog.Warn) }
func (h *hclogger) IsError() bool         { return h.enabled(hclog.Error) }
func (h *hclogger) ImpliedArgs() []any    { return h.args }
func (h *hclogger) Name() string          { return h.name }
func (h *hclogger) SetLevel(hclog.Level)  {} // the slog handler's level rules
func (h *hclogger) GetLevel() hclog.Level { return hclog.Trace }

func (h *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{log: h.log.With(args...), name: h.name, args: append(h.args[:len(h.args):len(h.args)], args...)}
}

func (h *hclogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	return &hclogger{log: h.log.With("component", name), name: name, args: h.args}
}

func (h *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hclogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return lineWriter{h}
}

// lineWriter logs each write as a line at info.
type lineWriter struct{ h *hclogger }

func (w lineWriter) Write(p []byte) (int, error) {
	w.h.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
