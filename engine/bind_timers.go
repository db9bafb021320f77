package engine

import (
	"container/heap"
	"context"
	"math"
	"time"

	"github.com/dop251/goja"
	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// timers are one workunit's setTimeout and setInterval callbacks. They run
// only while the workunit waits for its promise to settle, and every timer
// still pending when the workunit ends is dropped: no timer outlives its
// workunit.
type timers struct {
	queue timerQueue
	byID  map[int64]*timer
	next  int64
	seq   int64
}

type timer struct {
	id       int64
	at       time.Time
	seq      int64 // ties at the same time run in the order they were set
	fn       goja.Callable
	args     []goja.Value
	interval time.Duration
	index    int
}

type timerQueue []*timer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i]; q[i].index = i; q[j].index = j }
func (q *timerQueue) Push(x any)   { t := x.(*timer); t.index = len(*q); *q = append(*q, t) }
func (q *timerQueue) Pop() any     { old := *q; t := old[len(old)-1]; *q = old[:len(old)-1]; return t }
func (t *timers) pending() bool    { return len(t.queue) > 0 }
func (t *timers) reset()           { t.queue = t.queue[:0]; clear(t.byID) }

func (t *timers) add(fn goja.Callable, delay time.Duration, args []goja.Value, repeat bool) int64 {
	if t.byID == nil {
		t.byID = make(map[int64]*timer)
	}
	t.next++
	t.seq++
	tm := &timer{id: t.next, at: time.Now().Add(delay), seq: t.seq, fn: fn, args: args}
	if repeat {
		tm.interval = max(delay, time.Millisecond)
	}
	t.byID[tm.id] = tm
	heap.Push(&t.queue, tm)
	return tm.id
}

func (t *timers) clear(id int64) {
	if tm, ok := t.byID[id]; ok {
		heap.Remove(&t.queue, tm.index)
		delete(t.byID, id)
	}
}

// runNext waits for the earliest timer and runs it. It returns the
// context's cause if the context ends first.
func (t *timers) runNext(ctx context.Context) error {
	tm := t.queue[0]
	if d := time.Until(tm.at); d > 0 {
		w := time.NewTimer(d)
		select {
		case <-w.C:
		case <-ctx.Done():
			w.Stop()
			return context.Cause(ctx)
		}
	}
	if tm.interval > 0 {
		tm.at = time.Now().Add(tm.interval)
		t.seq++
		tm.seq = t.seq
		heap.Fix(&t.queue, tm.index)
	} else {
		heap.Remove(&t.queue, tm.index)
		delete(t.byID, tm.id)
	}
	_, err := tm.fn(goja.Undefined(), tm.args...)
	return err
}

// bindTimers installs sleep, setTimeout, clearTimeout, setInterval,
// clearInterval and queueMicrotask.
func bindTimers(rl *realm) error {
	set := func(repeat bool) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			fn, ok := goja.AssertFunction(call.Argument(0))
			if !ok {
				rl.throw("TypeError", "the callback must be a function; it is %s", jsvalue.Describe(call.Argument(0)))
			}
			ms := call.Argument(1).ToFloat()
			if math.IsNaN(ms) || ms < 1 {
				ms = 1
			}
			var args []goja.Value
			if len(call.Arguments) > 2 {
				args = append(args, call.Arguments[2:]...)
			}
			if rl.cur == nil {
				rl.throw("Error", "timers can be set only while a workunit runs")
			}
			return rl.rt.ToValue(rl.cur.timers.add(fn, time.Duration(ms*float64(time.Millisecond)), args, repeat))
		}
	}
	clearTimer := func(call goja.FunctionCall) goja.Value {
		if rl.cur != nil {
			rl.cur.timers.clear(call.Argument(0).ToInteger())
		}
		return goja.Undefined()
	}
	sleep := func(call goja.FunctionCall) goja.Value {
		sec := call.Argument(0).ToFloat()
		if math.IsNaN(sec) || sec < 0 {
			rl.throw("RangeError", "sleep: seconds must be a number ≥ 0, not %s", jsvalue.Describe(call.Argument(0)))
		}
		if rl.cur == nil || sec == 0 {
			return goja.Undefined()
		}
		d := time.Duration(math.Min(sec*float64(time.Second), math.MaxInt64))
		w := time.NewTimer(d)
		defer w.Stop()
		select {
		case <-w.C:
		case <-rl.cur.ctx.Done():
			// Interrupt now rather than when the context's watcher gets
			// to it, so that no more of the script runs.
			rl.interrupt(context.Cause(rl.cur.ctx))
		}
		return goja.Undefined()
	}
	if err := rl.setFuncs(rl.rt.GlobalObject(), []Func{
		{"setTimeout", set(false)},
		{"setInterval", set(true)},
		{"clearTimeout", clearTimer},
		{"clearInterval", clearTimer},
		{"sleep", sleep},
	}); err != nil {
		return err
	}
	_, err := queueMicrotaskScript.Run(rl.rt)
	return err
}

// queueMicrotaskScript installs queueMicrotask.
var queueMicrotaskScript = jsvalue.NewScript(`globalThis.queueMicrotask = function queueMicrotask(callback) {
		if (typeof callback !== 'function') throw new TypeError('queueMicrotask: the callback must be a function');
		Promise.resolve().then(callback);
	};`)
