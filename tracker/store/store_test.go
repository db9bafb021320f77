package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func key(n int) workunit.Key {
	var k workunit.Key
	binary.BigEndian.PutUint64(k[:], uint64(n)+1)
	return k
}

// sampleRecords holds one record of each kind, with every field set.
func sampleRecords() []table.Record {
	t0 := time.Unix(1_700_000_000, 123456789)
	return []table.Record{
		{Key: key(1), ID: 1, Seq: 1, Spec: []byte("spec one"), Options: workunit.Options{GPUs: 2, Timeout: 5 * time.Second}, Owner: "alice",
			Status: workunit.StatusWaiting, LastChange: t0},
		{Key: key(2), ID: 2, Seq: -3, Spec: []byte("spec two"), Owner: "bob", Status: workunit.StatusRunning, Worker: "w1",
			LastChange: t0.Add(time.Second), LostFrom: []string{"w0", "w\xff odd"}, Deliveries: 2},
		{Key: key(3), ID: 3, Seq: 3, Options: workunit.Options{NoCache: true}, Status: workunit.StatusDone, Worker: "w2",
			Result: []byte{0xa1, 0x61, 0x78, 0x01}, LastChange: t0.Add(2 * time.Second), Deliveries: 1},
		{Key: key(4), ID: 4, Seq: 4, Status: workunit.StatusError, Worker: "w3", Deliveries: 1, Err: &workunit.Error{
			Kind: workunit.Thrown, Name: "TypeError", Message: "x is not a function", Stack: "at f (job.js:1:2)",
			Value: []byte{0x18, 0x2a}, Worker: "w3", Key: key(4)}},
		{Key: key(5), ID: 5, Seq: 5, Status: workunit.StatusError, LostFrom: []string{"a", "b", "c"}, Deliveries: 3,
			Err: &workunit.Error{Kind: workunit.WorkersLost, Name: "WorkersLostError", Message: "lost by 3 workers: a, b, c"}},
		{Key: key(6), ID: 6, Seq: 6, Status: workunit.StatusDone, Result: []byte{}},
		// The key of record 3 again, in a memo scope of its own: another
		// workunit.
		{Key: key(3), ID: 7, Seq: 7, Scope: "bob", Status: workunit.StatusDone, Worker: "w2", Result: []byte("bob's"), Owner: "r-bob"},
		// With retries: one waiting with an attempt spent, one failed
		// after all its attempts.
		{Key: key(8), ID: 8, Seq: -8, Spec: []byte("spec eight"), Status: workunit.StatusWaiting, Deliveries: 1,
			Options:  workunit.Options{Retries: 2, RetryOn: []string{"TypeError", "Net\xffError"}},
			Attempts: []workunit.Attempt{{Worker: "w1", Name: "TypeError", Message: "flaky"}}},
		{Key: key(9), ID: 9, Seq: 9, Status: workunit.StatusError, Worker: "w2", Deliveries: 2, Options: workunit.Options{Retries: 1},
			Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "two", Worker: "w2", Key: key(9),
				Attempts: []workunit.Attempt{{Worker: "w1", Name: "Error", Message: "one"}, {Worker: "w2", Name: "Error", Message: "two"}}}},
	}
}

// normalize makes records comparable: times in UTC, empty lists nil.
func normalize(recs []table.Record) []table.Record {
	out := make([]table.Record, len(recs))
	for i, r := range recs {
		if !r.LastChange.IsZero() {
			r.LastChange = r.LastChange.UTC()
		}
		if len(r.LostFrom) == 0 {
			r.LostFrom = nil
		}
		out[i] = r
	}
	return out
}

type opener func(t *testing.T) Store

