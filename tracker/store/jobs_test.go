package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/store"
)

// Jobs are kept across a reopen, replaced by realm, and deleted when
// forgotten; a store written before jobs existed has none.
func TestStore_Jobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenBolt(ctx, dir, store.BoltOptions{})
	require.NoError(t, err)
	jobs, err := st.LoadJobs(ctx)
	require.NoError(t, err)
	assert.Empty(t, jobs)

	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	a := store.Job{Realm: "ra", ID: "ja", Name: "a.js", Master: "laptop", Started: t0, Submitted: 3}
	b := store.Job{Realm: "rb", ID: "jb", Name: "b.js", Started: t0}
	require.NoError(t, st.PutJobs(ctx, []store.Job{a, b}, nil))
	a.Ended, a.Submitted = t0.Add(time.Minute), 5
	require.NoError(t, st.PutJobs(ctx, []store.Job{a}, []string{"rb"}))
	require.NoError(t, st.Close())

	st, err = store.OpenBolt(ctx, dir, store.BoltOptions{})
	require.NoError(t, err)
	defer st.Close()
	jobs, err = st.LoadJobs(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "a.js", jobs[0].Name)
	assert.Equal(t, uint64(5), jobs[0].Submitted)
	assert.True(t, jobs[0].Ended.Equal(t0.Add(time.Minute)))

	m := store.NewMemory()
	require.NoError(t, m.PutJobs(ctx, []store.Job{a, b}, nil))
	require.NoError(t, m.PutJobs(ctx, nil, []string{"ra"}))
	jobs, err = m.LoadJobs(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, "rb", jobs[0].Realm)
}
