package wire

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/wire/internal/fieldgen"
)

// TestFieldsGenerated checks that fields_gen.go holds what the field lists
// give (see codec): run go generate ./wire after changing a list.
func TestFieldsGenerated(t *testing.T) {
	t.Parallel()
	want, err := fieldgen.Generate(".")
	require.NoError(t, err)
	got, err := os.ReadFile(fieldgen.File)
	require.NoError(t, err)
	if string(got) == string(want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s is stale (run go generate ./wire): line %d is\n\t%q\nwant\n\t%q", fieldgen.File, i+1, gl, wl)
		}
	}
}
