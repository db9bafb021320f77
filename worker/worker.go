package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jschild"
	"github.com/riot-go/riot/engine/jsgpu"
	"github.com/riot-go/riot/engine/jswasm"
	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// Defaults for Options fields left zero.
const (
	// DefaultPrefetchPerSlot is the least a worker holds queued per slot
	// beyond what it runs, when it sizes its prefetch itself (Prefetch
	// 0): enough to start the next workunit without waiting for the
	// tracker, few enough that a worker with slow workunits does not hoard
	// work.
	DefaultPrefetchPerSlot = 2
	// MaxPrefetchPerSlot is the most it holds queued per slot then: for
	// workunits of a few microseconds behind a tracker whose credit takes
	// milliseconds to come back as work (a replicated riotd: a Raft commit
	// or two).
	MaxPrefetchPerSlot = 512
	// MaxWindow bounds the window (slots plus prefetch) of a worker that
	// sizes its prefetch: riotd's default --max-worker-window, so that
	// the worker never counts on credit that such a tracker would drop.
	// A worker with MaxWindow slots or more still prefetches
	// DefaultPrefetchPerSlot a slot.
	MaxWindow = 1024
	// PrefetchLatency is the credit-to-work latency a worker that sizes
	// its prefetch assumes until it has measured one: the time from
	// granting credit (with a result) to receiving the workunits it buys.
	// A worker whose workunits take d holds about twice that latency's
	// worth of them per slot, latency/d twice over, between
	// DefaultPrefetchPerSlot and MaxPrefetchPerSlot (and MaxWindow in
	// all).
	PrefetchLatency = 2 * time.Millisecond
	// MinPrefetchLatency and MaxPrefetchLatency clamp the measured
	// credit-to-work latency: below the least, a worker on loopback still
	// keeps a millisecond of work per slot; above the most (a tracker with
	// no work for it, or one far away), it holds at most 100 ms of work
	// per slot, so that slow workunits are not hoarded whatever the
	// latency.
	MinPrefetchLatency = 500 * time.Microsecond
	MaxPrefetchLatency = 50 * time.Millisecond
	// DefaultGrace is how long a stopping worker lets running workunits
	// finish before it interrupts and returns them.
	DefaultGrace = 30 * time.Second
	// DefaultBlobCacheBytes bounds the blob cache.
	DefaultBlobCacheBytes = 512 << 20
)

// reportSlack is the room a done message needs in a frame besides its
// result and console (key, token, times, credit).
const reportSlack = 4 << 10

// syncTimeout bounds the round trip a stopping worker makes to receive the
// assignments on their way.
const syncTimeout = 5 * time.Second

