package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// randomBatch is a batch of 1 to 5 records of IDs 1 to 30, each of a
// random state: waiting, running, done, failed, a tombstone, or done
// keeping its stored result (which the store may not have: the batch is
// then refused).
func randomBatch(rng *rand.Rand, step int) []table.Record {
	batch := make([]table.Record, 1+rng.IntN(5))
	for i := range batch {
		id := uint64(1 + rng.IntN(30))
		r := table.Record{ID: id, Key: key(int(id)), Seq: int64(step), Owner: "o", Worker: fmt.Sprintf("w%d", step)}
		switch rng.IntN(6) {
		case 0:
			r.Status, r.Spec = workunit.StatusWaiting, []byte(fmt.Sprintf("spec %d.%d", step, i))
		case 1:
			r.Status, r.Spec = workunit.StatusRunning, []byte(fmt.Sprintf("spec %d.%d", step, i))
		case 2:
			r.Status, r.Result = workunit.StatusDone, []byte(fmt.Sprintf("result %d.%d", step, i))
		case 3:
			r.Status, r.Err = workunit.StatusError, &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "m"}
		case 4:
			r = table.Record{ID: id, Key: key(int(id))} // a tombstone
		case 5:
			r.Status, r.Stored = workunit.StatusDone, true
		}
		batch[i] = r
	}
	return batch
}

// A deferred store answers every read as a store that commits each Apply
// does, whatever its overlay holds when (flushes every 7 records here),
// through Apply and ApplyEncoded alike: random batches of waiting,
// running, done, failed, deleted records and records that keep their
// stored result (refused, writing nothing, when there is none), with
// every Result read after each batch and a Load now and then; and the
// file it leaves at Close holds the same.
func TestBolt_Deferred_ReadsAsDirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			direct, err := OpenBolt(ctx, t.TempDir(), BoltOptions{NoSync: true})
			require.NoError(t, err)
			defer direct.Close()
			dir := t.TempDir()
			def, err := OpenBolt(ctx, dir, BoltOptions{Deferred: true, deferRecords: 7})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(seed, 19))
			sawPending, refused := false, 0
			for step := range 300 {
				batch := randomBatch(rng, step)
				var derr, ferr error
				if step%2 == 0 {
					derr, ferr = direct.Apply(ctx, batch), def.Apply(ctx, batch)
				} else {
					enc := EncodeBatch(batch)
					derr, ferr = direct.ApplyEncoded(ctx, enc), def.ApplyEncoded(ctx, enc)
				}
				require.Equal(t, derr == nil, ferr == nil, "step %d: direct %v, deferred %v", step, derr, ferr)
				if derr != nil {
					require.ErrorIs(t, derr, ErrNotFound)
					require.ErrorIs(t, ferr, ErrNotFound)
					refused++
				}
				sawPending = sawPending || def.Pending() > 0
				for id := uint64(1); id <= 30; id++ {
					want, werr := direct.Result(ctx, id)
					got, gerr := def.Result(ctx, id)
					require.Equal(t, errors.Is(werr, ErrNotFound), errors.Is(gerr, ErrNotFound), "step %d, record %d: direct %v, deferred %v", step, id, werr, gerr)
					require.Equal(t, string(want), string(got), "step %d, record %d", step, id)
				}
				if step%25 == 24 {
					want, err := direct.Load(ctx)
					require.NoError(t, err)
					got, err := def.Load(ctx)
					require.NoError(t, err)
					require.Equal(t, normalize(want), normalize(got), "step %d", step)
					assert.Zero(t, def.Pending(), "after a Load")
				}
			}
			require.True(t, sawPending, "the overlay never held a record")
			require.NotZero(t, refused, "no batch was refused")
			require.NoError(t, def.Close())
			want, err := direct.LoadStored(ctx)
			require.NoError(t, err)
			reopened, err := OpenBolt(ctx, dir, BoltOptions{NoSync: true})
			require.NoError(t, err)
			defer reopened.Close()
			got, err := reopened.LoadStored(ctx)
			require.NoError(t, err)
			require.Equal(t, normalize(want), normalize(got))
		})
	}
}

// Records a deferred store holds in its overlay are in a copy begun
// after them (BeginCopy flushes first), and not before a flush in the
// file.
func TestBolt_Deferred_CopyHoldsTheOverlay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true})
	require.NoError(t, err)
	defer s.Close()
	recs := sampleRecords()
	require.NoError(t, s.ApplyEncoded(ctx, EncodeBatch(recs)))
	require.Equal(t, len(recs), s.Pending())

	c, err := s.BeginCopy()
	require.NoError(t, err)
	assert.Zero(t, s.Pending())
	path := filepath.Join(t.TempDir(), FileName)
	writeCopy(t, c, path)
	copied, err := OpenBolt(ctx, filepath.Dir(path), BoltOptions{ReadOnly: true})
	require.NoError(t, err)
	defer copied.Close()
	got, err := copied.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, normalize(recs), normalize(got))
}

