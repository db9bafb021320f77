package faults_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/workunit"
)

// exitStoreDamaged is riotd's exit status for a damaged store (see
// cmd/riotd).
const exitStoreDamaged = 65

// storeFiles are a stopped riotd's store: the bbolt file and its side
// file.
type storeFiles struct{ db, txid []byte }

// finishedStore runs a riotd on a new data directory until n workunits
// (squareSpec) are done, stops it, and returns its store's files.
func finishedStore(t *testing.T, ctx context.Context, n int) storeFiles {
	t.Helper()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 4})
	m := master(t, tr.Addr())
	for i := range n {
		out, err := m.Submit(squareSpec(i, 0), workunit.Options{}).Wait(ctx)
		require.NoError(t, err)
		_, err = checkSquare(i, out.Result)
		require.NoError(t, err)
	}
	_, err := tr.Stop(ctx)
	require.NoError(t, err)
	var f storeFiles
	f.db, err = os.ReadFile(filepath.Join(tr.Data(), store.FileName))
	require.NoError(t, err)
	f.txid, err = os.ReadFile(filepath.Join(tr.Data(), store.TxidFileName))
	require.NoError(t, err)
	return f
}

// dataDir writes f into a new data directory.
func (f storeFiles) dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.FileName), f.db, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.TxidFileName), f.txid, 0o600))
	return dir
}

// metaTxid is the transaction of the bbolt meta page at off (8 bytes of
// the page header, then magic, version, page size, flags, root bucket
// (16), free list, high-water mark, then the txid).
func metaTxid(b []byte, off int) uint64 {
	return binary.LittleEndian.Uint64(b[off+16+48:])
}

// refused runs riotd on dir, which must exit with exitStoreDamaged, with a
// message naming the file and what to do, without ever listening.
func refused(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	p := e2e.NewProcess("riotd", bins.Riotd,
		[]string{"--listen", "127.0.0.1", "--port", "0", "--log-format", "json", "--data", dir}, nil, bins.Root)
	require.NoError(t, p.Start())
	t.Cleanup(func() { p.Close() })
	// WaitLog fails when riotd exits first.
	if _, err := p.WaitLog(ctx, e2e.LogMsg("riotd listening")); err == nil {
		t.Fatalf("riotd served the damaged store; its log:\n%s", p.Log())
	}
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	log := p.Log()
	assert.Equal(t, exitStoreDamaged, code, "riotd's exit status; its log:\n%s", log)
	assert.Contains(t, log, filepath.Join(dir, store.FileName), "the message names the file")
	assert.Contains(t, log, "Restore "+filepath.Join(dir, store.FileName)+" from a backup", "the message says what to do")
	assert.NotContains(t, log, "panic", "riotd panicked")
	assert.Zero(t, p.CountLogAfter(0, e2e.LogMsg("riotd listening")), "riotd served the damaged store")
	return log
}

// TestFaults_StoreDamaged: riotd's store file damaged the ways a disk, an
// operator or an attacker damages it. Each time riotd refuses to start,
// with exit status 65 and a message that names the file and says what to
// do; never a panic, never a store served empty or rolled back.
func TestFaults_StoreDamaged(t *testing.T) {
	const n = 29
	ctx := e2e.Context(t, jobWait)
	good := finishedStore(t, ctx, n)
	psize := os.Getpagesize()
	newer := 0 // the meta page of the later transaction
	if metaTxid(good.db, psize) > metaTxid(good.db, 0) {
		newer = 1
	}
	live := livePages(t, good)
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, db []byte) []byte // returns the new file, or nil to leave it
	}{
		// Half of the pages in use, not half the file: bbolt grows its
		// file ahead of the pages it uses, so the file's second half can
		// be free space (how much depends on when the log was
		// checkpointed).
		{"truncated to half", func(t *testing.T, dir string, db []byte) []byte {
			hwm := binary.LittleEndian.Uint64(db[newer*psize+16+40:])
			return db[:int(hwm)*psize/2]
		}},
		{"truncated to a page", func(t *testing.T, dir string, db []byte) []byte { return db[:psize] }},
		{"truncated by its last page in use", func(t *testing.T, dir string, db []byte) []byte {
			hwm := binary.LittleEndian.Uint64(db[newer*psize+16+40:])
			return db[:int(hwm-1)*psize]
		}},
		{"zero length", func(t *testing.T, dir string, db []byte) []byte { return []byte{} }},
		{"both meta pages zeroed", func(t *testing.T, dir string, db []byte) []byte {
			clear(db[:2*psize])
			return db
		}},
		{"the newer meta page zeroed", func(t *testing.T, dir string, db []byte) []byte {
			clear(db[newer*psize : (newer+1)*psize])
			return db
		}},
		{"a directory in its place", func(t *testing.T, dir string, db []byte) []byte {
			p := filepath.Join(dir, store.FileName)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o700))
			return nil
		}},
		{"removed", func(t *testing.T, dir string, db []byte) []byte {
			require.NoError(t, os.Remove(filepath.Join(dir, store.FileName)))
			return nil
		}},
		{"a page in use zeroed", func(t *testing.T, dir string, db []byte) []byte {
			pg := live[len(live)-1]
			clear(db[pg*psize : (pg+1)*psize])
			return db
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := good.dataDir(t)
			if b := tt.damage(t, dir, append([]byte(nil), good.db...)); b != nil {
				require.NoError(t, os.WriteFile(filepath.Join(dir, store.FileName), b, 0o600))
			}
			log := refused(t, ctx, dir)
			t.Logf("%s: %s", tt.name, firstLine(log))
		})
	}
}