// Options configure a worker. Tracker is required; every other field has a
// default.
type Options struct {
	// Tracker is the tracker's address: "host", "host:port" (default port
	// 2355) or a ws:// or wss:// URL (see client.TrackerURL).
	Tracker string
	// Name is the name the worker asks for; the tracker makes it unique
	// (a second worker on host alfred is alfred-2). Default: the host
	// name. A reconnect may give another name, when the old one was
	// taken meanwhile (after a tracker restart, by a connection that came
	// back first): the worker then takes the new one, in its logs and as
	// workunits' riot.worker.name, and logs the rename.
	Name string
	// Slots is how many workunits run at once, each in its own JavaScript
	// runtime. Default: runtime.NumCPU().
	Slots int
	// Prefetch is how many more workunits the worker holds queued, so
	// that a slot that finishes starts the next one without waiting for
	// the tracker; their blobs are fetched while they wait. Zero (the
	// default) lets the worker size it from how long its workunits take:
	// from DefaultPrefetchPerSlot per slot for slow ones to
	// MaxPrefetchPerSlot for workunits of microseconds, to cover the
	// credit-to-work latency it measures (see PrefetchLatency). Positive
	// fixes it; negative means none.
	Prefetch int
	// Grace is how long a stopping worker lets its running workunits
	// finish before it interrupts them and hands them back to the tracker.
	// They are interrupted Engine.AbandonAfter before it ends (not before
	// half of it), so that one stuck in a built-in call is abandoned, and
	// handed back, within it. Default: DefaultGrace. Negative means no
	// grace: running workunits are interrupted at once.
	Grace time.Duration
	// Engine configures evaluation: the default time limit (Timeout), the
	// memory guard (MemoryLimit), stack depth, console and result bounds.
	// Its Slots, WorkerName, Logger and GPUs are set from these Options
	// (each workunit's engine.Request.WorkerName is the worker's name at
	// its start); its MaxResultBytes is at most the tracker's
	// MaxResultBytes; the GPU bindings (jsgpu.Binding(GPU)) and
	// WebAssembly (a jswasm.Binding) come first in its Bindings.
	Engine engine.Options
	// GPU gives workunits the CUDA devices of this driver (riot.worker.gpus,
	// deviceCount, deviceResources and the rest of docs/gpu.md), and the
	// tracker learns of them from the worker's hello. Nil means no GPUs:
	// workunits still see the GPU globals, deviceCount() is 0 and every
	// request for a device is a RaftError. The caller opens the driver
	// (OpenGPU) and closes it after Run returns.
	GPU *gpu.Driver
	// BlobCacheBytes bounds the cache of blobs (modules and large values)
	// fetched from the tracker, least recently used first out. Default:
	// DefaultBlobCacheBytes.
	BlobCacheBytes int64
	// Client holds the other connection settings (Token, backoff, TLS,
	// timeouts); its Name, Role, Slots, Prefetch, GPUs and Logger are set
	// from these Options.
	Client client.Options
	// Logger receives the worker's logs. Default: slog.Default().
	Logger *slog.Logger
	// Ready, when set, is called once the worker is connected and has
	// asked for work, with the name the tracker gave it (see Name for
	// renames on a reconnect).
	Ready func(name string)
	// Started, when set, is called on a slot's goroutine as each workunit
	// starts, for logs, metrics and tests. It must not block.
	Started func(a *client.Assignment)
	// MaxStuck bounds the workunits stuck in a call that does not return
	// (engine.Engine.Stuck: stopped past Engine.AbandonAfter, reported
	// failed, their runtime abandoned while their goroutine goes on).
	// When that many are stuck, the worker stops as on a signal (it takes
	// no more work, lets its other slots finish within Grace, hands back
	// the rest) and Run returns an error wrapping ErrStuck, so that a
	// supervisor starts it again, without the stuck goroutines. Default:
	// Slots.
	MaxStuck int
	// MetricsListen, when set, is the HOST:PORT (":PORT" for every
	// interface, port 0 picks one) where the worker serves its
	// Prometheus metrics (/metrics), its liveness (/healthz) and its
	// readiness (/readyz: connected and taking work) over HTTP, from
	// before it dials until Run returns: riot-worker --metrics-listen.
	// See docs/workers.md.
	MetricsListen string
	// DebugListen, when set, is the HOST:PORT where the worker serves Go's
	// profiler (/debug/pprof/); a port alone is on loopback:
	// riot-worker --debug-listen.
	DebugListen string
	// GCPacing, when set, lets the worker set its process's garbage
	// collector: a GC percent paced from its engine's idle runtimes, and
	// a soft memory limit of Engine.MemoryLimit (see GCPacing). Leave it
	// zero (Go's defaults) where the process runs more than this worker:
	// riot-worker sets it, less what GOGC and GOMEMLIMIT set.
	GCPacing GCPacing

	// metricsListening, when set, is told MetricsListen's address once
	// it listens (for tests, which listen on port 0).
	metricsListening func(net.Addr)

	// adaptive is set when Prefetch was left zero: the worker sizes its
	// prefetch, up to Prefetch.
	adaptive bool
}

