package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// bigStore makes a store in a new directory with n finished records
// (results of a few hundred bytes: many pages), committed in batches, and
// returns the directory.
func bigStore(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)
	for i := 0; i < n; i += 50 {
		var batch []table.Record
		for j := i; j < min(i+50, n); j++ {
			batch = append(batch, table.Record{Key: key(j), ID: uint64(j + 1), Seq: int64(j + 1), Status: workunit.StatusDone,
				Result: []byte(fmtResult(j))})
		}
		require.NoError(t, s.Apply(ctx, batch))
	}
	require.NoError(t, s.Close())
	return dir
}

func fmtResult(i int) string {
	b := make([]byte, 300)
	for k := range b {
		b[k] = byte('a' + (i+k)%26)
	}
	return string(b)
}

// openAndLoad opens the store in dir and loads it, as riotd does.
func openAndLoad(dir string) ([]table.Record, error) {
	ctx := context.Background()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Load(ctx)
}

// openAndLoadChunks opens the store in dir and loads it in chunks, as
// riotd does, giving each to fn.
func openAndLoadChunks(dir string, fn func([]table.Record)) error {
	ctx := context.Background()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.LoadStoredChunks(ctx, 7, func(recs []table.Record) error { fn(recs); return nil })
}

// metaTxids reads the two meta pages' transaction numbers.
func metaTxids(t *testing.T, b []byte, psize int) [2]uint64 {
	t.Helper()
	return [2]uint64{parseMeta(b[:psize]).txid, parseMeta(b[psize : 2*psize]).txid}
}

func rewrite(t *testing.T, dir string, f func(b []byte) []byte) {
	t.Helper()
	p := filepath.Join(dir, FileName)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, f(b), 0o600))
}

// TestBolt_Open_Damaged: every way of damaging the file fails the open or
// the load with ErrCorrupt, naming the file; none panics, none opens an
// empty or older store.
func TestBolt_Open_Damaged(t *testing.T) {
	t.Parallel()
	psize := os.Getpagesize()
	tests := []struct {
		name     string
		damage   func(t *testing.T, dir string)
		rollback bool
	}{
		{"truncated to half", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte { return b[:len(b)/2] })
		}, false},
		{"truncated by its last page in use", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte {
				m, _, err := checkFile(filepath.Join(dir, FileName))
				require.NoError(t, err)
				return b[:int(m.hwm-1)*psize]
			})
		}, false},
		{"truncated inside the meta pages", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte { return b[:psize+100] })
		}, false},
		{"zero length", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte { return nil })
		}, false},
		{"both meta pages zeroed", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte { clear(b[:2*psize]); return b })
		}, false},
		{"the newer meta page zeroed", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte {
				tx := metaTxids(t, b, psize)
				i := 0
				if tx[1] > tx[0] {
					i = 1
				}
				clear(b[i*psize : (i+1)*psize])
				return b
			})
		}, true},
		{"a directory in its place", func(t *testing.T, dir string) {
			p := filepath.Join(dir, FileName)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o700))
		}, false},
		{"removed", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, FileName)))
		}, true},
		{"replaced by an older copy", func(t *testing.T, dir string) {
			// Stands for a backup restored over it: older, and whole.
			p := filepath.Join(dir, FileName)
			old, err := os.ReadFile(p)
			require.NoError(t, err)
			s, err := OpenBolt(context.Background(), dir, BoltOptions{})
			require.NoError(t, err)
			require.NoError(t, s.Apply(context.Background(), []table.Record{{Key: key(99999), ID: 99999, Status: workunit.StatusDone}}))
			require.NoError(t, s.Close())
			require.NoError(t, os.WriteFile(p, old, 0o600))
		}, true},
		{"a page number out of bounds", func(t *testing.T, dir string) {
			rewrite(t, dir, func(b []byte) []byte {
				// The root bucket's page (the newer meta's root) now points
				// far away.
				m := parseMeta(b[:psize])
				if tx := metaTxids(t, b, psize); tx[1] > tx[0] {
					m = parseMeta(b[psize : 2*psize])
				}
				binary.LittleEndian.PutUint64(b[m.root*uint64(psize):], 1<<40)
				return b
			})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := bigStore(t, 400)
			tt.damage(t, dir)
			recs, err := openAndLoad(dir)
			require.ErrorIs(t, err, ErrCorrupt, "opened, with %d records", len(recs))
			assert.Contains(t, err.Error(), filepath.Join(dir, FileName))
			if tt.rollback {
				assert.ErrorIs(t, err, ErrRolledBack)
			}
			t.Log(err)
		})
	}
}

