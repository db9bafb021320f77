// Package job runs riot job scripts: what riot-worker eval SCRIPT.js does.
//
// A job script runs on the master (master.RunScript) with a connection to a
// tracker: the one named by Options.Tracker, or, when none is named, the
// embedded default: a tracker in this process, listening on loopback, in
// memory (or in Options.Data), with a worker in this process whose slots do
// the work. Either way the script, its workunits and their results are the
// same; only where the work runs differs.
//
// While work is outstanding, Run shows a progress bar on stderr when stderr
// is a terminal, and every workunit's console output, each line prefixed
// with its worker's name. Unless Options.Progress is ProgressOff, it also
// says once, after 5 s, when the work cannot go on: work waits and no
// worker is connected, work that needs GPUs waits and no connected worker
// has any, or the script waits for work (client.waitForWork) that workers
// took from it.
package job

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/gpu"
	"github.com/riot-go/riot/timeline"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/worker"
)

// Progress says when Run shows a progress bar.
type Progress int

// Progress modes.
const (
	ProgressAuto Progress = iota // when stderr is a terminal
	ProgressOn
	ProgressOff
)

// Options configures Run.
type Options struct {
	// Script is the job script's path; Args are its arguments (riot.args).
	Script string
	Args   []string
	// Name is the job's name on the tracker's status pages and dashboard
	// (client.Options.Job). Default: the script's file name.
	Name string
	// Tracker is the tracker to use ("host", "host:port", a ws:// or
	// wss:// URL). Empty: the embedded default.
	Tracker string
	// Token is the tracker's credentials, if it needs them.
	Token string
	// WorkerToken is the credentials with which the script takes work
	// itself (waitForWork and its like), on a connection of its own: a
	// worker's token, where the tracker checks tokens (a master's token
	// takes no work there). Empty: that connection is a master's, with
	// Token, which a tracker without tokens lets take work.
	WorkerToken string
	// TLSConfig is used for a tracker reached over TLS (wss://, or any
	// address when set); nil means the system's defaults.
	TLSConfig *tls.Config
	// Workers is the number of slots of the embedded default's worker;
	// 0 means none (the script takes work itself), negative means one per
	// CPU. Ignored with Tracker.
	Workers int
	// Data is the directory of the embedded tracker's store; empty keeps
	// everything in memory.
	Data string
	// Engine configures the embedded worker's evaluation (time limit,
	// memory guard).
	Engine engine.Options
	// GPU gives the embedded worker the devices of this driver, as
	// riot-worker's are (worker.Options.GPU); nil means none. Ignored
	// with Tracker.
	GPU *gpu.Driver
	// Timeout is the time limit of each workunit the script submits that
	// sets none itself (riot.with({timeout})), on Tracker and on the
	// embedded default alike. Zero leaves it to the worker (riot-worker
	// --timeout, or Engine.Timeout on the embedded default).
	Timeout time.Duration
	// CancelOnInterrupt cancels the script's unfinished workunits on
	// Tracker when ctx ends before the script does
	// (InterruptedError.Canceled says how many). By default they stay with
	// the tracker and run on, as in Riot: running the script again
	// collects them. The embedded default's work ends with the job anyway.
	CancelOnInterrupt bool
	// Progress says when to show the progress bar.
	Progress Progress
	// Trace, when set, receives the job's timeline when the script ends
	// (also when it fails or is interrupted): each workunit the script
	// submitted, its queue wait and its run on its worker, as Chrome
	// trace-event JSON (package timeline), for Perfetto or
	// chrome://tracing. Run returns a *TraceError, joined to the script's
	// error if any, when it cannot write it.
	Trace io.Writer
	// Stdout and Stderr default to os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Logger receives the logs of the embedded tracker and worker (quiet
	// by default: they would run into the script's output).
	Logger *slog.Logger
}

