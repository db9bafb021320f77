package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/riot-go/riot/blob"
)

// TestBolt_AdoptBlob: a file adopted as a blob is the store's blob,
// moved, not copied; a file of a blob the store has already is removed;
// a store that syncs refuses to adopt (the file would not be durable).
func TestBolt_AdoptBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBolt(ctx, dir, BoltOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("adopted "), 1<<17)
	h := blob.Sum(data)
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := file("stage-1")
	if err := s.AdoptBlob(ctx, h, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the adopted file is still at its path: %v", err)
	}
	got, err := s.GetBlob(ctx, h)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetBlob of the adopted blob: %d bytes, %v", len(got), err)
	}
	p = file("stage-2")
	if err := s.AdoptBlob(ctx, h, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file of a blob the store has is left: %v", err)
	}

	synced, err := OpenBolt(ctx, t.TempDir(), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer synced.Close()
	if err := synced.AdoptBlob(ctx, h, file("stage-3")); err == nil {
		t.Error("a store that syncs adopted a file it cannot vouch for")
	}
}