// TestFaults_StoreOlderMetaZeroed: the meta page of the older transaction
// zeroed is what a crash in the middle of a commit can leave (bbolt writes
// each commit's meta page over the older one): riotd starts on the later
// transaction, with every result.
func TestFaults_StoreOlderMetaZeroed(t *testing.T) {
	const n = 29
	ctx := e2e.Context(t, jobWait)
	good := finishedStore(t, ctx, n)
	psize := os.Getpagesize()
	older := 0
	if metaTxid(good.db, psize) < metaTxid(good.db, 0) {
		older = 1
	}
	dir := good.dataDir(t)
	db := append([]byte(nil), good.db...)
	clear(db[older*psize : (older+1)*psize])
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.FileName), db, 0o600))
	tr := bins.StartTracker(t, e2e.TrackerOptions{Data: dir})
	r, err := tr.Restored(ctx)
	require.NoError(t, err)
	assert.Equal(t, n, r.Done)
	m := master(t, tr.Addr())
	for i := range n {
		out, err := m.Info(ctx, squareSpec(i, 0).Key())
		require.NoError(t, err)
		require.Equal(t, workunit.StatusDone, out.Status, "workunit %d", i)
	}
}

// TestFaults_StoreBytesFlipped: random bytes of riotd's store file flipped,
// past its meta pages. riotd refuses the file (exit status 65), or, when
// the bytes were free space, serves every result as it was.
func TestFaults_StoreBytesFlipped(t *testing.T) {
	const n, seeds = 29, 20
	ctx := e2e.Context(t, jobWait)
	good := finishedStore(t, ctx, n)
	psize := os.Getpagesize()
	live := livePages(t, good)
	refusedN, served := 0, 0
	for seed := range seeds {
		t.Run("seed "+strconv.Itoa(seed), func(t *testing.T) {
			dir := good.dataDir(t)
			db := append([]byte(nil), good.db...)
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			for range 1 + rng.IntN(4) {
				pg := live[rng.IntN(len(live))]
				db[pg*psize+rng.IntN(psize)] ^= byte(1 + rng.IntN(255))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, store.FileName), db, 0o600))
			p := e2e.NewProcess("riotd", bins.Riotd,
				[]string{"--listen", "127.0.0.1", "--port", "0", "--log-format", "json", "--data", dir}, nil, bins.Root)
			require.NoError(t, p.Start())
			t.Cleanup(func() { p.Close() })
			// Either it exits (refused) or it listens (served).
			_, err := p.WaitLog(ctx, e2e.LogMsg("riotd listening"))
			if err != nil {
				refused(t, ctx, dir) // the same file again, checked in full
				refusedN++
				return
			}
			require.NoError(t, p.Kill())
			tr := bins.StartTracker(t, e2e.TrackerOptions{Data: dir})
			r, err := tr.Restored(ctx)
			require.NoError(t, err)
			require.Equal(t, n, r.Done, "riotd served the store with results lost")
			m := master(t, tr.Addr())
			for i := range n {
				out, err := m.Info(ctx, squareSpec(i, 0).Key())
				require.NoError(t, err)
				require.Equal(t, workunit.StatusDone, out.Status, "workunit %d", i)
				_, err = checkSquare(i, out.Result)
				require.NoError(t, err)
			}
			served++
		})
	}
	t.Logf("store bytes flipped in the %d pages in use: %d files, %d refused (exit status 65), %d served with every result intact",
		len(live), seeds, refusedN, served)
	assert.Positive(t, refusedN, "no flipped file was refused: flip more")
}

// livePages returns the pages of f's bbolt file that hold its trees (not
// its meta pages, not its free pages), read with bbolt from a copy.
func livePages(t *testing.T, f storeFiles) []int {
	t.Helper()
	p := filepath.Join(f.dataDir(t), store.FileName)
	db, err := bolt.Open(p, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	var live []int
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				return nil
			}
			if info.Type == "leaf" || info.Type == "branch" {
				live = append(live, id)
			}
		}
	}))
	require.NotEmpty(t, live)
	return live
}

// firstLine returns riotd's error line of log.
func firstLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "riotd: ") {
			return l
		}
	}
	return log
}
