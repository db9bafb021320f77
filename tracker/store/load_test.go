package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// TestBolt_Load_ManyRecords: a store of a tree of several levels, with
// overflow pages (for the check at open), loads every record once, in ID
// order, as written, with Load and with LoadStored; and a damaged record
// among them fails the load with ErrCorrupt naming the first damaged one.
func TestBolt_Load_ManyRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{DirectCommits: true})
	require.NoError(t, err)
	defer s.Close()
	const n, chunk = 3*4096 + 17, 4096
	want := make([]table.Record, n)
	for i := range want {
		id := uint64(i + 1)
		var k workunit.Key
		binary.BigEndian.PutUint64(k[:], id)
		r := table.Record{Key: k, ID: id, Seq: int64(id), Owner: "m", LastChange: time.Unix(1_700_000_000, 0).UTC()}
		if i%3 == 0 {
			r.Status, r.Spec = workunit.StatusWaiting, fmt.Appendf(nil, "spec %d", id)
		} else {
			r.Status, r.Result, r.Worker = workunit.StatusDone, fmt.Appendf(nil, "result %d", id), "w"
		}
		if i%1000 == 1 {
			r.Result = bytes.Repeat([]byte{byte(i)}, 10_000) // overflow pages
		}
		want[i] = r
	}
	for i := 0; i < n; i += 1000 {
		require.NoError(t, s.Apply(ctx, want[i:min(i+1000, n)]))
	}
	// Reopened: the check at open walks a tree of branches, leaves and
	// overflow pages, and finds it whole.
	require.NoError(t, s.Close())
	s, err = OpenBolt(ctx, dir, BoltOptions{DirectCommits: true})
	require.NoError(t, err)
	defer s.Close()

	got, err := s.Load(ctx)
	require.NoError(t, err)
	require.Len(t, got, n)
	for i := range got {
		require.Equal(t, want[i].ID, got[i].ID, "record %d", i)
		assert.Equal(t, want[i].Status, got[i].Status, "record %d", i)
		assert.Equal(t, want[i].Spec, got[i].Spec, "record %d", i)
		assert.Equal(t, want[i].Result, got[i].Result, "record %d", i)
	}
	stored, err := s.LoadStored(ctx)
	require.NoError(t, err)
	require.Len(t, stored, n)
	for i, r := range stored {
		require.Equal(t, want[i].ID, r.ID, "record %d", i)
		if r.Status == workunit.StatusDone {
			assert.True(t, r.Stored, "record %d", i)
			assert.Nil(t, r.Result, "record %d", i)
		} else {
			assert.Equal(t, want[i].Spec, r.Spec, "record %d", i)
		}
	}

	// Damage two records in different chunks: the load names the first.
	require.NoError(t, s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		for _, id := range []uint64{2*chunk + 5, chunk + 3} {
			if err := b.Put(binary.BigEndian.AppendUint64(nil, id), []byte("not a record")); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, load := range []func(context.Context) ([]table.Record, error){s.Load, s.LoadStored} {
		_, err = load(ctx)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.ErrorContains(t, err, fmt.Sprintf("record %d:", chunk+3))
	}
}
