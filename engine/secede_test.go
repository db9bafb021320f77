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

// secedeBinding installs wait(): the workunit gives its slot up, waits
// for the test's channel (or its context), and takes a slot back.
func secedeBinding(release <-chan struct{}, seceded chan<- struct{}) Binding {
	return BindingFunc(func(sb *Sandbox) error {
		return sb.Runtime().Set("wait", func(goja.FunctionCall) goja.Value {
			if err := sb.Secede(); err != nil {
				sb.Throw("RangeError", "%v", err)
			}
			seceded <- struct{}{}
			select {
			case <-release:
			case <-sb.Context().Done():
			}
			if err := sb.Rejoin(); err != nil {
				sb.Interrupt(err)
				return goja.Undefined()
			}
			return sb.Runtime().ToValue("back")
		})
	})
}

// On one slot, a workunit that gave its slot up lets another run; it
// takes the slot back after, and the engine ends with its one permit.
func TestEngine_SecedeGivesTheSlotUp(t *testing.T) {
	t.Parallel()
	release, seceded := make(chan struct{}), make(chan struct{}, 4)
	e, err := New(Options{Slots: 1, MaxSeceded: 1, Bindings: []Binding{secedeBinding(release, seceded)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx := t.Context()

	type result struct {
		v   any
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		res, err := e.Eval(ctx, "wait()")
		if err != nil {
			waiting <- result{err: err}
			return
		}
		v, err := res.Decode()
		waiting <- result{v, err}
	}()
	<-seceded
	assert.Equal(t, 1, e.Seceded())
	// The slot runs another workunit while the first waits, in a slot of
	// its own.
	res, err := e.Eval(ctx, "riot.worker.slot")
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, 1.0, v, "a second slot, made for the purpose")

	// Past MaxSeceded, Secede refuses.
	res, err = e.Eval(ctx, "try { wait() } catch (e) { e.name + ': ' + e.message }")
	require.NoError(t, err)
	v, err = res.Decode()
	require.NoError(t, err)
	assert.Contains(t, v, "RangeError: engine: too many workunits wait with their slots given up")

	close(release)
	r := <-waiting
	require.NoError(t, r.err)
	assert.Equal(t, "back", r.v)
	assert.Zero(t, e.Seceded())
	assert.Len(t, e.permits, 1, "the one permit is back")
}

// A workunit whose time limit passes while it waits with its slot given
// up fails with its time limit, and gives back no permit it does not
// hold.
func TestEngine_RejoinAfterTheTimeLimit(t *testing.T) {
	t.Parallel()
	seceded := make(chan struct{}, 1)
	e, err := New(Options{Slots: 1, Bindings: []Binding{secedeBinding(nil, seceded)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	// A run holds the slot while the first waits for its limit: the
	// first cannot take a slot back before its limit passes.
	block, started := make(chan struct{}), make(chan struct{})
	go func() {
		<-seceded
		_, _ = e.Run(context.Background(), Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: "1", Name: "eval"},
			Started: func(func(error)) { close(started); <-block }})
	}()
	_, err = e.Run(t.Context(), Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: "wait()", Name: "eval"}, Timeout: 50 * time.Millisecond})
	var werr *workunit.Error
	require.True(t, errors.As(err, &werr), "%v", err)
	assert.Equal(t, workunit.TimeLimit, werr.Kind)
	<-started
	close(block)
	// The engine runs one workunit at a time still.
	res, err := e.Eval(t.Context(), "2")
	require.NoError(t, err)
	v, err := res.Decode()
	require.NoError(t, err)
	assert.Equal(t, 2.0, v)
	assert.Len(t, e.permits, 1)
}

// A workunit whose Rejoin failed holds its slot until it returns, but no
// longer counts as seceded: another may secede meanwhile, and a slot is
// made for a third. Every slot goes back when its run ends, more of them
// than Slots+MaxSeceded: none waits for room among the free ones.
func TestEngine_SlotsPastTheBoundGoBack(t *testing.T) {
	t.Parallel()
	releaseB, secededB := make(chan struct{}), make(chan struct{}, 1)
	aSeceded, aRejoinFailed, holdA := make(chan struct{}), make(chan struct{}), make(chan struct{})
	gate, gated := make(chan struct{}), make(chan struct{})
	hold := BindingFunc(func(sb *Sandbox) error {
		if err := sb.Runtime().Set("hold", func(goja.FunctionCall) goja.Value {
			if err := sb.Secede(); err != nil {
				sb.Throw("RangeError", "%v", err)
			}
			close(aSeceded)
			<-sb.Context().Done()
			if err := sb.Rejoin(); err == nil {
				sb.Throw("Error", "Rejoin after the stop took a slot")
			}
			close(aRejoinFailed)
			<-holdA
			return goja.Undefined()
		}); err != nil {
			return err
		}
		return sb.Runtime().Set("gate", func(goja.FunctionCall) goja.Value {
			close(gated)
			<-gate
			return goja.Undefined()
		})
	})
	e, err := New(Options{Slots: 1, MaxSeceded: 1, AbandonAfter: time.Hour,
		Bindings: []Binding{secedeBinding(releaseB, secededB), hold}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	ctxA, cancelA := context.WithCancel(t.Context())
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := e.Run(ctxA, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: "hold()", Name: "eval"}})
		aDone <- err
	}()
	<-aSeceded
	go func() {
		_, err := e.Eval(t.Context(), "gate(); wait()")
		bDone <- err
	}()
	<-gated
	cancelA()
	<-aRejoinFailed
	close(gate)
	<-secededB
	res, err := e.Eval(t.Context(), "3")
	require.NoError(t, err)
	assert.Equal(t, 2, res.Slot, "a third slot, made while the others are held")
	close(holdA)
	<-aDone // canceled, or done: hold returned once the stop came
	close(releaseB)
	select {
	case err := <-bDone:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the last run did not end: its slot waits for room among the free slots")
	}
	res, err = e.Eval(t.Context(), "4")
	require.NoError(t, err)
	assert.Len(t, e.permits, 1)
}

