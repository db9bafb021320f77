package master

import (
	"errors"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/workunit"
)

// jsClient is a client object of a job script: the low-level API of Riot's
// section 4 (client-who-am-i, client-workunit-info, ...), in camelCase.
type jsClient struct {
	m    *master
	conn Conn
	obj  *goja.Object
}

// newClient makes the client object for conn (which may be nil: a master
// not yet connected).
func (m *master) newClient(conn Conn) *jsClient {
	c := &jsClient{m: m, conn: conn}
	obj := m.rt.NewObject()
	if err := m.sb.SetFuncs(obj, []engine.Func{
		{Name: "whoAmI", Fn: c.whoAmI},
		{Name: "workunitInfo", Fn: c.workunitInfo},
		{Name: "callWithWorkunitInfo", Fn: c.callWithWorkunitInfo},
		{Name: "waitForWork", Fn: c.waitForWork},
		{Name: "addWorkunit", Fn: c.addWorkunit},
		{Name: "callWithNewWorkunit", Fn: c.callWithNewWorkunit},
		{Name: "waitForFinishedWorkunit", Fn: c.waitForFinishedWorkunit},
		{Name: "callWithFinishedWorkunit", Fn: c.callWithFinishedWorkunit},
		{Name: "completeWorkunit", Fn: c.completeWorkunit},
		{Name: "close", Fn: c.close},
	}); err != nil {
		panic(err)
	}
	c.obj = obj
	m.clients = append(m.clients, c)
	return c
}

func (c *jsClient) need(op string) Conn {
	if c.conn == nil {
		c.m.sb.Throw("Error", "%s: this client is not connected", op)
	}
	return c.conn
}

func (c *jsClient) whoAmI(goja.FunctionCall) goja.Value {
	return c.m.rt.ToValue(c.need("client.whoAmI").Name())
}

// info returns [status, client, result, lastChange], as Riot's
// client-workunit-info does: result is the value when done, the error's
// message when failed, and null otherwise.
func (c *jsClient) info(op string, key workunit.Key) []goja.Value {
	m := c.m
	o, err := c.need(op).Info(m.ctx, key)
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	return m.outcomeValues(op, o)
}

func (m *master) outcomeValues(op string, o *workunit.Outcome) []goja.Value {
	rt := m.rt
	var result goja.Value = goja.Null()
	switch o.Status {
	case workunit.StatusDone:
		v, err := m.sb.Decode(o.Result)
		if err != nil {
			m.sb.Throw("Error", "%s: the result does not decode: %v", op, err)
		}
		result = v
	case workunit.StatusError:
		if o.Err != nil {
			result = rt.ToValue(o.Err.Message)
		}
	}
	var worker goja.Value = goja.Null()
	if o.Worker != "" {
		worker = rt.ToValue(o.Worker)
	}
	var last goja.Value = goja.Null()
	if !o.LastChange.IsZero() {
		d, err := m.in.NewDate(nil, rt.ToValue(o.LastChange.UnixMilli()))
		if err == nil {
			last = d
		}
	}
	return []goja.Value{rt.ToValue(o.Status.String()), worker, result, last}
}

func (c *jsClient) workunitInfo(call goja.FunctionCall) goja.Value {
	const op = "client.workunitInfo"
	return c.m.rt.NewArray(toAny(c.info(op, c.m.parseID(op, call.Argument(0))))...)
}

func (c *jsClient) callWithWorkunitInfo(call goja.FunctionCall) goja.Value {
	const op = "client.callWithWorkunitInfo"
	vals := c.info(op, c.m.parseID(op, call.Argument(0)))
	return c.m.apply(op, call.Argument(1), vals...)
}

// apply calls a JavaScript function given to a binding, rethrowing what it
// throws.
func (m *master) apply(op string, f goja.Value, args ...goja.Value) goja.Value {
	fn, ok := goja.AssertFunction(f)
	if !ok {
		m.sb.Throw("TypeError", "%s: give a function", op)
	}
	v, err := fn(goja.Undefined(), args...)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex.Value())
		}
		panic(err)
	}
	return v
}

// newWorkunit builds a workunit from addWorkunit's arguments: a function
// and its arguments (a fn workunit) or a string (an eval workunit).
func (c *jsClient) newWorkunit(op string, args []goja.Value) workunit.Key {
	m := c.m
	conn := c.need(op)
	var spec *workunit.Spec
	switch {
	case len(args) > 0 && goja.IsString(args[0]):
		spec = &workunit.Spec{Kind: workunit.Eval, Source: args[0].String(), Name: "eval"}
	default:
		var fnv goja.Value
		if len(args) > 0 {
			fnv = args[0]
		}
		fn := m.argFunction(op, fnv)
		var err error
		if spec, err = m.fnSpec(op, fn, args[1:]); err != nil {
			m.sb.Throw("DataCloneError", "%v", err)
		}
	}
	return m.submit(op, conn, []*workunit.Spec{spec}, workunit.Options{})[0].Key()
}

func (c *jsClient) addWorkunit(call goja.FunctionCall) goja.Value {
	return c.m.rt.ToValue(c.newWorkunit("client.addWorkunit", call.Arguments).String())
}

