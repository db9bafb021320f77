//go:build !unix

package store

import (
	"context"
	"fmt"
	"os"
)

// lockFile opens the file at path; elsewhere than on Unix it takes no
// lock (bbolt's own, at bolt.Open, still keeps a second riotd out).
func lockFile(_ context.Context, path string, _ bool) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}
