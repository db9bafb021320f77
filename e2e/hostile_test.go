package e2e_test

import (
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
