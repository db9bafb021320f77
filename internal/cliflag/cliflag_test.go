package cliflag

import (
	"log/slog"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/sysmem"
)

func newFlagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(nopWriter{})
	return fs
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestValues(t *testing.T) {
	t.Parallel()
	fs := newFlagSet()
	d := 30 * time.Second
	var zero time.Duration
	n := 512 << 20
	level := slog.LevelInfo
	var auto AutoInt
	fs.Var(Duration(&d), "grace", "a `duration`")
	fs.Var(Duration(&zero), "timeout", "a `duration`")
	fs.Var(Size(&n), "cache", "a `size`")
	fs.Var(LogLevel(&level), "log-level", "a `level`")
	fs.Var(&auto, "slots", "`N`")
	usage := fs.FlagUsages()
	assert.Contains(t, usage, "--grace duration     a duration (default 30s)")
	assert.Contains(t, usage, "(default 512MiB)")
	assert.Contains(t, usage, "(default info)")
	assert.NotContains(t, usage, "(default 0", "a zero duration and an unset AutoInt print no default")

	require.NoError(t, fs.Parse([]string{"--grace", "1d", "--timeout=5m", "--cache", "1GiB", "--log-level", "debug", "--slots", "3"}))
	assert.Equal(t, 24*time.Hour, d)
	assert.Equal(t, 5*time.Minute, zero)
	assert.Equal(t, 1<<30, n)
	assert.Equal(t, slog.LevelDebug, level)
	assert.True(t, auto.Given())
	assert.Equal(t, 3, auto.Or(7))
	assert.Equal(t, 7, (&AutoInt{}).Or(7))

	for args, want := range map[string]string{
		"--grace=5":         `invalid argument "5" for "--grace" flag: 5 what? Give a unit, as in 5s or 5m`,
		"--cache=lots":      `invalid argument "lots" for "--cache" flag: want a size such as 64MiB, 512KiB or 1048576 (bytes)`,
		"--log-level=loud":  `invalid argument "loud" for "--log-level" flag: want debug, info, warn or error`,
		"--slots=x":         `invalid argument "x" for "--slots" flag: want a whole number`,
		"--timeout=-1s":     `want a duration of 0 or more`,
		"--cache=99999TiB0": `want a size`,
	} {
		err := newFlagSetWith(t).Parse([]string{args})
		assert.ErrorContains(t, err, want, args)
	}
}

func newFlagSetWith(t *testing.T) *pflag.FlagSet {
	t.Helper()
	fs := newFlagSet()
	var d time.Duration
	var n int
	var level slog.Level
	fs.Var(Duration(&d), "grace", "")
	fs.Var(Duration(&d), "timeout", "")
	fs.Var(Size(&n), "cache", "")
	fs.Var(LogLevel(&level), "log-level", "")
	fs.Var(&AutoInt{}, "slots", "")
	return fs
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	total, totalErr := sysmem.Total()
	parse := func(args ...string) (*MemoryLimit, uint64, error) {
		fs := newFlagSet()
		m := AddMemoryLimit(fs, "workunits are")
		if err := fs.Parse(args); err != nil {
			return m, 0, err
		}
		n, err := m.Bytes()
		return m, n, err
	}
	m, n, err := parse()
	require.NoError(t, err)
	assert.False(t, m.Given())
	if totalErr == nil {
		assert.Equal(t, total*DefaultMemoryLimit/100, n)
	} else {
		assert.Zero(t, n, "no limit where the machine's memory cannot be read")
	}
	for arg, want := range map[string]uint64{"none": 0, "0": 0, "2GiB": 2 << 30, "1000": 1000, "512M": 512 << 20} {
		m, n, err := parse("--memory-limit", arg)
		require.NoError(t, err, arg)
		assert.True(t, m.Given())
		assert.Equal(t, want, n, arg)
	}
	_, _, err = parse("--memory-limit", "lots")
	assert.ErrorContains(t, err, `memory limit "lots": want a size`)
	fs := newFlagSet()
	AddMemoryLimit(fs, "workunits are")
	assert.Contains(t, fs.FlagUsages(), "(default 80%)")
}

func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	fs := newFlagSet()
	fs.Int("port", 0, "")
	fs.String("name", "", "")
	fs.Bool("quiet", false, "")
	fs.StringP("e", "e", "", "")
	for _, tt := range []struct {
		args         []string
		interspersed bool
		want         []string
	}{
		{[]string{"-port", "1", "host"}, true, []string{"--port", "1", "host"}},
		{[]string{"-port=1", "host", "-quiet"}, true, []string{"--port=1", "host", "--quiet"}},
		{[]string{"--port", "1", "-name", "-quiet", "host"}, true, []string{"--port", "1", "--name", "-quiet", "host"}},
		{[]string{"-e", "-port", "-quiet"}, true, []string{"-e", "-port", "--quiet"}},
		{[]string{"-e1+2", "-e=3", "-h", "-nope", "-x", "-10"}, true, []string{"-e1+2", "-e=3", "-h", "--nope", "-x", "-10"}},
		{[]string{"-quiet", "job.js", "-quiet", "-port", "2"}, false, []string{"--quiet", "job.js", "-quiet", "-port", "2"}},
		{[]string{"-quiet", "--", "-port"}, true, []string{"--quiet", "--", "-port"}},
		{[]string{"-name"}, true, []string{"--name"}},
	} {
		assert.Equal(t, tt.want, NormalizeArgs(fs, tt.args, tt.interspersed), "%q", tt.args)
	}
	require.NoError(t, fs.Parse(NormalizeArgs(fs, []string{"-port", "7", "-name=w", "-quiet", "h"}, true)))
	port, _ := fs.GetInt("port")
	assert.Equal(t, 7, port)
	assert.Equal(t, []string{"h"}, fs.Args())
}
