package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// noCheckpoints are options under which no checkpoint runs but those a
// test calls (and Close's).
var noCheckpoints = BoltOptions{checkpointEvery: time.Hour}

// checkpointNow runs a checkpoint of s.
func checkpointNow(t *testing.T, s *Bolt) {
	t.Helper()
	require.NoError(t, s.use("checkpoint", func(*bolt.DB) error { return s.checkpoint() }))
}

// crashCopy copies the store's files in dir to a new directory, as a
// crash would leave them: what was written, the bbolt file without what
// the log holds.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, e.Name()), b, 0o600))
	}
	return out
}

// withBothBatches opens a store in dir without checkpoints and applies
// walBatches to it: what the log holds, the bbolt file not yet. The
// caller closes it.
func withBothBatches(t *testing.T, dir string) *Bolt {
	t.Helper()
	s, err := OpenBolt(context.Background(), dir, noCheckpoints)
	require.NoError(t, err)
	first, second := walBatches()
	require.NoError(t, s.Apply(context.Background(), first))
	require.NoError(t, s.Apply(context.Background(), second))
	return s
}

// reopenLoad opens the store in dir with opts and returns it (closed
// when the test ends) with what its Load gives.
func reopenLoad(t *testing.T, dir string, opts BoltOptions) (*Bolt, []table.Record) {
	t.Helper()
	s, err := OpenBolt(context.Background(), dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	got, err := s.Load(context.Background())
	require.NoError(t, err)
	return s, got
}

// walBatches are two batches: records made, then one finished (its
// result stored), one forgotten, one done kept with its stored result.
func walBatches() (first, second []table.Record) {
	first = sampleRecords()
	second = []table.Record{
		{Key: key(1), ID: 1, Seq: 1, Status: workunit.StatusDone, Result: []byte("one's result"), Worker: "w9"},
		{Key: key(4), ID: 4}, // a tombstone
		{Key: key(3), ID: 3, Seq: 3, Status: workunit.StatusDone, Stored: true}, // keeps its result
	}
	return first, second
}

// walExpected is what a store holds after walBatches.
func walExpected() []table.Record {
	recs := sampleRecords()
	out := recs[:0]
	for _, r := range recs {
		switch r.ID {
		case 1:
			r = table.Record{Key: key(1), ID: 1, Seq: 1, Status: workunit.StatusDone, Result: []byte("one's result"), Worker: "w9"}
		case 3:
			r = table.Record{Key: key(3), ID: 3, Seq: 3, Status: workunit.StatusDone, Result: recs[2].Result}
		case 4:
			continue
		}
		out = append(out, r)
	}
	return out
}

// TestBolt_Log_CrashBeforeCheckpoint: what Apply acknowledged is read
// from the log's overlay while the bbolt file lacks it, and a store
// opened on what a crash left (the log, the bbolt file without it)
// replays it.
func TestBolt_Log_CrashBeforeCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := withBothBatches(t, dir)
	defer s.Close()
	first, _ := walBatches()
	crashed := crashCopy(t, dir) // before the reads below, which checkpoint
	files, err := walFiles(crashed)
	require.NoError(t, err)
	require.Len(t, files, 1)

	got, err := s.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, normalize(walExpected()), normalize(got), "Load before a checkpoint")
	res, err := s.Result(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, first[2].Result, res, "a result kept from before")
	res, err = s.Result(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []byte("one's result"), res)
	_, err = s.Result(ctx, 4)
	assert.ErrorIs(t, err, ErrNotFound, "a forgotten record")

	r, err := OpenBolt(ctx, crashed, noCheckpoints)
	require.NoError(t, err)
	got, err = r.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, normalize(walExpected()), normalize(got), "Load after the crash")
	stored, err := r.LoadStored(ctx)
	require.NoError(t, err)
	for _, rec := range stored {
		if rec.Status == workunit.StatusDone {
			assert.True(t, rec.Stored, "record %d", rec.ID)
			assert.Nil(t, rec.Result, "record %d", rec.ID)
		}
	}
	require.NoError(t, r.Close())
	files, err = walFiles(crashed)
	require.NoError(t, err)
	assert.Empty(t, files, "a closed store has applied and removed its log")

	// And once more, from the bbolt file alone.
	_, got = reopenLoad(t, crashed, BoltOptions{DirectCommits: true})
	assert.Equal(t, normalize(walExpected()), normalize(got), "the bbolt file after the replay")
}

