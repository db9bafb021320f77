package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/trackertest"
)

func TestRun_ReplicaFlags(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	peers := "a=127.0.0.1:0=127.0.0.1:0"
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	cert := trackertest.NewCert(t, "127.0.0.1")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	tests := []struct {
		name string
		args []string
		ctx  context.Context
		code int
		out  string
	}{
		{name: "peers without replica id", args: []string{"--memory", "--peers", peers}, code: 2, out: "--peers needs --replica-id"},
		{name: "no data", args: []string{"--replica-id", "a", "--peers", peers}, code: 2, out: "needs --data DIR"},
		{name: "memory", args: []string{"--replica-id", "a", "--peers", peers, "--memory"}, code: 2, out: "needs --data DIR"},
		{name: "no peers", args: []string{"--replica-id", "a", "--data", t.TempDir()}, code: 2, out: "needs --peers"},
		{name: "bad peers", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", "a=x"}, code: 2, out: "want ID=RAFTHOST:PORT=CLIENTHOST:PORT"},
		{name: "not among peers", args: []string{"--replica-id", "b", "--data", t.TempDir(), "--peers", peers}, code: 1, out: "not among --peers"},
		{name: "open without a secret", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", "a=10.1.2.3:2356=127.0.0.1:0"},
			code: 1, out: "--raft-secret-file"},
		{name: "empty secret", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--raft-secret-file", empty},
			code: 2, out: "is empty"},
		{name: "raft TLS, partly", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--raft-tls-cert", secret},
			code: 2, out: "go together"},
		{name: "restore without replica id", args: []string{"--memory", "--raft-restore", empty}, code: 2, out: "--raft-restore needs --replica-id"},
		{name: "restore and join", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--join", "--raft-restore", empty},
			code: 1, out: "give one of them"},
		{name: "restore from nothing", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--raft-restore", empty},
			code: 1, out: "not a whole backup"},
		{name: "start and stop with raft TLS", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--raft-secret-file", secret,
			"--raft-tls-cert", cert.CertFile, "--raft-tls-key", cert.KeyFile, "--raft-tls-ca", cert.CAFile,
			"--listen", "127.0.0.1:0", "--log-level", "warn"}, ctx: canceled, code: 0},
		{name: "start and stop", args: []string{"--replica-id", "a", "--data", t.TempDir(), "--peers", peers, "--raft-secret-file", secret,
			"--listen", "127.0.0.1:0", "--log-level", "warn"}, ctx: canceled, code: 0},
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
		})
	}
}