func (c *jsClient) callWithNewWorkunit(call goja.FunctionCall) goja.Value {
	const op = "client.callWithNewWorkunit"
	if len(call.Arguments) < 2 {
		c.m.sb.Throw("TypeError", "%s: give the workunit and a function to call with its id", op)
	}
	last := call.Arguments[len(call.Arguments)-1]
	key := c.newWorkunit(op, call.Arguments[:len(call.Arguments)-1])
	return c.m.apply(op, last, c.m.rt.ToValue(key.String()))
}

// finished returns [key, status, client, result] once the workunit is
// finished (Riot's client-wait-for-finished-workunit).
func (c *jsClient) finished(op string, key workunit.Key) []goja.Value {
	m := c.m
	o, err := m.wait(c.need(op), key)
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	vals := m.outcomeValues(op, o)
	return []goja.Value{m.rt.ToValue(key.String()), vals[0], vals[1], vals[2]}
}

func (c *jsClient) waitForFinishedWorkunit(call goja.FunctionCall) goja.Value {
	const op = "client.waitForFinishedWorkunit"
	return c.m.rt.NewArray(toAny(c.finished(op, c.m.parseID(op, call.Argument(0))))...)
}

func (c *jsClient) callWithFinishedWorkunit(call goja.FunctionCall) goja.Value {
	const op = "client.callWithFinishedWorkunit"
	vals := c.finished(op, c.m.parseID(op, call.Argument(0)))
	return c.m.apply(op, call.Argument(1), vals...)
}

// waitForWork takes a workunit to run, as a worker does, and returns
// [id, work]: work has kind ('eval', 'call' or 'fn'), and source (eval),
// fn and args (fn, with the function rebuilt in this script), or module,
// export and args (call).
func (c *jsClient) waitForWork(call goja.FunctionCall) goja.Value {
	const op = "client.waitForWork"
	m := c.m
	conn := c.need(op)
	// The wait may be for a workunit that a submission of this script
	// hands out only once the script uploaded its blobs again (waitContext):
	// a wait interrupted for that serves it, and waits again (an
	// assignment that came meanwhile is kept for the next wait).
	var w *Work
	var err error
	for {
		ctx := m.waitContext()
		if w, err = conn.WaitForWork(ctx); !m.interrupted(ctx, err) {
			break
		}
	}
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	rt := m.rt
	work := rt.NewObject()
	_ = work.Set("kind", w.Spec.Kind.String())
	m.st.SetBlobs(w.Blobs)
	switch w.Spec.Kind {
	case workunit.Eval:
		_ = work.Set("source", w.Spec.Source)
	case workunit.Fn:
		vals, err := m.sb.DecodeArgs(w.Spec.Payload)
		if err != nil {
			m.sb.Throw("Error", "%s: workunit %s does not decode: %v", op, w.Key.Short(), err)
		}
		if len(vals) == 0 {
			m.sb.Throw("Error", "%s: workunit %s: its payload is an empty array, want [fn, args...]", op, w.Key.Short())
		}
		_ = work.Set("fn", vals[0])
		_ = work.Set("args", rt.NewArray(toAny(vals[1:])...))
	case workunit.Call:
		mod, err := m.sb.FetchModule(w.Spec.Module)
		if err != nil {
			m.sb.Throw("Error", "%s: %v", op, err)
		}
		args, err := m.sb.DecodeArgs(w.Spec.Payload)
		if err != nil {
			m.sb.Throw("Error", "%s: workunit %s does not decode: %v", op, w.Key.Short(), err)
		}
		_ = work.Set("module", mod.Path)
		_ = work.Set("source", mod.Source)
		_ = work.Set("export", w.Spec.Export)
		_ = work.Set("args", rt.NewArray(toAny(args)...))
	}
	m.taken[w.Key] = w
	return rt.NewArray(w.Key.String(), work)
}

// completeWorkunit reports the result of a workunit taken with waitForWork:
// completeWorkunit(id, isError, result). For an error, result is an Error
// or a message.
func (c *jsClient) completeWorkunit(call goja.FunctionCall) goja.Value {
	const op = "client.completeWorkunit"
	m := c.m
	key := m.parseID(op, call.Argument(0))
	w, ok := m.taken[key]
	if !ok {
		m.sb.Throw("Error", "%s: workunit %s was not taken with waitForWork by this script", op, key.Short())
	}
	var result []byte
	var werr *workunit.Error
	if call.Argument(1).ToBoolean() {
		werr = m.sb.WorkunitError(call.Argument(2), m.rt.CaptureCallStack(0, nil))
		if werr.Name == "" {
			werr.Message = call.Argument(2).String()
		}
	} else {
		enc := jsvalue.NewEncoder(m.rt, m.in, jsvalue.EncodeOptions{Root: "result", Dest: "back to the master"})
		data, err := enc.EncodeValue(call.Argument(2))
		if err != nil {
			m.sb.Throw("DataCloneError", "%s: %v", op, m.encodeError(op, "result", err))
		}
		result = append([]byte(nil), data...)
	}
	if err := c.need(op).CompleteWork(m.ctx, w, result, werr); err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	delete(m.taken, key)
	return goja.Undefined()
}

func (c *jsClient) close(goja.FunctionCall) goja.Value {
	if c.conn != nil {
		if err := c.conn.Close(); err != nil {
			c.m.sb.Throw("Error", "client.close: %v", err)
		}
	}
	return goja.Undefined()
}

func toAny(vals []goja.Value) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out
}
