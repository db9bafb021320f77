package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync syncs fd's data (and the size that reads it), not its times.
func fdatasync(fd *os.File) error { return unix.Fdatasync(int(fd.Fd())) }
