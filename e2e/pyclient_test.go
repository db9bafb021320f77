package e2e_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// TestProtocol_PythonClient runs testdata/pyclient.py, a client written
// in Python from docs/protocol.md and docs/values.md alone (its own
// websocket framing and CBOR included), against a real riotd: as a master
// and a worker it submits, takes, finishes, fails and cancels workunits,
// and checks each answer against what the documents say. Without python3
// the test is skipped.
func TestProtocol_PythonClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the protocol's Python client cannot run (install Python 3 to run this test)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "pyclient.py"))
	require.NoError(t, err)

	run := func(t *testing.T, env []string, args ...string) {
		t.Helper()
		ctx := e2e.Context(t, e2e.DefaultWait)
		cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("pyclient.py %s:\n%s", strings.Join(args, " "), out)
		require.NoError(t, err, "the Python client failed: %s", lastLine(out))
		assert.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "PASS"), "%s", out)
	}

	t.Run("flow", func(t *testing.T) {
		t.Parallel()
		tr := bins.StartTracker(t, e2e.TrackerOptions{})
		run(t, nil, "ws://"+tr.Addr()+"/riot")
	})
	t.Run("tokens", func(t *testing.T) {
		t.Parallel()
		const master, worker = "py-master-token-0123456789abcdef", "py-worker-token-0123456789abcdef"
		file := filepath.Join(t.TempDir(), "tokens")
		require.NoError(t, os.WriteFile(file, []byte("master "+master+"\nworker "+worker+"\n"), 0o600))
		hc := &http.Client{Timeout: 5 * time.Second, Transport: bearer{master}}
		tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--token-file", file}, HTTPClient: hc})
		run(t, []string{"RIOT_TOKEN=" + master, "RIOT_WORKER_TOKEN=" + worker}, "ws://"+tr.Addr()+"/riot")
	})
	t.Run("limits", func(t *testing.T) {
		t.Parallel()
		tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-frame-bytes", "64KiB", "--ping-interval", "1s"}})
		run(t, nil, "--limits", "ws://"+tr.Addr()+"/riot")
	})
}

// bearer is an http.RoundTripper that gives its token, as a master does
// for riotd's status page.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// lastLine returns the last line of out, where the Python client says
// what failed.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
