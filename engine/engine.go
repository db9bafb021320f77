package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxCallStackSize = 10000
	DefaultMaxResultBytes   = 64 << 20
	DefaultMaxConsoleBytes  = 1 << 20
	DefaultMaxErrorBytes    = 64 << 10
	DefaultMaxThrownBytes   = 1 << 20
	// DefaultRealmsPerSlot was Options.RealmsPerSlot's default.
	//
	// Deprecated: runtimes are kept by the engine, for every slot
	// (Options.IdleRuntimes).
	DefaultRealmsPerSlot = 4
	// DefaultIdleRuntimes is Options.IdleRuntimes's default: two
	// runtimes (one for each of two slots) of each of 500 masters' realms
	// on one worker. A pool smaller than the realms' working set costs far
	// more than its memory: masters that take turns find their runtimes
	// closed each time, least recently used first.
	DefaultIdleRuntimes = 1024
	// DefaultIdleRuntimeBytes is Options.IdleRuntimeBytes's default when
	// Options.MemoryLimit is not set (an eighth of it when it is): about
	// 580 idle runtimes of RuntimeBytesEstimate.
	DefaultIdleRuntimeBytes = 256 << 20
	DefaultCompileCacheSize = 4096
	DefaultBlobCacheSize    = 64
	// DefaultAbandonAfter is how long a stopped workunit has to return
	// before its runtime is abandoned (Options.AbandonAfter).
	DefaultAbandonAfter = time.Second
	// MaxStringLength is the longest string a workunit can build with
	// String.prototype.repeat, padStart and padEnd: V8's limit, so that
	// 'x'.repeat(2**29) fails at once with "RangeError: Invalid string
	// length", as it does in Node.
	MaxStringLength = 1<<29 - 24
)

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("engine: closed")

// ErrAbandoned is what Run returns, once the stuck call returned, for a
// workunit that was abandoned after its caller was given its failure
// (Request.Abandoned).
var ErrAbandoned = errors.New("engine: the workunit was abandoned; its failure went to Request.Abandoned")

