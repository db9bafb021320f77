package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
)

const (
	testMasterTok = "master-0123456789abcdef0123456789"
	testWorkerTok = "worker-0123456789abcdef0123456789"
)

// A --tls-ca file that cannot be read is bad usage. (That --tls-ca and
// --token reach the worker's options: worker's TestFlags_TokenAndTLS.)
func TestWorkerFlags_TLSCA(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCmd(t, "--tls-ca", "/nonexistent/ca.pem", "127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "riot-worker: --tls-ca: ")
	assert.Contains(t, stderr, "run 'riot-worker --help' for the flags")
}

// TestWorker_Process_TokenAndTLS runs `riot-worker --tls-ca CA --token T
// HOST:PORT` against a tracker with TLS and tokens: it works; with a
// wrong token it exits at once with the tracker's reason.
func TestWorker_Process_TokenAndTLS(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	cert := trackertest.NewCert(t)
	tr := trackertest.Start(t, trackertest.TLS(cert), trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: testMasterTok},
		tracker.Credential{Role: wire.RoleWorker, Token: testWorkerTok},
	))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bad := exec.CommandContext(ctx, bin, "--tls-ca", cert.CAFile, "--log-level", "error", tr.Addr())
	bad.Env = append(os.Environ(), "RIOT_TOKEN=wrong-0123456789abcdef0123456789")
	var stderr bytes.Buffer
	bad.Stderr = &stderr
	err := bad.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "bad-credentials: tracker: unknown token")

	cmd := exec.Command(bin, "--name", "secure", "--slots", "1", "--tls-ca", cert.CAFile, "--log-level", "warn", tr.Addr())
	cmd.Env = append(os.Environ(), "RIOT_TOKEN="+testWorkerTok)
	stderr.Reset()
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	conf, err := client.TLSConfigWithCA(cert.CAFile)
	require.NoError(t, err)
	m, err := client.Dial(ctx, tr.Addr(), client.Options{Token: testMasterTok, TLSConfig: conf, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer m.Close()
	out, err := m.DoWorkEval("riot.worker.name").Wait(ctx)
	require.NoError(t, err)
	v, _ := out.Value()
	assert.Equal(t, "secure", v)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, stderr.String())
	case <-ctx.Done():
		t.Fatal("riot-worker did not stop on SIGTERM")
	}
}
