package master

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/bundle"
	"github.com/riot-go/riot/engine/capture"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/engine/jswasm"
	"github.com/riot-go/riot/modules"
	"github.com/riot-go/riot/workunit"
)

// DefaultBlobThreshold is the encoded size from which a master sends an
// argument or a captured variable as a blob of its own, uploaded once and
// fetched once by each worker, instead of inside every workunit.
const DefaultBlobThreshold = 64 << 10

// DefaultForWorkWindow is how many of a riot.forWork's items are
// outstanding at once, submitted and not yet taken by the script, when
// ScriptOptions.ForWorkWindow is not set: enough to keep 64 workers'
// default windows full, and a few tens of MiB of the master's, the
// client's and the tracker's memory however many items there are.
const DefaultForWorkWindow = 1 << 16

// ScriptOptions configures a job script run by RunScript.
type ScriptOptions struct {
	// Path is the script's file; its directory is where doWorkCall looks
	// for modules. Source, when set, is used instead of reading Path.
	Path   string
	Source string
	// Args are the script's arguments, riot.args.
	Args []string
	// Conn is the tracker connection the script starts with: the
	// embedded default or the one named on the command line. It may be
	// nil when the script connects itself.
	Conn Conn
	// Connect opens a connection for riot.connect and
	// riot.connectToTracker. Nil means the script cannot connect.
	Connect func(ctx context.Context, host string, port int, name string) (Conn, error)
	// Stdout and Stderr receive the script's own console output (log,
	// info, debug and dir to Stdout; warn, error, trace and assert to
	// Stderr). Default: os.Stdout, os.Stderr.
	Stdout, Stderr io.Writer
	// Events, when set, hears of every workunit the script submits and
	// of every outcome, with its console output: the command shows them
	// as a progress bar and as prefixed lines.
	Events ScriptEvents
	// BlobThreshold is the size from which values travel as blobs.
	// Default: DefaultBlobThreshold.
	BlobThreshold int
	// ForWorkWindow bounds how many of a riot.forWork's (or riot.map's)
	// items are outstanding at once: it submits the first ForWorkWindow,
	// and more as the script takes their results, in order. Every item is
	// encoded, and its blobs uploaded, before any is submitted, as before;
	// once an item fails (its WorkunitError, a result that does not
	// decode), every item not yet submitted is, before the failure goes to
	// the script: the others go on running. Default: DefaultForWorkWindow.
	ForWorkWindow int
	// Logger receives the master's logs. Default: slog.Default().
	Logger *slog.Logger
}

// ScriptEvents hears what a job script's workunits do. Its methods are
// called from several goroutines.
type ScriptEvents interface {
	// Submitted says that n more workunits were submitted, or are to be:
	// riot.forWork and riot.map say so of all their items at once, and
	// submit them in windows (ScriptOptions.ForWorkWindow); should the call
	// end before it submitted them all (an interrupt, a lost connection),
	// it takes back those it did not, with a negative n.
	Submitted(n int)
	// Finished gives the outcome of a workunit the script submitted, with
	// its console output, once.
	Finished(o *workunit.Outcome)
}

// ScriptError is a job script's uncaught exception.
type ScriptError struct {
	// Name and Message are the JavaScript error's.
	Name, Message string
	// Stack is the error's stack, V8 style, and, for an error that came
	// from a workunit, its cause's stack ("Caused by: ...").
	Stack string
	// Workunit is the failed workunit's error when the exception came
	// from one (riot.waitUntilDone, riot.forWork).
	Workunit *workunit.Error
	// Unhandled says that the exception is the reason of a promise
	// rejected with no handler when a turn of the script ended (an error
	// thrown in an async function nobody awaits, a Promise.reject nobody
	// catches), as Node reports it.
	Unhandled bool
}

// Error returns the error's name and message, as JavaScript prints them.
func (e *ScriptError) Error() string {
	if e.Name == "" {
		return e.Message
	}
	return e.Name + ": " + e.Message
}

// Unwrap returns the workunit error, if any.
func (e *ScriptError) Unwrap() error {
	if e.Workunit == nil {
		return nil
	}
	return e.Workunit
}

