package e2e_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// memboundScript runs workunits that return 32 KiB each, one after the
// other, until riotd refuses one for its --max-memory; then it checks
// every result it got and prints what the refusal said.
const memboundScript = `
async function main() {
	const results = [];
	let refusal;
	for (let i = 0; i < 1000 && !refusal; i++) {
		try {
			results.push(await riot.run((i) => i + ':' + 'x'.repeat(32 << 10), i));
		} catch (e) {
			refusal = e;
		}
	}
	const bad = results.filter((r, i) => r !== i + ':' + 'x'.repeat(32 << 10));
	console.log('got', results.length > 1 ? 'several' : results.length, 'results,', bad.length, 'wrong');
	console.log(refusal && refusal.name);
	console.log(refusal && refusal.message.replace(/[0-9a-f]{12}/, 'KEY'));
}
main();
`

// TestE2E_MaxMemory: riotd --memory --max-memory refuses a job's workunit
// once it holds its bound, with a typed error that says what is full and
// what to do (a JavaScript master's TrackerMemoryFullError, a Go
// master's client.ErrMemoryFull); every result accepted before it comes
// back right; a Go master then sees the refusal too.
func TestE2E_MaxMemory(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-memory", "256KiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))

	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "membound.js", memboundScript))
	require.Equal(t, 0, res.Code, res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 3, res)
	assert.Equal(t, "got several results, 0 wrong", lines[0])
	assert.Equal(t, "TrackerMemoryFullError", lines[1])
	assert.Contains(t, lines[2], "riot.run: the tracker refused workunit KEY")
	assert.Contains(t, lines[2], "memory full")
	assert.Contains(t, lines[2], "past its --max-memory of 262144 bytes (256.0 KiB)")
	assert.Contains(t, lines[2], "run riotd with --data")

	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	_, err := m.Submit(fnSpec(t, "(s) => s.length", strings.Repeat("y", 1024)), workunit.Options{}).Wait(ctx)
	require.ErrorIs(t, err, client.ErrMemoryFull)
	assert.True(t, wire.IsCode(err, wire.CodeMemoryFull))
	assert.Contains(t, err.Error(), "memory full")
}

// TestE2E_MaxMemory_Forgotten: a Go master fills riotd's --max-memory
// with waiting work (no worker yet) until a submission is refused with
// client.ErrMemoryFull; the refused call leaves nothing pending; once a
// worker has run the accepted work and riotd has forgotten the results
// (--keep-results), the refused workunit is accepted and runs.
func TestE2E_MaxMemory_Forgotten(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-memory", "64KiB", "--keep-results", "1ms"}})
	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	pad := strings.Repeat("z", 8<<10)
	spec := func(i int) *workunit.Spec { return fnSpec(t, "(i, pad) => i * 2 + pad.length", i, pad) }
	var accepted []*client.Call
	refused := -1
	for i := range 100 {
		c := m.Submit(spec(i), workunit.Options{})
		if _, err := c.Accepted(ctx); err != nil {
			require.ErrorIs(t, err, client.ErrMemoryFull)
			var we *wire.Error
			require.True(t, errors.As(err, &we), "%v", err)
			assert.Contains(t, we.Message, "past its --max-memory of 65536 bytes (64.0 KiB)")
			refused = i
			break
		}
		accepted = append(accepted, c)
	}
	require.Positive(t, refused, "a submission past 64 KiB of 8 KiB specs is refused")
	assert.Len(t, accepted, refused)
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Waiting == refused })
	assert.Equal(t, refused, st.Workunits.Waiting, "nothing of the refused one is kept")

	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 2})
	for i, c := range accepted {
		out, err := c.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, float64(i*2+len(pad)), decodeNumber(t, out), "workunit %d", i)
	}
	tr.WaitFor(t, func(s tracker.Status) bool {
		return s.Workunits.Waiting+s.Workunits.Running+s.Workunits.Done == 0
	})
	out, err := m.Submit(spec(refused), workunit.Options{}).Wait(ctx)
	require.NoError(t, err, "room again once the results are forgotten")
	assert.Equal(t, float64(refused*2+len(pad)), decodeNumber(t, out))
}

// decodeNumber returns the number a finished workunit returned.
func decodeNumber(t *testing.T, out *workunit.Outcome) float64 {
	t.Helper()
	v, err := out.Value()
	require.NoError(t, err)
	n, ok := v.(float64)
	require.True(t, ok, "%T %v", v, v)
	return n
}

// memboundBlobsScript runs workunits whose argument is a distinct
// Uint8Array of 512 KiB (a blob, uploaded before each submission), one after the
// other, until riotd refuses one for its --max-memory; it checks every
// answer it got, prints what the refusal said, and runs a small workunit
// after it.
const memboundBlobsScript = `
async function main() {
	let ok = 0, bad = 0, refusal;
	for (let i = 0; i < 64 && !refusal; i++) {
		const a = new Uint8Array(512 << 10);
		a[0] = i;
		a[a.length - 1] = 255 - i;
		try {
			const got = await riot.run((a) => a[0] + '/' + a[a.length - 1] + '/' + a.length, a);
			if (got === i + '/' + (255 - i) + '/' + a.length) ok++; else bad++;
		} catch (e) {
			refusal = e;
		}
	}
	console.log('accepted', ok > 1 ? 'several' : ok, 'wrong', bad);
	console.log(refusal && refusal.name);
	console.log(refusal && refusal.message.replace(/[0-9a-f]{12}/g, 'HASH'));
	console.log('after', await riot.run(() => 'small'));
}
main();
`