func openers() map[string]opener {
	return map[string]opener{
		"memory": func(t *testing.T) Store { return NewMemory() },
		"bolt": func(t *testing.T) Store {
			s, err := OpenBolt(context.Background(), t.TempDir(), BoltOptions{})
			require.NoError(t, err)
			return s
		},
		"deferred": func(t *testing.T) Store {
			s, err := OpenBolt(context.Background(), t.TempDir(), BoltOptions{Deferred: true})
			require.NoError(t, err)
			return s
		},
	}
}

func TestStore_Apply_RoundTrip(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			defer s.Close()
			recs := sampleRecords()
			require.NoError(t, s.Apply(ctx, recs))
			got, err := s.Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, normalize(recs), normalize(got))

			// A record replaces the stored one; a finished one has no spec.
			upd := recs[0]
			upd.Status, upd.Spec, upd.Result = workunit.StatusDone, nil, []byte("r")
			require.NoError(t, s.Apply(ctx, []table.Record{upd}))
			got, err = s.Load(ctx)
			require.NoError(t, err)
			require.Len(t, got, len(recs))
			assert.Equal(t, workunit.StatusDone, got[0].Status)
			assert.Nil(t, got[0].Spec)
			assert.Equal(t, []byte("r"), got[0].Result)

			err = s.Apply(ctx, []table.Record{{Key: key(9), Status: workunit.StatusDone}})
			require.Error(t, err, "a record needs an ID")
			assert.Contains(t, err.Error(), "no ID")
			require.NoError(t, s.Apply(ctx, nil))
		})
	}
}

// TestStore_Apply_Tombstone: a record with Status Unknown deletes the
// stored record of its ID, and only that one: a tombstone listed before a
// new record of the same key (a forgotten workunit submitted again) leaves
// the new record.
func TestStore_Apply_Tombstone(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			defer s.Close()
			recs := sampleRecords()
			require.NoError(t, s.Apply(ctx, recs))

			again := table.Record{Key: recs[3].Key, ID: 8, Seq: 8, Spec: []byte("again"), Status: workunit.StatusWaiting}
			require.NoError(t, s.Apply(ctx, []table.Record{
				{Key: recs[2].Key, ID: recs[2].ID},
				{Key: recs[3].Key, ID: recs[3].ID},
				again,
				{Key: key(9), ID: 9}, // never stored: nothing to delete
			}))
			got, err := s.Load(ctx)
			require.NoError(t, err)
			want := []table.Record{recs[0], recs[1], recs[4], recs[5], recs[6], again}
			assert.Equal(t, normalize(want), normalize(got))
		})
	}
}

func TestStore_Blob_RoundTrip(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			defer s.Close()
			data := []byte("a module's source")
			h := blob.Sum(data)
			have, err := s.HasBlob(ctx, h)
			require.NoError(t, err)
			assert.False(t, have)
			_, err = s.GetBlob(ctx, h)
			require.ErrorIs(t, err, blob.ErrNotFound)

			require.NoError(t, s.PutBlob(ctx, h, data))
			require.NoError(t, s.PutBlob(ctx, h, data), "a second put is a no-op")
			data[0] = 'X' // the store kept its own copy
			got, err := s.GetBlob(ctx, h)
			require.NoError(t, err)
			assert.Equal(t, []byte("a module's source"), got)
			have, err = s.HasBlob(ctx, h)
			require.NoError(t, err)
			assert.True(t, have)

			err = s.PutBlob(ctx, blob.Sum([]byte("other")), []byte("not other"))
			require.ErrorIs(t, err, ErrBlobMismatch)

			empty := blob.Sum(nil)
			require.NoError(t, s.PutBlob(ctx, empty, nil))
			got, err = s.GetBlob(ctx, empty)
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

func TestStore_Close_ThenErrClosed(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")
			require.ErrorIs(t, s.Apply(ctx, sampleRecords()), ErrClosed)
			_, err := s.Load(ctx)
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, s.PutBlob(ctx, blob.Sum(nil), nil), ErrClosed)
			_, err = s.GetBlob(ctx, blob.Sum(nil))
			require.ErrorIs(t, err, ErrClosed)
			_, err = s.HasBlob(ctx, blob.Sum(nil))
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}

