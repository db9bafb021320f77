package modules

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func module(t *testing.T, lm *Loaded, h [32]byte) *workunit.Module {
	t.Helper()
	var m workunit.Module
	require.NoError(t, m.UnmarshalBinary(lm.Blobs[h]))
	return &m
}

func TestCache_Load_Resolution(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"main.js":                       "const a = require('./lib/a');\nconst b = require('./lib');\nconst c = require('pkg');\nconst d = require('./data.json');\nconst fs = require('fs');\n// require('./not-a-require-call-in-a-comment') is ignored\nconst s = 'require(\"./nor-in-a-string\")';\nexports.x = 1;",
		"lib/a.js":                      "exports.a = 1;",
		"lib/index.js":                  "exports.b = require('./a');",
		"data.json":                     `{"k": 2}`,
		"node_modules/pkg/package.json": `{"main": "src/main.js"}`,
		"node_modules/pkg/src/main.js":  "module.exports = 3;",
	})
	c := NewCache(dir)
	lm, err := c.Load("main")
	require.NoError(t, err)
	main := module(t, lm, lm.Hash)
	assert.Equal(t, "main.js", main.Path)
	assert.ElementsMatch(t, []string{"./lib/a", "./lib", "pkg", "./data.json"}, keys(main.Requires))
	assert.Equal(t, "lib/a.js", module(t, lm, main.Requires["./lib/a"]).Path)
	idx := module(t, lm, main.Requires["./lib"])
	assert.Equal(t, "lib/index.js", idx.Path)
	assert.Equal(t, main.Requires["./lib/a"], idx.Requires["./a"], "one module, one blob")
	assert.Equal(t, "node_modules/pkg/src/main.js", module(t, lm, main.Requires["pkg"]).Path)
	assert.Equal(t, "module.exports = {\"k\": 2};", module(t, lm, main.Requires["./data.json"]).Source)
	assert.Len(t, lm.Blobs, 5)
	assert.Equal(t, lm.Hash, lm.All[len(lm.All)-1])
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCache_Load_ChangedFile(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"m.js": "exports.v = require('./dep').v;", "dep.js": "exports.v = 1;"})
	c := NewCache(dir)
	first, err := c.Load("m.js")
	require.NoError(t, err)
	again, err := c.Load("./m.js")
	require.NoError(t, err)
	assert.Equal(t, first.Hash, again.Hash)
	// Changing a dependency changes the module that requires it.
	p := filepath.Join(dir, "dep.js")
	require.NoError(t, os.WriteFile(p, []byte("exports.v = 22;"), 0o644))
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(p, later, later))
	changed, err := c.Load("m.js")
	require.NoError(t, err)
	assert.NotEqual(t, first.Hash, changed.Hash)
}

func TestCache_Load_Errors(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"a.js":      "require('./b');",
		"b.js":      "require('./a');",
		"broken.js": "exports.x = (;",
		"miss.js":   "require('./nope');",
	})
	c := NewCache(dir)
	_, err := c.Load("a.js")
	assert.ErrorContains(t, err, "modules that require each other cannot be shipped: a.js → b.js → a.js")
	_, err = c.Load("nothing.js")
	assert.ErrorContains(t, err, "module nothing.js: no such file")
	_, err = c.Load("broken.js")
	assert.ErrorContains(t, err, "broken.js")
	_, err = c.Load("miss.js")
	assert.ErrorContains(t, err, `miss.js: require("./nope"): module ./nope: no such file`)
}

// A TypeScript or ES module needs a bundler; with one, its output is what
// ships, and a change to a file it bundled is seen.
func TestCache_Bundler(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.ts"), []byte("export const f = (x: number) => x;\n"), 0o644))
	dep := filepath.Join(dir, "dep.ts")
	require.NoError(t, os.WriteFile(dep, []byte("export const a = 1;\n"), 0o644))
	_, err := NewCache(dir).Load("m.ts")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "module m.ts is TypeScript or an ES module, which this program cannot bundle")

	calls := 0
	c := NewCache(dir).WithBundler(func(abs string) (string, []string, error) {
		calls++
		return "exports.f = (x) => x; // " + strconv.Itoa(calls), []string{abs, dep}, nil
	})
	first, err := c.Load("m")
	require.NoError(t, err)
	again, err := c.Load("m.ts")
	require.NoError(t, err)
	assert.Equal(t, first.Hash, again.Hash)
	assert.Equal(t, 1, calls, "bundled once while nothing changed")
	require.NoError(t, os.WriteFile(dep, []byte("export const a = 22;\n"), 0o644))
	changed, err := c.Load("m.ts")
	require.NoError(t, err)
	assert.Equal(t, 2, calls, "a bundled file changed")
	assert.NotEqual(t, first.Hash, changed.Hash)
}
