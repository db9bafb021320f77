package tracker

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestConfigureOptions(t *testing.T) {
	t.Parallel()
	home := env("HOME", "/home/ann")
	tests := []struct {
		name   string
		args   []string
		getenv func(string) string
		check  func(t *testing.T, o Options)
		err    string
	}{
		{
			name: "defaults", getenv: home,
			check: func(t *testing.T, o Options) {
				assert.Equal(t, "127.0.0.1:2355", o.Listen, "no credentials: loopback only")
				assert.Equal(t, "/home/ann/.local/state/riot", o.DataDir)
				assert.Equal(t, DefaultMaxConns, o.MaxConns)
				assert.Zero(t, o.MaxWaitingPerMaster)
				assert.Equal(t, DefaultMaxWatches, o.MaxWatchesPerMaster)
				assert.Equal(t, wire.DefaultPingInterval, o.PingInterval)
				assert.Equal(t, DefaultWriteTimeout, o.WriteTimeout)
				assert.Equal(t, 3, o.MaxLost)
				assert.Equal(t, slog.LevelInfo, o.LogLevel)
				assert.Equal(t, "text", o.LogFormat)
				assert.Equal(t, time.Hour, o.LeaseTimeout, "a lease without progress expires")
				assert.Equal(t, 1024, o.MaxWorkerWindow)
				assert.False(t, o.SharedCache, "each master credential has its own cache")
			},
		},
		{
			name: "leases that never expire", args: []string{"--lease-timeout", "0"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Zero(t, o.LeaseTimeout) },
		},
		{
			name: "trusting masters", args: []string{"--shared-cache", "--max-worker-window", "4096"}, getenv: home,
			check: func(t *testing.T, o Options) {
				assert.True(t, o.SharedCache)
				assert.Equal(t, 4096, o.MaxWorkerWindow)
			},
		},
		{name: "no worker window", args: []string{"--max-worker-window", "0"}, getenv: home, err: "--max-worker-window 0: want more than 0"},
		{
			name: "XDG_STATE_HOME wins", getenv: env("HOME", "/home/ann", "XDG_STATE_HOME", "/var/state"),
			check: func(t *testing.T, o Options) { assert.Equal(t, "/var/state/riot", o.DataDir) },
		},
		{
			name: "no home", getenv: env(),
			check: func(t *testing.T, o Options) { assert.Equal(t, "riot-data", o.DataDir) },
		},
		{
			name: "the seed's --port", args: []string{"--port", "12345"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "127.0.0.1:12345", o.Listen) },
		},
		{
			name: "listen host", args: []string{"--listen", "127.0.0.1", "--port", "99"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "127.0.0.1:99", o.Listen) },
		},
		{
			name: "listen host:port", args: []string{"--listen", "localhost:7000"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "localhost:7000", o.Listen) },
		},
		{
			name: "listen ipv6", args: []string{"-listen", "::1"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "[::1]:2355", o.Listen) },
		},
		{
			name: "listen bracketed ipv6 with port", args: []string{"-listen", "[::1]:80"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "[::1]:80", o.Listen) },
		},
		{name: "ports disagree", args: []string{"--listen", ":1", "--port", "2"}, getenv: home, err: "disagree"},
		{name: "every interface without tokens", args: []string{"--listen", ":2355"}, getenv: home, err: "--unsafe-no-auth"},
		{name: "another host without tokens", args: []string{"--listen", "10.1.2.3"}, getenv: home, err: "without --token-file"},
		{
			name: "unsafe no auth", args: []string{"--listen", "0.0.0.0:7000", "--unsafe-no-auth"}, getenv: home,
			check: func(t *testing.T, o Options) {
				assert.Equal(t, "0.0.0.0:7000", o.Listen)
				assert.True(t, o.UnsafeNoAuth)
			},
		},
		{name: "tls cert without key", args: []string{"--tls-cert", "c.pem"}, getenv: home, err: "go together"},
		{name: "missing token file", args: []string{"--token-file", "/nonexistent/tokens"}, getenv: home, err: "no such file"},
		{name: "negative max waiting", args: []string{"--max-waiting", "-1"}, getenv: home, err: "negative"},
		{name: "negative max watches", args: []string{"--max-watches", "-1"}, getenv: home, err: "max watches -1 is negative"},
		{name: "bad port", args: []string{"--port", "70000"}, getenv: home, err: "not a TCP port"},
		{name: "bad listen port", args: []string{"--listen", "h:x"}, getenv: home, err: "not a TCP port"},
		{
			name: "memory", args: []string{"--memory"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Empty(t, o.DataDir) },
		},
		{
			name: "data empty", args: []string{"--data", ""}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Empty(t, o.DataDir) },
		},
		{
			name: "data dir", args: []string{"--data", "/srv/riot"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, "/srv/riot", o.DataDir) },
		},
		{name: "memory and data", args: []string{"--memory", "--data", "/srv/riot"}, getenv: home, err: "disagree"},
		{
			name: "tuning", getenv: home,
			args: []string{"--ping-interval", "1s", "--max-lost", "5", "--lease-timeout", "1m", "--log-level", "debug",
				"--log-format", "json", "--name", "hub", "--max-frame-bytes", "1048576", "--max-conns", "10", "--max-waiting", "500"},
			check: func(t *testing.T, o Options) {
				assert.Equal(t, time.Second, o.PingInterval)
				assert.Equal(t, 5, o.MaxLost)
				assert.Equal(t, time.Minute, o.LeaseTimeout)
				assert.Equal(t, slog.LevelDebug, o.LogLevel)
				assert.Equal(t, "json", o.LogFormat)
				assert.Equal(t, "hub", o.Name)
				assert.Equal(t, 1<<20, o.Limits.MaxFrameBytes)
				assert.Equal(t, 10, o.MaxConns)
				assert.Equal(t, 500, o.MaxWaitingPerMaster)
			},
		},
		{
			name: "keep results in days", args: []string{"--keep-results", "30d"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 30*24*time.Hour, o.KeepResults) },
		},
		{
			name: "keep results in hours", args: []string{"--keep-results", "12h"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 12*time.Hour, o.KeepResults) },
		},
		{
			name: "blob grace", args: []string{"--blob-grace", "5s"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 5*time.Second, o.BlobGrace) },
		},
		{name: "negative blob grace", args: []string{"--blob-grace", "-1s"}, getenv: home, err: "invalid argument \"-1s\" for \"--blob-grace\" flag: want a duration of 0 or more"},
		{
			name: "keep results by default", getenv: home,
			check: func(t *testing.T, o Options) { assert.Zero(t, o.KeepResults, "kept for good") },
		},
		{name: "keep results unreadable", args: []string{"--keep-results", "a week"}, getenv: home, err: "want a duration such as 30s, 5m, 12h or 30d"},
		{name: "keep results bad days", args: []string{"--keep-results", "xd"}, getenv: home, err: "want days"},
		{name: "keep results NaN days", args: []string{"--keep-results", "NaNd"}, getenv: home, err: "want days"},
		{name: "keep results negative", args: []string{"--keep-results", "-1h"}, getenv: home, err: "0 or more"},
		{name: "bad log format", args: []string{"--log-format", "xml"}, getenv: home, err: "log format"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, getenv: home, err: "log-level"},
		{name: "negative ping", args: []string{"--ping-interval", "-1s"}, getenv: home, err: "want a duration of 0 or more"},
		{name: "ping without a unit", args: []string{"--ping-interval", "5"}, getenv: home, err: "5 what? Give a unit, as in 5s or 5m"},
		{name: "tiny frames", args: []string{"--max-frame-bytes", "5"}, getenv: home, err: "at least 65536, or no hello fits"},
		{name: "zero ping", args: []string{"--ping-interval", "0"}, getenv: home, err: "--ping-interval 0: want more than 0"},
		{name: "zero queue", args: []string{"--queue-bytes", "0"}, getenv: home, err: "--queue-bytes 0: want more than 0"},
		{name: "bad frame size", args: []string{"--max-frame-bytes", "lots"}, getenv: home, err: "want a size such as 64MiB"},
		{
			name: "sizes with units", args: []string{"--max-frame-bytes", "1MiB", "--queue-bytes", "1GiB"}, getenv: home,
			check: func(t *testing.T, o Options) {
				assert.Equal(t, 1<<20, o.Limits.MaxFrameBytes)
				assert.Equal(t, 1<<30, o.QueueBytes)
			},
		},
		{
			name: "max blob bytes", args: []string{"--max-blob-bytes", "4GiB"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 4<<30, o.Limits.MaxBlobBytes) },
		},
		{
			name: "max blob bytes by default", getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 1<<30, o.Limits.MaxBlobBytes) },
		},
		{name: "zero max blob bytes", args: []string{"--max-blob-bytes", "0"}, getenv: home, err: "--max-blob-bytes 0: want more than 0"},
		{
			name: "pack budget by default", getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, DefaultPackBudget, o.PackBudget) },
		},
		{
			name: "pack budget", args: []string{"--pack-budget", "5ms"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Equal(t, 5*time.Millisecond, o.PackBudget) },
		},
		{
			name: "no packing", args: []string{"--pack-budget", "0"}, getenv: home,
			check: func(t *testing.T, o Options) { assert.Negative(t, o.PackBudget, "off, not the default") },
		},
		{name: "negative pack budget", args: []string{"--pack-budget", "-1ms"}, getenv: home, err: `"--pack-budget" flag: want a duration of 0 or more`},
		{name: "arguments", args: []string{"localhost"}, getenv: home, err: "unexpected argument"},
		{name: "unknown flag", args: []string{"--bogus"}, getenv: home, err: "unknown flag: --bogus"},
		{name: "unknown one-dash flag", args: []string{"-bogus"}, getenv: home, err: "unknown flag: --bogus"},
		{
			name: "one-dash long flags, as Go's flag package read them", args: []string{"-port=99", "-memory", "-max-lost", "4"}, getenv: home,
			check: func(t *testing.T, o Options) {
				assert.Equal(t, "127.0.0.1:99", o.Listen)
				assert.Empty(t, o.DataDir)
				assert.Equal(t, 4, o.MaxLost)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o, err := configureOptions(fs, tt.args, tt.getenv)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

func TestConfigureOptions_Help(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--help", "-h", "-help"} {
		fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		_, err := configureOptions(fs, []string{arg}, env("HOME", "/home/ann"))
		require.True(t, errors.Is(err, pflag.ErrHelp), "%s: %v", arg, err)
		help := out.String()
		for _, want := range []string{"--port 2355", "/home/ann/.local/state/riot", "--memory", "/status", "/metrics",
			"\n      --log-format format ", "\n      --port port ", "(default 2355)", "(default 10s)", "Exit status"} {
			assert.Contains(t, help, want, arg)
		}
		assert.NotContains(t, help, "\n  -port", "GNU-style: two dashes")
		assert.NotContains(t, help, "(default 0", "zero defaults go unprinted")
	}
}

func TestOptions_WithDefaults_Limits(t *testing.T) {
	t.Parallel()
	o := Options{Limits: wire.Limits{MaxFrameBytes: 1 << 20}}.withDefaults()
	assert.Less(t, o.Limits.MaxResultBytes, o.Limits.MaxFrameBytes, "a result must fit in a frame")
	assert.Less(t, o.Limits.MaxSpecBytes, o.Limits.MaxFrameBytes)
	assert.Equal(t, wire.DefaultMaxBlobBytes, o.Limits.MaxBlobBytes, "a blob larger than a frame travels in pieces")
	assert.Less(t, o.Limits.PieceBytes(), o.Limits.MaxFrameBytes, "a piece fits in a frame")
	assert.GreaterOrEqual(t, o.QueueBytes, 2<<20)
	d := Options{}.withDefaults()
	assert.Equal(t, wire.Limits{}.WithDefaults(), d.Limits, "the defaults leave room already")
}

func TestClip(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "abc", clip("abc", 5))
	assert.Equal(t, "ab", clip("abcdef", 2))
	assert.Equal(t, "a", clip("aé", 2), "never half a rune")
}
