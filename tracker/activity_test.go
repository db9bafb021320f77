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

// Once the ring of recent runs is full, a finished run reuses its slot's
// buffers: no allocation per run, and what the slot held before is gone.
// The workunit page copies a run's spec and console in the loop, so a later
// run that reuses the slot does not change what it shows.
func TestActivity_FinishedRunReusesTheRing(t *testing.T) {
	s := &Server{}
	s.metrics = s.newMetrics()
	l := &loop{s: s, act: newActivity()}
	c := &conn{name: "w"}
	spec := []byte("a spec of some forty bytes, or about so.")
	console := workunit.Console("console bytes")
	for i := range maxRecent {
		l.finishedRun(c, workunit.Key{byte(i), byte(i >> 8)}, table.LeaseInfo{Spec: spec}, workunit.StatusDone, console, time.Millisecond)
	}
	key := workunit.Key{0xfe, 0xff}
	allocs := testing.AllocsPerRun(100, func() {
		l.finishedRun(c, key, table.LeaseInfo{Spec: spec}, workunit.StatusDone, console, time.Millisecond)
	})
	assert.Zero(t, allocs, "a finished run in a full ring")

	other := []byte("another spec")
	l.finishedRun(c, key, table.LeaseInfo{Spec: other}, workunit.StatusError, nil, time.Millisecond)
	runs := l.act.recentRuns(1, nil)
	require.Len(t, runs, 1)
	assert.Equal(t, other, runs[0].spec)
	assert.Empty(t, runs[0].console, "the slot's earlier console is gone")
	assert.Equal(t, workunit.StatusError, runs[0].status)

	big := make([]byte, maxRecentSpec+1)
	l.finishedRun(c, key, table.LeaseInfo{Spec: big}, workunit.StatusDone, nil, time.Millisecond)
	runs = l.act.recentRuns(1, nil)
	assert.Nil(t, runs[0].spec, "too large to keep")
	assert.Equal(t, len(big), runs[0].specSize)
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
