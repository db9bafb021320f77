// Package modules reads CommonJS modules from disk and packs them as
// workunit.Module blobs: a module, and every module it requires with a
// string literal, resolved as Node resolves them (relative paths, .js,
// .json, index.js, node_modules with package.json "main"), each named by
// the hash of its content and of its requires' hashes. A TypeScript or ES
// module (.ts, .mts, .cts, .mjs) is bundled with the files it imports into
// one CommonJS module first, by the Cache's Bundler (a job script's master
// gives package engine/bundle's), with an inline source map, so that
// workers get plain JavaScript whose stacks name the original lines. riot.doWorkCall in
// job scripts and client.DoWorkCall in Go ship modules this way: workers need
// no copy, and a changed file is a different module.
package modules

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// Loaded is a module ready to ship: its blob's hash, and the blobs of it
// and of every module it requires.
type Loaded struct {
	// Hash names the module's blob: a workunit.Spec's Module.
	Hash blob.Hash
	// Blobs holds the encoded workunit.Module of it and of every module it
	// requires, transitively, by hash.
	Blobs map[blob.Hash][]byte
	// All lists the hashes of Blobs, the module's own last: a
	// workunit.Spec's Blobs.
	All []blob.Hash
}

// Cache reads modules and keeps what it read while the files stay the same
// (size and modification time), so that shipping one module many times
// reads it once. It is not safe for concurrent use.
type Cache struct {
	base    string
	files   map[string]*moduleFile
	bundler Bundler
}

// Bundler turns the TypeScript or ES module file abs into one CommonJS
// module with the files it imports (engine/bundle.Module): its JavaScript
// and the absolute paths of the files it holds.
type Bundler func(abs string) (source string, inputs []string, err error)

// WithBundler makes c bundle TypeScript and ES modules (.ts, .mts, .cts,
// .mjs) with b, and returns c. Without one, such a module is an error.
func (c *Cache) WithBundler(b Bundler) *Cache {
	c.bundler = b
	return c
}

// needsBundle reports whether the file abs is TypeScript or an ES module.
func needsBundle(abs string) bool {
	switch strings.ToLower(filepath.Ext(abs)) {
	case ".ts", ".mts", ".cts", ".mjs":
		return true
	}
	return false
}

type moduleFile struct {
	size    int64
	modTime time.Time
	source  string
	specs   []string // the string literals passed to require, in order
	// bundled are the other files that a TypeScript or ES module was
	// bundled with, as they were then.
	bundled []fileStamp
}

// fileStamp is a file's size and modification time, by which a Cache
// tells that it changed.
type fileStamp struct {
	path    string
	size    int64
	modTime time.Time
}

// unchanged reports whether the files bundled with a module are as they
// were.
func (f *moduleFile) unchanged() bool {
	for _, s := range f.bundled {
		st, err := os.Stat(s.path)
		if err != nil || st.Size() != s.size || !st.ModTime().Equal(s.modTime) {
			return false
		}
	}
	return true
}

// NewCache returns a Cache that resolves module paths relative to base (a
// job script's directory) and names modules by their path relative to it,
// as workers' stack traces show them.
func NewCache(base string) *Cache {
	return &Cache{base: base, files: make(map[string]*moduleFile)}
}

// Load resolves path (relative to the Cache's base, with or without ./; or
// absolute) and builds the module and every module it requires.
func (c *Cache) Load(path string) (*Loaded, error) {
	abs, err := resolveFile(c.base, path)
	if err != nil {
		return nil, err
	}
	lm := &Loaded{Blobs: make(map[blob.Hash][]byte)}
	lm.Hash, err = c.build(abs, lm, nil)
	if err != nil {
		return nil, err
	}
	return lm, nil
}

// rel returns a module's path relative to the base, or its absolute path
// when it lies outside.
func (c *Cache) rel(abs string) string {
	dir, err := filepath.Abs(c.base)
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return abs
	}
	return filepath.ToSlash(rel)
}

// build makes the module blob of the file abs, after those of its
// requires. stack holds the files being built, to report a cycle.
func (c *Cache) build(abs string, lm *Loaded, stack []string) (blob.Hash, error) {
	rel := c.rel
	for i, s := range stack {
		if s == abs {
			cycle := append(append([]string(nil), stack[i:]...), abs)
			for j := range cycle {
				cycle[j] = rel(cycle[j])
			}
			return blob.Hash{}, fmt.Errorf("modules that require each other cannot be shipped: %s", strings.Join(cycle, " → "))
		}
	}
	f, err := c.file(abs)
	if err != nil {
		return blob.Hash{}, err
	}
	mod := &workunit.Module{Path: rel(abs), Source: f.source, Requires: make(map[string]blob.Hash)}
	for _, spec := range f.specs {
		if _, done := mod.Requires[spec]; done {
			continue
		}
		dep, err := resolveRequire(filepath.Dir(abs), spec)
		if errors.Is(err, ErrBuiltin) {
			continue // a host module: require throws on the worker, if reached
		}
		if err != nil {
			return blob.Hash{}, fmt.Errorf("%s: require(%q): %w", rel(abs), spec, err)
		}
		h, err := c.build(dep, lm, append(stack, abs))
		if err != nil {
			return blob.Hash{}, err
		}
		mod.Requires[spec] = h
	}
	data, err := mod.MarshalBinary()
	if err != nil {
		return blob.Hash{}, err
	}
	h := blob.Sum(data)
	if _, ok := lm.Blobs[h]; !ok {
		lm.Blobs[h] = data
		lm.All = append(lm.All, h)
	}
	return h, nil
}

