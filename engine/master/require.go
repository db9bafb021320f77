package master

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/capture"
	"github.com/riot-go/riot/modules"
)

// requireFrom returns the require function of a file in dir: CommonJS
// modules of the job, resolved as Node resolves them (modules.Resolve),
// each run once and instrumented like the script, so that the functions
// they define can be sent to workers too.
func (m *master) requireFrom(dir string) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		spec := call.Argument(0).String()
		abs, err := modules.Resolve(dir, spec)
		if errors.Is(err, modules.ErrBuiltin) {
			m.sb.Throw("Error", "require(%q): no such module (job scripts have no Node built-in modules: riot.readFile, riot.readLines and riot.writeFile reach files)", spec)
		}
		if err != nil {
			m.sb.Throw("Error", "require(%q): %v", spec, err)
		}
		if mod, ok := m.mods[abs]; ok {
			return mod.Get("exports")
		}
		return m.loadModule(abs)
	}
}

// loadModule runs the module file abs and returns its exports.
func (m *master) loadModule(abs string) goja.Value {
	rt := m.rt
	b, err := os.ReadFile(abs)
	if err != nil {
		m.sb.Throw("Error", "require: %v", err)
	}
	src := string(b)
	if strings.HasSuffix(abs, ".json") {
		src = "module.exports = " + src + ";"
	}
	name := m.relName(abs)
	k := len(m.scripts)
	hook := capture.DefaultHook + "_" + strconv.Itoa(k)
	const wrapper = "(function (exports, require, module, __filename, __dirname) {"
	script, err := capture.Instrument(name, src+"\n})", capture.Options{Hook: hook, Prefix: wrapper})
	if err != nil {
		m.sb.Throw("SyntaxError", "%s", syntaxMessage(err))
	}
	m.scripts = append(m.scripts, script)
	if err := rt.Set(hook, m.hook(k)); err != nil {
		m.sb.Throw("Error", "require: %v", err)
	}
	prg, err := goja.Compile(name, script.Source, false)
	if err != nil {
		m.sb.Throw("SyntaxError", "%v", err)
	}
	fv, err := rt.RunProgram(prg)
	if err != nil {
		m.sb.Throw("Error", "require: %s: %v", name, err)
	}
	fn, _ := goja.AssertFunction(fv)
	module := rt.NewObject()
	exports := rt.NewObject()
	_ = module.Set("exports", exports)
	_ = module.Set("id", name)
	_ = module.Set("filename", abs)
	m.mods[abs] = module // before it runs: modules that require each other see what it has so far
	req := rt.ToValue(m.requireFrom(filepath.Dir(abs)))
	if _, err := fn(exports, exports, req, module, rt.ToValue(abs), rt.ToValue(filepath.Dir(abs))); err != nil {
		delete(m.mods, abs)
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex.Value())
		}
		m.sb.Throw("Error", "require: %s: %v", name, err)
	}
	return module.Get("exports")
}

// relName names a module file as stack traces show it: its path relative
// to the job script's directory.
func (m *master) relName(abs string) string {
	base, err := filepath.Abs(filepath.Dir(m.opts.Path))
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(base, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return abs
	}
	return filepath.ToSlash(rel)
}
