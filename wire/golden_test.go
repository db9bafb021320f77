package wire

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and the FuzzDecode seed corpus")

// TestGolden pins the encoding: each sample must encode to the bytes of
// testdata/<name>.golden, and those bytes must decode to the sample. Run
// with -update after a deliberate change of the format (and bump
// ProtocolVersion).
func TestGolden(t *testing.T) {
	if *update {
		writeSeeds(t)
	}
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			frame, err := Encode(s.msg)
			require.NoError(t, err)
			path := filepath.Join("testdata", s.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, goldenText(s, frame), 0o644))
			}
			want, err := readGolden(path)
			require.NoError(t, err)
			assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(frame), "encoding of %s drifted", s.name)
			msgs, err := Decode(want)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			assert.Equal(t, s.msg, msgs[0])
		})
	}
}

func goldenText(s sample, frame []byte) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# riot wire protocol version %d: a frame holding one %s message.\n", ProtocolVersion, s.msg.Type())
	fmt.Fprintf(&b, "# layout: %s\n", s.layout)
	b.WriteString("# Checked by TestGolden; rewrite with: go test ./wire -run TestGolden -update\n")
	h := hex.EncodeToString(frame)
	for len(h) > 64 {
		b.WriteString(h[:64])
		b.WriteByte('\n')
		h = h[64:]
	}
	b.WriteString(h)
	b.WriteByte('\n')
	return []byte(b.String())
}

// readGolden reads a golden file: lines starting with # are comments, the
// rest is hex.
func readGolden(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h strings.Builder
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		h.WriteString(strings.ReplaceAll(line, " ", ""))
	}
	return hex.DecodeString(h.String())
}

// seedFrames returns the frames FuzzDecode starts from: each sample alone,
// all samples in one frame, a batch of hot-path messages, and a Hello of
// another version.
func seedFrames(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	add := func(name string, msgs ...Msg) {
		frame, err := Encode(msgs...)
		require.NoError(t, err)
		seeds[name] = frame
	}
	for _, s := range samples() {
		add(s.name, s.msg)
	}
	add("all", sampleMsgs()...)
	add("empty")
	add("batch", benchAssigns(3)[0], benchAssigns(3)[1], benchDones(2)[0], benchDones(2)[1], &Credit{N: 2})
	add("hello-v8", &Hello{Version: 8, Role: "future", Name: "x", Slots: 1})
	return seeds
}

// writeSeeds writes the seed corpus, testdata/fuzz/FuzzDecode/seed-*, in
// the format of go test's fuzzing corpus.
func writeSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, frame := range seedFrames(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644))
	}
}