// A batch whose record was changed after it was encoded (its checksum
// fails) is refused with ErrCorrupt, and nothing of it is written.
func TestBolt_Deferred_ApplyEncoded_Corrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true})
	require.NoError(t, err)
	defer s.Close()
	recs := sampleRecords()
	enc := EncodeBatch(recs)
	enc[len(enc)-10] ^= 1 // in the last record
	err = s.ApplyEncoded(ctx, enc)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "batch record 9")
	assert.Zero(t, s.Pending())
	got, err := s.Load(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// writeCopy writes c out to path, and closes it.
func writeCopy(t *testing.T, c *Copy, path string) {
	t.Helper()
	defer c.Close()
	fd, err := os.Create(path)
	require.NoError(t, err)
	_, err = c.WriteTo(fd)
	require.NoError(t, errors.Join(err, fd.Close()))
}

// Readers of a deferred store see every record whose Apply returned,
// while later Applies go on and flush the overlay to the file (every 5
// records here): never a record neither in the overlay nor in the file.
func TestBolt_Deferred_ReadsWhileFlushing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true, deferRecords: 5})
	require.NoError(t, err)
	defer s.Close()
	var applied atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(1, 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := applied.Load()
				if n == 0 {
					continue
				}
				id := 1 + rng.Uint64N(n)
				res, err := s.Result(ctx, id)
				if err == nil && string(res) != fmt.Sprintf("result %d", id) {
					err = fmt.Errorf("result %q", res)
				}
				if err != nil {
					errs <- fmt.Errorf("record %d, of %d applied: %w", id, n, err)
					return
				}
			}
		}()
	}
	for id := uint64(1); id <= 2000; id += 2 {
		batch := []table.Record{
			{ID: id, Key: key(int(id)), Status: workunit.StatusDone, Result: []byte(fmt.Sprintf("result %d", id))},
			{ID: id + 1, Key: key(int(id + 1)), Status: workunit.StatusDone, Result: []byte(fmt.Sprintf("result %d", id+1))},
		}
		require.NoError(t, s.ApplyEncoded(ctx, EncodeBatch(batch)))
		applied.Store(id + 1)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// The overlay keeps the batches its records came in (ApplyEncoded keeps
// their bytes): a batch whose large record a later one replaces is still
// held for its small one. So the bound on bytes counts the batches taken
// since the last flush, not the records' bytes still in the overlay: 400
// batches of 100 KB, each a new small record and the large one again,
// are flushed before they hold 40 MB (they were held until 8192
// records).
func TestBolt_Deferred_BoundsTheBatchesItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true})
	require.NoError(t, err)
	defer s.Close()
	large := make([]byte, 100<<10)
	flushed := false
	for i := range 400 {
		batch := []table.Record{
			{ID: uint64(i + 1), Key: key(i + 1), Status: workunit.StatusWaiting, Spec: []byte("small")},
			{ID: 1 << 20, Key: key(1 << 20), Status: workunit.StatusWaiting, Spec: large},
		}
		before := s.Pending()
		require.NoError(t, s.ApplyEncoded(ctx, EncodeBatch(batch)))
		if s.Pending() < before {
			flushed = true
		}
	}
	assert.True(t, flushed, "400 batches of 100 KB held without a flush (%d records pending)", s.Pending())
}

// A flush that fails (here: a record that keeps its stored result, with
// a valid checksum over bytes that do not decode, which only the flush
// decodes) fails the Apply that makes it, and nothing of that Apply's
// batch is read afterwards: a batch is all or nothing.
func TestBolt_Deferred_FailedFlush_FailsItsBatchWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true, deferRecords: 2})
	require.NoError(t, err)
	defer s.Close()
	done := table.Record{ID: 1, Key: key(1), Status: workunit.StatusDone, Result: []byte("one")}
	require.NoError(t, s.Apply(ctx, []table.Record{done}))
	require.NoError(t, s.Flush(ctx))

	// Record 1 again, keeping its stored result, its Seq not an integer
	// (a text string's major type) and its checksum made to match.
	kept := done
	kept.Result, kept.Seq = nil, 7
	enc := encodeRecord(nil, &kept)
	seqAt := 2 + 2 + 32 + 1
	require.Equal(t, byte(7), enc[seqAt])
	enc[seqAt] = 0x60 // an empty text string
	binary.BigEndian.PutUint32(enc[len(enc)-4:], recordSum(1, enc[:len(enc)-4]))
	batch := []byte{batchVersion, 1}
	batch = binary.BigEndian.AppendUint64(batch, 1)
	batch = append(batch, recStored)
	batch = binary.AppendUvarint(batch, uint64(len(enc)))
	batch = append(batch, enc...)
	require.NoError(t, s.ApplyEncoded(ctx, batch))

	next := table.Record{ID: 2, Key: key(2), Status: workunit.StatusDone, Result: []byte("two")}
	other := table.Record{ID: 3, Key: key(3), Status: workunit.StatusDone, Result: []byte("three")}
	err = s.ApplyEncoded(ctx, EncodeBatch([]table.Record{next, other}))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = s.Result(ctx, 2)
	assert.ErrorIs(t, err, ErrNotFound, "a record of the batch that failed")
}
