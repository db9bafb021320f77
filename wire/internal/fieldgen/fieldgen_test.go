package fieldgen

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var write = flag.Bool("write", false, "rewrite wire's "+File)

// TestWrite rewrites wire's fields_gen.go when run with -write, as go
// generate ./wire does; without it, it checks that Generate succeeds.
func TestWrite(t *testing.T) {
	dir := filepath.Join("..", "..")
	src, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *write {
		if err := os.WriteFile(filepath.Join(dir, File), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