func (o *Options) setDefaults() error {
	if o.Tracker == "" {
		return errors.New("worker: no tracker address")
	}
	if o.Slots <= 0 {
		o.Slots = runtime.NumCPU()
	}
	switch {
	case o.Prefetch == 0:
		o.adaptive = true
		o.Prefetch = maxAdaptivePrefetch(o.Slots)
	case o.Prefetch < 0:
		o.Prefetch = 0
	}
	switch {
	case o.Grace == 0:
		o.Grace = DefaultGrace
	case o.Grace < 0:
		o.Grace = 0
	}
	if o.BlobCacheBytes <= 0 {
		o.BlobCacheBytes = DefaultBlobCacheBytes
	}
	if o.MaxStuck <= 0 {
		o.MaxStuck = o.Slots
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Run connects to the tracker as a worker and evaluates the workunits it
// assigns until ctx ends, then stops gracefully: it takes no more work,
// lets running workunits finish within Options.Grace, interrupts the rest,
// hands back (Return) every lease it did not finish, and closes. It
// returns nil after a stop by ctx.
//
// While the tracker cannot be reached, Run keeps dialing with backoff
// (also before the first connection); a dropped connection is made again
// by the client, and work goes on. Run returns an error only when it
// cannot work at all: bad Options, a tracker that refuses it for good (a
// protocol version mismatch, bad credentials), or an engine that cannot
// start. A workunit's failure (a throw, a time limit, a memory limit) is
// the workunit's result and never stops the worker.
func Run(ctx context.Context, opts Options) error {
	if err := opts.setDefaults(); err != nil {
		return err
	}
	w := &worker{opts: opts, running: make(map[uint64]func(error)), stuck: make(chan struct{})}
	ops, err := w.startOps(ctx) // metrics, probes, profiler: ops.go
	if err != nil {
		return err
	}
	defer ops.close()
	w.ops = ops
	return w.run(ctx)
}

// ErrStuck is what Run's error wraps when the worker stopped because
// Options.MaxStuck workunits were stuck in calls that do not return.
var ErrStuck = errors.New("too many workunits stuck in calls that do not return")

type worker struct {
	opts    Options
	c       *client.Client
	eng     *engine.Engine
	cache   *Cache
	credits *credits
	gpus    *gpuPool
	ops     *ops // metrics and probes; nil when not asked for

	mu      sync.Mutex
	running map[uint64]func(cause error) // stops a running workunit, by lease token
	live    livePool                     // streams running workunits' console lines

	ident    atomic.Pointer[identity] // the name as of the last welcome seen (self)
	renameMu sync.Mutex               // serializes renames, so that the latest name wins

	stuck     chan struct{} // closed once MaxStuck workunits are stuck
	stuckOnce sync.Once

	// goroutines counts the slots' goroutines, seceded the workunits that
	// wait for their children with their slots given up: a slot's
	// goroutine that finishes a workunit while there are more than
	// Slots + seceded ends (see children.go).
	slotMu     sync.Mutex
	goroutines int
	seceded    int
}

// identity is the name the tracker gave the worker, and the logger that
// says it (attribute worker).
type identity struct {
	name string
	log  *slog.Logger
}

// setIdentity makes name the worker's name, in its logs too.
func (w *worker) setIdentity(name string) *identity {
	id := &identity{name: name, log: w.opts.Logger.With("worker", name)}
	w.ident.Store(id)
	return id
}

// self returns the worker's identity as of the client's last welcome. A
// reconnect may have renamed the worker (its old name was taken by a
// connection that came first): self then takes the new name, for the logs
// and for the workunits that start from now on, and logs the rename once.
// The worker calls it as each assignment comes (an assignment that came
// on a connection comes after its welcome), so that a workunit that starts
// reads the name with w.ident.Load(), without a client call. It is safe
// for concurrent use.
func (w *worker) self() *identity {
	cur := w.ident.Load()
	if w.c.Name() == cur.name {
		return cur
	}
	w.renameMu.Lock()
	defer w.renameMu.Unlock()
	cur = w.ident.Load()
	name := w.c.Name() // again, under renameMu: the latest name wins
	if name == cur.name {
		return cur
	}
	next := w.setIdentity(name)
	next.log.Info("worker: renamed by the tracker", "old", cur.name, "new", name)
	return next
}

// errRevoked is the cause of a run the tracker revoked: its master
// canceled it, or its lease passed its deadline (the tracker gave it up,
// and queued it again).
var errRevoked = errors.New("the tracker revoked it (its master canceled it, or its lease expired)")

// revoke stops the run of a revoked assignment, if it runs. One that has
// not started sees Assignment.Revoked when its slot takes it.
func (w *worker) revoke(a *client.Assignment) {
	w.mu.Lock()
	stop := w.running[a.Token]
	w.mu.Unlock()
	if stop != nil {
		stop(errRevoked)
	}
}

// job is an assignment on its way to a slot.
type job struct {
	a    *client.Assignment
	spec *workunit.Spec
}

func (w *worker) run(ctx context.Context) error {
	copts := w.opts.Client
	copts.Name = w.opts.Name
	copts.Role = wire.RoleWorker
	copts.Slots = w.opts.Slots
	copts.Prefetch = w.opts.Prefetch
	copts.Logger = w.opts.Logger
	copts.GPUs = helloGPUs(w.opts.GPU, w.opts.Logger)
	copts.OnRevoke = w.revoke
	copts.MemoryLimit = w.opts.Engine.MemoryLimit
	w.gpus = newGPUPool(len(copts.GPUs))
	c, err := w.dial(ctx, copts)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.c = c
	defer c.Close()
	name := w.setIdentity(c.Name()).name

	eo := w.opts.Engine
	eo.Slots = w.opts.Slots
	eo.WorkerName = name
	eo.Logger = w.opts.Logger
	// Workunits see the GPU globals on every worker, with a GPU or
	// without: the bindings say why there is none.
	eo.GPUs = jsgpu.Ordinals(w.opts.GPU)
	// And WebAssembly, its compiled modules shared by the slots: closed
	// after the engine (deferred before it).
	wasm, err := jswasm.New(ctx, jswasm.Options{})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer func() {
		if err := wasm.Close(context.WithoutCancel(ctx)); err != nil {
			w.opts.Logger.Warn("worker: closing WebAssembly", "err", err)
		}
	}()
	eo.Bindings = append([]engine.Binding{jsgpu.Binding(w.opts.GPU), jschild.Binding(), wasm}, eo.Bindings...)
	// A result larger than a done message carries goes as a blob, up to
	// the tracker's max-blob-bytes (see report).
	lim := max(c.Limits().MaxResultBytes, c.Limits().MaxBlobBytes)
	if eo.MaxResultBytes <= 0 || eo.MaxResultBytes >= lim {
		eo.MaxResultBytes = lim
		eo.ResultLimitName = "over the tracker's limit on a value (riotd --max-blob-bytes)"
		if c.Limits().MaxResultBytes > c.Limits().MaxBlobBytes {
			eo.ResultLimitName = "over the tracker's limit on a result (riotd --max-frame-bytes)"
		}
	}
	// A workunit's report (its result or error, and its console) must fit
	// in a frame: errors and the console are bounded by the tracker's
	// limits too (a larger result goes as a blob, see evaluate).
	fit := func(n *int, def, most int) {
		if *n <= 0 {
			*n = def
		}
		*n = max(1, min(*n, most))
	}
	fit(&eo.MaxErrorBytes, engine.DefaultMaxErrorBytes, c.Limits().MaxResultBytes/16)
	fit(&eo.MaxThrownBytes, engine.DefaultMaxThrownBytes, c.Limits().MaxResultBytes/4)
	fit(&eo.MaxConsoleBytes, engine.DefaultMaxConsoleBytes, c.Limits().MaxFrameBytes/4)
	w.eng, err = engine.New(eo)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer w.eng.Close()
	defer w.paceGC()()
	w.cache = NewCache(w.opts.BlobCacheBytes, c.FetchBlob)

	// evalCtx bounds evaluations: it ends near the end of the grace
	// (interruptAt).
	evalCtx, cancelEval := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEval()
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()

	w.credits = newCredits(w.opts)
	jobs := make(chan *job, w.opts.Slots+w.opts.Prefetch)
	var returned leases
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.dispatch(stop, jobs, &returned)
	}()
	var slots sync.WaitGroup
	env := &slotEnv{stop: stop, evalCtx: evalCtx, jobs: jobs, returned: &returned, slots: &slots}
	for range w.opts.Slots {
		w.startSlot(env)
	}
	win, _ := w.credits.state() // before any credit: nothing assigned yet
	// Recorded before it goes, so that an assignment it buys is never
	// counted before the credit (see credits.sent).
	w.credits.sent(win, time.Now())
	c.Credit(win)
	prefetch := any(w.opts.Prefetch)
	if w.opts.adaptive {
		prefetch = fmt.Sprintf("%d to %d", w.credits.min, w.credits.max)
	}
	memLimit := "none"
	if n := w.opts.Engine.MemoryLimit; n > 0 {
		memLimit = fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	// Ready for the probes before the log says so: a probe that follows
	// the line finds the worker ready.
	w.ops.started(w, name)
	w.self().log.Info("worker: ready", "tracker", c.Tracker(), "slots", w.opts.Slots, "prefetch", prefetch,
		"memory_limit", memLimit, "gpus", len(copts.GPUs))
	if w.opts.Ready != nil {
		w.opts.Ready(name)
	}
	go w.reportStats(stop)

	var runErr error
	select {
	case <-ctx.Done():
	case <-c.Ended():
		runErr = fmt.Errorf("worker: %w", c.Err())
	case <-w.stuck:
		runErr = fmt.Errorf("worker: %w: %d of them (each past its limit, its runtime abandoned); "+
			"stopping, so that the worker starts again without them", ErrStuck, w.eng.Stuck())
		w.self().log.Error("worker: too many stuck workunits; stopping", "stuck", w.eng.Stuck(), "max_stuck", w.opts.MaxStuck)
	}
	stopNow()
	log := w.self().log
	log.Info("worker: stopping", "grace", w.opts.Grace)
	// Running workunits are interrupted early enough that one stuck in a
	// call is abandoned (AbandonAfter) before the grace ends.
	grace := time.AfterFunc(interruptAt(w.opts.Grace, eo.AbandonAfter), cancelEval)
	defer grace.Stop()
	wg.Wait()
	// Receive the assignments already on their way, to return them too.
	// Without a connection none are: the tracker took back what the lost
	// one held.
	if c.Connected() {
		syncCtx, cancelSync := context.WithTimeout(context.Background(), syncTimeout)
		if err := c.Sync(syncCtx); err != nil {
			log.Debug("worker: sync before returning work", "err", err)
		}
		cancelSync()
	}
	slots.Wait()
	// Nothing takes jobs any more: hand back what was not started.
	close(jobs)
	for j := range jobs {
		returned.add(j.a.Lease())
	}
	for _, a := range c.TakeQueued() {
		returned.add(a.Lease())
	}
	if ls := returned.take(); len(ls) > 0 {
		log.Info("worker: returning unfinished workunits", "count", len(ls))
		_ = c.Return(ls...)
	}
	return runErr
}

// interruptAt returns when, in a stop with grace, running workunits are
// interrupted: abandon (the engine's AbandonAfter) before the grace ends,
// so that a workunit stuck in a call is abandoned by then, but not before
// half the grace.
func interruptAt(grace, abandon time.Duration) time.Duration {
	if abandon <= 0 {
		abandon = engine.DefaultAbandonAfter
	}
	return max(grace-abandon, grace/2)
}

// dial connects, retrying with backoff while the tracker cannot be
// reached (or is full, or shutting down) until ctx ends.
func (w *worker) dial(ctx context.Context, copts client.Options) (*client.Client, error) {
	minB, maxB := copts.MinBackoff, copts.MaxBackoff
	if minB <= 0 {
		minB = client.DefaultMinBackoff
	}
	if maxB <= 0 {
		maxB = client.DefaultMaxBackoff
	}
	delay := minB
	for {
		c, err := client.Dial(ctx, w.opts.Tracker, copts)
		if err == nil {
			return c, nil
		}
		var ve *client.VersionError
		if errors.As(err, &ve) || wire.IsCode(err, wire.CodeAuth, wire.CodeInvalid, wire.CodeProtocol) {
			return nil, fmt.Errorf("worker: %w", err)
		}
		w.opts.Logger.Warn("worker: cannot reach the tracker; retrying", "tracker", w.opts.Tracker, "err", err, "retry_in", delay)
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxB)
	}
}

// dispatch takes assignments from the client as they come, starts
// fetching their blobs, and queues them for the slots, until stop ends.
func (w *worker) dispatch(stop context.Context, jobs chan<- *job, returned *leases) {
	for {
		a, err := w.c.NextAssignment(stop)
		if err != nil {
			return
		}
		// One credit filled: the credit-to-work latency (credits.go).
		w.credits.assigned(time.Now())
		w.self() // the first assignment after a reconnect shows a rename
		spec, err := a.Decode()
		if err != nil {
			w.fail(a, &workunit.Error{Kind: workunit.Invalid, Name: "WorkunitError", Message: err.Error()})
			continue
		}
		j := &job{a: a, spec: spec}
		w.prefetch(stop, spec)
		select {
		case jobs <- j:
		case <-stop.Done():
			returned.add(a.Lease())
			return
		}
	}
}

// prefetch starts fetching the blobs spec needs that are not cached, so
// that they are there when a slot takes it.
func (w *worker) prefetch(ctx context.Context, spec *workunit.Spec) {
	for _, h := range spec.Blobs {
		if w.cache.Has(h) {
			continue
		}
		go func() {
			if err := w.cache.Prefetch(ctx, h); err != nil && ctx.Err() == nil {
				w.ident.Load().log.Debug("worker: prefetch failed", "blob", h.Short(), "err", err)
			}
		}()
	}
}

// slotEnv is what the slots' goroutines share: the stop, the context of
// evaluations (it ends near the end of the grace: interruptAt), the queue of jobs, the
// leases to hand back, and the count of slot goroutines, which the stop
// waits for.
type slotEnv struct {
	stop, evalCtx context.Context
	jobs          <-chan *job
	returned      *leases
	slots         *sync.WaitGroup
}

// startSlot starts a slot's goroutine. One that is stuck in an abandoned
// workunit (engine.Request.Abandoned) starts another in its place and no
// longer counts in env.slots: the stop does not wait for it.
func (w *worker) startSlot(env *slotEnv) {
	w.slotMu.Lock()
	w.goroutines++
	w.slotMu.Unlock()
	env.slots.Add(1)
	var once sync.Once
	done := func() { once.Do(env.slots.Done) }
	go func() {
		defer done()
		w.slot(env, func() {
			w.startSlot(env)
			done()
		})
	}()
}

// slot runs jobs one at a time until the stop, or until its goroutine is
// stuck in an abandoned workunit, after replace started another.
func (w *worker) slot(env *slotEnv, replace func()) {
	for {
		select {
		case <-env.stop.Done():
			return
		case j := <-env.jobs:
			if env.stop.Err() != nil {
				env.returned.add(j.a.Lease())
				return
			}
			switch w.evaluate(env, j, replace) {
			case handBack:
				env.returned.add(j.a.Lease())
			case abandoned:
				w.slotMu.Lock()
				w.goroutines--
				w.slotMu.Unlock()
				return
			}
			if w.surplus() {
				return
			}
		}
	}
}

// What became of a job a slot ran (evaluate).
type outcome int

const (
	reported  outcome = iota // its result or error went to the tracker
	handBack                 // interrupted by the end of the grace: hand it back
	abandoned                // stuck: handled by Abandoned, on another goroutine
)

// evaluate runs one job and reports its result. A workunit that is
// abandoned (it did not return after its stop) is reported, or handed
// back, as soon as it is, by the engine's call of Abandoned, which then
// has replace start another goroutine in this one's place; evaluate
// returns abandoned when the stuck call returns at last.
func (w *worker) evaluate(env *slotEnv, j *job, replace func()) outcome {
	stop, evalCtx := env.stop, env.evalCtx
	a := j.a
	if a.Revoked() {
		r := client.Report{Lease: a.Lease(),
			Error: &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Message: "the workunit was canceled: " + errRevoked.Error()}}
		if stop.Err() == nil {
			r.Credit = w.credits.done(0)
		}
		w.report(r)
		return reported
	}
	gpus, release := w.gpus.take(a.GPUs)
	defer release()
	if w.opts.Started != nil {
		w.opts.Started(a)
	}
	if log := w.ident.Load().log; log.Enabled(stop, slog.LevelDebug) {
		log.Debug("worker: workunit started", "key", a.Key.Short(), "token", a.Token)
	}
	// Its console lines stream while it runs; back to the pool once Run
	// has returned (an abandoned run's too, when its stuck call returns).
	live := w.startLive(a)
	defer w.live.put(live)
	host := &parent{w: w, env: env, lease: a.Lease(), calls: map[workunit.Key]*client.Call{}}
	res, err := w.eng.Run(evalCtx, engine.Request{
		Host:    host,
		Spec:    j.spec,
		Realm:   a.Realm,
		Timeout: a.Timeout,
		Blobs:   w.cache,
		GPUs:    gpus,
		// dispatch took any rename when this assignment came: no
		// client call on the way to eval.
		WorkerName: w.ident.Load().name,
		// A large result goes as a blob from its own bytes (a typed
		// array's buffer, not a copy) while the slot is still this run's.
		PutResult: w.putResult,
		Print:     live.printFn,
		Started: func(stop func(error)) {
			w.mu.Lock()
			w.running[a.Token] = stop
			w.mu.Unlock()
			if a.Revoked() { // revoked before it was registered
				stop(errRevoked)
			}
		},
		// This goroutine evaluates (no hand-off to the engine's); if the
		// workunit is stuck, the engine ends it here, and another
		// goroutine takes this one's place.
		Abandoned: func(res *engine.Result, err error) {
			if !w.finish(stop, evalCtx, a, live, res, err) {
				env.returned.add(a.Lease())
			}
			replace()
		},
	})
	if errors.Is(err, engine.ErrAbandoned) {
		return abandoned
	}
	if !w.finish(stop, evalCtx, a, live, res, err) {
		return handBack
	}
	return reported
}

