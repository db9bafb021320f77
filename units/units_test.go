package units_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/riot-go/riot/units"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{
		"0": 0, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "250ms": 250 * time.Millisecond,
		"30d": 30 * 24 * time.Hour, "1.5d": 36 * time.Hour, " 12h ": 12 * time.Hour, "0d": 0,
	}
	for in, want := range good {
		got, err := units.ParseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	bad := map[string]string{
		"5":    "5 what? Give a unit, as in 5s or 5m",
		"3w":   "want a duration such as 30s, 5m, 12h or 30d",
		"xd":   "want days as a number",
		"NaNd": "want days as a number",
		"-1h":  "0 or more",
		"-2d":  "want days as a number",
		"":     "want a duration",
	}
	for in, want := range bad {
		_, err := units.ParseDuration(in)
		assert.ErrorContains(t, err, want, "%q", in)
	}
	assert.Equal(t, "30d", units.FormatDuration(30*24*time.Hour))
	assert.Equal(t, "1h30m0s", units.FormatDuration(90*time.Minute))
	assert.Equal(t, "0s", units.FormatDuration(0))
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	good := map[string]uint64{
		"0": 0, "1048576": 1 << 20, "64MiB": 64 << 20, "64mib": 64 << 20, "8G": 8 << 30, "4GB": 4e9,
		"1.5GiB": 3 << 29, "512 KiB": 512 << 10, "10b": 10,
	}
	for in, want := range good {
		got, err := units.ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "lots", "-1", "NaN", "1.5x", "Inf"} {
		_, err := units.ParseSize(in)
		assert.ErrorContains(t, err, "want a size such as 64MiB", "%q", in)
	}
	_, err := units.ParseSize("99999999999TiB")
	assert.ErrorContains(t, err, "too large")
	assert.Equal(t, "64MiB", units.FormatSize(64<<20))
	assert.Equal(t, "1000", units.FormatSize(1000))
	assert.Equal(t, "0", units.FormatSize(0))
}

// TestFlags: the flag package's errors name the flag, the value and the
// form wanted; defaults print as the parsers read them.
func TestFlags(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := 30 * 24 * time.Hour
	n := 64 << 20
	fs.Var((*units.Duration)(&d), "keep", "")
	fs.Var((*units.Size)(&n), "queue", "")
	assert.Equal(t, "30d", fs.Lookup("keep").Value.String())
	assert.Equal(t, "64MiB", fs.Lookup("queue").Value.String())
	require.NoError(t, fs.Parse([]string{"--keep", "12h", "--queue", "1GiB"}))
	assert.Equal(t, 12*time.Hour, d)
	assert.Equal(t, 1<<30, n)
	err := fs.Parse([]string{"--keep", "5"})
	assert.EqualError(t, err, `invalid value "5" for flag -keep: 5 what? Give a unit, as in 5s or 5m`)
	err = fs.Parse([]string{"--queue", "lots"})
	assert.EqualError(t, err, `invalid value "lots" for flag -queue: want a size such as 64MiB, 512KiB or 1048576 (bytes)`)
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 bytes", 1023: "1023 bytes", 1024: "1024 bytes (1.0 KiB)",
		80000007: "80000007 bytes (76.3 MiB)", 1 << 30: "1073741824 bytes (1.0 GiB)",
	} {
		assert.Equal(t, want, units.FormatBytes(n), "%d", n)
	}
}
