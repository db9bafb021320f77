package bundle

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Needed reports whether the job script at path is, by its name, an ES
// module or TypeScript: .mjs, .ts, .mts or .cts. A .js script is bundled
// only when it does not parse as a script (it has import, export or a
// top-level await): the caller tries it as a plain script first.
func Needed(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".mjs", ".ts", ".mts", ".cts":
		return true
	}
	return false
}

// Result is a job script bundled into plain JavaScript for goja.
type Result struct {
	// Source is the script and every module it imports, as one script
	// whose value is the module's body: an async function of no
	// arguments, whose promise (once the caller calls it) is the module's
	// evaluation, so that its top-level await works.
	Source string
	// Map maps Source back to the original files.
	Map *Map
	// Module says that the script is an ES module (strict code).
	Module bool
	// Inputs are the files bundled, relative to the script's directory.
	Inputs []string
}

// Error is a job script that esbuild could not bundle: a syntax or type
// syntax error, or an import it could not resolve, at File:Line:Column
// (File relative to the script's directory).
type Error struct {
	File         string
	Line, Column int
	Message      string
	// Unresolved says that the error is an import (or require) of a file
	// or package that is not there, rather than a syntax error.
	Unresolved bool
}

// Error returns "file:line:column: message".
func (e *Error) Error() string {
	if e.File == "" {
		return e.Message
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

const entry = "riot:entry"

// importMeta is the name that import.meta becomes.
const importMeta = "__riot_import_meta"

// Build bundles the job script at path, whose text is src, with the job's
// own modules it imports (and packages from a node_modules folder beside it
// or above it) into one script for goja, with a source map. An error is an
// *Error that says where and what.
func Build(path, src string) (*Result, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	dir := filepath.Dir(abs)
	loader := api.LoaderJS
	switch strings.ToLower(filepath.Ext(path)) {
	case ".ts", ".mts", ".cts":
		loader = api.LoaderTS
	}
	// The script is loaded from memory (src) through a one-line entry that
	// imports it: so its own exports, if any, are not exports of the bundle.
	plugin := api.Plugin{Name: "riot-entry", Setup: func(b api.PluginBuild) {
		b.OnResolve(api.OnResolveOptions{Filter: "^" + regexp.QuoteMeta(entry) + "$"}, func(api.OnResolveArgs) (api.OnResolveResult, error) {
			return api.OnResolveResult{Path: abs, Namespace: "file"}, nil
		})
		b.OnLoad(api.OnLoadOptions{Filter: "^" + regexp.QuoteMeta(abs) + "$", Namespace: "file"}, func(api.OnLoadArgs) (api.OnLoadResult, error) {
			return api.OnLoadResult{Contents: &src, Loader: loader, ResolveDir: dir}, nil
		})
	}}
	res := api.Build(api.BuildOptions{
		Stdin:         &api.StdinOptions{Contents: "import " + strconv.Quote(entry) + ";", ResolveDir: dir, Sourcefile: "<riot>", Loader: api.LoaderJS},
		Bundle:        true,
		Write:         false,
		Format:        api.FormatESModule,
		Platform:      api.PlatformNeutral,
		MainFields:    []string{"module", "main"},
		Target:        api.ES2022,
		Supported:     map[string]bool{"async-generator": false, "for-await": false},
		Sourcemap:     api.SourceMapExternal,
		Outfile:       filepath.Join(dir, "riot-bundle.js"),
		AbsWorkingDir: dir,
		Metafile:      true,
		Charset:       api.CharsetUTF8,
		LegalComments: api.LegalCommentsNone,
		Define:        map[string]string{"process.env.NODE_ENV": `"production"`, "import.meta": importMeta},
		LogLevel:      api.LogLevelSilent,
		Plugins:       []api.Plugin{plugin},
	})
	if len(res.Errors) > 0 {
		return nil, buildErrors(res.Errors)
	}
	var code, mapJSON []byte
	for _, f := range res.OutputFiles {
		if strings.HasSuffix(f.Path, ".map") {
			mapJSON = f.Contents
		} else {
			code = f.Contents
		}
	}
	gen := string(code)
	m, err := parseMap(mapJSON, gen)
	if err != nil {
		return nil, err
	}
	r := &Result{Map: m.shifted(1)}
	var meta struct {
		Inputs map[string]struct {
			Format string `json:"format"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil {
		return nil, fmt.Errorf("bundle: metafile: %w", err)
	}
	rel := filepath.ToSlash(filepath.Base(abs))
	for name, in := range meta.Inputs {
		if name == "<riot>" {
			continue
		}
		r.Inputs = append(r.Inputs, name)
		if name == rel && in.Format == "esm" {
			r.Module = true
		}
	}
	sort.Strings(r.Inputs)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".mjs", ".mts":
		r.Module = true
	}
	head := "(async () => {"
	if r.Module {
		head += `"use strict";`
	}
	// import.meta, which a script cannot hold, is the job script's in
	// every module.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	metaJSON, _ := json.Marshal(map[string]string{"url": u.String(), "filename": abs, "dirname": dir})
	head += "const " + importMeta + " = Object.freeze(" + string(metaJSON) + ");"
	if !strings.HasSuffix(gen, "\n") {
		gen += "\n"
	}
	r.Source = head + "\n" + gen + "})"
	return r, nil
}

// buildErrors is the first of esbuild's errors, saying how many more
// there are.
func buildErrors(msgs []api.Message) *Error {
	e := buildError(msgs[0])
	switch n := len(msgs) - 1; {
	case n == 1:
		e.Message += " (and 1 more error)"
	case n > 1:
		e.Message += fmt.Sprintf(" (and %d more errors)", n)
	}
	return e
}

var unresolved = regexp.MustCompile(`^Could not resolve "(.*)"$`)

// buildError turns esbuild's message into an *Error in the job's words.
func buildError(msg api.Message) *Error {
	e := &Error{Message: msg.Text}
	if loc := msg.Location; loc != nil {
		e.File = filepath.ToSlash(loc.File)
		e.Line = loc.Line
		e.Column = loc.Column + 1
	}
	sub := unresolved.FindStringSubmatch(msg.Text)
	if sub == nil {
		return e
	}
	spec := sub[1]
	e.Unresolved = true
	what := "import " + strconv.Quote(spec)
	if loc := msg.Location; loc != nil && loc.Column >= 0 && loc.Column <= len(loc.LineText) && strings.HasSuffix(strings.TrimRight(loc.LineText[:loc.Column], " \t"), "require(") {
		what = "require(" + strconv.Quote(spec) + ")"
	}
	switch {
	case isBuiltin(spec):
		e.Message = what + ": Node's built-in modules are not available to job scripts (riot.readFile, riot.readLines and riot.writeFile reach files)"
	case strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/"):
		e.Message = what + ": no such file (a path is relative to the file that imports it, as in Node; TypeScript files may be imported with or without their .ts extension)"
	default:
		pkg := spec
		if parts := strings.SplitN(spec, "/", 3); strings.HasPrefix(spec, "@") && len(parts) >= 2 {
			pkg = parts[0] + "/" + parts[1]
		} else {
			pkg = parts[0]
		}
		e.Message = what + ": not a file, and no node_modules folder beside the script or above it holds a package " + strconv.Quote(pkg) +
			": install it there (npm install " + pkg + ") to have it bundled with the script, or import a file of the job by its path (\"./lib/name.js\")"
	}
	return e
}

// isBuiltin reports whether spec names one of Node's built-in modules.
func isBuiltin(spec string) bool {
	if strings.HasPrefix(spec, "node:") {
		return true
	}
	name, _, _ := strings.Cut(spec, "/")
	switch name {
	case "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "constants", "crypto",
		"dgram", "diagnostics_channel", "dns", "domain", "events", "fs", "http", "http2", "https",
		"inspector", "module", "net", "os", "path", "perf_hooks", "process", "punycode", "querystring",
		"readline", "repl", "stream", "string_decoder", "sys", "timers", "tls", "trace_events", "tty",
		"url", "util", "v8", "vm", "wasi", "worker_threads", "zlib":
		return true
	}
	return false
}

// Module bundles the module file path (TypeScript or an ES module) and the
// files it imports into one CommonJS module, for riot.doWorkCall to ship:
// its exports are the module's, and an inline source map (which goja reads
// when a worker compiles it) leads its stack traces back to the original
// files. It returns the JavaScript and the absolute paths of the files
// bundled, so that a cache can tell when any of them changed.
func Module(path string) (string, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, fmt.Errorf("bundle: %w", err)
	}
	dir := filepath.Dir(abs)
	res := api.Build(api.BuildOptions{
		EntryPoints:    []string{abs},
		Bundle:         true,
		Write:          false,
		Format:         api.FormatCommonJS,
		Platform:       api.PlatformNeutral,
		MainFields:     []string{"module", "main"},
		Target:         api.ES2022,
		Supported:      map[string]bool{"async-generator": false, "for-await": false},
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Outfile:        filepath.Join(dir, "riot-module.js"),
		AbsWorkingDir:  dir,
		Metafile:       true,
		Charset:        api.CharsetUTF8,
		LegalComments:  api.LegalCommentsNone,
		Define:         map[string]string{"process.env.NODE_ENV": `"production"`},
		LogLevel:       api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return "", nil, buildErrors(res.Errors)
	}
	var code, mapJSON []byte
	for _, f := range res.OutputFiles {
		if strings.HasSuffix(f.Path, ".map") {
			mapJSON = f.Contents
		} else {
			code = f.Contents
		}
	}
	gen := string(code)
	m, err := parseMap(mapJSON, gen)
	if err != nil {
		return "", nil, err
	}
	var meta struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(res.Metafile), &meta); err != nil {
		return "", nil, fmt.Errorf("bundle: metafile: %w", err)
	}
	inputs := make([]string, 0, len(meta.Inputs))
	for name := range meta.Inputs {
		inputs = append(inputs, filepath.Join(dir, filepath.FromSlash(name)))
	}
	sort.Strings(inputs)
	return strings.TrimSuffix(gen, "\n") + m.Comment(filepath.Base(abs)) + "\n", inputs, nil
}