// Run runs a job script to its end. An uncaught exception is returned as
// an *master.ScriptError.
func Run(ctx context.Context, opts Options) error {
	if opts.Script == "" {
		return errors.New("job: no script: Options.Script is the job script's path")
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(opts.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	addr := opts.Tracker
	var workers func() workerStats
	if addr == "" {
		emb, err := StartEmbedded(ctx, EmbeddedOptions{Workers: opts.Workers, Data: opts.Data, Engine: opts.Engine, GPU: opts.GPU, Logger: opts.Logger})
		if err != nil {
			return err
		}
		defer emb.Stop()
		addr = emb.addr
		workers = emb.workers
	} else {
		workers = remoteWorkers(ctx, addr, opts.Token, opts.TLSConfig)
	}

	// (The embedded tracker and its worker end with the job: nothing to
	// cancel there.)
	cancelOnInterrupt := opts.CancelOnInterrupt && opts.Tracker != ""
	var connsMu sync.Mutex
	var conns []*conn // every connection of the script, to cancel on interrupt
	state := &scriptState{}
	jobName := opts.Name
	if jobName == "" {
		jobName = filepath.Base(opts.Script)
	}
	var rec *timeline.Recorder
	if opts.Trace != nil {
		rec = timeline.New(timeline.Options{Job: jobName})
	}
	// The UI shows the lines that stream from running workunits; it is
	// made once the first connection is.
	var liveUI atomic.Pointer[jobUI]
	dial := func(ctx context.Context, host string, port int, name string) (master.Conn, error) {
		target := host
		if port > 0 {
			target = net.JoinHostPort(host, strconv.Itoa(port))
		}
		copts := client.Options{Name: name, Role: wire.RoleMaster, Token: opts.Token, TLSConfig: opts.TLSConfig, Logger: opts.Logger, Job: jobName,
			OnPrint: func(p *wire.Printed) {
				if u := liveUI.Load(); u != nil {
					u.Printed(p)
				}
			}}
		// The embedded tracker lives and dies with this process and keeps
		// every result: it never forgets what it accepted, so the client
		// need not keep the specs to submit them again.
		copts.DropAcceptedSpecs = opts.Tracker == "" && target == addr
		c, err := client.Dial(ctx, target, copts)
		if err != nil {
			return nil, err
		}
		copts.Name, copts.Slots, copts.OnPrint = c.Name(), 1, nil
		if opts.WorkerToken != "" {
			copts.Role, copts.Token = wire.RoleWorker, opts.WorkerToken
		}
		k := &conn{c: c, timeout: opts.Timeout, track: cancelOnInterrupt, workerToken: opts.WorkerToken != "", trace: rec,
			dial: func(ctx context.Context) (*client.Client, error) {
				return client.Dial(ctx, target, copts)
			}}
		if target == addr {
			// The UI's hints are about the job's tracker.
			k.state = state
		}
		connsMu.Lock()
		conns = append(conns, k)
		connsMu.Unlock()
		return k, nil
	}
	main, err := dial(ctx, addr, 0, "")
	if err != nil {
		return &ConnectError{Tracker: addr, Err: err}
	}
	defer main.Close()

	uo := uiOptions{bar: opts.Progress == ProgressOn, hints: opts.Progress != ProgressOff,
		tracker: opts.Tracker, workers: workers, state: state}
	if f, ok := opts.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		uo.bar = uo.bar || opts.Progress == ProgressAuto
		fd := int(f.Fd())
		uo.cols = func() int {
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		}
	}
	if opts.Tracker != "" {
		// The embedded tracker cannot go away; a tracker of its own can.
		uo.connected = main.(*conn).c.Connected
	}
	uo.stdout = opts.Stdout
	ui := newJobUI(opts.Stderr, uo)
	defer ui.Close()
	liveUI.Store(ui)
	err = master.RunScript(ctx, master.ScriptOptions{
		Path:    opts.Script,
		Args:    opts.Args,
		Conn:    main,
		Connect: dial,
		Stdout:  ui.Writer(opts.Stdout),
		Stderr:  ui.Writer(opts.Stderr),
		Events:  ui,
		Logger:  opts.Logger,
	})
	if err != nil && parent.Err() != nil {
		done, total := ui.counts()
		ie := &InterruptedError{Submitted: total, Unfinished: total - done, cause: parent.Err(), script: err}
		if cancelOnInterrupt {
			connsMu.Lock()
			cs := slices.Clone(conns)
			connsMu.Unlock()
			var r canceled
			r, ie.CancelErr = cancelAll(parent, cs)
			ie.Canceled, ie.OtherRuns, ie.Unchecked = r.n, r.others, r.unchecked
		}
		err = ie
	}
	if rec != nil {
		// After the script, and after an interrupt's cancellations, whose
		// outcomes it shows; before the connections close.
		if _, werr := rec.WriteTo(opts.Trace); werr != nil {
			err = &TraceError{Err: werr, Script: err}
		}
	}
	return err
}

// TraceError is Run's error when it could not write the job's timeline
// to Options.Trace. It carries the error Run would have returned
// otherwise, when the script failed too (errors.As finds it).
type TraceError struct {
	// Err is the writer's error.
	Err error
	// Script is Run's error without the trace: nil when the script
	// succeeded, else its *master.ScriptError, *InterruptedError, ...
	Script error
}

// Error says that the trace was not written, and why, after the
// script's own error if any.
func (e *TraceError) Error() string {
	msg := "job: the trace was not written: " + e.Err.Error()
	if e.Script != nil {
		return e.Script.Error() + "; " + msg
	}
	return msg
}

// Unwrap returns the writer's error and the script's.
func (e *TraceError) Unwrap() []error { return []error{e.Err, e.Script} }

// ConnectError is Run's error when it cannot connect to the tracker.
type ConnectError struct {
	// Tracker is the tracker's address.
	Tracker string
	// Err is the client's error (client.Dial).
	Err error
}

// Error returns "job: connecting to the tracker at ADDR: " and the
// client's error.
func (e *ConnectError) Error() string {
	return "job: connecting to the tracker at " + e.Tracker + ": " + e.Err.Error()
}

// Unwrap returns the client's error.
func (e *ConnectError) Unwrap() error { return e.Err }

// cancelTimeout bounds the cancellation of an interrupted job's work.
const cancelTimeout = 10 * time.Second

// cancelAll cancels what the connections submitted and is unfinished,
// within cancelTimeout of ctx's end, and says what became of what it
// could not cancel.
func cancelAll(ctx context.Context, conns []*conn) (canceled, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	var total canceled
	var errs []error
	for _, k := range conns {
		r, err := k.cancelAll(ctx)
		total.n += r.n
		total.others += r.others
		total.unchecked += r.unchecked
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// InterruptedError is Run's error when its context ended (the user
// pressed Ctrl-C) before the script did. What the script handed out stays
// with the tracker, unless Options.CancelOnInterrupt canceled it: a
// tracker of its own keeps running it, and the embedded default keeps what
// finished only in Options.Data.
type InterruptedError struct {
	// Submitted is how many workunits the script handed out, and
	// Unfinished how many of them it had no result of yet.
	Submitted, Unfinished int
	// Canceled is how many workunits Options.CancelOnInterrupt canceled,
	// and CancelErr why it could not cancel them all. Canceled can be
	// fewer than Unfinished: a run that submits a workunit already
	// waiting or running (another run's, still going or interrupted)
	// joins it without making it its own, and cancels it only when no
	// other master waits for it. OtherRuns is how many of the unfinished
	// ones another master still waits for, and run on; Unchecked how many
	// more were not canceled and could not be looked at (CancelErr, or
	// too many). The rest finished meanwhile.
	Canceled             int
	OtherRuns, Unchecked int
	CancelErr            error
	cause                error // the context's error
	script               error // what the script saw
}

// Error says that the job was interrupted, and how much of its work was
// unfinished.
func (e *InterruptedError) Error() string {
	if e.Submitted == 0 {
		return "job: interrupted"
	}
	return fmt.Sprintf("job: interrupted with %d of %s unfinished", e.Unfinished, Workunits(e.Submitted))
}

// Unwrap returns the context's error (context.Canceled, or
// context.DeadlineExceeded) and the error the script stopped with.
func (e *InterruptedError) Unwrap() []error { return []error{e.cause, e.script} }

// EmbeddedOptions configures StartEmbedded.
type EmbeddedOptions struct {
	// Workers is the number of slots of the local worker; 0 means none,
	// negative one per CPU.
	Workers int
	// Data is the directory of the tracker's store; empty keeps everything
	// in memory.
	Data string
	// Engine configures the worker's evaluation.
	Engine engine.Options
	// GPU gives the worker the devices of this driver (worker.Options.GPU);
	// nil means none.
	GPU *gpu.Driver
	// Logger receives the tracker's and the worker's logs. Default: only
	// errors, on standard error.
	Logger *slog.Logger
}

// Embedded is the embedded default: a tracker on loopback and a worker,
// both in this process. Go programs use it as riot-worker eval does, to run
// work without starting riotd and workers by hand.
type Embedded struct {
	addr string
	srv  *tracker.Server
	ctx  context.Context
	// stopWorker and stopTracker end the worker, then the tracker: the
	// worker goes first, so that it hands its work back to a tracker still
	// there, rather than wait for one going away or try to reconnect.
	stopWorker, stopTracker func()
	stopOnce                func()
}

// StartEmbedded starts a tracker on 127.0.0.1 (any free port) and, unless
// opts.Workers is 0, a worker named "local" connected to it. It returns once
// both are ready. When ctx ends the worker stops; the tracker runs on until
// Stop, which the caller must call: it ends both, the worker first.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	srv, err := tracker.New(tracker.Options{Listen: "127.0.0.1:0", DataDir: opts.Data, Name: "embedded", Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("job: embedded tracker: %w", err)
	}
	// The tracker outlives the worker, so that a worker stopped by ctx
	// (Ctrl-C) hands its work back at once instead of waiting for a
	// tracker that is gone.
	tctx, tcancel := context.WithCancel(context.WithoutCancel(ctx))
	trackerDone := make(chan error, 1)
	go func() { trackerDone <- srv.Run(tctx) }()
	e := &Embedded{srv: srv, ctx: tctx, stopWorker: func() {}}
	e.stopOnce = sync.OnceFunc(func() {
		e.stopWorker()
		e.stopTracker()
	})
	e.stopTracker = func() { tcancel(); <-trackerDone }
	select {
	case <-srv.Ready():
	case err := <-trackerDone:
		tcancel()
		return nil, fmt.Errorf("job: embedded tracker: %w", err)
	}
	e.addr = srv.Addr().String()

	slots := opts.Workers
	if slots < 0 {
		slots = runtime.NumCPU()
	}
	if slots == 0 {
		return e, nil
	}
	wctx, wcancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	workerDone := make(chan error, 1)
	wopts := worker.Options{
		Tracker: e.addr,
		Name:    "local",
		Slots:   slots,
		Grace:   -1,
		// Stopping would not help: the stuck goroutines stay in this
		// process, and nothing would start the worker again.
		MaxStuck: math.MaxInt,
		Engine:   opts.Engine,
		GPU:      opts.GPU,
		Logger:   opts.Logger,
		Ready:    func(string) { close(ready) },
	}
	go func() { workerDone <- worker.Run(wctx, wopts) }()
	e.stopWorker = func() { wcancel(); <-workerDone }
	select {
	case <-ready:
	case err := <-workerDone:
		wcancel()
		e.stopTracker()
		return nil, fmt.Errorf("job: embedded worker: %w", err)
	}
	return e, nil
}

// Addr is the tracker's address, HOST:PORT, for client.Dial.
func (e *Embedded) Addr() string { return e.addr }

// Stop ends the worker, then the tracker, and waits for both. Calls after
// the first return at once.
func (e *Embedded) Stop() { e.stopOnce() }

// workers reports the embedded tracker's workers.
func (e *Embedded) workers() workerStats {
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	st, err := e.srv.Status(ctx)
	if err != nil {
		return workerStats{}
	}
	return workerStatsOf(&st)
}

// workerStatsOf sums the busy slots, the slots and the GPUs of the
// workers in st, and finds the most GPUs one has.
func workerStatsOf(st *tracker.Status) workerStats {
	ws := workerStats{ok: true}
	for _, w := range st.Workers {
		ws.busy += min(w.Busy, w.Slots)
		ws.slots += w.Slots
		ws.gpus += w.GPUs
		ws.maxGPUs = max(ws.maxGPUs, w.GPUs)
	}
	return ws
}

// Workunits says n workunits in words: "1 workunit", "3 workunits".
func Workunits(n int) string {
	if n == 1 {
		return "1 workunit"
	}
	return fmt.Sprintf("%d workunits", n)
}