// TestBolt_Open_OlderMetaZeroed: the meta page of the older transaction
// is what a crash during a commit leaves damaged (bbolt writes the new
// meta over the older one); the store opens at its last transaction, with
// every record.
func TestBolt_Open_OlderMetaZeroed(t *testing.T) {
	t.Parallel()
	psize := os.Getpagesize()
	dir := bigStore(t, 400)
	rewrite(t, dir, func(b []byte) []byte {
		tx := metaTxids(t, b, psize)
		i := 0
		if tx[0] > tx[1] {
			i = 1
		}
		clear(b[i*psize : (i+1)*psize])
		return b
	})
	recs, err := openAndLoad(dir)
	require.NoError(t, err)
	assert.Len(t, recs, 400)
}

// TestBolt_Open_FlippedBytes: random bytes flipped in the data pages (each
// seed flips a few, anywhere past the meta pages) fail the open or the
// load with ErrCorrupt, or change nothing that is read (a byte of free
// space); never a panic, never a record that differs.
func TestBolt_Open_FlippedBytes(t *testing.T) {
	t.Parallel()
	psize := os.Getpagesize()
	const n = 400
	failed := 0
	const seeds = 60
	for seed := range seeds {
		dir := bigStore(t, n)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		rewrite(t, dir, func(b []byte) []byte {
			for range 1 + rng.IntN(4) {
				off := 2*psize + rng.IntN(len(b)-2*psize)
				b[off] ^= byte(1 + rng.IntN(255))
			}
			return b
		})
		// riotd's load, a chunk at a time and decoded beside the caller,
		// of a copy: a file that bbolt's open panics on leaves its lock
		// held in this process (noted, not fixed).
		again := crashCopy(t, dir)
		recs, err := openAndLoad(dir)
		var chunked int
		cerr := openAndLoadChunks(again, func(rs []table.Record) { chunked += len(rs) })
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt, "seed %d", seed)
			require.ErrorIs(t, cerr, ErrCorrupt, "seed %d: in chunks", seed)
			failed++
			continue
		}
		require.NoError(t, cerr, "seed %d: in chunks", seed)
		require.Equal(t, n, chunked, "seed %d: in chunks", seed)
		require.Len(t, recs, n, "seed %d: opened with records lost", seed)
		for _, r := range recs {
			i := int(r.ID) - 1
			require.Equal(t, key(i), r.Key, "seed %d", seed)
			require.Equal(t, fmtResult(i), string(r.Result), "seed %d: record %d changed", seed, r.ID)
		}
	}
	t.Logf("%d of %d damaged files refused, the rest read the same", failed, seeds)
	assert.Positive(t, failed)
}

// TestDecodeRecord_Checksum: a byte changed anywhere in a record, or its
// ID, fails its checksum; version 1 records (no checksum) still decode.
func TestDecodeRecord_Checksum(t *testing.T) {
	t.Parallel()
	for _, r := range sampleRecords() {
		b := encodeRecord(nil, &r)
		for i := range b {
			c := append([]byte(nil), b...)
			c[i] ^= 0x10
			_, err := decodeRecord(r.ID, c)
			require.Error(t, err, "record %d, byte %d changed", r.ID, i)
		}
		_, err := decodeRecord(r.ID+1, append([]byte(nil), b...))
		require.ErrorContains(t, err, "checksum")
		if r.Scope != "" || r.Options.Retries > 0 {
			continue // version 1 records have no scope, nor retries
		}
		got, err := decodeRecord(r.ID, encodeV1(&r))
		require.NoError(t, err)
		assert.Equal(t, normalize([]table.Record{r}), normalize([]table.Record{got}))
	}
}

// TestBolt_GetBlob_Changed: a blob whose bytes changed in the file is
// reported as ErrCorrupt when it is read, never served.
func TestBolt_GetBlob_Changed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)
	data := []byte("module.exports = function () { return 'the blob of this test, findable in the file' }")
	h := blob.Sum(data)
	require.NoError(t, s.PutBlob(ctx, h, data))
	require.NoError(t, s.Close())
	rewrite(t, dir, func(b []byte) []byte {
		i := bytes.Index(b, []byte("findable"))
		require.Positive(t, i)
		b[i] = 'F'
		return b
	})
	s, err = OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err, "the pages are whole; only the blob's bytes changed")
	defer s.Close()
	_, err = s.GetBlob(ctx, h)
	require.ErrorIs(t, err, ErrCorrupt)
	_, _, err = s.ReadBlob(ctx, h, 0, make([]byte, 10))
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), h.Short())
}