// RunScript runs a job script as a master: top to bottom, then until no
// callback (riot.callWhenDone) or timer is pending, as Node does. It returns
// nil, a *ScriptError for an uncaught exception or for a promise rejected
// with no handler when a turn ended (the script's run, a callback, a timer,
// each with the promise jobs it queued), or the error that kept the script
// from running.
func RunScript(ctx context.Context, opts ScriptOptions) error {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.BlobThreshold <= 0 {
		opts.BlobThreshold = DefaultBlobThreshold
	}
	if opts.ForWorkWindow <= 0 {
		opts.ForWorkWindow = DefaultForWorkWindow
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	src := opts.Source
	if src == "" && opts.Path != "" {
		b, err := os.ReadFile(opts.Path)
		if err != nil {
			return fmt.Errorf("engine: job script: %w", err)
		}
		src = string(b)
	}
	name := opts.Path
	if name == "" {
		name = "script.js"
	}
	script, srcMap, err := instrumentScript(name, src)
	if err != nil {
		msg, kind := syntaxMessage(err), "SyntaxError"
		if be := (*bundle.Error)(nil); errors.As(err, &be) && be.Unresolved {
			kind = "Error" // a module not found, as Node names it
		}
		return &ScriptError{Name: kind, Message: msg, Stack: kind + ": " + msg}
	}
	// Ended when the script ends: what waits for the tracker on the
	// script's behalf (riot.result) stops with it.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	m := &master{
		srcMap:    srcMap,
		opts:      opts,
		scripts:   []*capture.Script{script},
		mods:      make(map[string]*goja.Object),
		jobs:      jobQueue{ready: make(chan struct{}, 1)},
		reups:     reupQueue{ready: make(chan struct{}, 1)},
		blobIDs:   make(map[*goja.Object]blobEntry),
		printSeed: maphash.MakeSeed(),
		pending:   make(map[blob.Hash]*pendingBlob),
		uploaded:  make(map[Conn]map[blob.Hash]bool),
		modules:   modules.NewCache(filepath.Dir(name)).WithBundler(bundle.Module),
		taken:     make(map[workunit.Key]*Work),
		subs:      make(map[workunit.Key]subEntry),
		copies:    1,
		ctx:       ctx,
	}
	// WebAssembly, as workunits and Node's scripts have it.
	wasm, err := jswasm.New(ctx, jswasm.Options{})
	if err != nil {
		return err
	}
	defer wasm.Close(context.WithoutCancel(ctx))
	st, err := engine.NewStandalone(ctx, engine.StandaloneOptions{
		Console:  scriptConsole{stdout: opts.Stdout, stderr: opts.Stderr},
		Bindings: []engine.Binding{wasm, engine.BindingFunc(m.install)},
		Logger:   opts.Logger,
	})
	if err != nil {
		return err
	}
	defer st.Close()
	m.st = st
	defer func() {
		for _, c := range m.conns {
			_ = c.Close()
		}
	}()
	return m.runGuarded(opts.Conn)
}

// instrumentScript instruments the job script name, whose text is src, for
// the capture hook. An ES module or TypeScript script (by its name, or a .js
// script that does not parse as a script) is bundled with esbuild first:
// then the instrumented code is plain JavaScript under the name
// bundledName(name), its value is the module's body (an async function,
// whose promise is the module's evaluation), and the map gives the
// original files' positions of its own.
func instrumentScript(name, src string) (*capture.Script, *bundle.Map, error) {
	var b *bundle.Result
	if bundle.Needed(name) {
		var err error
		if b, err = bundle.Build(name, src); err != nil {
			return nil, nil, err
		}
	} else {
		script, err := capture.Instrument(filepath.Base(name), src, capture.Options{})
		var se *capture.SyntaxError
		if err == nil || !errors.As(err, &se) {
			return script, nil, err
		}
		// import, export or a top-level await: an ES module. Anything else
		// esbuild refuses too, and the parse error stands.
		var berr error
		if b, berr = bundle.Build(name, src); berr != nil {
			return nil, nil, err
		}
	}
	gen := bundledName(name)
	script, err := capture.Instrument(gen, b.Source, capture.Options{})
	if err != nil {
		// esbuild's output that goja does not parse: say where the code
		// came from.
		var se *capture.SyntaxError
		if errors.As(err, &se) {
			if f, l, c, ok := b.Map.Lookup(se.Line, se.Column); ok {
				se.File, se.Line, se.Column = f, l, c
			}
		}
		return nil, nil, err
	}
	spans := make([]bundle.Span, len(script.Insertions))
	for i, in := range script.Insertions {
		spans[i] = bundle.Span{At: in.At, Len: in.Len}
	}
	script.Source += b.Map.Inserted(b.Source, spans).Comment(gen)
	return script, b.Map, nil
}

