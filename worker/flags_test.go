package worker

import (
	"bytes"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/cliflag"
	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/tracker/trackertest"
)

// parseFlags parses a riot-worker command line with the environment env
// (name, value, ...) and returns the worker's Options.
func parseFlags(t *testing.T, args []string, env ...string) (Options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("riot-worker", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vars := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	f := addFlags(fs, func(k string) string { return vars[k] })
	if err := fs.Parse(cliflag.NormalizeArgs(fs, args, true)); err != nil {
		return Options{}, err
	}
	return f.Options(fs.Args(), io.Discard)
}

func TestFlags_Tracker(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		tracker string
		err     string
	}{
		{args: []string{"alfred"}, tracker: "alfred"},
		{args: []string{"--port", "1234", "--name", "worker-name", "server-host"}, tracker: "server-host:1234"},
		{args: []string{"server-host", "--slots", "3"}, tracker: "server-host"},
		{args: []string{"-port", "1234", "server-host", "-slots=3"}, tracker: "server-host:1234"},
		{args: []string{"alfred:99"}, tracker: "alfred:99"},
		{args: []string{"--port", "99", "alfred:99"}, tracker: "alfred:99"},
		{args: []string{"--port", "98", "alfred:99"}, err: "the port is given twice"},
		{args: []string{"--port", "7", "::1"}, tracker: "[::1]:7"},
		{args: []string{"ws://alfred:5/riot"}, tracker: "ws://alfred:5/riot"},
		{args: []string{"--port", "7", "ws://alfred"}, err: "--port does not go with a URL"},
		{args: []string{"http://alfred"}, err: `tracker address "http://alfred": scheme "http", want ws or wss: give HOST, HOST:PORT, ws://HOST[:PORT] or wss://HOST[:PORT]`},
		{args: []string{"ws://"}, err: `tracker address "ws://" has no host`},
		{args: []string{"alfred:0"}, err: `tracker address "alfred:0": bad port "0"`},
		{args: []string{"--port", "70000", "alfred"}, err: "--port 70000: out of range"},
		{args: nil, err: "HOST is required"},
		{args: []string{""}, err: "HOST is empty (is $RIOT_TRACKER set"},
		{args: []string{":2355"}, err: `":2355" names no host`},
		{args: []string{"a", "b"}, err: "one HOST"},
		{args: []string{"--slots", "0", "a"}, err: "--slots 0"},
		{args: []string{"--bogus", "a"}, err: "unknown flag: --bogus"},
	} {
		o, err := parseFlags(t, tt.args)
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err, "%q", tt.args)
			continue
		}
		require.NoError(t, err, "%q", tt.args)
		assert.Equal(t, tt.tracker, o.Tracker, "%q", tt.args)
	}
}

func TestFlags_Options(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"--name", "n", "--slots", "3", "--prefetch", "1", "--grace", "5s",
		"--timeout", "1m", "--memory-limit", "1000", "--blob-cache", "1GiB", "--log-level", "warn", "h"})
	require.NoError(t, err)
	assert.Equal(t, "n", o.Name)
	assert.Equal(t, 3, o.Slots)
	assert.Equal(t, 1, o.Prefetch)
	assert.Equal(t, 5*time.Second, o.Grace)
	assert.Equal(t, time.Minute, o.Engine.Timeout)
	assert.Equal(t, uint64(1000), o.Engine.MemoryLimit)
	assert.Equal(t, int64(1<<30), o.BlobCacheBytes)
	assert.False(t, o.Logger.Enabled(t.Context(), slog.LevelInfo))
	assert.True(t, o.Logger.Enabled(t.Context(), slog.LevelWarn))

	o, err = parseFlags(t, []string{"h"})
	require.NoError(t, err)
	assert.Equal(t, runtime.NumCPU(), o.Slots, "one slot per CPU")
	assert.Zero(t, o.Prefetch, "unset: the worker sizes its prefetch")
	assert.Equal(t, DefaultGrace, o.Grace)
	assert.Zero(t, o.Engine.Timeout)
	assert.Equal(t, int64(DefaultBlobCacheBytes), o.BlobCacheBytes)
	assert.True(t, o.Logger.Enabled(t.Context(), slog.LevelInfo))
	assert.False(t, o.Logger.Enabled(t.Context(), slog.LevelDebug))

	// --log-format json: riotd's flag, on workers too.
	fs := pflag.NewFlagSet("riot-worker", pflag.ContinueOnError)
	f := addFlags(fs, func(string) string { return "" })
	require.NoError(t, fs.Parse([]string{"--log-format", "json", "h"}))
	var logs bytes.Buffer
	o, err = f.Options(fs.Args(), &logs)
	require.NoError(t, err)
	o.Logger.Info("x", "took", 1500*time.Millisecond)
	assert.Contains(t, logs.String(), `"took":1.5`)

	o, err = parseFlags(t, []string{"--grace", "0", "--prefetch", "0", "h"})
	require.NoError(t, err)
	assert.Negative(t, o.Grace, "--grace 0: interrupt at once")
	assert.Negative(t, o.Prefetch, "--prefetch 0: none")

	o, err = parseFlags(t, []string{"--metrics-listen", ":9090", "--debug-listen", "127.0.0.1:6060", "h"})
	require.NoError(t, err)
	assert.Equal(t, ":9090", o.MetricsListen)
	assert.Equal(t, "127.0.0.1:6060", o.DebugListen)
	o, err = parseFlags(t, []string{"h"})
	require.NoError(t, err)
	assert.Empty(t, o.MetricsListen, "off by default")
	assert.Empty(t, o.DebugListen, "off by default")

	for args, want := range map[string]string{
		"--prefetch=-1":                "--prefetch -1: want 0 or more",
		"--prefetch=x":                 `invalid argument "x" for "--prefetch" flag: want a whole number`,
		"--grace=5":                    `invalid argument "5" for "--grace" flag: 5 what? Give a unit, as in 5s or 5m`,
		"--blob-cache=lot":             `invalid argument "lot" for "--blob-cache" flag: want a size such as 64MiB, 512KiB or 1048576 (bytes)`,
		"--log-level=loud":             `invalid argument "loud" for "--log-level" flag: want debug, info, warn or error`,
		"--log-format=yaml":            `--log-format: log format "yaml": want text or json`,
		"--tls-ca=/nonexistent/ca.pem": "--tls-ca: ",
		"--metrics-listen=9090":        `--metrics-listen "9090": want HOST:PORT or :PORT, such as :9090`,
		"--debug-listen=localhost":     `--debug-listen "localhost": want HOST:PORT or :PORT, such as 127.0.0.1:6060`,
	} {
		_, err := parseFlags(t, []string{args, "h"})
		assert.ErrorContains(t, err, want, args)
	}
}