// TestBolt_Log_Checkpoint: a checkpoint moves the log's batches to the
// bbolt file and removes the log files that held them, and Apply goes on
// in a new one.
func TestBolt_Log_Checkpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, noCheckpoints)
	require.NoError(t, err)
	defer s.Close()
	first, second := walBatches()
	require.NoError(t, s.Apply(ctx, first))
	before, err := walFiles(dir)
	require.NoError(t, err)
	require.Len(t, before, 1)
	checkpointNow(t, s)
	after, err := walFiles(dir)
	require.NoError(t, err)
	require.Len(t, after, 1)
	assert.NotEqual(t, before[0].path, after[0].path, "the old file is gone, a new one is written")
	s.walMu.Lock()
	assert.Empty(t, s.wal.marks, "nothing is marked once checkpointed")
	s.walMu.Unlock()
	require.NoError(t, s.Apply(ctx, second))

	crashed := crashCopy(t, dir)
	r, err := OpenBolt(ctx, crashed, noCheckpoints)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, normalize(walExpected()), normalize(got))
}

// TestBolt_Log_TornTail: an entry a crash cut short at the end of the
// log (never acknowledged) is dropped at open; the entries before it are
// applied.
func TestBolt_Log_TornTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cut := range []int{3, walHeader + 5} {
		dir := t.TempDir()
		s, err := OpenBolt(ctx, dir, noCheckpoints)
		require.NoError(t, err)
		first, _ := walBatches()
		require.NoError(t, s.Apply(ctx, first))
		crashed := crashCopy(t, dir)
		require.NoError(t, s.Close())
		files, err := walFiles(crashed)
		require.NoError(t, err)
		require.Len(t, files, 1)
		// Half of a second entry.
		e := walEntry{seq: 2, recs: []walRec{{kind: walPut, rec: table.Record{Key: key(50), ID: 50, Status: workunit.StatusDone, Result: []byte("x")}}}}
		part := appendWalEntry(nil, &e)[:cut]
		f, err := os.OpenFile(files[0].path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.Write(part)
		require.NoError(t, err)
		require.NoError(t, f.Close())

		r, err := OpenBolt(ctx, crashed, noCheckpoints)
		require.NoError(t, err, "cut after %d bytes", cut)
		got, err := r.Load(ctx)
		require.NoError(t, err)
		assert.Equal(t, normalize(sampleRecords()), normalize(got), "cut after %d bytes", cut)
		// The next Apply is entry 2 again, in a file of its own.
		require.NoError(t, r.Apply(ctx, []table.Record{e.recs[0].rec}))
		require.NoError(t, r.Close())
		r, err = OpenBolt(ctx, crashed, noCheckpoints)
		require.NoError(t, err)
		res, err := r.Result(ctx, 50)
		require.NoError(t, err)
		assert.Equal(t, []byte("x"), res)
		require.NoError(t, r.Close())
	}
}

// TestBolt_Log_Gap: entries missing from the middle of the log fail the
// open with ErrCorrupt, naming the file: acknowledged batches are lost.
func TestBolt_Log_Gap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, noCheckpoints)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	var b []byte
	for _, seq := range []uint64{1, 3} {
		e := walEntry{seq: seq, recs: []walRec{{kind: walPut, rec: table.Record{Key: key(int(seq)), ID: seq, Status: workunit.StatusDone, Result: []byte("r")}}}}
		b = appendWalEntry(b, &e)
	}
	p := filepath.Join(dir, walPrefix+"7")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	_, err = OpenBolt(ctx, dir, noCheckpoints)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), "missing")
}

// TestBolt_Log_LeftoverFileSkipped: a log file left behind after its
// checkpoint (a crash before its removal) holds entries the bbolt file
// has: the open skips them rather than apply them again.
func TestBolt_Log_LeftoverFileSkipped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, noCheckpoints)
	require.NoError(t, err)
	first, second := walBatches()
	require.NoError(t, s.Apply(ctx, first))
	files, err := walFiles(dir)
	require.NoError(t, err)
	old, err := os.ReadFile(files[0].path)
	require.NoError(t, err)
	require.NoError(t, s.Apply(ctx, second))
	require.NoError(t, s.Close())
	// The first entry's file comes back: replayed, it would bring back
	// the forgotten record 4 and record 1 as it was.
	require.NoError(t, os.WriteFile(files[0].path, old, 0o600))
	r, err := OpenBolt(ctx, dir, noCheckpoints)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, normalize(walExpected()), normalize(got))
}

