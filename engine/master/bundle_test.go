package master

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runFile runs the job script path as a master against a fake tracker.
func runFile(t *testing.T, path string) *scriptRun {
	t.Helper()
	sr := &scriptRun{ft: newFakeTracker(t, false)}
	conn, err := sr.ft.connect(context.Background(), "localhost", 0, "")
	require.NoError(t, err)
	sr.err = RunScript(context.Background(), ScriptOptions{
		Path: path, Conn: conn, Connect: sr.ft.connect,
		Stdout: &sr.stdout, Stderr: &sr.stderr, Events: &sr.events,
	})
	return sr
}

// runMain writes files into a directory and runs main there as a master.
func runMain(t *testing.T, main string, files map[string]string) *scriptRun {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return runFile(t, filepath.Join(dir, main))
}

func scriptErr(t *testing.T, err error) *ScriptError {
	t.Helper()
	var se *ScriptError
	require.True(t, errors.As(err, &se), "want a *ScriptError, got %v", err)
	return se
}

// A TypeScript job imports a module of its own (whose function is shipped
// to workers) and a package from node_modules beside it, and awaits at its
// top level.
func TestBundle_TypeScriptWithImportsAndNodeModules(t *testing.T) {
	t.Parallel()
	sr := runFile(t, "testdata/esm/main.ts")
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "...9 ...3\n", sr.stdout.String())
}

func TestBundle_ModuleTopLevelAwaitAndExports(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.mjs", map[string]string{
		"main.mjs": `import { twice } from './lib/twice.mjs';
export const unused = 1;
const id = riot.doWork(twice, 21);
const r = await new Promise((resolve) => riot.callWhenDone(id, (isError, who, v) => resolve(v)));
console.log(r, typeof this);
`,
		"lib/twice.mjs": "export const twice = (x) => 2 * x;\n",
	})
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "42 undefined\n", sr.stdout.String())
}

// A .js script with import is an ES module; one without runs as before,
// unbundled (its sloppy-mode this is the global object).
func TestBundle_JSWithImportIsAModule(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.js", map[string]string{
		"main.js":    "import { add } from './lib/add.js';\nconsole.log(riot.waitUntilDone(riot.doWork(add, 2, 3)));\n",
		"lib/add.js": "export function add(a, b) { return a + b; }\n",
	})
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "5\n", sr.stdout.String())

	sr = runMain(t, "main.js", map[string]string{"main.js": "console.log(this === globalThis);\n"})
	require.NoError(t, sr.err)
	assert.Equal(t, "true\n", sr.stdout.String())
}

// A throw on a known line of a .ts file reports that file and line, after
// type annotations that esbuild removed and lines it did not keep.
func TestBundle_ThrowPointsAtTheTypeScriptLine(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.ts", map[string]string{"main.ts": `// a comment esbuild drops

interface Point { x: number; y: number }

function norm(p: Point): number {
  // another comment
  if (p.x < 0) throw new RangeError('negative x');
  return Math.hypot(p.x, p.y);
}
await null;
console.log(norm({ x: -1, y: 0 }));
`})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "RangeError", se.Name)
	// The columns are Node's too.
	assert.Contains(t, se.Stack, "at norm (main.ts:7:22)")
	assert.Contains(t, se.Stack, "at main.ts:11:13")
	assert.NotContains(t, se.Stack, "bundle.js")
}

// A workunit's error from a function defined in a .ts module points at the
// module's line, on the master.
func TestBundle_WorkunitStackPointsAtTheTypeScriptLine(t *testing.T) {
	t.Parallel()
	sr := runFile(t, "testdata/esm/throws.ts")
	se := scriptErr(t, sr.err)
	require.NotNil(t, se.Workunit, "stack: %s", se.Stack)
	assert.Contains(t, se.Stack, "Caused by: RangeError: negative size -1")
	assert.Contains(t, se.Stack, "lib/shapes.ts:9:")
	assert.NotContains(t, se.Stack, "bundle.js")
}

func TestBundle_BareImportIsAClearError(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.ts", map[string]string{"main.ts": "const n: number = 1;\nimport _ from 'lodash';\nconsole.log(_.add(n, 1));\n"})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "Error", se.Name)
	assert.Equal(t, `main.ts:2:15: import "lodash": not a file, and no node_modules folder beside the script or above it holds a package "lodash": `+
		`install it there (npm install lodash) to have it bundled with the script, or import a file of the job by its path ("./lib/name.js")`, se.Message)

	sr = runMain(t, "main.mjs", map[string]string{"main.mjs": "import { readFileSync } from 'node:fs';\n"})
	se = scriptErr(t, sr.err)
	assert.Contains(t, se.Message, `main.mjs:1:30: import "node:fs": Node's built-in modules are not available to job scripts`)

	sr = runMain(t, "main.ts", map[string]string{"main.ts": "import { f } from './lib/missing';\nf();\n"})
	se = scriptErr(t, sr.err)
	assert.Contains(t, se.Message, `main.ts:1:19: import "./lib/missing": no such file`)
}

