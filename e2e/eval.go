package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// EvalResult is what a riot-worker eval run printed, and its exit status.
type EvalResult struct {
	Stdout, Stderr string
	Code           int
}

// String shows the result in a test's failure message.
func (r EvalResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Eval runs `riot-worker eval ARGS...` in the module's root directory
// (so that scripts/... paths work) until it exits and returns what it
// printed and its exit status. The error is only for a run that could not
// start or that ctx ended (the process is killed then). env is added to
// its environment; RIOT_TRACKER and RIOT_TOKEN are never inherited.
func (b Bins) Eval(ctx context.Context, env []string, args ...string) (EvalResult, error) {
	cmd := exec.CommandContext(ctx, b.RiotWorker, append([]string{"eval"}, args...)...)
	cmd.Dir = b.Root
	cmd.Env = childEnv(env)
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := EvalResult{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		return res, fmt.Errorf("e2e: riot-worker eval %s: %w\n%s", strings.Join(args, " "), ctx.Err(), res)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	case err != nil:
		return res, fmt.Errorf("e2e: riot-worker eval: %w", err)
	}
	return res, nil
}

// RunEval is Eval for tests: it fails the test when riot-worker eval
// cannot run or takes longer than DefaultWait.
func (b Bins) RunEval(t testing.TB, args ...string) EvalResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	res, err := b.Eval(ctx, nil, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res
}

// RunWorker runs `riot-worker ARGS...` (a command other than eval, such
// as status or cancel) until it exits, as RunEval does, with env added to
// its environment.
func (b Bins) RunWorker(t testing.TB, env []string, args ...string) EvalResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.RiotWorker, args...)
	cmd.Dir = b.Root
	cmd.Env = childEnv(env)
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := EvalResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("e2e: riot-worker %s: %v\n%s", strings.Join(args, " "), ctx.Err(), res)
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("e2e: riot-worker %s: %v", strings.Join(args, " "), err)
	}
	return res
}