// mapError returns a workunit's error with the positions in its stack that
// point into a bundled script's JavaScript mapped to the original files.
func (m *master) mapError(w *workunit.Error) *workunit.Error {
	if m.srcMap == nil || w.Stack == "" {
		return w
	}
	c := *w
	c.Stack = m.srcMap.RemapStack(c.Stack, m.scripts[0].File)
	return &c
}

// bundledName is the name of a bundled script's JavaScript, as workers'
// stack traces show it (the master maps them back to the original files).
func bundledName(name string) string { return filepath.Base(name) + ".bundle.js" }

// runGuarded runs the script with conn as its current client. A Go panic
// on the script's goroutine (a bug in the master, or in a Conn) ends the
// script with an error rather than reach RunScript's caller.
func (m *master) runGuarded(conn Conn) (err error) {
	defer func() {
		if x := recover(); x != nil {
			m.opts.Logger.Error("engine: panic while running a job script", "panic", x, "stack", string(debug.Stack()))
			err = fmt.Errorf("engine: job script: panic: %v", x)
		}
	}()
	m.client = m.newClient(conn)
	defer func() {
		for fw := range m.windows {
			fw.close()
		}
	}()
	return m.run()
}

// scriptConsole is a job script's console: log, info, debug and dir write
// to Stdout, warn, error, trace and assert to Stderr.
type scriptConsole struct{ stdout, stderr io.Writer }

func (c scriptConsole) Print(level workunit.Level, text string) {
	w := c.stdout
	if level == workunit.LevelWarn || level == workunit.LevelError {
		w = c.stderr
	}
	fmt.Fprintln(w, text)
}

// master runs one job script. Its fields are used on the script's
// goroutine only, except jobs and reups, which connection callbacks send
// to.
type master struct {
	opts ScriptOptions
	// windows are the forWork and map calls whose items are not all
	// submitted and whose call has not ended (a map's promise pending):
	// when the script ends, each takes back from Events what it never
	// submitted (forWindow.close).
	windows map[*forWindow]struct{}
	// srcMap, for a bundled script (an ES module, TypeScript), maps the
	// positions of the bundled JavaScript, before the capture pass's
	// insertions (where shipped functions say they are), to the original
	// files; nil otherwise. goja maps the master's own stacks with the
	// inline source map of scripts[0].Source.
	srcMap *bundle.Map
	// top is the promise of a bundled script's evaluation (what its body
	// returned): its top level has run when it settles.
	top *goja.Promise
	// scripts are the instrumented job script (0) and the modules it
	// required (1, ...): a captured function is registered with its
	// script's index and its index there.
	scripts []*capture.Script
	mods    map[string]*goja.Object // module objects of required files, by absolute path
	st      *engine.Standalone      // the script's sandbox
	sb      *engine.Sandbox         // st, as the riot object's binding sees it
	rt      *goja.Runtime
	in      *jsvalue.Intrinsics
	ctx     context.Context

	client  *jsClient   // riot.currentClient()
	clients []*jsClient // every client object made
	conns   []Conn      // connections the script opened, closed at the end
	shown   shownKeys
	taken   map[workunit.Key]*Work    // workunits taken with waitForWork
	subs    map[workunit.Key]subEntry // workunits this script submitted
	copies  int                       // how many workunits the value being encoded goes into
	jobs    jobQueue                  // callbacks to run on the script's goroutine
	reups   reupQueue                 // requests to upload blobs again, served on it
	waits   int                       // callbacks still expected
	// rejected are the promises rejected with no handler, in the order
	// they were rejected, less those that got a handler since: what is
	// left when a turn ends is an unhandled rejection.
	rejected engine.Rejections

	blobIDs map[*goja.Object]blobEntry
	// epoch counts submissions: a value sent again in a later one is
	// checked for changes (blobFor); printSeed seeds buffers' hashes.
	epoch     uint64
	printSeed maphash.Seed
	pending   map[blob.Hash]*pendingBlob // blobs made, by hash
	uploaded  map[Conn]map[blob.Hash]bool
	modules   *modules.Cache
}

