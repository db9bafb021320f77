package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// TxidFileName is the file, next to FileName, where the store notes the
// bbolt transaction of its last commit, after the commit is on disk. At
// open, a file whose transaction is older was rolled back (bbolt fell
// back to its other meta page, or the file was replaced by an older one):
// OpenBolt fails with ErrRolledBack instead of serving old state.
const TxidFileName = FileName + ".txid"

// txidLen is the length of the side file: 20 decimal digits and a newline.
const txidLen = 21

// txidFile is the open side file.
type txidFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	last uint64
	err  error // the first write that failed; later ones are not tried
}

// readTxid reads the side file at path: ok is false if there is none.
func readTxid(path string) (txid uint64, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: %w", err)
	}
	if len(b) == 0 { // made, and nothing committed yet
		return 0, false, nil
	}
	if len(b) != txidLen || b[txidLen-1] != '\n' {
		return 0, false, fmt.Errorf("%w: %s: %d bytes, not a transaction number (remove it if %s is known to be good)",
			ErrCorrupt, path, len(b), FileName)
	}
	n, err := strconv.ParseUint(string(b[:txidLen-1]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %s: not a transaction number (remove it if %s is known to be good): %w",
			ErrCorrupt, path, FileName, err)
	}
	return n, true, nil
}

// openTxid opens (creating it) the side file for writing.
func openTxid(path string) (*txidFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &txidFile{path: path, f: f}, nil
}

// committed notes that transaction txid is on disk. The write is not
// synced: it follows the commit's fsync, so that the side file can fall
// behind the store (on a crash; harmless) but never get ahead of it.
// A failed write is kept and returned by every later call.
func (t *txidFile) committed(txid uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil || txid <= t.last {
		return t.err
	}
	b := fmt.Appendf(make([]byte, 0, txidLen), "%020d\n", txid)
	if _, err := t.f.WriteAt(b, 0); err != nil {
		t.err = fmt.Errorf("store: write %s: %w", t.path, err)
		return t.err
	}
	t.last = txid
	return nil
}

func (t *txidFile) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", t.path, err)
	}
	return nil
}