// TestBolt_Log_ReadOnly: a read-only store reads what the log holds
// without applying it.
func TestBolt_Log_ReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := withBothBatches(t, dir)
	crashed := crashCopy(t, dir)
	require.NoError(t, s.Close())
	r, got := reopenLoad(t, crashed, BoltOptions{ReadOnly: true})
	assert.Equal(t, normalize(walExpected()), normalize(got))
	files, err := walFiles(crashed)
	require.NoError(t, err)
	assert.Len(t, files, 1, "the log is left as it was")
	_, second := walBatches()
	assert.ErrorIs(t, r.Apply(ctx, second), ErrReadOnly)
}

// TestBolt_Log_ResultBeforeCheckpoint: Result of a record the log holds
// and the bbolt file not yet is read (the store checkpoints first), and
// a kept result is checked against the log.
func TestBolt_Log_ResultBeforeCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenBolt(ctx, t.TempDir(), noCheckpoints)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Apply(ctx, []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusDone, Result: []byte("r1")}}))
	require.NoError(t, s.Apply(ctx, []table.Record{{Key: key(1), ID: 1, Status: workunit.StatusDone, Stored: true}}),
		"a result kept that only the log holds")
	err = s.Apply(ctx, []table.Record{{Key: key(2), ID: 2, Status: workunit.StatusDone, Stored: true}})
	require.ErrorIs(t, err, ErrNotFound, "a result kept that nothing holds")
	require.NoError(t, s.Apply(ctx, []table.Record{{Key: key(3), ID: 3, Status: workunit.StatusWaiting, Spec: []byte("s")}}))
	err = s.Apply(ctx, []table.Record{{Key: key(3), ID: 3, Status: workunit.StatusDone, Stored: true}})
	require.ErrorIs(t, err, ErrNotFound, "a result kept of a record the log holds as waiting")
	res, err := s.Result(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []byte("r1"), res)
	_, err = s.Result(ctx, 3)
	assert.ErrorIs(t, err, ErrNotFound)
}

// TestBolt_Log_DirectCommitsReplays: a store opened with DirectCommits on
// a directory whose log a crash left applies that log first (it once
// served the bbolt file alone: the log's batches, acknowledged, were
// lost) and removes it.
func TestBolt_Log_DirectCommitsReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := withBothBatches(t, dir)
	defer s.Close()
	crashed := crashCopy(t, dir)

	r, got := reopenLoad(t, crashed, BoltOptions{DirectCommits: true})
	assert.Equal(t, normalize(walExpected()), normalize(got))
	files, err := walFiles(crashed)
	require.NoError(t, err)
	assert.Empty(t, files, "the log, applied, is removed")
	require.NoError(t, r.Apply(ctx, []table.Record{{Key: key(5), ID: 5, Seq: 5, Status: workunit.StatusWaiting, Spec: []byte("five")}}))
	require.NoError(t, r.Close())
	files, err = walFiles(crashed)
	require.NoError(t, err)
	assert.Empty(t, files, "a direct commit writes no log")
}

// logEntry is the bytes of log entry seq putting done record id with
// result res.
func logEntry(seq, id uint64, res string) []byte {
	e := walEntry{seq: seq, recs: []walRec{{kind: walPut, rec: table.Record{Key: key(int(id)), ID: id, Status: workunit.StatusDone, Result: []byte(res)}}}}
	return appendWalEntry(nil, &e)
}

// emptyStore makes a store in a new directory and closes it.
func emptyStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := OpenBolt(context.Background(), dir, noCheckpoints)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return dir
}

// TestBolt_Log_DamageBeforeEntries: an entry whose checksum fails with
// entries after it is damage, not a write a crash cut short: the open
// fails (it opened, and dropped the acknowledged entry 3).
func TestBolt_Log_DamageBeforeEntries(t *testing.T) {
	t.Parallel()
	dir := emptyStore(t)
	damaged := logEntry(2, 2, "b")
	damaged[len(damaged)-1] ^= 0xff
	b := slices.Concat(logEntry(1, 1, "a"), damaged, logEntry(3, 3, "c"))
	p := filepath.Join(dir, walPrefix+"0")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	_, err := OpenBolt(context.Background(), dir, noCheckpoints)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, p)
	assert.ErrorContains(t, err, "checksum")
}

// TestBolt_Log_ZeroTail: zero bytes after the last entry (the file's size
// reached the disk, its bytes not) are a write a crash interrupted: the
// open drops them (it failed with ErrCorrupt).
func TestBolt_Log_ZeroTail(t *testing.T) {
	t.Parallel()
	dir := emptyStore(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, walPrefix+"0"), append(logEntry(1, 1, "a"), make([]byte, 64)...), 0o600))
	_, got := reopenLoad(t, dir, noCheckpoints)
	require.Len(t, got, 1)
	assert.Equal(t, uint64(1), got[0].ID)
}