// finish reports the end of assignment a's run, with the console lines
// that live did not stream. It returns false when the run was interrupted
// by the end of the grace period and must be handed back unfinished.
func (w *worker) finish(stop, evalCtx context.Context, a *client.Assignment, live *liveConsole, res *engine.Result, err error) bool {
	w.mu.Lock()
	delete(w.running, a.Token)
	w.mu.Unlock()
	if err != nil && evalCtx.Err() != nil {
		return false // interrupted after the grace: hand it back
	}
	r := client.Report{Lease: a.Lease()}
	if res != nil {
		r.Console = live.end(res.Console) // less what streamed
		r.Elapsed = res.Elapsed
	}
	if stop.Err() == nil {
		// Room for the next one, and more or less as the prefetch
		// follows the workunits' durations; in the same frame.
		r.Credit = w.credits.done(r.Elapsed)
	}
	if err != nil {
		r.Error = wire.WorkError(err)
	} else {
		r.Result = res.Value
		// Inline when it fits in a done message with its console.
		if w.resultTooLarge(len(r.Result), len(r.Console)) {
			w.resultBlob(evalCtx, &r) // an engine that took no PutResult
		}
	}
	w.report(r)
	if err != nil && w.eng.Stuck() >= w.opts.MaxStuck {
		w.stuckOnce.Do(func() { close(w.stuck) })
	}
	return true
}

