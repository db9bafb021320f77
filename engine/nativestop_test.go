package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// stopBound is how long a stopped workunit may take to end in these tests:
// far more than its limit and Options.AbandonAfter, for a loaded machine.
const stopBound = 30 * time.Second

// runBounded runs req on e and returns its result and error, failing the
// test if Run has not returned within stopBound.
func runBounded(t *testing.T, ctx context.Context, e *Engine, req Request) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.Run(ctx, req)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(stopBound):
		t.Fatalf("the workunit did not end within %s of its start", stopBound)
		return nil, nil
	}
}

func workunitError(t *testing.T, err error) *workunit.Error {
	t.Helper()
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr), "error %v (%T) is not a *workunit.Error", err, err)
	return werr
}

// Long built-in calls past the time limit: the workunit fails with the
// time limit within a bound, whatever the built-in does, and its slot
// runs the next workunit on a clean runtime. JSON.stringify stops at the
// limit itself (no runtime abandoned: AbandonAfter is longer than the
// test's bound); the others may outlast AbandonAfter and be abandoned.
func TestEngine_Limit_Time_NativeCalls(t *testing.T) {
	t.Parallel()
	deep := `globalThis.dirty = 1; const a = []; let x = a; for (let i = 0; i < DEPTH; i++) { const b = []; x.push(b); x = b }; `
	for _, tt := range []struct {
		name, src     string
		interruptible bool
	}{
		// Minutes without the stop-aware JSON.stringify: the circular
		// check makes it quadratic in the depth.
		{"JSON.stringify of a deep array", deep + `JSON.stringify(a).length`, true},
		// Unwinding the nested joins takes seconds to minutes.
		{"String() of a deep array", deep + `String(a).length`, false},
		// regexp2 backtracks: about 2ⁿ steps for n letters.
		{"a regular expression with a back-reference", `globalThis.dirty = 1; /^(a+)+\1b$/.test('a'.repeat(25))`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Slots: 1}
			if tt.interruptible {
				opts.AbandonAfter = 10 * stopBound
			}
			e := newEngine(t, opts)
			src := tt.src
			switch tt.name {
			case "JSON.stringify of a deep array":
				src = "const DEPTH = 1e5; " + src
			case "String() of a deep array":
				src = "const DEPTH = 5000; " + src
			}
			req := evalReq(src)
			req.Timeout = time.Second
			res, err := runBounded(t, context.Background(), e, req)
			werr := workunitError(t, err)
			assert.Equal(t, workunit.TimeLimit, werr.Kind, werr.Message)
			assert.Equal(t, "TimeoutError", werr.Name)
			assert.Contains(t, werr.Message, "workunit ran past its time limit of 1s")
			require.NotNil(t, res)
			if tt.interruptible {
				assert.Equal(t, 0, e.Abandoned(), "the workunit stopped at its limit")
			}
			// The slot goes on, on a clean runtime.
			assert.Equal(t, 2.0, evalValue(t, e, "1 + 1"))
			assert.Equal(t, "undefined", evalValue(t, e, "typeof dirty"))
		})
	}
}

// blockingBinding installs block(), a Go function that ignores interrupts:
// it says it was entered, then waits for release. It stands for a long
// built-in call.
func blockingBinding(entered chan<- struct{}, release <-chan struct{}) Binding {
	return BindingFunc(func(sb *Sandbox) error {
		return sb.SetFuncs(sb.Runtime().GlobalObject(), []Func{{Name: "block", Fn: func(goja.FunctionCall) goja.Value {
			entered <- struct{}{}
			<-release
			return goja.Undefined()
		}}})
	})
}

