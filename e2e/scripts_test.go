package e2e_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// scriptWorker is the name of the riot-worker the scripts run on; in the
// embedded mode the worker is "local".
const scriptWorker = "sw"

// scriptCase is one job script of scripts/, run with riot-worker eval
// against riotd and riot-worker processes and in the embedded mode.
type scriptCase struct {
	name string
	args []string // after the script's path
	// embedded are eval's flags in the embedded mode (before the script).
	embedded []string
	// noWorkers runs it against a riotd without workers: the script
	// takes its workunit itself (low-level.js).
	noWorkers bool
	code      int
	// check looks at one run; worker is the worker's name in that mode.
	check func(t *testing.T, res e2e.EvalResult, worker string)
	// normalize, if set, maps stdout to what both modes must print alike
	// (after worker names are replaced by WORKER).
	normalize func(string) string
}

var (
	freeVarLine = regexp.MustCompile(`^Workunit #(\d): Master chose (\d+), but we choose (\d+)\.$`)
	dictTime    = regexp.MustCompile(`(?m)^real time: \d+ ms\n`)
)

func scriptCases() []scriptCase {
	return []scriptCase{
		{
			name:     "simple-demo.js",
			embedded: []string{"--workers", "10"},
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "[\n   0, 10, 20, 30, 40,\n  50, 60, 70, 80, 90\n]\nComplete\n", res.Stdout)
			},
		},
		{
			name: "do-work-call.js",
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "[\n   0,  2,  4,  6,  8,\n  10, 12, 14, 16, 18\n]\n", res.Stdout)
			},
		},
		{
			name:     "nested-fib.js",
			embedded: []string{"--workers", "1"},
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "fib(20) = 6765\n", res.Stdout)
			},
		},
		{
			name: "nested-tree.js",
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "sum: 499500, workunits: 7\ncaught WorkunitError: RangeError: -2 is negative\n", res.Stdout)
			},
		},
		{
			name: "do-work-eval.js",
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "8\n", res.Stdout)
			},
		},
		{
			name: "free-variables.js",
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
				require.Len(t, lines, 10, res)
				master := ""
				for i, l := range lines {
					m := freeVarLine.FindStringSubmatch(l)
					require.NotNil(t, m, "line %d: %q", i, l)
					assert.Equal(t, string(rune('0'+i)), m[1], "workunits in order")
					if master == "" {
						master = m[2]
					}
					assert.Equal(t, master, m[2], "one master number, captured by every workunit")
				}
			},
			normalize: func(s string) string {
				return regexp.MustCompile(`chose \d+, but we choose \d+`).ReplaceAllString(s, "chose N, but we choose N")
			},
		},
		{
			name: "failing.js",
			code: 1,
			check: func(t *testing.T, res e2e.EvalResult, worker string) {
				assert.Regexp(t, `caught WorkunitError: workunit [0-9a-f]{12} failed on worker `+worker+`: TypeError: row "three" is not a number`, res.Stdout)
				assert.Contains(t, res.Stdout, "callWhenDone: error? true, from a worker: true, message: row \"four\" is not a number")
				assert.Regexp(t, `(?m)^WorkunitError: workunit [0-9a-f]{12} failed on worker `+worker+`: TypeError: row "six" is not a number$`, res.Stderr)
				assert.Contains(t, res.Stderr, "Caused by: TypeError: row \"six\" is not a number")
			},
		},
		{
			name: "dict.js",
			args: []string{"--words", "scripts/testdata/words.txt"},
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Contains(t, res.Stdout, "There are 4 words.\n")
				assert.Regexp(t, `(?m)^real time: \d+ ms$`, res.Stdout)
			},
			normalize: func(s string) string {
				// The sample is shuffled: compare it sorted.
				s = dictTime.ReplaceAllString(s, "")
				lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
				last := lines[len(lines)-1]
				var pairs [][]string
				if json.Unmarshal([]byte(last), &pairs) == nil {
					slices.SortFunc(pairs, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
					b, _ := json.Marshal(pairs)
					lines[len(lines)-1] = string(b)
				}
				return strings.Join(lines, "\n") + "\n"
			},
		},
		{
			name:      "low-level.js",
			embedded:  []string{"--workers", "0"},
			noWorkers: true,
			check: func(t *testing.T, res e2e.EvalResult, _ string) {
				assert.Equal(t, "who am I: string\ninfo: waiting\ntook my own workunit: true fn\nfinished: done 42\ninfo: done 42 true\n", res.Stdout)
			},
		},
	}
}

// TestE2E_Scripts runs each script of scripts/ with riot-worker eval
// against real riotd and riot-worker processes, and in the embedded mode
// (no --tracker), and checks that both print the same apart from worker
// names and random numbers.
func TestE2E_Scripts(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: scriptWorker, Slots: 12})
	tr.WaitFor(t, workers(1))
	bare := bins.StartTracker(t, e2e.TrackerOptions{Label: "riotd without workers"})

	for _, tc := range scriptCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := "scripts/" + tc.name
			addr, worker := tr.Addr(), scriptWorker
			if tc.noWorkers {
				addr = bare.Addr()
			}
			remote := bins.RunEval(t, append([]string{"--tracker", addr, script}, tc.args...)...)
			require.Equal(t, tc.code, remote.Code, "with riotd: %s", remote)
			t.Run("riotd", func(t *testing.T) { tc.check(t, remote, worker) })

			embedded := bins.RunEval(t, append(append(slices.Clone(tc.embedded), script), tc.args...)...)
			require.Equal(t, tc.code, embedded.Code, "embedded: %s", embedded)
			t.Run("embedded", func(t *testing.T) { tc.check(t, embedded, "local") })

			norm := func(s, worker string) string {
				s = strings.ReplaceAll(s, "worker "+worker+":", "worker WORKER:")
				s = strings.ReplaceAll(s, "["+worker+"]", "[WORKER]")
				if tc.normalize != nil {
					s = tc.normalize(s)
				}
				return s
			}
			assert.Equal(t, norm(remote.Stdout, worker), norm(embedded.Stdout, "local"), "stdout, riotd vs embedded")
			assert.Equal(t, norm(remote.Stderr, worker), norm(embedded.Stderr, "local"), "stderr, riotd vs embedded")
		})
	}
}

// TestE2E_EvalLeavesNoMaster: riot-worker eval with a job script closes
// its master connection when the script ends.
func TestE2E_EvalLeavesNoMaster(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	res := bins.RunEval(t, "--tracker", tr.Addr(), "scripts/do-work-eval.js")
	require.Equal(t, 0, res.Code, res)
	tr.WaitFor(t, func(s tracker.Status) bool { return len(s.Masters) == 0 && s.Workunits.Done == 1 })
}
