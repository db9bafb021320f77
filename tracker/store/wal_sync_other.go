//go:build !linux

package store

import "os"

// fdatasync syncs fd.
func fdatasync(fd *os.File) error { return fd.Sync() }