func TestFlags_MemoryLimit(t *testing.T) {
	t.Parallel()
	total, totalErr := sysmem.Total()
	o, err := parseFlags(t, []string{"h"})
	require.NoError(t, err)
	if totalErr == nil {
		assert.Equal(t, total*cliflag.DefaultMemoryLimit/100, o.Engine.MemoryLimit, "the default is a share of the machine")
	} else {
		assert.Zero(t, o.Engine.MemoryLimit, "no limit where the machine's memory cannot be read")
	}
	for arg, want := range map[string]uint64{"none": 0, "0": 0, "2GiB": 2 << 30, "1000": 1000, "512M": 512 << 20} {
		o, err := parseFlags(t, []string{"--memory-limit", arg, "h"})
		require.NoError(t, err, arg)
		assert.Equal(t, want, o.Engine.MemoryLimit, arg)
	}
	_, err = parseFlags(t, []string{"--memory-limit", "lots", "h"})
	assert.ErrorContains(t, err, `memory limit "lots": want a size`)
}

// The token's default, $RIOT_TOKEN, is read after parsing: the help
// never shows it. --tls-ca's file is read by Options.
func TestFlags_TokenAndTLS(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"alfred"}, "RIOT_TOKEN", "secret-0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, "secret-0123456789abcdef", o.Client.Token)
	assert.Nil(t, o.Client.TLSConfig)

	cert := trackertest.NewCert(t)
	o, err = parseFlags(t, []string{"--tls-ca", cert.CAFile, "--token", "t", "h"}, "RIOT_TOKEN", "other")
	require.NoError(t, err)
	assert.Equal(t, "t", o.Client.Token)
	assert.NotNil(t, o.Client.TLSConfig)
	o, err = parseFlags(t, []string{"h"}, "RIOT_TLS_CA", cert.CAFile)
	require.NoError(t, err)
	assert.NotNil(t, o.Client.TLSConfig, "$RIOT_TLS_CA")

	fs := pflag.NewFlagSet("riot-worker", pflag.ContinueOnError)
	addFlags(fs, func(k string) string {
		if k == "RIOT_TOKEN" {
			return "secret-0123456789abcdef"
		}
		return ""
	})
	usage := fs.FlagUsages()
	assert.Contains(t, usage, "(default: $RIOT_TOKEN)")
	assert.NotContains(t, usage, "secret-0123456789abcdef")
}

func TestFlags_Help(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("riot-worker", pflag.ContinueOnError)
	AddFlags(fs)
	usage := fs.FlagUsages()
	for _, want := range []string{"--port port ", "--slots N ", "(default 30s)", "(default 512MiB)", "(default 80%)", "(default info)", "--no-gpu"} {
		assert.Contains(t, usage, want)
	}
	assert.NotContains(t, usage, "(default -1)")
	assert.NotContains(t, usage, "\n  -port")
}

func TestConfigureOptions(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	o, err := ConfigureOptions(pflag.NewFlagSet("riot-worker", pflag.ContinueOnError),
		[]string{"-slots", "2", "alfred", "--log-level", "debug"}, &logs)
	require.NoError(t, err)
	assert.Equal(t, "alfred", o.Tracker)
	assert.Equal(t, 2, o.Slots)
	o.Logger.Debug("hello")
	assert.Contains(t, logs.String(), "level=DEBUG msg=hello")

	fs := pflag.NewFlagSet("riot-worker", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err = ConfigureOptions(fs, []string{"--help"}, io.Discard)
	assert.ErrorIs(t, err, pflag.ErrHelp)
}

func TestFlags_MaxWaitingParents(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(t, []string{"alfred"})
	require.NoError(t, err)
	assert.Zero(t, o.Engine.MaxSeceded, "the engine's default")
	o, err = parseFlags(t, []string{"--max-waiting-parents", "8", "alfred"})
	require.NoError(t, err)
	assert.Equal(t, 8, o.Engine.MaxSeceded)
	_, err = parseFlags(t, []string{"--max-waiting-parents", "0", "alfred"})
	assert.EqualError(t, err, "--max-waiting-parents 0: want at least 1")
}
