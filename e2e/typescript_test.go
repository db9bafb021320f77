package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// typedDemoOut is what scripts/typed-demo.ts prints for
// scripts/testdata/words.txt in three chunks.
const typedDemoOut = "9 words in 3 workunits; the longest is abcdef\nmost common letters: a 5, b 5, c 5\n"

// TestE2E_TypeScriptScript runs scripts/typed-demo.ts, a TypeScript job
// script that imports a module of its own and awaits at its top level,
// with riot-worker eval against real riotd and riot-worker processes, and
// in the embedded mode. The worker runs the module's function as plain
// JavaScript.
func TestE2E_TypeScriptScript(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "tsw", Slots: 2})
	tr.WaitFor(t, workers(1))

	remote := bins.RunEval(t, "--tracker", tr.Addr(), "scripts/typed-demo.ts")
	require.Equal(t, 0, remote.Code, "with riotd: %s", remote)
	assert.Equal(t, typedDemoOut, remote.Stdout)

	embedded := bins.RunEval(t, "scripts/typed-demo.ts", "scripts/testdata/words.txt", "3")
	require.Equal(t, 0, embedded.Code, "embedded: %s", embedded)
	assert.Equal(t, typedDemoOut, embedded.Stdout)
}

// writeJob writes a job's files into a new directory and returns it.
func writeJob(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

// TestE2E_TypeScriptErrors: what a TypeScript job's author reads when it
// fails names the .ts files' lines: a workunit's error thrown in a
// function of an imported module (on a worker process, in plain
// JavaScript), the master's own frames, and an import that is no file.
func TestE2E_TypeScriptErrors(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "tse", Slots: 1})
	tr.WaitFor(t, workers(1))

	dir := writeJob(t, map[string]string{
		"job.ts": `import { check, type Reading } from './lib/check';

// Readings from a sensor; one is out of range.
const readings: Reading[] = [{ id: 1, celsius: 21 }, { id: 2, celsius: -300 }];

const ids = readings.map((r) => riot.doWork(check, r));
for (const id of ids) {
  console.log(riot.waitUntilDone(id));
}
`,
		"lib/check.ts": `export interface Reading {
  id: number;
  celsius: number;
}

/** The reading in kelvin; below absolute zero is an error. */
export function check(r: Reading): string {
  const kelvin: number = r.celsius + 273.15;
  if (kelvin < 0) {
    throw new RangeError(` + "`reading ${r.id}: ${r.celsius} °C is below absolute zero`" + `);
  }
  return ` + "`reading ${r.id}: ${kelvin.toFixed(2)} K`" + `;
}
`,
	})
	res := bins.RunEval(t, "--tracker", tr.Addr(), filepath.Join(dir, "job.ts"))
	require.Equal(t, 1, res.Code, res)
	assert.Equal(t, "reading 1: 294.15 K\n", res.Stdout)
	assert.Contains(t, res.Stderr, "WorkunitError: workunit ")
	assert.Contains(t, res.Stderr, "failed on worker tse: RangeError: reading 2: -300 °C is below absolute zero")
	assert.Contains(t, res.Stderr, "at job.ts:8:", "the master's frame, in the .ts file")
	assert.Contains(t, res.Stderr, "Caused by: RangeError: reading 2: -300 °C is below absolute zero\n    at check (lib/check.ts:10:11)",
		"the worker's frame, in the imported .ts module")
	assert.NotContains(t, res.Stderr, "bundle.js")

	// riot.doWorkCall of the .ts module: the worker runs it bundled as
	// CommonJS, and its own stack (read from the module's source map)
	// names the .ts line.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "call.js"),
		[]byte("console.log(riot.waitUntilDone(riot.doWorkCall('lib/check.ts', 'check', { id: 3, celsius: -500 })));\n"), 0o644))
	res = bins.RunEval(t, "--tracker", tr.Addr(), filepath.Join(dir, "call.js"))
	require.Equal(t, 1, res.Code, res)
	assert.Contains(t, res.Stderr, "Caused by: RangeError: reading 3: -500 °C is below absolute zero\n    at check (lib/check.ts:10:11)")

	dir = writeJob(t, map[string]string{"job.mts": "import chunk from 'lodash/chunk.js';\n\nconsole.log(chunk([1, 2, 3], 2));\n"})
	res = bins.RunEval(t, "--tracker", tr.Addr(), filepath.Join(dir, "job.mts"))
	require.Equal(t, 1, res.Code, res)
	assert.Empty(t, res.Stdout)
	assert.Contains(t, res.Stderr, `job.mts:1:19: import "lodash/chunk.js": not a file, and no node_modules folder beside the script or above it holds a package "lodash": install it there (npm install lodash)`)
	assert.Equal(t, 1, strings.Count(res.Stderr, "lodash/chunk.js"), "said once: %s", res.Stderr)
}
