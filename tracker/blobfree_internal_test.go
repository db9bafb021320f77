package tracker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// TestTrackRecords_RerunOfDoneRecordCountsSpec: a done record whose result
// is a blob, run again (a NoCache submission, or an error retried) and
// given to a worker within one Ready, shows up Running with a spec: its
// spec's blobs are what it names now, not the result's it named before.
// Before, the Running shortcut kept the result's blobs and the argument
// blob went uncounted (and was freed while the workunit ran).
func TestTrackRecords_RerunOfDoneRecordCountsSpec(t *testing.T) {
	st := store.NewMemory()
	l := &loop{s: &Server{blobs: newBlobBound(0, st, true, time.Minute)}, recBlobs: make(map[uint64]recNamed)}
	require.True(t, l.s.blobs.frees())
	arg, res := blob.Sum([]byte("argument")), blob.Sum([]byte("result"))
	s := workunit.Spec{Kind: workunit.Eval, Source: "1", Name: "t.js", Blobs: []blob.Hash{arg}}
	spec, err := s.MarshalBinary()
	require.NoError(t, err)
	doc, err := value.Marshal(value.BlobRef(res))
	require.NoError(t, err)
	now := time.Now()

	l.trackRecords([]table.Record{{ID: 1, Status: workunit.StatusWaiting, Spec: spec}}, now)
	l.trackRecords([]table.Record{{ID: 1, Status: workunit.StatusDone, Result: doc}}, now)
	require.Equal(t, int32(1), l.s.blobs.free.refs[res])
	require.Zero(t, l.s.blobs.free.refs[arg])

	l.trackRecords([]table.Record{{ID: 1, Status: workunit.StatusRunning, Spec: spec}}, now)
	require.Equal(t, int32(1), l.s.blobs.free.refs[arg], "the running workunit's argument blob is counted")
	require.Zero(t, l.s.blobs.free.refs[res], "the old result no longer named")
}