// Options configures an Engine. The zero value is usable: every field has
// a default.
type Options struct {
	// Slots is the number of workunits evaluated at once, each in its own
	// goja runtime. Default: runtime.NumCPU().
	Slots int
	// WorkerName is what workunits see as riot.worker.name, unless their
	// Request gives another. Default: "local".
	WorkerName string
	// Timeout is the time limit of a workunit that does not set its own;
	// zero means none.
	Timeout time.Duration
	// MaxCallStackSize bounds the call-stack depth of a workunit.
	// Default: DefaultMaxCallStackSize frames.
	MaxCallStackSize int
	// MaxResultBytes bounds the encoded size of a result.
	// Default: DefaultMaxResultBytes.
	MaxResultBytes int
	// ResultLimitName, when set, names where MaxResultBytes comes from in
	// result-limit errors, e.g. "the tracker's limit on a value (riotd
	// --max-blob-bytes)".
	ResultLimitName string
	// MaxConsoleBytes bounds the console output kept per workunit, encoded (a
	// line costs its text and a few bytes); the rest
	// is dropped and counted. Default: DefaultMaxConsoleBytes.
	MaxConsoleBytes int
	// MaxErrorBytes bounds each text of a failed workunit's error (its
	// name, message and stack): a longer one is cut, with a note of how
	// much was cut (a stack keeps its start and its innermost frames).
	// Default: DefaultMaxErrorBytes.
	MaxErrorBytes int
	// MaxThrownBytes bounds the encoding of a thrown value that is not an
	// Error (throw {code: 7}), sent with the error so that the master can
	// throw it again; a larger one is not sent, and the error's message
	// says so. Default: DefaultMaxThrownBytes.
	MaxThrownBytes int
	// MemoryLimit, when set, is the heap size in bytes past which every
	// running workunit is interrupted and fails with a memory-limit error.
	// The engine checks it every few milliseconds while workunits run.
	// Zero means no guard.
	MemoryLimit uint64
	// IdleRuntimes bounds the number of idle runtimes the engine keeps,
	// of every realm together, for the next workunit of their realm on
	// any slot: a workunit takes its realm's runtime for its run, and
	// gives it back when it ends, unless it ran away (a time, stack or
	// memory limit, an abandonment), and past the bounds the least
	// recently used are closed. Default: DefaultIdleRuntimes.
	IdleRuntimes int
	// IdleRuntimeBytes bounds the memory of the idle runtimes, as the
	// engine estimates it: RuntimeBytesEstimate per runtime, plus the
	// bytes of the blobs it keeps. Default: an eighth of MemoryLimit, or
	// DefaultIdleRuntimeBytes without a MemoryLimit.
	IdleRuntimeBytes uint64
	// RealmsPerSlot, when set and IdleRuntimes is not, sets IdleRuntimes
	// to RealmsPerSlot × Slots.
	//
	// Deprecated: runtimes are no longer kept per slot but by the engine,
	// for every slot (IdleRuntimes, IdleRuntimeBytes).
	RealmsPerSlot int
	// CompileCacheSize bounds the number of compiled programs kept.
	// Default: DefaultCompileCacheSize.
	CompileCacheSize int
	// BlobCacheSize bounds the number of blobs of values (large captured
	// values) whose checked bytes each runtime keeps; each workunit decodes
	// its own copy from them. Default: DefaultBlobCacheSize.
	BlobCacheSize int
	// AbandonAfter is how long a workunit that was stopped (its time
	// limit, the memory guard, its caller's context, a revoke) has to
	// return. An interrupt takes effect at the workunit's next JavaScript
	// step, but a long built-in call (JSON.stringify of a deeply nested
	// value, a regular expression that backtracks) does not look at it:
	// past AbandonAfter, Run returns the workunit's failure, and the slot
	// gives up the runtime and the goroutine that runs it, which goes on
	// until the call returns (or the process exits), and continues on a
	// fresh runtime. Stuck counts them. Default: DefaultAbandonAfter.
	AbandonAfter time.Duration
	// Logger receives the engine's logs. Default: slog.Default().
	Logger *slog.Logger
	// Bindings are installed, in order, into every sandbox (goja runtime)
	// the engine makes, after riot's own globals: one per realm per
	// workunit of it running at once, and again after a workunit ran away
	// or once the idle runtimes (IdleRuntimes) closed the realm's. Workers install the GPU
	// bindings here (jsgpu.Binding); without them a workunit sees no GPU
	// globals. See Binding.
	Bindings []Binding
	// MaxSeceded bounds how many workunits may give up their slots at once
	// while they wait (Secede): each keeps its runtime, and the slot it
	// gave up runs others in a runtime of its own. Default:
	// DefaultMaxSeceded.
	MaxSeceded int
	// GPUs are the ordinals of the host's GPU devices: what riot.worker.gpus
	// lists, and Sandbox.GPUs returns, for a workunit whose Request gives
	// none. Workers set them to their driver's (jsgpu.Ordinals). The
	// engine knows nothing else of GPUs.
	GPUs []int
}

