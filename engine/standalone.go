package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// StandaloneOptions configures NewStandalone.
type StandaloneOptions struct {
	// Console receives what the script's console prints. Nil discards it.
	Console ConsoleSink
	// Bindings are installed after riot's globals, in order.
	Bindings []Binding
	// MaxCallStackSize bounds the call-stack depth of the script.
	// Default: DefaultMaxCallStackSize frames.
	MaxCallStackSize int
	// Logger receives the sandbox's logs (Sandbox.Logger). Default:
	// slog.Default().
	Logger *slog.Logger
}

// Standalone is a sandbox of its own, outside any Engine, for one script
// that runs as long as it likes on one goroutine: a job script
// (engine/master). It has the ECMAScript built-ins, console (printing to
// StandaloneOptions.Console), performance.now(), sleep, the timers and
// queueMicrotask, the web globals of a workunit (structuredClone, URL,
// TextEncoder, ...), the string limits, and its bindings; not riot.worker.
//
// Its one run lasts as long as the context given to NewStandalone: that is
// Sandbox.Context, the context sleep and the timers end with, and when it
// ends, the script running is interrupted wherever it is (a loop that
// calls nothing included) with a *goja.InterruptedError whose value is the
// context's cause. Its timers run only when its owner runs them
// (NextTimer, RunTimer): the owner's event loop decides when. Interrupt
// does nothing here: a standalone sandbox has no time limit, and its owner
// ends it through the context. A Standalone is not safe for concurrent
// use.
type Standalone struct {
	*Sandbox
	run  *run
	stop func() bool // stops the context's watch
}

// discardConsole is the console of a standalone sandbox given none.
type discardConsole struct{}

func (discardConsole) Print(workunit.Level, string) {}

// NewStandalone makes a standalone sandbox whose run lasts as long as ctx.
// The caller runs it on one goroutine and closes it when done.
func NewStandalone(ctx context.Context, opts StandaloneOptions) (*Standalone, error) {
	eo := Options{Slots: 1, MaxCallStackSize: opts.MaxCallStackSize, Logger: opts.Logger}
	eo.setDefaults()
	eng := &Engine{opts: eo, cache: newCompileCache(eo.CompileCacheSize), allocCap: allocCap(&eo)}
	sink := opts.Console
	if sink == nil {
		sink = discardConsole{}
	}
	rl, err := makeRealm(eng, "", sink, standaloneGlobals, opts.Bindings)
	if err != nil {
		return nil, err
	}
	r := &run{ctx: ctx}
	rl.cur = r
	// goja's Interrupt is safe from any goroutine.
	stop := context.AfterFunc(ctx, func() { rl.rt.Interrupt(context.Cause(ctx)) })
	return &Standalone{Sandbox: rl.sb, run: r, stop: stop}, nil
}

// standaloneGlobals are riot's globals of a standalone sandbox.
var standaloneGlobals = []func(*realm) error{bindOpGuardStandalone, bindConsole, bindTimers, bindPerformance, bindWeb, bindStringLimits, bindAllocLimits}

// NextTimer returns when the earliest timer (setTimeout, setInterval) is
// due, and false when none is pending.
func (s *Standalone) NextTimer() (time.Time, bool) {
	if !s.run.timers.pending() {
		return time.Time{}, false
	}
	return s.run.timers.queue[0].at, true
}

// RunTimer waits until the earliest timer is due and runs its callback,
// returning what the callback threw (a *goja.Exception), or the cause of
// the sandbox's context if it ends first. Call it only when NextTimer
// reports a timer.
func (s *Standalone) RunTimer() error { return s.run.timers.runNext(s.run.ctx) }

// SetBlobs sets where Decode and FetchModule find the blobs a document
// refers to, from now on. Nil means none. The documents decoded after it
// get their own copies of blob values, as a new workunit does.
func (s *Standalone) SetBlobs(src blob.Source) { s.run.blobs, s.run.blobVals = src, nil }

// Close releases what the sandbox's bindings hold (Sandbox.OnClose). The
// sandbox is not used again.
func (s *Standalone) Close() {
	s.stop()
	s.rl.close()
}