// TestBolt_Log_RewrittenAfterFailedSync: an entry whose sync failed (not
// acknowledged, yet whole in its file) and that the writer wrote again,
// with the same number, in the next file: the later one counts (the open
// failed, saying entries were missing).
func TestBolt_Log_RewrittenAfterFailedSync(t *testing.T) {
	t.Parallel()
	dir := emptyStore(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, walPrefix+"0"), slices.Concat(logEntry(1, 1, "a"), logEntry(2, 2, "not acknowledged")), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, walPrefix+"1"), logEntry(2, 2, "acknowledged"), 0o600))
	s, _ := reopenLoad(t, dir, noCheckpoints)
	res, err := s.Result(context.Background(), 2)
	require.NoError(t, err)
	assert.Equal(t, "acknowledged", string(res))
	res, err = s.Result(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, "a", string(res))
}

// TestBolt_Checkpoint_LaterRecordsWin: a checkpoint writes only the last
// whole write of a record among those it applies, but keeps a write that
// a later walKeepResult reads its result from: what the file holds
// afterwards is what every write in order would have made it.
func TestBolt_Checkpoint_LaterRecordsWin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, noCheckpoints)
	require.NoError(t, err)
	t0 := time.Unix(1_700_000_000, 0).UTC()
	waiting := func(id uint64) table.Record {
		return table.Record{Key: key(int(id)), ID: id, Seq: int64(id), Spec: []byte("spec"), Status: workunit.StatusWaiting, LastChange: t0}
	}
	done := func(id uint64, res string) table.Record {
		r := waiting(id)
		r.Spec, r.Status, r.Result, r.Worker = nil, workunit.StatusDone, []byte(res), "w1"
		return r
	}
	kept := done(1, "")
	kept.Result, kept.Stored = nil, true
	for _, batch := range [][]table.Record{
		{waiting(1), waiting(2), waiting(3)},
		{done(1, "one"), done(2, "two, first")},
		{kept, {Key: key(3), ID: 3}, done(2, "two, again")}, // 1 keeps "one"; 3 is forgotten
	} {
		require.NoError(t, s.Apply(ctx, batch))
	}
	assert.Equal(t, []bool{true, true, true, false, true, false, false, false}, superseded(s.wal.entries),
		"the earlier writes of 1 (but the one its kept result is read from), 2 and 3 are skipped")
	checkpointNow(t, s)
	require.NoError(t, s.Close())

	_, got := reopenLoad(t, dir, noCheckpoints)
	want1 := done(1, "one")
	assert.Equal(t, normalize([]table.Record{want1, done(2, "two, again")}), normalize(got))
}

// TestBolt_LoadStoredChunks: the records come in chunks of the size asked,
// in ID order, as LoadStored gives them, what the log holds included; an
// error of the caller's function ends the load and comes back as it was.
func TestBolt_LoadStoredChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := withBothBatches(t, t.TempDir()) // the second batch still in the log
	defer s.Close()
	want, err := s.LoadStored(ctx)
	require.NoError(t, err)
	var got []table.Record
	var sizes []int
	require.NoError(t, s.LoadStoredChunks(ctx, 2, func(recs []table.Record) error {
		sizes = append(sizes, len(recs))
		got = append(got, recs...) // what the records point to is theirs, not the chunk's
		return nil
	}))
	assert.Equal(t, normalize(want), normalize(got))
	require.NotEmpty(t, sizes)
	for _, n := range sizes[:len(sizes)-1] {
		assert.Equal(t, 2, n)
	}
	stop := errors.New("enough")
	for after := 1; after <= 3; after++ {
		calls := 0
		err = s.LoadStoredChunks(ctx, 1, func([]table.Record) error {
			if calls++; calls == after {
				return stop
			}
			return nil
		})
		assert.Same(t, stop, err)
		assert.Equal(t, after, calls, "no chunk after the error")
	}
}

// TestBolt_LoadStoredChunks_FnPanics: a panic of the caller's function
// goes up to the caller, and the decoding ends: the store closes after it.
func TestBolt_LoadStoredChunks_FnPanics(t *testing.T) {
	t.Parallel()
	s := withBothBatches(t, t.TempDir())
	func() {
		defer func() { assert.Equal(t, "fake: a bug of the caller's", recover()) }()
		_ = s.LoadStoredChunks(context.Background(), 1, func([]table.Record) error { panic("fake: a bug of the caller's") })
	}()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the load that ended")
	}
}
