package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// probe is a binding that shows what a sandbox gives its bindings.
type probe struct {
	installs, closes atomic.Int32
}

func (p *probe) Install(sb *Sandbox) error {
	p.installs.Add(1)
	sb.OnClose(func() { p.closes.Add(1) })
	rt := sb.Runtime()
	return sb.SetFuncs(rt.GlobalObject(), []Func{
		{"probeGPUs", func(goja.FunctionCall) goja.Value {
			items := make([]any, len(sb.GPUs()))
			for i, g := range sb.GPUs() {
				items[i] = g
			}
			return rt.NewArray(items...)
		}},
		{"probeThrow", func(call goja.FunctionCall) goja.Value {
			sb.Throw(call.Argument(0).String(), "thrown by %s", "probe")
			return nil
		}},
		{"probeWait", func(goja.FunctionCall) goja.Value {
			// A wait ended by the workunit's context interrupts the script.
			<-sb.Context().Done()
			sb.Interrupt(context.Cause(sb.Context()))
			return goja.Undefined()
		}},
		{"probeKind", func(call goja.FunctionCall) goja.Value {
			o, _ := call.Argument(0).(*goja.Object)
			return rt.ToValue(o != nil && sb.Intrinsics().Classify(o) == jsvalue.KindArray)
		}},
		{"probeError", func(call goja.FunctionCall) goja.Value {
			werr := sb.WorkunitError(call.Argument(0), nil)
			return rt.ToValue(werr.Name + "|" + werr.Message)
		}},
		{"probeDecode", func(call goja.FunctionCall) goja.Value {
			v, err := sb.Decode([]byte{0x83, 0x01, 0x02, 0x03}) // [1, 2, 3]
			if err != nil {
				panic(err)
			}
			return v
		}},
	})
}

// Options.Bindings are installed into every sandbox, after riot's globals,
// and see the running workunit through the Sandbox.
func TestEngine_Bindings(t *testing.T) {
	t.Parallel()
	p := &probe{}
	e, err := New(Options{Slots: 1, Bindings: []Binding{p}, GPUs: []int{0, 1}})
	require.NoError(t, err)
	assert.Equal(t, []any{0.0, 1.0}, evalValue(t, e, "probeGPUs()"))
	assert.Equal(t, []any{0.0, 1.0}, evalValue(t, e, "riot.worker.gpus"))
	req := evalReq("probeGPUs()")
	req.GPUs = []int{1}
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	v, _ := res.Decode()
	assert.Equal(t, []any{1.0}, v)
	assert.Equal(t, []any{true, false}, evalValue(t, e, "[probeKind([1]), probeKind({})]"))
	assert.Equal(t, "TypeError|x", evalValue(t, e, "probeError(new TypeError('x'))"))
	assert.Equal(t, "|Uncaught 7", evalValue(t, e, "probeError(7)"))
	assert.Equal(t, []any{1.0, 2.0, 3.0}, evalValue(t, e, "probeDecode()"))
	assert.Equal(t, []any{"RangeError", "thrown by probe", true},
		evalValue(t, e, "try { probeThrow('RangeError') } catch (e) { [e.name, e.message, e instanceof RangeError] }"))
	assert.Equal(t, []any{"DataCloneError", true, false},
		evalValue(t, e, "try { probeThrow('DataCloneError') } catch (e) { [e.name, e instanceof Error, Object.keys(e).includes('name')] }"))

	// A time limit ends a binding's wait, and the workunit fails with it.
	req = evalReq("try { probeWait() } catch (e) {}; 'went on'")
	req.Timeout = 20 * time.Millisecond
	werr, _ := evalError(t, e, req)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)

	// The realm that ran away was dropped and closed; another realm has a
	// sandbox of its own; Close closes the rest.
	assert.Equal(t, int32(1), p.closes.Load())
	req = evalReq("1")
	req.Realm = "other"
	_, err = e.Run(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(2), p.installs.Load())
	require.NoError(t, e.Close())
	assert.Equal(t, int32(2), p.closes.Load())
}

// A binding that fails, or panics, fails the workunit that needed the
// sandbox, not the engine.
func TestEngine_Bindings_Fail(t *testing.T) {
	t.Parallel()
	for _, b := range []Binding{
		BindingFunc(func(*Sandbox) error { return errors.New("no such device") }),
		BindingFunc(func(*Sandbox) error { panic(fmt.Sprint("no such device")) }),
	} {
		e := newEngine(t, Options{Slots: 1, Bindings: []Binding{b}})
		_, err := e.Eval(context.Background(), "1")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no such device")
	}
}

// A standalone sandbox has riot's globals, its own console and timers run
// by its owner.
func TestStandalone(t *testing.T) {
	t.Parallel()
	var lines []string
	sink := consoleFunc(func(l workunit.Level, text string) { lines = append(lines, string(l)+" "+text) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := NewStandalone(ctx, StandaloneOptions{Console: sink, Bindings: []Binding{&probe{}}})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Runtime().RunString(`
		console.log('a', 1); console.warn({b: 2}); console.trace(); console.assert(false, 'x'); console.dir([1]);
		setTimeout(() => console.info('later'), 5);
		typeof riot`)
	require.NoError(t, err)
	at, ok := st.NextTimer()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(5*time.Millisecond), at, time.Second)
	require.NoError(t, st.RunTimer())
	_, ok = st.NextTimer()
	assert.False(t, ok)
	assert.Equal(t, []string{"log a 1", "warn { b: 2 }", "error Trace\n    at trace (native)\n    at :2:59", "error Assertion failed: x", "log [ 1 ]", "info later"}, lines)
	v, err := st.Runtime().RunString("typeof riot + ' ' + typeof probeGPUs + ' ' + probeGPUs().length")
	require.NoError(t, err)
	assert.Equal(t, "undefined function 0", v.String())
	_, err = st.Runtime().RunString("setTimeout(() => {}, 60000)")
	require.NoError(t, err)
	cancel()
	assert.ErrorIs(t, st.RunTimer(), context.Canceled)
}

// The end of a standalone sandbox's context interrupts its script, also
// one busy in a loop that calls nothing (a job script's while (true) {}),
// with the context's cause. A regression test: only sleep and the timers
// once ended with it, and such a script ran on until a second Ctrl-C.
func TestStandalone_ContextInterruptsALoop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	looping := make(chan struct{})
	st, err := NewStandalone(ctx, StandaloneOptions{Bindings: []Binding{BindingFunc(func(sb *Sandbox) error {
		return sb.Runtime().Set("looping", func() { close(looping) })
	})}})
	require.NoError(t, err)
	defer st.Close()
	done := make(chan error, 1)
	go func() {
		_, err := st.Runtime().RunString("looping(); while (true) {}")
		done <- err
	}()
	<-looping
	stop := errors.New("interrupted by the user")
	cancel(stop)
	select {
	case err := <-done:
		var ie *goja.InterruptedError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, stop, ie.Value())
	case <-time.After(10 * time.Second):
		t.Fatal("the loop ran on after its context ended")
	}
}

type consoleFunc func(workunit.Level, string)

func (f consoleFunc) Print(l workunit.Level, text string) { f(l, text) }