func TestStore_Context_Canceled(t *testing.T) {
	t.Parallel()
	for name, open := range openers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.ErrorIs(t, s.Apply(ctx, sampleRecords()), context.Canceled)
			_, err := s.Load(ctx)
			require.ErrorIs(t, err, context.Canceled)
			got, err := s.Load(context.Background())
			require.NoError(t, err)
			assert.Empty(t, got, "a canceled Apply wrote nothing")
		})
	}
}

// TestBolt_Restart_TableRestore runs a table against a bolt store, closes
// the file, reopens it and restores a new table from it.
func TestBolt_Restart_TableRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c, err := OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)

	tab := table.New(table.Config{})
	flush := func() []table.Message {
		rd := tab.Ready()
		require.NoError(t, c.Apply(ctx, rd.Persist))
		var sent []table.Message
		for _, m := range rd.Send {
			if a, ok := m.(*table.Assign); ok {
				cp := *a
				sent = append(sent, &cp)
			}
		}
		tab.Advance(rd)
		return sent
	}
	require.NoError(t, tab.Step(table.Tick{Now: time.Unix(1000, 0)}))
	for i := 0; i < 4; i++ {
		require.NoError(t, tab.Step(table.Submit{Master: 1, Key: key(i), Spec: []byte{byte('a' + i)}}))
	}
	require.NoError(t, tab.Step(table.WorkerJoin{Worker: 1, Name: "w1", Slots: 3, Credit: 3}))
	sent := flush()
	require.Len(t, sent, 3)
	a0, a1 := sent[0].(*table.Assign), sent[1].(*table.Assign)
	require.NoError(t, tab.Step(table.Complete{Worker: 1, Key: a0.Key, Token: a0.Token, Result: []byte("zero")}))
	require.NoError(t, tab.Step(table.Fail{Worker: 1, Key: a1.Key, Token: a1.Token,
		Err: &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: "no"}}))
	flush()
	require.NoError(t, c.Close())

	s, err := OpenBolt(ctx, dir, BoltOptions{})
	require.NoError(t, err)
	defer s.Close()
	recs, err := s.Load(ctx)
	require.NoError(t, err)
	tab2 := table.New(table.Config{FirstToken: 1000})
	require.NoError(t, tab2.Restore(recs))
	// Bytes: four records, two specs of a byte, a result, an error.
	assert.Equal(t, table.Stats{Waiting: 2, Done: 1, Error: 1,
		Bytes: 4*table.RecordBytes + 2 + int64(len("zero")+len("Error")+len("no"))}, tab2.Stats())
	r0, _ := tab2.Lookup(key(0))
	assert.Equal(t, workunit.StatusDone, r0.Status)
	assert.Equal(t, []byte("zero"), r0.Result)
	assert.Equal(t, "w1", r0.Worker)
	r1, _ := tab2.Lookup(key(1))
	assert.Equal(t, workunit.StatusError, r1.Status)
	assert.Equal(t, "w1", r1.Err.Worker)
	r2, _ := tab2.Lookup(key(2))
	assert.Equal(t, workunit.StatusWaiting, r2.Status, "running comes back waiting")
	assert.Equal(t, 1, r2.Deliveries)
	assert.Equal(t, []byte("c"), r2.Spec)
	r3, _ := tab2.Lookup(key(3))
	assert.Equal(t, workunit.StatusWaiting, r3.Status)
	assert.Nil(t, r0.Spec, "a finished record keeps no spec")

	// New keys get new IDs.
	require.NoError(t, tab2.Step(table.Submit{Master: 1, Key: key(9), Spec: []byte("x")}))
	rd := tab2.Ready()
	require.Len(t, rd.Persist, 1)
	assert.Equal(t, uint64(5), rd.Persist[0].ID)
}

