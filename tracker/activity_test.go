package tracker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// A recent run keeps a copy of its spec, not the frame the spec came in.
// A regression test: a 46-byte spec kept its 1 MiB frame alive.
func TestActivity_RecentSpecDoesNotPinTheFrame(t *testing.T) {
	t.Parallel()
	s := &Server{}
	s.metrics = s.newMetrics()
	l := &loop{s: s, act: newActivity()}
	frame := make([]byte, 1<<20)
	spec := frame[100:146]
	l.finishedRun(&conn{name: "w"}, workunit.Key{1}, table.LeaseInfo{Spec: spec}, workunit.StatusDone, nil, time.Millisecond)
	require.Len(t, l.act.recent, 1)
	assert.Equal(t, spec, l.act.recent[0].spec)
	assert.Less(t, cap(l.act.recent[0].spec), 1024, "a copy of the spec, not the frame")
}

// Ended jobs go after keepEndedJobs even when no new job comes, and take
// their share of the failure groups with them; a tracker whose store keeps
// no jobs notes nothing to write. A regression test: ended jobs stayed
// until a new job came, and the groups and the list to forget grew.
func TestActivity_EndedJobsGo(t *testing.T) {
	t.Parallel()
	a := newActivity() // keepsJobs false
	t0 := time.Unix(1000, 0)
	c := &conn{realm: "rabc", name: "m", job: "j.js"}
	a.connJob(c, t0)
	a.failed(&table.Record{Key: workunit.Key{2}, Owner: "rabc", LastChange: t0, Err: &workunit.Error{Name: "Error", Message: "x"}})
	a.connGone(c, t0)
	require.Len(t, a.jobs, 1)
	counts := func(string) table.OwnerCounts { return table.OwnerCounts{} }
	a.sample(t0, 0, 0, counts)
	a.sample(t0.Add(keepEndedJobs+throughEvery), 0, 0, counts)
	assert.Empty(t, a.jobs, "gone an hour after it ended, with no new job")
	assert.Empty(t, a.jobIDs)
	for _, g := range a.failures {
		assert.Empty(t, g.byOwner)
	}
	assert.Empty(t, a.forget, "no store of jobs: nothing to forget there")
	assert.Empty(t, a.dirty)
}