// A package in a node_modules folder above the script's is found, as Node
// finds it.
func TestBundle_NodeModulesAbove(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("node_modules/up/package.json", `{"name": "up", "main": "up.js"}`)
	write("node_modules/up/up.js", "exports.up = (s) => s.toUpperCase();\n")
	write("jobs/main.ts", "import { up } from 'up';\nconsole.log(riot.forWork(['a', 'b'], (s: string) => up(s)).join(''));\n")
	sr := runFile(t, filepath.Join(dir, "jobs/main.ts"))
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "AB\n", sr.stdout.String())
}

// The capture pass's messages name the TypeScript file's line and column.
func TestBundle_CaptureMessagePointsAtTheTypeScriptLine(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.ts", map[string]string{"main.ts": `type N = number;

class Counter {
  n: N = 1;
  run(): N {
    return riot.waitUntilDone(riot.doWork(() => this.n));
  }
}
new Counter().run();
`})
	se := scriptErr(t, sr.err)
	assert.Contains(t, se.Message, "(main.ts:6:43)")
	assert.Contains(t, se.Message, "this")
}

func TestBundle_UnsettledTopLevelAwait(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.mjs", map[string]string{"main.mjs": "console.log('before');\nawait new Promise(() => {});\nconsole.log('after');\n"})
	se := scriptErr(t, sr.err)
	assert.Contains(t, se.Message, "top-level await never settled")
	assert.Equal(t, "before\n", sr.stdout.String())
	assert.False(t, se.Unhandled)
}

// An exception thrown after a top-level await is uncaught, not an
// unhandled rejection.
func TestBundle_ThrowAfterAwaitIsUncaught(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.mts", map[string]string{"main.mts": "await new Promise((r) => setTimeout(r, 1));\nthrow new TypeError('late');\n"})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "TypeError", se.Name)
	assert.Equal(t, "late", se.Message)
	assert.False(t, se.Unhandled)
	assert.Contains(t, se.Stack, "main.mts:2:")
}

func TestBundle_TypeScriptSyntaxError(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.ts", map[string]string{"main.ts": "const x: number = ;\n"})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "SyntaxError", se.Name)
	assert.Contains(t, se.Message, "main.ts:1:19: ")
}

// require of a JSON file and a dynamic import() are bundled too.
func TestBundle_RequireJSONAndDynamicImport(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.ts", map[string]string{
		"main.ts": "const data: { n: number } = require('./data.json');\n" +
			"const { twice } = await import('./lib/twice');\n" +
			"console.log(data.n, riot.waitUntilDone(riot.doWork(twice, data.n)));\n",
		"data.json":    `{"n": 21}`,
		"lib/twice.ts": "export const twice = (x: number): number => 2 * x;\n",
	})
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "21 42\n", sr.stdout.String())
}

// riot.doWorkCall of a TypeScript module ships it as one CommonJS module
// with what it imports; a worker's stack from it names the .ts line (the
// worker reads the module's inline source map).
func TestBundle_DoWorkCallTypeScriptModule(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.js": "console.log(riot.waitUntilDone(riot.doWorkCall('lib/calc.ts', 'total', [1, 2, 3])));\n" +
			"riot.waitUntilDone(riot.doWorkCall('lib/calc', 'total', [1, -2]));\n",
		"lib/calc.ts": `import { check } from './check';

export function total(xs: number[]): number {
  return xs.reduce((a, x) => a + check(x), 0);
}
`,
		"lib/check.ts": `// check refuses negative numbers.
export function check(x: number): number {
  if (x < 0) {
    throw new RangeError('negative: ' + x);
  }
  return x;
}
`,
	}
	sr := runScript(t, files)
	se := scriptErr(t, sr.err)
	assert.Equal(t, "6\n", sr.stdout.String())
	require.NotNil(t, se.Workunit, se.Stack)
	assert.Contains(t, se.Stack, "Caused by: RangeError: negative: -2\n    at check (lib/check.ts:4:11)")
}

// import.meta is the job script's, in every module (a script cannot hold
// import.meta itself).
func TestBundle_ImportMeta(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.mjs", map[string]string{
		"main.mjs":  "import { u } from './lib/m.mjs';\nconsole.log(u === import.meta.url, import.meta.url.startsWith('file:///'), import.meta.url.endsWith('/main.mjs'));\n",
		"lib/m.mjs": "export const u = import.meta.url;\n",
	})
	require.NoError(t, sr.err, "stderr: %s", sr.stderr.String())
	assert.Equal(t, "true true true\n", sr.stdout.String())
}

// A .js script with a syntax error keeps the parser's message: esbuild
// refuses it too, and it is no module.
func TestBundle_JSSyntaxErrorStaysTheParsers(t *testing.T) {
	t.Parallel()
	sr := runMain(t, "main.js", map[string]string{"main.js": "const x = ;\n"})
	se := scriptErr(t, sr.err)
	assert.Equal(t, "SyntaxError", se.Name)
	assert.Equal(t, "main.js:1:11: Unexpected token ;", se.Message)
}
