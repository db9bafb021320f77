package logfmt

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In JSON a duration is seconds; in text, Go's form.
func TestNew_Durations(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log, err := New(&b, JSON, slog.LevelInfo)
	require.NoError(t, err)
	log.Info("x", "connected", 1250*time.Millisecond, "n", 3)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &rec))
	assert.Equal(t, 1.25, rec["connected"])
	assert.Equal(t, 3.0, rec["n"])

	b.Reset()
	log, err = New(&b, Text, slog.LevelInfo)
	require.NoError(t, err)
	log.Info("x", "connected", 1250*time.Millisecond)
	assert.Contains(t, b.String(), "connected=1.25s")

	_, err = New(&b, "yaml", slog.LevelInfo)
	assert.ErrorContains(t, err, `log format "yaml": want text or json`)
}
