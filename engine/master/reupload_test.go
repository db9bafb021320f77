package master

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// reuploadScript sends a large array (its encoding over KeepBlobBytes,
// dropped once uploaded) and a smaller one (a blob whose bytes the master
// keeps), captured, in workunits one after the other through every path
// that submits: doWork, forWork, run and the low-level client.
const reuploadScript = `
	const big = Array.from({length: 300000}, (_, i) => i);   // about 1.4 MiB encoded
	const small = Array.from({length: 30000}, (_, i) => i);  // about 90 KiB
	console.log(riot.waitUntilDone(riot.doWork((k) => big[k] + small[k], 5)));
	console.log(riot.waitUntilDone(riot.doWork((k) => big[k] * small[k], 6)));
	console.log(JSON.stringify(riot.forWork([1, 2, 3], (k) => big[k] - small[k] + k)));
	const c = riot.currentClient();
	console.log(c.waitForFinishedWorkunit(c.addWorkunit((k) => big.length - small.length + k, 7))[3]);
	riot.run((k) => big.length + small.length + k, 1).then((v) => console.log(v));
`

// TestMaster_UnknownBlob_UploadedAgain: a tracker that freed the blobs of
// a script's values (riotd --memory, once nothing names them) refuses the
// next submission that names them with unknown-blob; the master uploads
// them again, the large value encoded again from the script's array, and
// submits again, and the script sees only its results. A regression test:
// the call threw the tracker's message.
func TestMaster_UnknownBlob_UploadedAgain(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, false)
	ft.checkBlobs, ft.freeOnFinish = true, true
	sr := runScriptOn(t, ft, map[string]string{"main.js": reuploadScript})
	require.NoError(t, sr.err, sr.stderr.String())
	assert.Equal(t, "10\n36\n[1,2,3]\n270007\n330001\n", sr.stdout.String())
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.GreaterOrEqual(t, ft.refusals, 4, "each call after the first named freed blobs")
	assert.GreaterOrEqual(t, ft.uploads, 10, "two blobs, uploaded for each of five calls")
	sr.events.mu.Lock()
	defer sr.events.mu.Unlock()
	assert.Equal(t, 7, sr.events.submitted, "a submission made again is not counted again")
	for _, o := range sr.events.finished {
		assert.Nil(t, o.Err, "a refused submission is no failed workunit")
	}
}

// TestMaster_UnknownBlob_Bounded: a tracker that never keeps what the
// master uploads refuses every submission; the master gives up after
// maxReuploads uploads of the blobs, with an error that names the
// workunit, its blobs and what to do.
func TestMaster_UnknownBlob_Bounded(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, false)
	ft.checkBlobs, ft.hashOnly = true, true
	sr := runScriptOn(t, ft, map[string]string{"main.js": `
		const big = Array.from({length: 300000}, (_, i) => i);
		riot.doWork((k) => big[k], 5);
	`})
	se := scriptErr(t, sr.err)
	assert.Contains(t, se.Message, "riot.doWork: the tracker refused workunit ")
	assert.Contains(t, se.Message, " 4 times because it does not hold a blob the workunit names")
	assert.Contains(t, se.Message, "which the tracker does not hold", "the tracker's message")
	assert.Contains(t, se.Message, "--blob-grace")
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.Equal(t, 4, ft.refusals)
	assert.Equal(t, 4, ft.uploads, "uploaded at first, then again after each of 3 refusals")
}

// TestMaster_UnknownBlob_ValueChanged: a large value changed in place at
// the same size after it was sent (taken as unchanged: its encoding is
// over VerifyBlobBytes) no longer encodes to the blob the workunit names;
// uploading it again is the error the master gives for another tracker,
// not a blob under a hash its bytes do not have.
func TestMaster_UnknownBlob_ValueChanged(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, false)
	ft.checkBlobs, ft.freeOnFinish = true, true
	sr := runScriptOn(t, ft, map[string]string{"main.js": `
		const big = Array.from({length: 300000}, (_, i) => i);
		console.log(riot.waitUntilDone(riot.doWork((k) => big[k], 5)));
		big[5] = 50;
		riot.doWork((k) => big[k], 6);
	`})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "5\n", sr.stdout.String())
	assert.Contains(t, se.Message, "changed since it was first sent")
	assert.True(t, strings.HasPrefix(se.Message, "riot.doWork: blob "), se.Message)
}

// restartedConn is a fakeConn that uploads again (UploadingConn) as a
// job's connection does for a workunit lost in a restart of a riotd
// --memory before any worker took it: it asks upload for the spec's blobs
// on a goroutine of its own, and only then is the workunit handed out
// (WaitForWork).
type restartedConn struct{ *fakeConn }

func (c restartedConn) SubmitUploading(spec *workunit.Spec, opts workunit.Options, upload func(context.Context, []blob.Hash) error) Submission {
	ft, key := c.ft, spec.Key()
	ft.mu.Lock()
	ft.runs++
	ft.open[key] = true
	clear(ft.blobs) // the restart's
	ft.mu.Unlock()
	go func() {
		if err := upload(context.Background(), spec.Blobs); err != nil {
			ft.finish(&workunit.Outcome{Key: key, Status: workunit.StatusError, Err: &workunit.Error{Kind: workunit.Internal, Message: err.Error()}})
			return
		}
		ft.queue <- &Work{Key: key, Spec: spec, Blobs: ft.blobSource()}
	}()
	return &fakeSubmission{key: key, out: &workunit.Outcome{Key: key, Status: workunit.StatusWaiting}, c: c.fakeConn}
}

// TestMaster_UnknownBlob_UploadedAgain_WhileWaitingForWork: a script that
// takes work itself (client.waitForWork) while its connection asks it to
// upload a workunit's blobs again serves the request in that wait: the
// workunit it waits for is handed out only once they are uploaded. A
// regression test: the wait, with the script's context alone, never
// ended, nor did the request.
func TestMaster_UnknownBlob_UploadedAgain_WhileWaitingForWork(t *testing.T) {
	t.Parallel()
	ft := newFakeTracker(t, true)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.js"), []byte(`
		const big = Array.from({length: 300000}, (_, i) => i);
		const c = riot.currentClient();
		const id = c.addWorkunit((k) => big[k] + 1, 5);
		const [key, work] = c.waitForWork();
		c.completeWorkunit(key, false, work.fn(...work.args));
		console.log(key === id, c.waitForFinishedWorkunit(id)[3]);
	`), 0o644))
	conn, err := ft.connect(context.Background(), "localhost", 0, "me")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = RunScript(ctx, ScriptOptions{Path: filepath.Join(dir, "main.js"), Conn: restartedConn{conn.(*fakeConn)}, Connect: ft.connect, Stdout: &stdout, Stderr: &stderr})
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "true 6\n", stdout.String())
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.GreaterOrEqual(t, ft.uploads, 2, "the blob, uploaded before the submission and again")
}
