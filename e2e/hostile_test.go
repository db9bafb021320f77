package e2e_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/e2e"
)

// sharedRefsSource is a result of a few hundred bytes: 40 levels of
// [a, a], which a walk of every path prints as 2^40 leaves.
const sharedRefsSource = "let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; a"

// sharedRefsPrinted is how riot-worker eval prints it: two levels deep, as
// Node's REPL does.
const sharedRefsPrinted = "[\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ],\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ]\n]\n"

// TestE2E_SharedReferencesPrint: riot-worker eval prints a small result
// made of shared references at once, in process and through riotd and a
// worker. A regression test: its printer walked the value path by path,
// for ever, and ignored SIGTERM meanwhile.
func TestE2E_SharedReferencesPrint(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"in process", []string{"-e", sharedRefsSource}},
		{"riotd", []string{"--tracker", tr.Addr(), "-e", sharedRefsSource}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := bins.RunEval(t, tt.args...)
			assert.Equal(t, 0, res.Code, res)
			assert.Equal(t, sharedRefsPrinted, res.Stdout, res)
		})
	}
}

// TestE2E_LargeErrorsAndReports: through riotd with small frames, a
// workunit that throws a huge value or Error, or whose result and console
// together pass a frame, ends, with an error that says what was cut. A
// regression test: the worker could not send the report, dropped it, and
// the workunit stayed running for ever.
func TestE2E_LargeErrorsAndReports(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--max-frame-bytes", "64KiB"}})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w", Slots: 1})
	tr.WaitFor(t, workers(1))
	for _, tt := range []struct {
		name, src string
		code      int
		out       string   // stdout's start
		errs      []string // in stderr
	}{
		{"thrown value", "throw {big: 'x'.repeat(1e6)}", 1, "",
			[]string{"worker w: Uncaught {", "more bytes cut]", "(the thrown value is not sent: its encoding is larger than"}},
		{"Error message", "throw new Error('x'.repeat(1e6))", 1, "",
			[]string{"worker w: Error: xxxx", "bytes cut] ..."}},
		{"Error property", "throw Object.assign(new Error('m'), {big: 'x'.repeat(1e6)})", 1, "",
			[]string{"worker w: Error: m\n"}},
		{"result and console", "console.log('c'.repeat(15000)); console.log('d'.repeat(15000)); 'r'.repeat(47000)", 0,
			"[w ", []string{"] [riot: 1 line (15000 bytes) of console output dropped past the limit of 16384 bytes]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := bins.RunEval(t, "--tracker", tr.Addr(), "-e", tt.src)
			assert.Equal(t, tt.code, res.Code, "%.2000s", res)
			assert.True(t, strings.HasPrefix(res.Stdout, tt.out), "stdout: %.200q", res.Stdout)
			for _, want := range tt.errs {
				assert.Contains(t, res.Stderr, want)
			}
			assert.Less(t, len(res.Stderr), 64<<10, "stderr: %.200q", res.Stderr)
			if tt.name == "result and console" {
				// console.log on stdout, then the value; the note on
				// what was dropped (a warning) on stderr.
				assert.Regexp(t, `^\[w [0-9a-f]{12}\] c+\n"r+"\n$`, res.Stdout)
				assert.Contains(t, res.Stdout, "] "+strings.Repeat("c", 15000)+"\n\"")
				assert.True(t, strings.HasSuffix(res.Stdout, "\""+strings.Repeat("r", 47000)+"\"\n"), "the value last")
			}
		})
	}
}