// A workunit abandoned while it waits with its slot given up (its call
// ignores the stop past AbandonAfter) gave its permit back when it
// seceded: its slot's release gives none, and the call's Rejoin, when it
// returns at last, keeps none. Before, the release gave a second permit:
// two workunits ran on one slot, and the next release blocked on the
// full channel.
func TestEngine_AbandonedWhileSeceded(t *testing.T) {
	t.Parallel()
	seceded, unstick, rejoined := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	stuck := BindingFunc(func(sb *Sandbox) error {
		return sb.Runtime().Set("stuck", func(goja.FunctionCall) goja.Value {
			if err := sb.Secede(); err != nil {
				sb.Throw("RangeError", "%v", err)
			}
			close(seceded)
			<-unstick // deaf to the stop, as a long built-in call is
			err := sb.Rejoin()
			rejoined <- err
			if err != nil {
				sb.Interrupt(err)
			}
			return goja.Undefined()
		})
	})
	e, err := New(Options{Slots: 1, MaxSeceded: 1, AbandonAfter: 20 * time.Millisecond, Bindings: []Binding{stuck}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: "stuck()", Name: "eval"}})
		done <- err
	}()
	<-seceded
	cancel()
	var werr *workunit.Error
	require.ErrorAs(t, <-done, &werr, "the stopped workunit fails once abandoned")
	assert.Contains(t, werr.Message, "abandoned")
	assert.Len(t, e.permits, 1, "one slot: one permit, not two")

	// Two workunits in turn on the one slot: each release has room for
	// its permit.
	for _, src := range []string{"1", "2"} {
		_, err := e.Eval(t.Context(), src)
		require.NoError(t, err)
	}
	close(unstick)
	require.Error(t, <-rejoined, "the abandoned call gets no slot back")
	assert.Len(t, e.permits, 1)
	assert.Zero(t, e.Seceded())
}