func TestBolt_Open_Corrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// good returns the bytes of a valid store holding the sample records.
	good := func(t *testing.T) []byte {
		dir := t.TempDir()
		s, err := OpenBolt(ctx, dir, BoltOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Apply(ctx, sampleRecords()))
		require.NoError(t, s.Close())
		b, err := os.ReadFile(filepath.Join(dir, FileName))
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name    string
		content func(t *testing.T) []byte
	}{
		{"garbage", func(t *testing.T) []byte { return []byte("this is not a database, just some text\n") }},
		{"zeroed meta pages", func(t *testing.T) []byte {
			b := good(t)
			clear(b[:2*4096])
			return b
		}},
		{"flipped bytes in both meta pages", func(t *testing.T) []byte {
			b := good(t)
			for _, off := range []int{40, 4096 + 40} {
				b[off] ^= 0xff
			}
			return b
		}},
		{"truncated", func(t *testing.T) []byte { return good(t)[:100] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), tt.content(t), 0o600))
			_, err := OpenBolt(ctx, dir, BoltOptions{})
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), filepath.Join(dir, FileName))
			t.Log(err)
		})
	}
}

func TestBolt_Open_NotARiotStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	write := func(t *testing.T, dir string, f func(tx *bolt.Tx) error) {
		db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
		require.NoError(t, err)
		require.NoError(t, db.Update(f))
		require.NoError(t, db.Close())
	}
	t.Run("another program's file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("users"))
			return err
		})
		_, err := OpenBolt(ctx, dir, BoltOptions{})
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "another program")
	})
	t.Run("a newer format", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s, err := OpenBolt(ctx, dir, BoltOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		write(t, dir, func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyVersion, binary.BigEndian.AppendUint32(nil, 99))
		})
		_, err = OpenBolt(ctx, dir, BoltOptions{})
		require.ErrorIs(t, err, ErrVersion)
	})
}

func TestBolt_Load_CorruptRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		value []byte
	}{
		{"not CBOR", []byte{0xff, 0xff}},
		{"empty", []byte{}},
		{"short array", []byte{0x82, 0x01, 0x01}},
		{"future record version", appendRecordVersion(7)},
		{"trailing bytes", append(encodeV1(&sampleRecords()[2]), 0x00)},
		{"status out of range", recordWithStatus(0x19, 0x01, 0x03)}, // 259: was read as 3 (done)
		{"time limit out of range", recordWithTimeout(0x1b, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s, err := OpenBolt(ctx, dir, BoltOptions{})
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.Apply(ctx, sampleRecords()))
			checkpointNow(t, s) // the bbolt file has them, to be damaged
			require.NoError(t, s.db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketRecords).Put(binary.BigEndian.AppendUint64(nil, 3), tt.value)
			}))
			_, err = s.Load(ctx)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), "record 3:", "the error names the record")
			t.Log(err)
		})
	}
	t.Run("running without its spec", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s, err := OpenBolt(ctx, dir, BoltOptions{})
		require.NoError(t, err)
		defer s.Close()
		recs := sampleRecords()
		recs[1].Spec = nil
		require.NoError(t, s.Apply(ctx, recs))
		_, err = s.Load(ctx)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "running without a spec")
	})
}

// encodeV1 encodes r as a version 1 record (without a checksum), for
// tests of the decoder's checks of what follows.
func encodeV1(r *table.Record) []byte {
	b := encodeRecord(nil, r)
	b = b[:len(b)-4]
	b[1] = recordVersion1
	return b
}

// recordWithStatus encodes a record whose status item is the CBOR item
// status.
func recordWithStatus(status ...byte) []byte {
	b := encodeV1(&sampleRecords()[2])
	// Array head, version, 32-byte key (a two-byte head), then the status.
	const at = 1 + 1 + 2 + len(workunit.Key{})
	return append(append(append([]byte{}, b[:at]...), status...), b[at+1:]...)
}

