package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/internal/version"
	"github.com/riot-go/riot/tracker/trackertest"
)

// tokens writes a token file and returns its path.
func tokens(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

// damaged returns a data directory whose store is an empty file.
func damaged(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tracker.db"), nil, 0o600))
	return dir
}

func TestRun(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cert := trackertest.NewCert(t)
	tests := []struct {
		name string
		args []string
		ctx  context.Context
		code int
		out  string // in stderr
		help string // in stdout
	}{
		{name: "help", args: []string{"--help"}, code: 0, help: "riotd [--port 2355]"},
		{name: "help, one dash", args: []string{"-help"}, code: 0, help: "\n      --port port "},
		{name: "bad flag", args: []string{"--bogus"}, code: 2, out: "riotd: unknown flag: --bogus\nrun 'riotd --help' for the flags\n"},
		{name: "bad value", args: []string{"-max-lost", "x"}, code: 2, out: `riotd: invalid argument "x" for "--max-lost" flag`},
		{name: "argument", args: []string{"localhost"}, code: 2, out: "unexpected argument"},
		{name: "cannot listen", args: []string{"--memory", "--listen", "256.0.0.1:0", "--unsafe-no-auth"}, code: 1, out: "listen"},
		{name: "open to all without tokens", args: []string{"--memory", "--listen", ":0"}, code: 2, out: "--unsafe-no-auth"},
		{name: "bad token file", args: []string{"--memory", "--token-file", tokens(t, "master short")}, code: 2, out: "at least 16"},
		{name: "start and stop with tokens and TLS", args: []string{"--memory", "--listen", "127.0.0.1:0", "--log-level", "warn",
			"--token-file", tokens(t, "master 0123456789abcdef0123456789abcdef"),
			"--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile}, ctx: canceled, code: 0},
		{name: "bad certificate", args: []string{"--memory", "--listen", "127.0.0.1:0", "--tls-cert", cert.KeyFile, "--tls-key", cert.KeyFile},
			code: 1, out: "tls"},
		// Starts, serves, and stops cleanly when the context ends.
		{name: "start and stop", args: []string{"--memory", "--listen", "127.0.0.1:0", "--log-level", "warn"}, ctx: canceled, code: 0},
		{name: "damaged store", args: []string{"--data", damaged(t), "--listen", "127.0.0.1:0", "--log-level", "warn"},
			code: ExitStoreDamaged, out: "tracker.db is empty (0 bytes)"},
		{name: "start and stop with data", args: []string{"--data", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "warn"},
			ctx: canceled, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tt.code, run(ctx, tt.args, &stdout, &stderr), stderr.String())
			assert.Contains(t, stderr.String(), tt.out)
			assert.Contains(t, stdout.String(), tt.help)
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"-v"}, {"-version"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run(t.Context(), args, &stdout, &stderr), "%q: %s", args, stderr.String())
		assert.Equal(t, "riotd "+version.Read().String()+"\n", stdout.String(), "%q", args)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(t.Context(), []string{"completion", shell}, &stdout, &stderr), "%s: %s", shell, stderr.String())
		assert.Contains(t, stdout.String(), "riotd", shell)
		assert.Contains(t, stdout.String(), "__complete", shell)
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"__complete", "--"}, &stdout, &stderr), stderr.String())
	for _, f := range []string{"--port", "--data", "--token-file", "--keep-results"} {
		assert.Contains(t, stdout.String(), f+"\t")
	}
}