// putResult is the engine's PutResult: a result that fits in a done
// message with its console is its bytes; a larger one is uploaded as a
// blob from its parts (resultBlobParts).
func (w *worker) putResult(ctx context.Context, parts blob.Parts, consoleBytes int) ([]byte, error) {
	if !w.resultTooLarge(parts.Len(), consoleBytes) {
		return parts.Bytes(), nil
	}
	doc, werr := w.resultBlobParts(ctx, parts)
	if werr != nil {
		return nil, werr
	}
	return doc, nil
}

// resultTooLarge reports whether a result of size bytes, with a console
// of consoleBytes, does not fit in a done message.
func (w *worker) resultTooLarge(size, consoleBytes int) bool {
	lim := w.c.Limits()
	return size > lim.MaxResultBytes || size+consoleBytes+reportSlack > lim.MaxFrameBytes
}

// resultBlob uploads a result too large for a done message as a blob,
// and puts in its place the value document that refers to it (the
// master's client fetches it: docs/protocol.md, "Large values"). A
// result the tracker cannot take becomes a result-limit error.
func (w *worker) resultBlob(ctx context.Context, r *client.Report) {
	r.Result, r.Error = w.resultBlobParts(ctx, blob.Parts{r.Result})
}

// resultBlobParts uploads a result, given as parts, as a blob and returns
// the value document that refers to it, or the workunit's error.
func (w *worker) resultBlobParts(ctx context.Context, parts blob.Parts) ([]byte, *workunit.Error) {
	// Asked afresh each time: the tracker may have freed an equal result
	// sent earlier (riotd --memory frees a blob once nothing names it).
	h := parts.Sum()
	w.c.ForgetBlobs(h)
	err := w.c.EnsureBlobParts(ctx, map[blob.Hash]blob.Parts{h: parts})
	if err == nil {
		return client.BlobRefDocument(h), nil
	}
	size := parts.Len()
	var le *client.BlobLimitError
	if errors.As(err, &le) {
		return nil, &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError",
			Message: fmt.Sprintf("result: %s, over the tracker's limit on a value of %s (riotd --max-blob-bytes)",
				units.FormatBytes(int64(size)), units.FormatSize(uint64(le.Limit)))}
	}
	if errors.Is(err, wire.ErrMemoryFull) {
		// The tracker keeps its blobs in memory (riotd --memory) and holds
		// its --max-memory: the workunit fails, saying so, rather than
		// its result being lost.
		return nil, &workunit.Error{Kind: workunit.ResultLimit, Name: "TrackerMemoryFullError",
			Message: fmt.Sprintf("result: %s, too large for a message, and the tracker refused to keep it as a blob: %v", units.FormatBytes(int64(size)), err)}
	}
	return nil, &workunit.Error{Kind: workunit.Internal, Name: "Error",
		Message: fmt.Sprintf("result: %s: uploading it as a blob failed: %v", units.FormatBytes(int64(size)), err)}
}