// A stopped workunit that does not return is abandoned after
// AbandonAfter: its caller gets its failure (the time limit, or the
// caller's cancel), the slot runs the next workunits on a fresh runtime
// while the stuck call goes on, and once that call returns its runtime is
// released. Run returns the failure itself (the executor evaluates), or,
// with Request.Abandoned (the caller's goroutine evaluates), gives it to
// Abandoned and returns ErrAbandoned once the call returned.
func TestEngine_Abandon(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		kind   workunit.ErrorKind
		inline bool
	}{
		{"time limit", workunit.TimeLimit, false},
		{"caller's cancel", workunit.Canceled, false},
		{"time limit, Abandoned", workunit.TimeLimit, true},
		{"caller's cancel, Abandoned", workunit.Canceled, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			e := newEngine(t, Options{Slots: 1, AbandonAfter: 50 * time.Millisecond,
				Bindings: []Binding{blockingBinding(entered, release)}})
			req := evalReq(`globalThis.dirty = 1; console.log('before'); block(); 'unreachable'`)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.kind == workunit.TimeLimit {
				// Far longer than it takes to reach block(), whose wait
				// the limit then interrupts.
				req.Timeout = 2 * time.Second
			} else {
				go func() {
					<-entered
					cancel()
				}()
			}
			var returned chan error
			var res *Result
			var err error
			if tt.inline {
				type out struct {
					res *Result
					err error
				}
				got := make(chan out, 1)
				req.Abandoned = func(res *Result, err error) { got <- out{res, err} }
				returned = make(chan error, 1)
				go func() {
					res, err := e.Run(ctx, req)
					assert.Nil(t, res)
					returned <- err
				}()
				select {
				case o := <-got:
					res, err = o.res, o.err
				case <-time.After(stopBound):
					t.Fatalf("Abandoned was not called within %s", stopBound)
				}
			} else {
				res, err = runBounded(t, ctx, e, req)
			}
			werr := workunitError(t, err)
			assert.Equal(t, tt.kind, werr.Kind)
			assert.Contains(t, werr.Message, "so its runtime was abandoned")
			require.NotNil(t, res)
			lines, lerr := res.Console.Lines()
			require.NoError(t, lerr)
			require.Len(t, lines, 1)
			assert.Contains(t, lines[0].Text, "console output of this workunit is lost")
			assert.Equal(t, 1, e.Stuck())
			assert.Equal(t, 1, e.Abandoned())

			// The slot goes on while the call is stuck, on a new runtime.
			for range 3 {
				assert.Equal(t, "undefined", evalValue(t, e, "typeof dirty"))
			}
			close(release)
			if returned != nil {
				select {
				case err := <-returned:
					assert.ErrorIs(t, err, ErrAbandoned)
				case <-time.After(stopBound):
					t.Fatalf("Run did not return within %s of the call's return", stopBound)
				}
			}
			require.Eventually(t, func() bool { return e.Stuck() == 0 }, stopBound, time.Millisecond,
				"the abandoned runtime is released once its call returns")
			assert.Equal(t, 1, e.Abandoned())
			assert.Equal(t, 2.0, evalValue(t, e, "1 + 1"))
		})
	}
}

// A workunit that returns after its stop, within AbandonAfter, is not
// abandoned: it fails with its time limit alone.
func TestEngine_Abandon_NotWhenItReturns(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, AbandonAfter: stopBound})
	for range 3 {
		req := evalReq(`while (true) {}`)
		req.Timeout = 10 * time.Millisecond
		werr, _ := evalError(t, e, req)
		assert.Equal(t, workunit.TimeLimit, werr.Kind)
		assert.Equal(t, "workunit ran past its time limit of 10ms", werr.Message)
	}
	assert.Equal(t, 0, e.Abandoned())
}

// A stop that comes after its workunit ended (a revoke on its way) starts
// an abandon wait that never reaches the slot's next workunit.
func TestEngine_Abandon_LateStop(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1, AbandonAfter: time.Millisecond})
	var stop func(error)
	req := evalReq(`1`)
	req.Started = func(s func(error)) { stop = s }
	_, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	stop(errors.New("late"))
	// Runs past the late stop's abandon wait.
	assert.Equal(t, true, evalValue(t, e, `sleep(0.05); true`))
	assert.Equal(t, 0, e.Abandoned())
}
