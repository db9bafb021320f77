package job

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/tracker/trackertest"
)

// runCommand runs RunCommand and returns what it printed.
func runCommand(ctx context.Context, o CommandOptions) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = RunCommand(ctx, o, &out, &errb)
	return out.String(), errb.String(), err
}

func TestRunCommand_Eval(t *testing.T) {
	t.Parallel()
	out, errs, err := runCommand(t.Context(), CommandOptions{Source: "console.log('x'); console.warn('w'); [1, 2].map(x => x * 10)",
		Warnings: []string{"careful"}})
	require.NoError(t, err)
	assert.Equal(t, "[local] x\n[10,20]\n", out)
	assert.Equal(t, "riot-worker eval: warning: careful\n[local] w\n", errs)

	out, errs, err = runCommand(t.Context(), CommandOptions{Source: "function f() {\n  throw new TypeError('bad input')\n}\nf()"})
	require.Error(t, err)
	assert.Empty(t, out)
	assert.Equal(t, "TypeError: bad input\n    at f (eval:2:9)\n    at eval:4:2\n", errs)

	tr := trackertest.Start(t)
	startWorker(t, tr.Addr())
	out, errs, err = runCommand(t.Context(), CommandOptions{Source: "console.log('y'); console.error('z'); new Map([['a', 1]])", Job: Options{Tracker: tr.Addr()}})
	require.NoError(t, err)
	assert.Regexp(t, `^\[w [0-9a-f]{12}\] y\nMap\(1\) \{ 'a' => 1 \}\n$`, out)
	assert.Regexp(t, `^\[w [0-9a-f]{12}\] z\n$`, errs)
	// Again: the tracker answers from memory, and says so; nothing ran.
	out, errs, err = runCommand(t.Context(), CommandOptions{Source: "console.log('y'); console.error('z'); new Map([['a', 1]])", Job: Options{Tracker: tr.Addr()}})
	require.NoError(t, err)
	assert.Equal(t, "Map(1) { 'a' => 1 }\n", out)
	assert.Regexp(t, `^\[w [0-9a-f]{12}\] \(from memory: the tracker had this result; nothing ran`, errs)
	_, errs, err = runCommand(t.Context(), CommandOptions{Source: "null.x", Job: Options{Tracker: tr.Addr()}})
	require.Error(t, err)
	assert.Contains(t, errs, "worker w: TypeError: Cannot read property 'x' of")
}

// Ctrl-C on -e in process: an *InterruptedError, and says so.
func TestRunCommand_EvalInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, errs, err := runCommand(ctx, CommandOptions{Source: "while (true) {}"})
	var ie *InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "riot-worker eval: interrupted\n", errs)
}

// An interrupt while the result prints stops the printing: an
// *InterruptedError, and says so.
func TestPrintValue_Interrupted(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Options{Slots: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	res, err := eng.Eval(t.Context(), "let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; a")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errs bytes.Buffer
	err = printValue(ctx, &out, &errs, res.Value)
	var ie *InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Empty(t, out.String())
	assert.Equal(t, "riot-worker eval: interrupted while printing the result\n", errs.String())
}

func TestRunCommand_NoTracker(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	script := filepath.Join(t.TempDir(), "job.js")
	require.NoError(t, os.WriteFile(script, []byte("console.log(1)\n"), 0o644))
	for _, o := range []CommandOptions{
		{Source: "1", Job: Options{Tracker: addr}},
		{Job: Options{Tracker: addr, Script: script}},
	} {
		_, errs, err := runCommand(t.Context(), o)
		var ce *ConnectError
		require.ErrorAs(t, err, &ce)
		assert.Regexp(t, `^riot-worker eval: connecting to the tracker at .*connection refused; is riotd running there\?`, errs)
	}
}

func TestRunCommand_Script(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "job.js")
	require.NoError(t, os.WriteFile(script, []byte("console.log(riot.args.join(' ') + ' ' + riot.forWork([1, 2], (n) => n * 3));\n"), 0o644))
	out, errs, err := runCommand(t.Context(), CommandOptions{Job: Options{Script: script, Args: []string{"a", "-b"}, Workers: 1, Progress: ProgressOff}, GPU: true})
	require.NoError(t, err, errs)
	assert.Equal(t, "a -b 3,6\n", out)

	bad := filepath.Join(dir, "bad.js")
	require.NoError(t, os.WriteFile(bad, []byte("riot.doWork(() => {\n  return (1;\n})\n"), 0o644))
	_, errs, err = runCommand(t.Context(), CommandOptions{Job: Options{Script: bad, Workers: 0, Progress: ProgressOff}})
	require.Error(t, err)
	assert.Equal(t, "SyntaxError: bad.js:2:12: Unexpected token ;\n", errs)
}

func TestInterruptedText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  InterruptedError
		o    Options
		want string
	}{
		{InterruptedError{}, Options{}, "interrupted"},
		{InterruptedError{Submitted: 4}, Options{Tracker: "alfred"}, "interrupted with 0 of 4 workunits unfinished"},
		{InterruptedError{Submitted: 10, Unfinished: 7}, Options{Tracker: "alfred:2355"},
			"interrupted with 7 of 10 workunits unfinished; they stay with the tracker at alfred:2355 and run on: run the job again to collect their results (with --cancel-on-interrupt, an interrupt cancels them instead)"},
		{InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 7}, Options{Tracker: "alfred", CancelOnInterrupt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled them at the tracker at alfred"},
		{InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 5}, Options{Tracker: "alfred", CancelOnInterrupt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 5 of them at the tracker at alfred; 2 finished meanwhile"},
		// A run that joined the work of another run, which still waits.
		{InterruptedError{Submitted: 1, Unfinished: 1, OtherRuns: 1}, Options{Tracker: "localhost", CancelOnInterrupt: true},
			"interrupted with 1 of 1 workunit unfinished; canceled none of them at the tracker at localhost; " +
				"another master waits for 1 of them (another run of the job, whose work this one joined), " +
				"so it stays with the tracker and runs on"},
		{InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 2, OtherRuns: 3, Unchecked: 1}, Options{Tracker: "alfred", CancelOnInterrupt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 2 of them at the tracker at alfred; " +
				"another master waits for 3 of them (another run of the job, whose work this one joined), " +
				"so they stay with the tracker and run on; " +
				"1 more could not be canceled by this run (another master waits for them, or they finished meanwhile); 1 finished meanwhile"},
		{InterruptedError{Submitted: 10, Unfinished: 7, Canceled: 5, Unchecked: 2, CancelErr: errors.New("client: cancel: context deadline exceeded")},
			Options{Tracker: "alfred", CancelOnInterrupt: true},
			"interrupted with 7 of 10 workunits unfinished; canceled 5 of them at the tracker at alfred; could not cancel the rest: client: cancel: context deadline exceeded"},
		{InterruptedError{Submitted: 10, Unfinished: 7}, Options{Data: "state"},
			"interrupted with 7 of 10 workunits unfinished; what finished is kept in state: run the job again with --data state to pick up where it left off"},
		{InterruptedError{Submitted: 10, Unfinished: 7}, Options{},
			"interrupted with 7 of 10 workunits unfinished; the embedded tracker kept nothing (with --data DIR, a rerun picks up where the last one left off)"},
	} {
		assert.Equal(t, tt.want, interruptedText(&tt.err, &tt.o))
	}
}