// file reads a module file, or returns what was read before if the file has
// not changed.
func (c *Cache) file(abs string) (*moduleFile, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if f, ok := c.files[abs]; ok && f.size == st.Size() && f.modTime.Equal(st.ModTime()) && f.unchanged() {
		return f, nil
	}
	if needsBundle(abs) {
		// TypeScript or an ES module: workers get it as one CommonJS
		// module, with the files it imports, and a source map.
		if c.bundler == nil {
			return nil, fmt.Errorf("module %s is TypeScript or an ES module, which this program cannot bundle: ship it from a job script (riot-worker eval bundles it), or compile it to CommonJS first", c.rel(abs))
		}
		src, inputs, err := c.bundler(abs)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", c.rel(abs), err)
		}
		f := &moduleFile{size: st.Size(), modTime: st.ModTime(), source: src}
		for _, in := range inputs {
			if in == abs {
				continue
			}
			if ist, err := os.Stat(in); err == nil {
				f.bundled = append(f.bundled, fileStamp{path: in, size: ist.Size(), modTime: ist.ModTime()})
			}
		}
		c.files[abs] = f
		return f, nil
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	src := string(b)
	f := &moduleFile{size: st.Size(), modTime: st.ModTime()}
	if strings.HasSuffix(abs, ".json") {
		f.source = "module.exports = " + src + ";"
	} else {
		f.source = src
		if f.specs, err = requires(abs, src); err != nil {
			return nil, err
		}
	}
	c.files[abs] = f
	return f, nil
}

// requires returns the string literals passed to require calls in src.
func requires(name, src string) ([]string, error) {
	prg, err := parser.ParseFile(nil, name, "(function (exports, require, module, __filename, __dirname) {"+src+"\n})", 0)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", name, err)
	}
	var specs []string
	walkAST(reflect.ValueOf(prg), func(n any) {
		call, ok := n.(*ast.CallExpression)
		if !ok || len(call.ArgumentList) != 1 {
			return
		}
		id, ok := call.Callee.(*ast.Identifier)
		if !ok || id.Name != "require" {
			return
		}
		if lit, ok := call.ArgumentList[0].(*ast.StringLiteral); ok {
			specs = append(specs, lit.Value.String())
		}
	})
	return specs, nil
}

// walkAST calls visit on every AST node under v.
func walkAST(v reflect.Value, visit func(any)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if v.Type().Elem().PkgPath() != "github.com/dop251/goja/ast" {
			return
		}
		visit(v.Interface())
		walkAST(v.Elem(), visit)
	case reflect.Interface:
		if !v.IsNil() {
			walkAST(v.Elem(), visit)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkAST(v.Field(i), visit)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i), visit)
		}
	}
}

// ErrBuiltin is returned by Resolve for a name that is neither a path nor
// found in a node_modules directory: a host module such as "fs".
var ErrBuiltin = errors.New("modules: not a file (a host module?)")

// Resolve resolves a require specifier as Node does, from the directory
// dir of the requiring file: a relative or absolute path (the file, or with
// .js or .json, or its index.js), or a package in node_modules directories
// from dir up (its package.json "main"). It returns the absolute path, or
// an error wrapping ErrBuiltin for a name found nowhere.
func Resolve(dir, spec string) (string, error) { return resolveRequire(dir, spec) }

// resolveFile finds the module that a doWorkCall path names, relative to
// dir: the file itself, or with .js or .json, or its index.js.
func resolveFile(dir, spec string) (string, error) {
	p := spec
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, spec)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	for _, cand := range []string{abs, abs + ".js", abs + ".json", abs + ".ts", filepath.Join(abs, "index.js")} {
		if st, err := os.Stat(cand); err == nil && !st.IsDir() {
			return cand, nil
		}
	}
	return "", fmt.Errorf("module %s: no such file (tried %s, .js, .json, .ts and /index.js)", spec, abs)
}

// resolveRequire resolves a require specifier as Node does: a relative or
// absolute path against dir, or a package in node_modules directories
// from dir up.
func resolveRequire(dir, spec string) (string, error) {
	if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || strings.HasPrefix(spec, "/") || spec == "." || spec == ".." {
		return resolveFile(dir, spec)
	}
	for d := dir; ; d = filepath.Dir(d) {
		nm := filepath.Join(d, "node_modules", spec)
		if main := packageMain(nm); main != "" {
			if p, err := resolveFile(nm, main); err == nil {
				return p, nil
			}
		}
		if p, err := resolveFile(filepath.Dir(nm), filepath.Base(nm)); err == nil {
			return p, nil
		}
		if d == filepath.Dir(d) {
			return "", ErrBuiltin
		}
	}
}

// packageMain returns the "main" of dir/package.json, if any.
func packageMain(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Main string `json:"main"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return ""
	}
	return pkg.Main
}
