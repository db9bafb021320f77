package e2e_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// bigValuesScript sends values larger than 32 MiB (the limit a blob once
// had, which no flag raised) each way: a captured variable, an argument
// and a result of 5,000,000 float64s (40,000,007 bytes encoded).
const bigValuesScript = `
const big = new Float64Array(5_000_000)
big[4_999_999] = 3
console.log('captured', riot.waitUntilDone(riot.doWork(() => big.length + big[big.length - 1])))
const arg = new Float64Array(5_000_000)
arg[0] = 2
console.log('argument', riot.waitUntilDone(riot.doWork((x) => x.length + x[0], arg)))
const res = riot.waitUntilDone(riot.doWork(() => { const a = new Float64Array(5_000_000); a[4_999_999] = 7; return a }))
console.log('result', res.length, res[res.length - 1])
`

const bigValuesOutput = "captured 5000003\nargument 5000002\nresult 5000000 7\n"

func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// TestE2E_LargeValues: values over 32 MiB go through riotd and a worker in
// pieces (a small --max-frame-bytes makes them many), and through the
// embedded tracker of riot-worker eval, and through three riotd
// replicas. A regression test: a captured
// value over 32 MiB once failed with "wire: limit passed: 80000007 bytes,
// limit 33554432".
func TestE2E_LargeValues(t *testing.T) {
	t.Parallel()
	script := writeScript(t, "big.js", bigValuesScript)
	t.Run("riotd", func(t *testing.T) {
		tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true, Args: []string{"--max-frame-bytes", "1MiB"}})
		bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
		tr.WaitFor(t, workers(1))
		res := bins.RunEval(t, "--tracker", tr.Addr(), script)
		require.Equal(t, 0, res.Code, res)
		assert.Equal(t, bigValuesOutput, res.Stdout)
	})
	t.Run("tokens", func(t *testing.T) {
		// A worker's token may upload the blob of a large result. A
		// regression test: blob-have needed a master's rights, and every
		// result over max-result-bytes failed when riotd had tokens.
		const master, worker = "big-master-token-0123456789abcdef", "big-worker-token-0123456789abcdef"
		file := filepath.Join(t.TempDir(), "tokens")
		require.NoError(t, os.WriteFile(file, []byte("master "+master+"\nworker "+worker+"\n"), 0o600))
		hc := &http.Client{Timeout: 5 * time.Second, Transport: bearer{master}}
		tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--token-file", file, "--max-frame-bytes", "1MiB"}, HTTPClient: hc})
		bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1, Env: []string{"RIOT_TOKEN=" + worker}})
		tr.WaitFor(t, workers(1))
		ctx, cancel := context.WithTimeout(t.Context(), e2e.DefaultWait)
		defer cancel()
		res, err := bins.Eval(ctx, []string{"RIOT_TOKEN=" + master}, "--tracker", tr.Addr(), script)
		require.NoError(t, err)
		require.Equal(t, 0, res.Code, res)
		assert.Equal(t, bigValuesOutput, res.Stdout)
	})
	t.Run("replicas", func(t *testing.T) {
		// Three replicas: each value (40 MB) goes through Raft in pieces
		// staged in files, and every replica stores it.
		rs := bins.StartReplicas(t, 3)
		bins.StartWorker(t, rs.Addrs(), e2e.WorkerOptions{Name: "w", Slots: 1})
		res := bins.RunEval(t, "--tracker", rs.Addrs(), script)
		require.Equal(t, 0, res.Code, res)
		assert.Equal(t, bigValuesOutput, res.Stdout)
	})
	t.Run("embedded", func(t *testing.T) {
		res := bins.RunEval(t, "--workers", "1", script)
		require.Equal(t, 0, res.Code, res)
		assert.Equal(t, bigValuesOutput, res.Stdout)
	})
}

// TestE2E_ValueOverLimit: a value over riotd's --max-blob-bytes fails with
// an error that names the value (free variable, argument, result), its
// size, the limit and the flag.
func TestE2E_ValueOverLimit(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-frame-bytes", "1MiB", "--max-blob-bytes", "2MiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	for _, c := range []struct{ name, src, want string }{
		{"captured", "const big = new Float64Array(500_000)\nriot.waitUntilDone(riot.doWork(() => big.length))\n",
			"riot.doWork: the function (over.js:2:32) → free variable big: 4000007 bytes (3.8 MiB), over the tracker's limit on a value of 2MiB (riotd --max-blob-bytes)"},
		{"argument", "riot.waitUntilDone(riot.doWork((a, b) => b.length, 1, new Float64Array(500_000)))\n",
			"riot.doWork: args[1]: 4000007 bytes (3.8 MiB), over the tracker's limit on a value of 2MiB (riotd --max-blob-bytes)"},
		{"result", "riot.waitUntilDone(riot.doWork(() => new Float64Array(500_000)))\n",
			"RangeError: result: larger than 2.0 MiB, over the tracker's limit on a value (riotd --max-blob-bytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "over.js", c.src))
			assert.NotEqual(t, 0, res.Code, res)
			assert.Contains(t, res.Stderr, c.want, res)
		})
	}
}

// TestE2E_BufferSentFromItsBytes: a large typed array goes to riotd from
// its own buffer, and a getter of a later argument that writes to it
// during the same call makes the call throw, naming the value, rather
// than send bytes its hash does not name (docs/values.md, "Large
// buffers"); changed between calls, it is sent as it is.
func TestE2E_BufferSentFromItsBytes(t *testing.T) {
	t.Parallel()
	script := writeScript(t, "buffer.js", `
const big = new Float64Array(1 << 18)
const sneaky = { get x() { big[0] = 99; return 1 } }
try {
  riot.doWork((a, s) => a[0] + s.x, big, sneaky)
  console.log('sent')
} catch (e) {
  console.log(e.message)
}
console.log('then', riot.waitUntilDone(riot.doWork((a) => a[0] + a.length, big)))
`)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-frame-bytes", "1MiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	res := bins.RunEval(t, "--tracker", tr.Addr(), script)
	require.Equal(t, 0, res.Code, res)
	assert.Contains(t, res.Stdout, "riot.doWork: blob ")
	assert.Contains(t, res.Stdout, ": its value (a Float64Array of 2097152 bytes (2.0 MiB)) changed after it was encoded for this workunit and before it was uploaded")
	assert.NotContains(t, res.Stdout, "sent\n")
	assert.Contains(t, res.Stdout, "then 262243\n")
}
