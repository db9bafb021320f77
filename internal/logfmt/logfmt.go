// Package logfmt makes the slog loggers of riotd and riot-worker: text or
// JSON, at a level. In JSON, durations are seconds (a number, such as
// 1.25), not Go's nanoseconds, so that log pipelines read them as they
// read every other duration.
package logfmt

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Formats are the names the --log-format flags take.
const (
	Text = "text"
	JSON = "json"
)

// New returns a logger that writes to w in format (Text or JSON; "" is
// Text) at level.
func New(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	switch format {
	case "", Text:
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
	case JSON:
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: seconds})), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// seconds writes a duration as seconds.
func seconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	}
	if a.Value.Kind() == slog.KindAny {
		if d, ok := a.Value.Any().(time.Duration); ok {
			return slog.Float64(a.Key, d.Seconds())
		}
	}
	return a
}