// blobEntry is what a master knows of an object it sent: its size measure
// then (a change means the value changed), its encoded size, how many
// workunits carried it, and its blob once it became one.
type blobEntry struct {
	size  int64
	bytes int
	sends int
	hash  blob.Hash
	// epoch is the submission that last sent it (master.epoch); print, a
	// buffer's hash of its bytes then (master.unchanged).
	epoch uint64
	print uint64
}

func (m *master) run() error {
	prg, err := goja.Compile(m.scripts[0].File, m.scripts[0].Source, false)
	if err != nil {
		return m.scriptError(err)
	}
	m.rt.SetPromiseRejectionTracker(m.trackRejection)
	v, err := m.rt.RunProgram(prg)
	if err != nil {
		return m.scriptError(err)
	}
	if m.srcMap != nil {
		// A module's body, an async function: called from here, so that
		// no frame of the call shows in stacks.
		body, ok := goja.AssertFunction(v)
		if !ok {
			return fmt.Errorf("engine: job script: the bundled module is %s, not a function", v)
		}
		p, err := body(goja.Undefined())
		if err != nil {
			return m.scriptError(err)
		}
		m.top, _ = p.Export().(*goja.Promise)
	}
	if err := m.unhandledRejection(); err != nil {
		return err
	}
	// The event loop: callbacks and timers, until none is pending.
	for {
		at, timer := m.st.NextTimer()
		if m.waits == 0 && !timer {
			return m.unsettled()
		}
		var due <-chan time.Time
		var t *time.Timer
		if timer {
			d := time.Until(at)
			if d <= 0 {
				if err := m.st.RunTimer(); err != nil {
					return m.scriptError(err)
				}
				if err := m.unhandledRejection(); err != nil {
					return err
				}
				continue
			}
			t = time.NewTimer(d)
			due = t.C
		}
		var err error
		select {
		case <-m.reups.ready:
			m.serveUploads()
		case <-m.jobs.ready:
			for _, job := range m.jobs.take() {
				if err = m.call(job); err != nil {
					break
				}
				if err = m.unhandledRejection(); err != nil {
					return err
				}
			}
		case <-due:
			if err = m.st.RunTimer(); err == nil {
				if err = m.unhandledRejection(); err != nil {
					return err
				}
			}
		case <-m.ctx.Done():
			err = fmt.Errorf("engine: job script stopped: %w", context.Cause(m.ctx))
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return m.scriptError(err)
		}
	}
}

// trackRejection is the runtime's promise rejection tracker: it notes a
// promise rejected with no handler, and forgets it when it gets one.
func (m *master) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	m.rejected.Track(p, op)
}

// unhandledRejection is called when a turn of the script has ended (its
// promise jobs ran): the first promise still rejected with no handler
// ends the script, as in Node, with its reason as the exception.
func (m *master) unhandledRejection() error {
	if m.top != nil && m.top.State() == goja.PromiseStateRejected {
		// An exception of a module's top level, thrown after an await or
		// before: uncaught, as Node reports it.
		if i := slices.Index(m.rejected, m.top); i >= 0 {
			m.rejected = slices.Delete(m.rejected, i, i+1)
		}
		reason := m.top.Result()
		m.top = nil
		return m.exception(reason, nil)
	}
	if len(m.rejected) == 0 {
		return nil
	}
	p := m.rejected[0]
	m.rejected = nil
	reason := p.Result()
	var se *ScriptError
	if o, ok := reason.(*goja.Object); ok && m.in.Classify(o) == jsvalue.KindError {
		se = m.exception(reason, nil)
	} else {
		// Node's words for a reason that is not an Error.
		se = &ScriptError{Name: "UnhandledPromiseRejection", Message: "This error originated either by throwing inside of an async function " +
			"without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason " +
			inspect.Inspect(m.rt, m.in, reason, inspect.Options{}) + "."}
		se.Stack = se.Name + ": " + se.Message
	}
	se.Unhandled = true
	return se
}

// unsettled is the end of a script with nothing left pending: an error when
// a module's top level still awaits (a promise nothing can settle now), as
// Node's "unsettled top-level await".
func (m *master) unsettled() error {
	if m.top == nil || m.top.State() != goja.PromiseStatePending {
		return nil
	}
	msg := "the script's top-level await never settled: it awaits a promise that nothing pending (no workunit, callback or timer) will resolve"
	return &ScriptError{Name: "Error", Message: msg, Stack: "Error: " + msg}
}

