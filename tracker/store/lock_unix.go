//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes the lock bbolt takes on the file at path (flock: shared
// for reading, exclusive for writing), waiting until ctx is done, so that
// checkFile reads no file that another riotd is writing. The caller
// releases it (by closing the file) before bolt.Open takes its own.
func lockFile(ctx context.Context, path string, readOnly bool) (*os.File, error) {
	flag, how := os.O_RDONLY, unix.LOCK_EX
	if readOnly {
		how = unix.LOCK_SH
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("store: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("store: open %s: another process holds the file lock (is another riotd using this directory?): %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