// TestE2E_MaxMemory_Blobs: riotd --memory --max-memory counts the blobs it
// holds (large arguments here) with its workunits: a job whose workunits
// each take a distinct 512 KiB argument is refused, once the blobs fill
// the bound, with a TrackerMemoryFullError that says what is held and what
// to do; every workunit accepted before it answers right, and one without
// a blob still runs after it; a Go master's upload is refused with
// client.ErrMemoryFull; /status shows the blobs held, within the bound.
func TestE2E_MaxMemory_Blobs(t *testing.T) {
	t.Parallel()
	const limit = 4 << 20
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-memory", "4MiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))

	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "memboundblobs.js", memboundBlobsScript))
	require.Equal(t, 0, res.Code, res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 4, res)
	assert.Equal(t, "accepted several wrong 0", lines[0])
	assert.Equal(t, "TrackerMemoryFullError", lines[1])
	assert.Contains(t, lines[2], "riot.run: uploading 1 blobs:")
	assert.Contains(t, lines[2], "tracker: memory full: blob-")
	assert.Contains(t, lines[2], "of blob HASH refused: the tracker holds ")
	assert.Contains(t, lines[2], "for workunits (records, specs of waiting and running work, results and errors) and ")
	assert.Contains(t, lines[2], "past its --max-memory of 4194304 bytes (4.0 MiB)")
	assert.Contains(t, lines[2], "raise --max-memory, or run riotd with --data")
	assert.Equal(t, "after small", lines[3])

	m := dial(t, tr.Addr(), "master")
	ctx := e2e.Context(t, e2e.DefaultWait)
	_, err := m.PutBlob(ctx, []byte(strings.Repeat("q", 1<<20)))
	require.ErrorIs(t, err, client.ErrMemoryFull)
	assert.Contains(t, err.Error(), "past its --max-memory of 4194304 bytes (4.0 MiB)")

	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.RefusedBlobs >= 2 })
	assert.Positive(t, st.Blobs)
	assert.Greater(t, st.BlobBytes, int64(2<<20), "several blobs of 512 KiB held")
	assert.LessOrEqual(t, st.HeldBytes, int64(limit), "the blobs and the workunits within --max-memory")
	assert.GreaterOrEqual(t, st.HeldBytes, st.BlobBytes)
}

// memboundResultScript runs a workunit whose result (3 MiB) is over a
// message, so that its worker uploads it as a blob, and one after it.
const memboundResultScript = `
async function main() {
	try {
		const r = await riot.run(() => new Uint8Array(3 << 20));
		console.log('got', r.length);
	} catch (e) {
		console.log(e.name, e.kind);
		console.log(e.message.replace(/[0-9a-f]{12}/g, 'HASH'));
	}
	console.log('after', await riot.run(() => 'small'));
}
main();
`

// TestE2E_MaxMemory_ResultBlob: a worker whose result riotd --memory
// refuses to keep as a blob for its --max-memory fails that workunit with
// an error that says so (result-limit, the worker's
// TrackerMemoryFullError with riotd's message), rather than losing it;
// the worker goes on with the next workunit.
func TestE2E_MaxMemory_ResultBlob(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-memory", "2MiB", "--max-frame-bytes", "1MiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))

	res := bins.RunEval(t, "--tracker", tr.Addr(), writeScript(t, "memboundresult.js", memboundResultScript))
	require.Equal(t, 0, res.Code, res)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 3, res)
	assert.Equal(t, "WorkunitError result-limit", lines[0])
	assert.Contains(t, lines[1], "failed on worker w: TrackerMemoryFullError: result: 3145735 bytes (3.0 MiB), too large for a message, and the tracker refused to keep it as a blob")
	assert.Contains(t, lines[1], "memory full: blob-write of blob HASH refused")
	assert.Contains(t, lines[1], "past its --max-memory of 2097152 bytes (2.0 MiB)")
	assert.Equal(t, "after small", lines[2])
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.RefusedBlobs == 1 })
	assert.Zero(t, st.Blobs, "nothing of the refused result kept")
}

// blobsFreedScript runs, one after the other, 12 workunits whose argument
// is a distinct Uint8Array of 1 MiB (a blob each), starting from the
// number given, and prints how many answered right.
const blobsFreedScript = `
async function main(from) {
	let ok = 0;
	for (let i = from; i < from + 12; i++) {
		const a = new Uint8Array(1 << 20);
		a[0] = i;
		if (await riot.run((a) => a[0] + a.length, a) === i + a.length) ok++;
	}
	console.log('right', ok);
}
main(Number(riot.args[0] || 0));
`

// TestE2E_MaxMemory_BlobsFreed: riotd --memory frees the blobs of
// workunits that --keep-results forgot, --blob-grace after, so that a
// bound too small for two jobs' blobs takes one job after the other: the
// first job's 12 MiB of arguments are freed (/status: freed_blobs, and
// blob_bytes back under a blob), and the second job's 12 MiB, which the
// bound of 20 MiB could not hold beside them, all go through.
func TestE2E_MaxMemory_BlobsFreed(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-memory", "20MiB", "--keep-results", "1ms", "--blob-grace", "1ms"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	script := writeScript(t, "blobsfreed.js", blobsFreedScript)
	for round, from := range []string{"0", "100"} {
		res := bins.RunEval(t, "--tracker", tr.Addr(), script, from)
		require.Equal(t, 0, res.Code, "round %d: %v", round, res)
		assert.Equal(t, "right 12", strings.TrimSpace(res.Stdout), "round %d", round)
		st := tr.WaitFor(t, func(s tracker.Status) bool { return s.FreedBlobs >= uint64(12*(round+1)) })
		assert.Less(t, st.BlobBytes, int64(1<<20), "round %d: the blobs held once their workunits are forgotten", round)
		assert.Zero(t, st.RefusedBlobs, "round %d", round)
	}
}