// report sends a workunit's end; a result too large for the tracker is
// sent as a result-limit error instead.
func (w *worker) report(r client.Report) {
	w.credits.sent(r.Credit, time.Now()) // before it goes, as at the start
	err := w.c.Report(r)
	if errors.Is(err, wire.ErrLimit) {
		size := len(r.Result)
		r.Result = nil
		r.Error = &workunit.Error{Kind: workunit.ResultLimit, Name: "RangeError",
			Message: fmt.Sprintf("the result (%d bytes) is larger than the tracker's limit of %d bytes",
				size, w.c.Limits().MaxResultBytes)}
		err = w.c.Report(r)
	}
	w.finished(&r) // its debug line and metrics: metrics.go
	if err != nil {
		w.ident.Load().log.Warn("worker: cannot report a workunit", "key", r.Lease.Key.Short(), "err", err)
	}
}

// fail reports a workunit's error, with one credit.
func (w *worker) fail(a *client.Assignment, werr *workunit.Error) {
	w.credits.released()
	w.report(client.Report{Lease: a.Lease(), Error: werr, Credit: 1})
}

// leases collects leases to hand back.
type leases struct {
	mu sync.Mutex
	ls []wire.Lease
}

func (l *leases) add(x wire.Lease) {
	l.mu.Lock()
	l.ls = append(l.ls, x)
	l.mu.Unlock()
}

func (l *leases) take() []wire.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.ls
	l.ls = nil
	return ls
}
