package capture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/stretchr/testify/require"
)

// fakeEntry is what the fake hook records for one function.
type fakeEntry struct {
	id     int
	getter goja.Value
}

// fakeRegistry is a test double for the lead's runtime side: a Go hook that
// records every function the instrumented script registers.
type fakeRegistry struct {
	rt      *goja.Runtime
	script  *Script
	entries map[*goja.Object]fakeEntry
	calls   int
}

// newFakeRuntime instruments src, installs the fake hook and a __probe(fn)
// global that returns {id, free} (free: the getter's current values) and
// returns the runtime, the registry and the instrumented script.
func newFakeRuntime(t *testing.T, src string) (*goja.Runtime, *fakeRegistry) {
	t.Helper()
	s, err := Instrument("test.js", src, Options{})
	require.NoError(t, err)
	rt := goja.New()
	reg := &fakeRegistry{rt: rt, script: s, entries: map[*goja.Object]fakeEntry{}}
	require.NoError(t, rt.Set(DefaultHook, reg.hook))
	require.NoError(t, rt.Set("__probe", reg.probe))
	return rt, reg
}

func (r *fakeRegistry) hook(call goja.FunctionCall) goja.Value {
	id := int(call.Argument(0).ToInteger())
	getter := call.Argument(1)
	value := call.Argument(2)
	target := value
	for _, p := range call.Arguments[min(3, len(call.Arguments)):] {
		target = target.ToObject(r.rt).Get(p.String())
	}
	obj, ok := target.(*goja.Object)
	if !ok {
		panic(r.rt.NewTypeError("fake hook: %d is not an object", id))
	}
	if _, isFn := goja.AssertFunction(obj); !isFn {
		panic(r.rt.NewTypeError("fake hook: %d is not a function", id))
	}
	if id < 0 || id >= len(r.script.Funcs) {
		panic(r.rt.NewTypeError("fake hook: bad id %d", id))
	}
	if prev, seen := r.entries[obj]; seen && prev.id != id {
		panic(r.rt.NewTypeError("fake hook: function registered as %d and %d", prev.id, id))
	}
	r.entries[obj] = fakeEntry{id: id, getter: getter}
	r.calls++
	return value
}

// values calls the getter of a registered function.
func (r *fakeRegistry) values(e fakeEntry) ([]goja.Value, error) {
	if goja.IsNull(e.getter) {
		return nil, nil
	}
	get, ok := goja.AssertFunction(e.getter)
	if !ok {
		return nil, fmt.Errorf("getter of %d is not a function", e.id)
	}
	v, err := get(goja.Undefined())
	if err != nil {
		return nil, err
	}
	var out []goja.Value
	if err := r.rt.ExportTo(v, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (r *fakeRegistry) probe(fn goja.Value) goja.Value {
	obj, ok := fn.(*goja.Object)
	if !ok {
		panic(r.rt.NewTypeError("probe: not an object"))
	}
	e, ok := r.entries[obj]
	if !ok {
		panic(r.rt.NewTypeError("probe: function not registered"))
	}
	vals, err := r.values(e)
	if err != nil {
		panic(err)
	}
	res := r.rt.NewObject()
	_ = res.Set("id", e.id)
	_ = res.Set("free", r.rt.NewArray(toAny(vals)...))
	return res
}

func toAny(vs []goja.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// ship rebuilds fn, a registered function of r's runtime, in a fresh runtime
// from Func.Source and the current values of Func.Free, as a worker would:
// plain values travel as JSON, functions by their source and captures,
// recursively (cycles included). It returns the fresh runtime and the
// rebuilt function. It is a test double, far simpler than the real encoding.
func (r *fakeRegistry) ship(t *testing.T, fn goja.Value) (*goja.Runtime, goja.Value) {
	t.Helper()
	index := map[*goja.Object]int{}
	var order []*goja.Object
	var visit func(o *goja.Object)
	visit = func(o *goja.Object) {
		if _, ok := index[o]; ok {
			return
		}
		e, ok := r.entries[o]
		require.True(t, ok, "ship: function not registered")
		f := r.script.Funcs[e.id]
		require.True(t, f.Shippable, "ship: %s", f.Reason)
		index[o] = len(order)
		order = append(order, o)
		vals, err := r.values(e)
		require.NoError(t, err)
		for _, v := range vals {
			if vo, ok := v.(*goja.Object); ok {
				if _, isFn := goja.AssertFunction(vo); isFn {
					visit(vo)
				}
			}
		}
	}
	root, ok := fn.(*goja.Object)
	require.True(t, ok)
	visit(root)

	stringify, _ := goja.AssertFunction(r.rt.Get("JSON").ToObject(r.rt).Get("stringify"))
	var b strings.Builder
	b.WriteString("(function(){\nconst __fns = [], __set = [];\n")
	for i, o := range order {
		f := r.script.Funcs[r.entries[o].id]
		decl := ""
		if len(f.Free) > 0 {
			decl = "let " + strings.Join(f.Free, ", ") + ";"
		}
		fmt.Fprintf(&b, "(function(){ %s __fns[%d] = (%s); __set[%d] = (__v) => { [%s] = __v; }; })();\n",
			decl, i, f.Source, i, strings.Join(f.Free, ", "))
	}
	for i, o := range order {
		vals, err := r.values(r.entries[o])
		require.NoError(t, err)
		parts := make([]string, len(vals))
		for j, v := range vals {
			if vo, ok := v.(*goja.Object); ok {
				if k, isFn := index[vo]; isFn {
					parts[j] = fmt.Sprintf("__fns[%d]", k)
					continue
				}
			}
			if goja.IsUndefined(v) {
				parts[j] = "undefined"
				continue
			}
			js, err := stringify(goja.Undefined(), v)
			require.NoError(t, err)
			parts[j] = js.String()
		}
		fmt.Fprintf(&b, "__set[%d]([%s]);\n", i, strings.Join(parts, ", "))
	}
	b.WriteString("return __fns[0];\n})()")
	worker := goja.New()
	v, err := worker.RunString(b.String())
	require.NoError(t, err, "ship: %s", b.String())
	return worker, v
}

// run runs the instrumented script and returns its completion value as
// exported by goja, or the error.
func (r *fakeRegistry) run() (goja.Value, error) {
	return r.rt.RunScript("test.js", r.script.Source)
}

// resultString renders a completion value for comparison.
func resultString(rt *goja.Runtime, v goja.Value) string {
	if v == nil {
		return "<nil>"
	}
	if goja.IsUndefined(v) {
		return "undefined"
	}
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	s, err := stringify(goja.Undefined(), v)
	if err != nil || goja.IsUndefined(s) {
		return v.String()
	}
	return s.String()
}