// recordWithTimeout encodes a record whose time limit item is the CBOR
// item limit.
func recordWithTimeout(limit ...byte) []byte {
	rec := sampleRecords()[2]
	rec.Options.Timeout = 0x12345678 * time.Millisecond
	b := encodeV1(&rec)
	old := []byte{0x1a, 0x12, 0x34, 0x56, 0x78}
	at := bytes.Index(b, old)
	return append(append(append([]byte{}, b[:at]...), limit...), b[at+len(old):]...)
}

// appendRecordVersion encodes a record array whose version is v.
func appendRecordVersion(v byte) []byte {
	b := encodeV1(&sampleRecords()[2])
	// The array head is one byte (13 items), then the version (small int).
	b[1] = v
	return b
}

// TestBolt_Apply_CannotWrite: a store that cannot write returns an error
// from Apply, and writes nothing. The tests run as root, for whom a
// read-only directory or file is still writable, so the store is made
// unwritable in two ways that hold for root too: opened read-only, and
// closed underneath the caller.
func TestBolt_Apply_CannotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("opened read-only", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s, err := OpenBolt(ctx, dir, BoltOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Apply(ctx, sampleRecords()[:1]))
		require.NoError(t, s.Close())

		ro, err := OpenBolt(ctx, dir, BoltOptions{ReadOnly: true})
		require.NoError(t, err)
		defer ro.Close()
		err = ro.Apply(ctx, sampleRecords())
		require.ErrorIs(t, err, ErrReadOnly)
		require.ErrorIs(t, ro.PutBlob(ctx, blob.Sum(nil), nil), ErrReadOnly)
		got, err := ro.Load(ctx)
		require.NoError(t, err)
		assert.Len(t, got, 1, "nothing was written")
	})
	t.Run("closed underneath", func(t *testing.T) {
		t.Parallel()
		s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.ErrorIs(t, s.Apply(ctx, sampleRecords()), ErrClosed)
		require.NoError(t, s.Close(), "closing twice is no error")
	})
	t.Run("read-only needs an existing store", func(t *testing.T) {
		t.Parallel()
		_, err := OpenBolt(ctx, t.TempDir(), BoltOptions{ReadOnly: true})
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestBolt_Open_Locked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenBolt(context.Background(), dir, BoltOptions{})
	require.NoError(t, err)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = OpenBolt(ctx, dir, BoltOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "file lock")
}

// TestRecord_Scope: a record without a memo scope is written as version 2,
// the layout of stores from before scopes, which older trackers read; one
// with a scope as version 3, one item longer. Both come back as they were,
// and a version 3 record with an empty scope is refused.
func TestRecord_Scope(t *testing.T) {
	t.Parallel()
	plain := sampleRecords()[2]
	b := encodeRecord(nil, &plain)
	assert.Equal(t, byte(0x80+recordItems), b[0], "13 items")
	assert.Equal(t, byte(recordVersion), b[1])
	got, err := decodeRecord(plain.ID, b)
	require.NoError(t, err)
	assert.Empty(t, got.Scope)
	assert.Equal(t, normalize([]table.Record{plain}), normalize([]table.Record{got}))

	scoped := plain
	scoped.Scope = "alice\x00odd \xff"
	b = encodeRecord(nil, &scoped)
	assert.Equal(t, byte(0x80+recordItems+1), b[0], "14 items")
	assert.Equal(t, byte(recordVersion3), b[1])
	got, err = decodeRecord(scoped.ID, b)
	require.NoError(t, err)
	assert.Equal(t, normalize([]table.Record{scoped}), normalize([]table.Record{got}))

	// A version 2 record of 14 items, or a version 3 one of 13, is bad,
	// its checksum right or not.
	resum := func(id uint64, b []byte, v byte) []byte {
		b = bytes.Clone(b[:len(b)-4])
		b[1] = v
		return binary.BigEndian.AppendUint32(b, recordSum(id, b))
	}
	_, err = decodeRecord(scoped.ID, resum(scoped.ID, b, recordVersion))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want an array of 13 items")
	_, err = decodeRecord(plain.ID, resum(plain.ID, encodeRecord(nil, &plain), recordVersion3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want an array of 14 items")

	// An empty scope is written as version 2: a version 3 record that
	// says "" is not one riot wrote.
	empty := encodeV1(&scoped)
	empty = append(empty[:len(empty)-len(scoped.Scope)-1], 0x40)
	empty[1] = recordVersion3
	empty = binary.BigEndian.AppendUint32(empty, recordSum(scoped.ID, empty))
	_, err = decodeRecord(scoped.ID, empty)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "empty scope")
}

// TestRecord_Retries: a record with retries is written as version 4, with
// its retries, retryOn, attempts and its error's attempts; it comes back
// as it was, and versions 2 and 3 are still read (TestRecord_Scope).
func TestRecord_Retries(t *testing.T) {
	t.Parallel()
	for _, rec := range sampleRecords()[7:] {
		b := encodeRecord(nil, &rec)
		assert.Equal(t, byte(0x80+recordItems+2), b[0], "15 items")
		assert.Equal(t, byte(recordVersion4), b[1])
		got, err := decodeRecord(rec.ID, b)
		require.NoError(t, err)
		assert.Equal(t, normalize([]table.Record{rec}), normalize([]table.Record{got}))
	}
	// Without retries, the old versions are written: older trackers read them.
	plain := sampleRecords()[3]
	assert.Equal(t, byte(recordVersion), encodeRecord(nil, &plain)[1])
}

// TestStore_StoredResults: LoadStored brings done records without their
// results (Stored), Result reads one back, and a write of a done record
// with Stored keeps the stored result; for both stores.
func TestStore_StoredResults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, open := range map[string]func(t *testing.T) Store{
		"bolt": func(t *testing.T) Store {
			s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
		"deferred": func(t *testing.T) Store {
			s, err := OpenBolt(ctx, t.TempDir(), BoltOptions{Deferred: true})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
		"memory": func(*testing.T) Store { return NewMemory() },
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			done := table.Record{Key: key(1), ID: 1, Status: workunit.StatusDone, Worker: "w", Result: []byte("result")}
			wait := table.Record{Key: key(2), ID: 2, Status: workunit.StatusWaiting, Spec: []byte("spec")}
			require.NoError(t, s.Apply(ctx, []table.Record{done, wait}))
			recs, err := s.LoadStored(ctx)
			require.NoError(t, err)
			require.Len(t, recs, 2)
			assert.True(t, recs[0].Stored)
			assert.Nil(t, recs[0].Result)
			assert.Equal(t, "w", recs[0].Worker)
			assert.Equal(t, []byte("spec"), recs[1].Spec)
			res, err := s.Result(ctx, 1)
			require.NoError(t, err)
			assert.Equal(t, []byte("result"), res)
			_, err = s.Result(ctx, 2)
			assert.ErrorIs(t, err, ErrNotFound)
			_, err = s.Result(ctx, 9)
			assert.ErrorIs(t, err, ErrNotFound)

			// Rewritten without its result (the table let go of it): kept.
			again := recs[0]
			again.Worker = "w2"
			require.NoError(t, s.Apply(ctx, []table.Record{again}))
			res, err = s.Result(ctx, 1)
			require.NoError(t, err)
			assert.Equal(t, []byte("result"), res)
			all, err := s.Load(ctx)
			require.NoError(t, err)
			assert.Equal(t, []byte("result"), all[0].Result)
			assert.Equal(t, "w2", all[0].Worker)

			// A Stored record with nothing stored is refused, and writes nothing.
			lost := table.Record{Key: key(3), ID: 3, Status: workunit.StatusDone, Stored: true}
			assert.ErrorIs(t, s.Apply(ctx, []table.Record{lost}), ErrNotFound)
		})
	}
}