// call runs a callback on the script's goroutine, catching what it throws.
func (m *master) call(job func()) (err error) {
	if ex := m.rt.Try(job); ex != nil {
		return ex
	}
	return nil
}

// post queues fn to run on the script's goroutine; callable from any
// goroutine, it never blocks.
func (m *master) post(fn func()) { m.jobs.push(fn) }

// jobQueue is an unbounded queue of callbacks from connection goroutines to
// the script's goroutine: a connection must never wait on a script that is
// itself waiting (in riot.waitUntilDone) for that connection.
type jobQueue struct {
	mu    sync.Mutex
	jobs  []func()
	ready chan struct{} // has a value when jobs may be non-empty
}

func (q *jobQueue) push(fn func()) {
	q.mu.Lock()
	q.jobs = append(q.jobs, fn)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *jobQueue) take() []func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	jobs := q.jobs
	q.jobs = nil
	return jobs
}

// scriptError turns what the script threw into a *ScriptError.
func (m *master) scriptError(err error) error {
	var ex *goja.Exception
	var se *goja.CompilerSyntaxError
	var ie *goja.InterruptedError
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("engine: job script interrupted: %v", ie.Value())
	case errors.As(err, &se):
		msg, stack := inspect.SyntaxError(se)
		return &ScriptError{Name: "SyntaxError", Message: msg, Stack: stack}
	case errors.As(err, &ex):
		return m.exception(ex.Value(), ex.Stack())
	}
	return err
}

func (m *master) exception(v goja.Value, frames []goja.StackFrame) *ScriptError {
	se := &ScriptError{}
	o, ok := v.(*goja.Object)
	if !ok || m.in.Classify(o) != jsvalue.KindError {
		se.Message = "Uncaught " + inspect.Inspect(m.rt, m.in, v, inspect.Options{})
		se.Stack = m.remapColumns(inspect.StackString("", se.Message, frames, 0))
		return se
	}
	m.rt.Try(func() {
		se.Name = inspect.SafeString(o.Get("name"))
		se.Message = inspect.SafeString(o.Get("message"))
		se.Stack = m.remapColumns(inspect.NormalizeStack(inspect.SafeString(o.Get("stack"))))
		if w, ok := exportOf(o.GetSymbol(workErrSym)).(*workunit.Error); ok {
			se.Workunit = w
			if w.Stack != "" {
				se.Stack += "\nCaused by: " + w.Stack
			}
		}
	})
	if se.Stack == "" {
		se.Stack = m.remapColumns(inspect.StackString(se.Name, se.Message, frames, 0))
	}
	return se
}

// remapColumns gives the positions in a stack of the script's own code
// their columns in the files as written: the capture pass inserts text
// into lines that make functions, and goja counts columns in what it ran.
// (A bundled script's source map has the insertions in it already.)
func (m *master) remapColumns(stack string) string {
	for k, s := range m.scripts {
		if k == 0 && m.srcMap != nil {
			continue
		}
		stack = s.RemapStack(stack)
	}
	return stack
}

// Private symbols: a registered function keeps its capture registration
// under regSym, and a WorkunitError its *workunit.Error under workErrSym.
// Symbols are immutable values, shared safely by every runtime.
var (
	regSym     = goja.NewSymbol("riot.capture")
	workErrSym = goja.NewSymbol("riot.workunitError")
)

// describeFunc names a function for messages: its name and where it is.
func (m *master) describeFunc(k, id int) string {
	f := m.scripts[k].Funcs[id]
	name := f.Name
	if name == "" {
		name = "the function"
	}
	if k == 0 && m.srcMap != nil {
		if file, line, col, ok := m.srcMap.Lookup(f.Line, f.Column); ok {
			return fmt.Sprintf("%s (%s:%d:%d)", name, file, line, col)
		}
	}
	return fmt.Sprintf("%s (%s:%d:%d)", name, m.scripts[k].File, f.Line, f.Column)
}

func exportOf(v goja.Value) any {
	if v == nil {
		return nil
	}
	return v.Export()
}

// syntaxMessage is what a script's author reads of an error of
// capture.Instrument: for a syntax error, where and what
// ("job.js:2:41: Unexpected token ;"), without the instrumenting pass's
// name.
func syntaxMessage(err error) string {
	var se *capture.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s:%d:%d: %s", se.File, se.Line, se.Column, se.Message)
	}
	return err.Error()
}
