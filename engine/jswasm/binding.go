package jswasm

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/riot-go/riot/engine"
)

// DefaultMaxModules is how many compiled modules a Binding keeps by
// default.
const DefaultMaxModules = 64

// Options configures a Binding.
type Options struct {
	// Interpreter runs modules in wazero's interpreter even where it has
	// a compiler (tests; a platform whose compiler misbehaves).
	Interpreter bool
	// MaxModules is how many compiled modules the Binding keeps, by the
	// hash of their bytes, least recently used dropped first. Default:
	// DefaultMaxModules. A dropped module stays usable by the sandboxes
	// that hold it, and is released when none does.
	MaxModules int
}

// Binding gives workunits the WebAssembly API. It holds one wazero
// runtime for every sandbox it is installed into, and the modules compiled
// in it by the SHA-256 of their bytes: a module that many workunits
// instantiate compiles once per worker. It is safe for concurrent use;
// Close it after the engine it was given to.
type Binding struct {
	rt     wazero.Runtime
	ccache wazero.CompilationCache
	max    int

	mu     sync.Mutex
	mods   map[[32]byte]*list.Element // of *compiled
	lru    *list.List
	closed bool

	hits, misses atomic.Uint64
	// seq numbers the host modules, whose names wazero wants unique.
	seq atomic.Uint64

	// onRelease, when set (by tests), is called after a sandbox's cleanup
	// of an unreachable owner's modules, with the number it closed (0 when
	// they wait for the memory they share).
	onRelease func(closed int)
}

// compiled is one compiled module and what riot read of it.
type compiled struct {
	hash [32]byte
	cm   wazero.CompiledModule
	info *moduleInfo
	size int
}

// New makes a Binding: one wazero runtime, with its compiler where the
// platform has one (wazero.NewRuntimeConfig), every call of which ends
// when the calling workunit's context does.
func New(ctx context.Context, opts Options) (*Binding, error) {
	if opts.MaxModules <= 0 {
		opts.MaxModules = DefaultMaxModules
	}
	cfg := wazero.NewRuntimeConfig()
	if opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cc := wazero.NewCompilationCache()
	cfg = cfg.WithCloseOnContextDone(true).WithCompilationCache(cc).WithCoreFeatures(api.CoreFeaturesV2)
	b := &Binding{
		rt:     wazero.NewRuntimeWithConfig(ctx, cfg),
		ccache: cc,
		max:    opts.MaxModules,
		mods:   map[[32]byte]*list.Element{},
		lru:    list.New(),
	}
	return b, nil
}

// Close releases the wazero runtime, and with it every module and
// instance. Call it after the engine is closed.
func (b *Binding) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mods = map[[32]byte]*list.Element{}
	b.lru.Init()
	b.mu.Unlock()
	if err := b.rt.Close(ctx); err != nil {
		return fmt.Errorf("jswasm: closing the runtime: %w", err)
	}
	if err := b.ccache.Close(ctx); err != nil {
		return fmt.Errorf("jswasm: closing the compilation cache: %w", err)
	}
	return nil
}

// CacheStats are the compiled-module cache's counts.
type CacheStats struct {
	// Hits and Misses count compilations found in the cache and made.
	Hits, Misses uint64
	// Modules is how many compiled modules the cache holds.
	Modules int
}

// Stats returns the cache's counts.
func (b *Binding) Stats() CacheStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return CacheStats{Hits: b.hits.Load(), Misses: b.misses.Load(), Modules: b.lru.Len()}
}

// Install installs the WebAssembly global into sb (engine.Binding).
func (b *Binding) Install(sb *engine.Sandbox) error { return install(sb, b) }

// compile returns the compiled module of code: the cache's, or compiled
// now and kept. Its error is wazero's (a CompileError for JavaScript).
func (b *Binding) compile(ctx context.Context, code []byte) (*compiled, error) {
	h := sha256.Sum256(code)
	b.mu.Lock()
	if e, ok := b.mods[h]; ok {
		b.lru.MoveToFront(e)
		b.mu.Unlock()
		b.hits.Add(1)
		return e.Value.(*compiled), nil
	}
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("the worker's WebAssembly runtime is closed")
	}
	b.misses.Add(1)
	cm, err := b.rt.CompileModule(ctx, code)
	if err != nil {
		return nil, err
	}
	info, err := parseModule(code)
	if err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	c := &compiled{hash: h, cm: cm, info: info, size: len(code)}
	// The compiled code is released when neither the cache nor any
	// sandbox's Module or Instance holds c.
	runtime.AddCleanup(c, func(cm wazero.CompiledModule) { _ = cm.Close(context.Background()) }, cm)
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.mods[h]; ok { // compiled twice at once: keep the first
		b.lru.MoveToFront(e)
		return e.Value.(*compiled), nil
	}
	if !b.closed {
		b.mods[h] = b.lru.PushFront(c)
		for b.lru.Len() > b.max {
			old := b.lru.Remove(b.lru.Back()).(*compiled)
			delete(b.mods, old.hash)
		}
	}
	return c, nil
}
