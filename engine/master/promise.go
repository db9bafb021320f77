package master

import (
	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/workunit"
)

// The await-able forms of the riot object: riot.run, riot.map,
// riot.runCall, riot.runEval and riot.result return Promises. Each submits
// at call time, as its seed form does, and returns at once; the promise
// settles on the script's goroutine, in a turn of the event loop (a job
// posted by the connection's callback), and counts as pending work until
// then, as a riot.callWhenDone callback does: the script does not end
// while one is pending. A promise rejects with the WorkunitError its seed
// form throws; an error of the call itself (a value that cannot be sent,
// no connection) rejects it too, as an async function's would.

// run1 implements riot.run, riot.runCall and riot.runEval: submit (one
// of submitFn, submitCall and submitEval), then a promise of the result.
func (m *master) run1(op string, call goja.FunctionCall, opts workunit.Options,
	submit func(string, goja.FunctionCall, workunit.Options) (Conn, workunit.Key)) goja.Value {
	frames := m.callerStack()
	var c Conn
	var key workunit.Key
	if ex := m.rt.Try(func() { c, key = submit(op, call, opts) }); ex != nil {
		return m.rejectedWith(ex)
	}
	return m.promise(op, c, key, frames)
}

// resultPromise implements riot.result(id): a promise of the result of a
// workunit submitted before (riot.doWork's id), or another master's.
func (m *master) resultPromise(call goja.FunctionCall) goja.Value {
	const op = "riot.result"
	frames := m.callerStack()
	var c Conn
	var key workunit.Key
	if ex := m.rt.Try(func() { c, key = m.conn(op), m.parseID(op, call.Argument(0)) }); ex != nil {
		return m.rejectedWith(ex)
	}
	return m.promise(op, c, key, frames)
}

// promise returns a promise of key's result, settled when the connection
// reports it finished. frames are the script's stack at the call, which a
// WorkunitError it rejects with shows, as waitUntilDone's does.
func (m *master) promise(op string, c Conn, key workunit.Key, frames []goja.StackFrame) goja.Value {
	p, resolve, reject := m.rt.NewPromise()
	m.waits++
	done := func(o *workunit.Outcome, err error) {
		m.post(func() {
			m.waits--
			var v goja.Value
			if ex := m.rt.Try(func() {
				if err != nil {
					m.sb.Throw("Error", "%s: workunit %s: %v", op, key.Short(), err)
				}
				v = m.settled(op, c, key, o, frames)
			}); ex != nil {
				settle(reject, ex.Value())
				return
			}
			settle(resolve, v)
		})
	}
	if e, ok := m.subs[key]; ok && e.conn == c {
		e.sub.OnDone(func(o *workunit.Outcome) { done(o, nil) })
		return m.rt.ToValue(p)
	}
	// Another master's workunit, or one this script did not submit
	// through c: waited for as waitUntilDone waits, so that an unknown key
	// rejects as waitUntilDone throws.
	ctx := m.ctx
	go func() {
		o, err := c.Wait(ctx, key)
		done(o, err)
	}()
	return m.rt.ToValue(p)
}

// mapWork implements riot.map(iterable, fn[, options]): a promise of the
// results in order, as riot.forWork returns them, or rejected with the
// error riot.forWork throws: that of the first failed item in the items'
// order, once the items before it are done. Its items are submitted in
// windows, as forWork's: more as the results come in, on the script's
// event loop.
func (m *master) mapWork(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.map"
	frames := m.callerStack()
	var fw *forWindow
	if ex := m.rt.Try(func() { fw = m.itemWindow(op, call, opts) }); ex != nil {
		return m.rejectedWith(ex)
	}
	p, resolve, reject := m.rt.NewPromise()
	if fw.n == 0 {
		settle(resolve, m.rt.NewArray())
		return m.rt.ToValue(p)
	}
	m.waits++
	// Outcomes of the window's items, by item modulo the window, as its
	// entries (forWindow.at): only those are outstanding.
	outs := make([]*workunit.Outcome, len(fw.ring))
	out := func(i int) **workunit.Outcome { return &outs[i%len(outs)] }
	results := make([]any, fw.n)
	next, done := 0, false
	end := func(with func(any) error, v any) {
		done = true
		m.waits--
		fw.close()
		settle(with, v)
	}
	fw.onSubmit = func(i int, e subEntry) {
		e.sub.OnDone(func(o *workunit.Outcome) {
			m.post(func() {
				if done {
					return
				}
				*out(i) = o
				// In order, as forWork waits: item next's outcome decides
				// once the ones before it are done.
				for next < fw.n && *out(next) != nil {
					e, o := fw.at(next), *out(next)
					m.reportOnce(*e, o)
					var v goja.Value
					if ex := m.rt.Try(func() { v = m.settled(op, fw.c, e.sub.Key(), o, frames) }); ex != nil {
						fw.failed()
						end(reject, ex.Value())
						return
					}
					results[next] = v
					*out(next) = nil
					*e = subEntry{}
					next++
				}
				if next == fw.n {
					end(resolve, m.rt.NewArray(results...))
					return
				}
				if ex := m.rt.Try(func() { fw.fill(next) }); ex != nil {
					end(reject, ex.Value())
				}
			})
		})
	}
	if ex := m.rt.Try(func() { fw.fill(0) }); ex != nil {
		end(reject, ex.Value())
	}
	return m.rt.ToValue(p)
}

// settled is a finished workunit's result, on the script's goroutine, or
// a thrown WorkunitError whose stack is frames, the script's at the call.
func (m *master) settled(op string, c Conn, key workunit.Key, o *workunit.Outcome, frames []goja.StackFrame) (v goja.Value) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(*goja.Object); ok && e.GetSymbol(workErrSym) != nil {
				name, msg := inspect.SafeString(e.Get("name")), inspect.SafeString(e.Get("message"))
				_ = e.DefineDataProperty("stack", m.rt.ToValue(inspect.StackString(name, msg, frames, 0)), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
			}
			panic(x)
		}
	}()
	return m.outcome(op, c, key, o)
}

// rejectedWith returns a promise rejected with what a call threw.
func (m *master) rejectedWith(ex *goja.Exception) goja.Value {
	p, _, reject := m.rt.NewPromise()
	settle(reject, ex.Value())
	return m.rt.ToValue(p)
}

// settle calls a promise's resolving function. What it returns is an
// uncatchable error (an interrupt), which goes on up.
func settle(fn func(any) error, v any) {
	if err := fn(v); err != nil {
		panic(err)
	}
}

// callerStack is the script's stack at a call of a riot function, less
// the native frame of the function itself.
func (m *master) callerStack() []goja.StackFrame {
	frames := m.rt.CaptureCallStack(0, nil)
	for len(frames) > 0 && frames[0].SrcName() == "<native>" {
		frames = frames[1:]
	}
	return frames
}
