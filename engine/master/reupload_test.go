package master

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