func (o *Options) setDefaults() {
	if o.Slots <= 0 {
		o.Slots = runtime.NumCPU()
	}
	if o.WorkerName == "" {
		o.WorkerName = "local"
	}
	if o.MaxCallStackSize <= 0 {
		o.MaxCallStackSize = DefaultMaxCallStackSize
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxConsoleBytes <= 0 {
		o.MaxConsoleBytes = DefaultMaxConsoleBytes
	}
	if o.MaxErrorBytes <= 0 {
		o.MaxErrorBytes = DefaultMaxErrorBytes
	}
	if o.MaxThrownBytes <= 0 {
		o.MaxThrownBytes = DefaultMaxThrownBytes
	}
	if o.IdleRuntimes <= 0 {
		o.IdleRuntimes = DefaultIdleRuntimes
		if o.RealmsPerSlot > 0 {
			o.IdleRuntimes = o.RealmsPerSlot * o.Slots
		}
	}
	if o.IdleRuntimeBytes == 0 {
		o.IdleRuntimeBytes = DefaultIdleRuntimeBytes
		if o.MemoryLimit > 0 {
			o.IdleRuntimeBytes = o.MemoryLimit / 8
		}
	}
	if o.CompileCacheSize <= 0 {
		o.CompileCacheSize = DefaultCompileCacheSize
	}
	if o.BlobCacheSize <= 0 {
		o.BlobCacheSize = DefaultBlobCacheSize
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = DefaultAbandonAfter
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxSeceded <= 0 {
		o.MaxSeceded = DefaultMaxSeceded
	}
}

// DefaultMaxSeceded is Options.MaxSeceded's default.
const DefaultMaxSeceded = 64

// Request is one workunit to evaluate.
type Request struct {
	// Spec is the workunit.
	Spec *workunit.Spec
	// Realm separates workunits that must not share a JavaScript realm:
	// two requests with different realms never run in the same runtime.
	// Workers use one realm per job; the empty realm is a realm too.
	Realm string
	// Timeout overrides Options.Timeout when positive.
	Timeout time.Duration
	// Blobs gives the modules and blob values that Spec refers to. It may
	// be nil when Spec refers to none.
	Blobs blob.Source
	// GPUs are the ordinals of the devices the worker gave this workunit,
	// for placement; the workunit sees them as riot.worker.gpus. Empty
	// means every device of the host (Options.GPUs).
	GPUs []int
	// WorkerName, when set, is what the workunit sees as riot.worker.name
	// instead of Options.WorkerName: a worker passes the name its tracker
	// gave it at the last connection, which a reconnect may change.
	WorkerName string
	// Started, when set, is called as the workunit starts, on Run's
	// goroutine, with stop: stop(cause) ends this run as a time limit
	// would, failing it with kind Canceled and a message ending with
	// cause. stop may be called from any goroutine, at any time; once the
	// run has ended it does nothing. A worker uses it for workunits its
	// tracker revokes.
	Started func(stop func(cause error))
	// Abandoned, when set, makes Run evaluate on the caller's goroutine,
	// without the hand-off to the slot's executor that lets Run return
	// when the workunit does not (see Options.AbandonAfter). If the
	// workunit is abandoned, Abandoned is called, on another goroutine,
	// with what Run would have returned, and the slot goes on without the
	// caller's goroutine: that one stays in Run until the stuck call
	// returns, and Run then returns ErrAbandoned. A worker sets it, and
	// starts another goroutine in the stuck one's place.
	Abandoned func(res *Result, err error)
	// PutResult, when set, is given the result of a workunit that did not
	// fail, before its slot runs anything else: its encoding as parts
	// (jsvalue's EncodeParts: a typed array's or ArrayBuffer's bytes by
	// reference, which no script can change until PutResult returns) and
	// the size of its console. It returns what Result.Value is to be: the
	// parts' bytes (parts.Bytes()), or the value document that refers to
	// the blob it uploaded them as; or an error, which fails the workunit
	// (Run returns it; a *workunit.Error is the workunit's error as it
	// is). A worker uploads a large result this way, from the result's
	// own buffer rather than a copy. Without it, Result.Value is the parts'
	// bytes.
	PutResult func(ctx context.Context, parts blob.Parts, consoleBytes int) ([]byte, error)
	// Host, when set, is what bindings reach through Sandbox.Host while
	// the workunit runs: a worker gives the workunit's lease, through
	// which a workunit submits children (engine/jschild).
	Host any
	// Print, when set, is called with each console line the workunit
	// prints that its console keeps (within Options.MaxConsoleBytes), as
	// it prints it, on Run's goroutine: a worker streams them to the
	// master while the workunit runs. The lines are in Result.Console
	// too, in the same order, the first ones of it (the last line that
	// says how much was dropped, if any, comes only there). It must not
	// block.
	Print func(level workunit.Level, text string)
}

// Result is what evaluating a workunit gave.
type Result struct {
	// Value is the result, value-encoded (see package value). It is nil
	// when the workunit failed.
	Value []byte
	// Console is the workunit's console output, in order, also when it
	// failed, encoded once in the form it travels in to the master
	// (Console.Lines decodes it). Output past Options.MaxConsoleBytes is
	// dropped, and a last line says how much.
	Console workunit.Console
	// Slot is the slot that evaluated the workunit.
	Slot int
	// Elapsed is how long the evaluation took, from the start of the
	// workunit's code to its result.
	Elapsed time.Duration
}

// Decode returns the result as a Go value (see value.Unmarshal).
func (r *Result) Decode() (any, error) {
	if r.Value == nil {
		return nil, errors.New("engine: no result value")
	}
	return value.Unmarshal(r.Value)
}

// Engine evaluates workunits in goja sandboxes, one per slot. It is safe for
// concurrent use: Run blocks until a slot is free.
type Engine struct {
	opts  Options
	cache *compileCache
	// pool keeps the idle runtimes of every realm, for any slot.
	pool *runtimePool
	free chan *slot
	// permits are the runs that may evaluate at once (Options.Slots): a
	// run takes one with its slot, and gives it back while it waits
	// (Secede). Slots past Options.Slots are made when a permit finds no
	// free slot: the seceded runs hold theirs.
	permits chan struct{}
	nslots  atomic.Int64
	seceded atomic.Int64
	guard   *memGuard
	// allocCap bounds one allocation a workunit asks of a built-in
	// (bindAllocLimits): the memory limit, or a share of the machine's.
	allocCap uint64
	// stuck counts the abandoned runs whose call has not returned yet,
	// abandoned all the runs abandoned (Options.AbandonAfter).
	stuck     atomic.Int64
	abandoned atomic.Int64
	mu        sync.Mutex
	closed    bool
	done      chan struct{}
}

// New returns an Engine with the given options.
func New(opts Options) (*Engine, error) {
	opts.setDefaults()
	e := &Engine{
		opts:  opts,
		cache: newCompileCache(opts.CompileCacheSize),
		pool:  newRuntimePool(opts.IdleRuntimes, opts.IdleRuntimeBytes),
		free:  make(chan *slot, opts.Slots+opts.MaxSeceded),
		done:  make(chan struct{}),
	}
	e.permits = make(chan struct{}, opts.Slots)
	for range opts.Slots {
		e.permits <- struct{}{}
	}
	e.nslots.Store(int64(opts.Slots))
	e.allocCap = allocCap(&e.opts)
	for i := 0; i < opts.Slots; i++ {
		e.free <- &slot{id: i, eng: e}
	}
	if opts.MemoryLimit > 0 {
		e.guard = newMemGuard(opts.MemoryLimit, opts.Logger)
		go e.guard.loop(e.done)
	}
	return e, nil
}

// Slots returns the number of slots.
func (e *Engine) Slots() int { return e.opts.Slots }

// Stuck returns the number of workunits abandoned because they did not
// return after their stop (Options.AbandonAfter) whose call still runs,
// each on a goroutine of its own, holding its runtime. A caller bounds
// them: a worker stops and exits once it has too many.
func (e *Engine) Stuck() int { return int(e.stuck.Load()) }

// Abandoned returns the number of workunits abandoned so far, returned
// since or not.
func (e *Engine) Abandoned() int { return int(e.abandoned.Load()) }

// IdleRuntimes returns the number of idle runtimes the engine keeps
// (Options.IdleRuntimes) and their estimated bytes
// (Options.IdleRuntimeBytes).
func (e *Engine) IdleRuntimes() (n int, bytes uint64) { return e.pool.stats() }

// Close stops the engine: later calls to Run return ErrClosed, and every
// runtime is released, those of workunits running now when they finish.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.done)
	e.mu.Unlock()
	e.pool.close()
	for {
		select {
		case s := <-e.free:
			s.stopExecutor()
			defer func() { e.free <- s }()
		default:
			return nil
		}
	}
}

// release returns a slot after a workunit; after Close, it ends the
// slot's executor first.
func (e *Engine) release(s *slot) {
	select {
	case <-e.done:
		s.stopExecutor()
	default:
	}
	// A run that waits with its slot given up, or could not take a
	// permit back (Sandbox.Rejoin), has none to give back; a run that
	// failed before it started holds the one it was given.
	holds := true
	if r := s.cur; r != nil {
		holds = r.permit.Swap(permitGone) == permitHeld
		s.cur = nil
	}
	// More slots than free has room for may be out at once: a run whose
	// Rejoin failed holds its slot to its end without counting among the
	// seceded. A slot past that room is dropped, not waited for.
	select {
	case e.free <- s:
	default:
		s.stopExecutor()
	}
	if holds {
		e.permits <- struct{}{}
	}
}

// ErrTooManySeceded is what Secede returns (wrapped) past
// Options.MaxSeceded.
var ErrTooManySeceded = errors.New("engine: too many workunits wait with their slots given up")

// secede gives up the slot of run r, which calls it, while it waits for
// something other workunits do (its children): another workunit may run
// meanwhile, in a slot of its own. The run keeps its runtime, and must
// call rejoin before its script runs again. Only a binding's Go function
// calls it, on its run's goroutine (Sandbox.Secede). Past
// Options.MaxSeceded waiting at once, it returns an error wrapping
// ErrTooManySeceded and the run keeps its slot.
func (e *Engine) secede(r *run) error {
	if n := e.seceded.Add(1); n > int64(e.opts.MaxSeceded) {
		e.seceded.Add(-1)
		return fmt.Errorf("%w: %d already (the most: %d)", ErrTooManySeceded, n-1, e.opts.MaxSeceded)
	}
	if r.permit.CompareAndSwap(permitHeld, permitSeceded) {
		e.permits <- struct{}{}
	}
	// Else the run was abandoned, its slot and permit released: it has
	// none to give, and its rejoin takes none.
	return nil
}

// rejoin takes a slot back for run r after secede: it waits until fewer
// than Options.Slots workunits run, or ctx ends. Then it returns ctx's
// cause, wrapped, and the run has no slot: it must not run script, and
// its slot's release gives no permit back.
func (e *Engine) rejoin(ctx context.Context, r *run) error {
	defer e.seceded.Add(-1)
	if r.permit.Load() == permitGone {
		return fmt.Errorf("engine: waiting for a slot again: %w", context.Cause(ctx))
	}
	select {
	case <-e.permits:
		if !r.permit.CompareAndSwap(permitSeceded, permitHeld) {
			// Abandoned meanwhile: its slot is gone, and so must the
			// permit be.
			e.permits <- struct{}{}
			return fmt.Errorf("engine: waiting for a slot again: %w", context.Cause(ctx))
		}
		return nil
	case <-ctx.Done():
		r.permit.CompareAndSwap(permitSeceded, permitGone)
		return fmt.Errorf("engine: waiting for a slot again: %w", context.Cause(ctx))
	}
}

// Seceded returns how many workunits wait with their slots given up.
func (e *Engine) Seceded() int { return int(e.seceded.Load()) }

// slotFor returns a free slot, after the caller took a permit: one made
// for the purpose when the seceded runs hold all of them.
func (e *Engine) slotFor() *slot {
	select {
	case s := <-e.free:
		return s
	default:
		id := int(e.nslots.Add(1) - 1)
		return &slot{id: id, eng: e}
	}
}

// Run evaluates one workunit. It blocks until a slot is free, then until the
// workunit ends or ctx is done.
//
// When the workunit fails, the error is a *workunit.Error (use errors.As)
// and the Result still holds its console output. Other errors (ErrClosed,
// ctx ending while waiting for a slot, a malformed Spec) come with a nil
// Result.
func (e *Engine) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Spec == nil {
		return nil, errors.New("engine: request without a spec")
	}
	if err := req.Spec.Validate(); err != nil {
		return nil, err
	}
	select {
	case <-e.done:
		return nil, ErrClosed
	default:
	}
	select {
	case <-e.permits:
	case <-ctx.Done():
		return nil, fmt.Errorf("engine: waiting for a slot: %w", ctx.Err())
	case <-e.done:
		return nil, ErrClosed
	}
	s := e.slotFor()
	res, err := s.run(ctx, &req)
	if err == ErrAbandoned {
		return nil, err // the slot went back when the run was abandoned
	}
	e.release(s)
	return res, err
}

// Eval evaluates source as an eval workunit named "eval" and returns its
// result.
func (e *Engine) Eval(ctx context.Context, source string) (*Result, error) {
	return e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Eval, Source: source, Name: "eval"}})
}

// Call calls the export named export of the module whose blob is module,
// with args (Go values, see value.Marshal). modules must hold that module
// and every module it requires.
func (e *Engine) Call(ctx context.Context, modules blob.Source, module blob.Hash, export string, args ...any) (*Result, error) {
	payload, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	spec := &workunit.Spec{Kind: workunit.Call, Module: module, Export: export, Payload: payload}
	return e.Run(ctx, Request{Spec: spec, Blobs: modules})
}

// CallFunc calls fn, a function given by its source and free variables,
// with args.
func (e *Engine) CallFunc(ctx context.Context, fn *value.Function, args ...any) (*Result, error) {
	payload, err := marshalArgs(append([]any{fn}, args...))
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, Request{Spec: &workunit.Spec{Kind: workunit.Fn, Payload: payload, Name: "fn"}})
}

func marshalArgs(args []any) ([]byte, error) {
	if args == nil {
		args = []any{}
	}
	b, err := value.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("engine: arguments: %w", err)
	}
	return b, nil
}
