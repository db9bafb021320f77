package bundle

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVLQ_RoundTrip(t *testing.T) {
	for _, v := range []int{0, 1, -1, 15, 16, -16, 31, 32, 1000, -123456} {
		var b strings.Builder
		encodeVLQ(&b, v)
		got, err := decodeVLQ(b.String())
		require.NoError(t, err)
		assert.Equal(t, []int{v}, got, "%d as %q", v, b.String())
	}
	_, err := decodeVLQ("!")
	assert.Error(t, err)
	_, err = decodeVLQ("g") // a continuation with nothing after it
	assert.Error(t, err)
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// Build strips types, bundles the imported module, wraps the code for a
// top-level await, and maps positions back, in bytes of the generated
// text though the original has non-ASCII text.
func TestBuild_TypeScript(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib/greet.ts", "export function greet(name: string): string {\n  return `héllo ${name}`;\n}\n")
	src := "import { greet } from './lib/greet';\n\n// a comment\nconst who: string = 'wörld';\nconsole.log(greet(who)); await 0;\n"
	p := write(t, dir, "job.ts", src)
	b, err := Build(p, src)
	require.NoError(t, err)
	assert.True(t, b.Module)
	assert.True(t, strings.HasPrefix(b.Source, "(async () => {\"use strict\";const __riot_import_meta = Object.freeze({"), b.Source)
	assert.True(t, strings.HasSuffix(b.Source, "\n})"), b.Source)
	assert.NotContains(t, b.Source, ": string")
	assert.ElementsMatch(t, []string{"job.ts", "lib/greet.ts"}, b.Inputs)
	// Find console.log in the generated text and map it.
	lines := strings.Split(b.Source, "\n")
	for i, l := range lines {
		if c := strings.Index(l, "console.log"); c >= 0 {
			file, line, col, ok := b.Map.Lookup(i+1, c+1)
			require.True(t, ok)
			assert.Equal(t, "job.ts", file)
			assert.Equal(t, 5, line)
			assert.Equal(t, 1, col)
		}
		if c := strings.Index(l, "return"); c >= 0 {
			file, line, _, ok := b.Map.Lookup(i+1, c+1)
			require.True(t, ok)
			assert.Equal(t, "lib/greet.ts", file)
			assert.Equal(t, 2, line)
		}
	}
	stack := "Error: x\n    at greet (job.ts.bundle.js:" + lineOf(t, lines, "return") + ")"
	assert.Contains(t, b.Map.RemapStack(stack, "job.ts.bundle.js"), "at greet (lib/greet.ts:2:")
}

func lineOf(t *testing.T, lines []string, s string) string {
	for i, l := range lines {
		if c := strings.Index(l, s); c >= 0 {
			return strconv.Itoa(i+1) + ":" + strconv.Itoa(c+1)
		}
	}
	t.Fatalf("%q not in the bundle", s)
	return ""
}

// Inserted moves each mapping right by what was inserted before it on its
// line, and no other line's.
func TestMap_Inserted(t *testing.T) {
	gen := "ab cd\nef gh"
	m := &Map{Sources: []string{"x.ts"}, lines: [][]segment{
		{{col: 0, line: 0, ocol: 0}, {col: 3, line: 0, ocol: 7}},
		{{col: 0, line: 4, ocol: 0}, {col: 3, line: 5, ocol: 2}},
	}}
	// Insert 2 bytes before "cd" and 4 before "gh" (offset 9).
	got := m.Inserted(gen, []Span{{At: 3, Len: 2}, {At: 9, Len: 4}})
	_, l, c, ok := got.Lookup(1, 6)
	require.True(t, ok)
	assert.Equal(t, []int{1, 8}, []int{l, c})
	_, l, c, _ = got.Lookup(1, 5) // inside the insertion: the mapping before it
	assert.Equal(t, []int{1, 1}, []int{l, c})
	_, l, c, _ = got.Lookup(2, 8)
	assert.Equal(t, []int{6, 3}, []int{l, c})
	_, l, _, _ = got.Lookup(2, 2)
	assert.Equal(t, 5, l)
	// The JSON form decodes to the same mappings.
	back, err := parseMap(got.JSON("g.js"), "")
	require.NoError(t, err)
	assert.Equal(t, got.lines, back.lines)
}

func TestBuild_Errors(t *testing.T) {
	dir := t.TempDir()
	src := "import { chunk } from 'lodash/chunk';\nconsole.log(chunk);\n"
	p := write(t, dir, "job.mjs", src)
	_, err := Build(p, src)
	var be *Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "job.mjs", be.File)
	assert.Equal(t, 1, be.Line)
	assert.Equal(t, 23, be.Column)
	assert.Contains(t, be.Message, `import "lodash/chunk": not a file, and no node_modules folder beside the script or above it holds a package "lodash": install it there (npm install lodash)`)

	src = "const p = require('path');\nconsole.log(p);\n"
	p = write(t, dir, "job.ts", src)
	_, err = Build(p, src)
	require.ErrorAs(t, err, &be)
	assert.Equal(t, `job.ts:1:19: require("path"): Node's built-in modules are not available to job scripts (riot.readFile, riot.readLines and riot.writeFile reach files)`, be.Error())
}

// A TypeScript file without import or export is a script: no "use strict".
func TestBuild_ScriptIsSloppy(t *testing.T) {
	dir := t.TempDir()
	src := "let n: number = 1;\nconsole.log(n);\n"
	b, err := Build(write(t, dir, "job.ts", src), src)
	require.NoError(t, err)
	assert.False(t, b.Module)
	assert.NotContains(t, b.Source, "use strict")
}

func TestNeeded(t *testing.T) {
	for name, want := range map[string]bool{"a.ts": true, "a.mts": true, "a.MJS": true, "a.cts": true, "a.js": false, "a.cjs": false, "a": false} {
		assert.Equal(t, want, Needed(name), name)
	}
}

func TestBuild_SaysHowManyMoreErrors(t *testing.T) {
	dir := t.TempDir()
	src := "import a from './a';\nimport b from './b';\nimport c from './c';\nconsole.log(a, b, c);\n"
	_, err := Build(write(t, dir, "job.mjs", src), src)
	var be *Error
	require.ErrorAs(t, err, &be)
	assert.True(t, be.Unresolved)
	assert.True(t, strings.HasSuffix(be.Message, " (and 2 more errors)"), be.Message)
	assert.Equal(t, 1, be.Line)
}
