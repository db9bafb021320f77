package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jsgpu"
	"github.com/riot-go/riot/engine/jswasm"
	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/worker"
	"github.com/riot-go/riot/workunit"
)

// commandName starts what RunCommand says of itself.
const commandName = "riot-worker eval"

// CommandOptions are what a riot-worker eval command line asks for
// (Flags.Options), for RunCommand: a job script, or, with -e, one
// expression.
type CommandOptions struct {
	// Job runs the job script Job.Script. Without a script, Source is set,
	// and Job's Tracker, Token, TLSConfig, Engine and Timeout apply to it.
	Job Options
	// Source is JavaScript to evaluate as one eval workunit (-e): on
	// Job.Tracker's workers, or in this process without one.
	Source string
	// GPU gives the embedded default's worker this machine's GPUs
	// (worker.OpenGPU), as a riot-worker has them; --no-gpu clears it.
	GPU bool
	// Warnings are said on stderr before anything runs.
	Warnings []string
	// Trace is the file (--trace) that receives the job's timeline
	// (Options.Trace): created before the script starts, so that a path
	// that cannot be written fails at once, and written when it ends.
	Trace string
}

// RunCommand does what riot-worker eval's command line asked for, o, and
// says what became of it as riot-worker eval does: -e's value on stdout,
// the workunits' console output as it comes (log, info and debug on
// stdout, warn and error on stderr), each line prefixed with its worker's
// name and its workunit's short key, a job script's output where the script writes it, and a
// failure on stderr (the script's or the workunit's error and stack, a
// tracker that cannot be reached, what an interrupt left behind). It
// returns nil on success, else the error it reported: an
// *InterruptedError when ctx ended first (the user pressed Ctrl-C).
func RunCommand(ctx context.Context, o CommandOptions, stdout, stderr io.Writer) error {
	for _, w := range o.Warnings {
		fmt.Fprintf(stderr, "%s: warning: %s\n", commandName, w)
	}
	if o.Job.Script == "" {
		return evaluate(ctx, o.Job, o.Source, stdout, stderr)
	}
	j := o.Job
	j.Stdout, j.Stderr = stdout, stderr
	if j.Tracker == "" && j.Workers != 0 && o.GPU && j.GPU == nil {
		// The embedded default's worker gets this machine's GPUs, as a
		// riot-worker would; without a driver it has none, quietly.
		drv := worker.OpenGPU(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		defer drv.Close()
		j.GPU = drv
	}
	var traceFile *os.File
	if o.Trace != "" {
		f, err := os.Create(o.Trace)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --trace %s: %v (give a file in a directory that exists and that you may write)\n", commandName, o.Trace, err)
			return fmt.Errorf("job: --trace: %w", err)
		}
		traceFile, j.Trace = f, f
	}
	err := Run(ctx, j)
	if traceFile != nil {
		if cerr := traceFile.Close(); cerr != nil && !errors.As(err, new(*TraceError)) {
			err = &TraceError{Err: cerr, Script: err}
		}
	}
	failed := err
	if te, ok := err.(*TraceError); ok {
		fmt.Fprintf(stderr, "%s: --trace %s: the trace was not written: %v\n", commandName, o.Trace, traceCause(te))
		err = te.Script
	}
	var se *master.ScriptError
	var ie *InterruptedError
	var ce *ConnectError
	switch {
	case err == nil:
		return failed // the trace's error, or nil
	case errors.As(err, &ce) && j.Tracker != "":
		connectFailure(stderr, j.Tracker, ce.Err)
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "%s: %s\n", commandName, interruptedText(ie, &j))
	case errors.As(err, &se):
		stack := se.Stack
		if stack == "" {
			stack = se.Error()
		}
		fmt.Fprintln(stderr, stack)
	default:
		fmt.Fprintf(stderr, "%s: %v\n", commandName, err)
	}
	return failed
}

// traceCause is what went wrong in writing the trace: the file's own
// error, without the packages' prefixes.
func traceCause(te *TraceError) error {
	var pe *fs.PathError
	if errors.As(te.Err, &pe) {
		return pe
	}
	return te.Err
}

// evaluate runs source as one eval workunit, on o.Tracker's workers or in
// this process, and prints its value, its console output and its failure.
func evaluate(ctx context.Context, o Options, source string, stdout, stderr io.Writer) error {
	spec := &workunit.Spec{Kind: workunit.Eval, Source: source, Name: "eval"}
	if o.Tracker != "" {
		return evaluateRemote(ctx, o, spec, stdout, stderr)
	}
	eo := o.Engine
	eo.Slots = 1
	// No driver: in process, the workunit sees the GPU globals as on a
	// worker without a GPU.
	// And WebAssembly, as on a worker.
	wasm, err := jswasm.New(ctx, jswasm.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", commandName, err)
		return err
	}
	defer wasm.Close(context.WithoutCancel(ctx))
	eo.Bindings = append([]engine.Binding{jsgpu.Binding(nil), wasm}, eo.Bindings...)
	eng, err := engine.New(eo)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", commandName, err)
		return err
	}
	defer eng.Close()
	res, err := eng.Run(ctx, engine.Request{Spec: spec})
	if res != nil {
		printConsole(stdout, stderr, consolePrefix("local", workunit.Key{}), res.Console)
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted\n", commandName)
		return &InterruptedError{cause: ctx.Err(), script: err}
	}
	if err != nil {
		printFailure(stderr, err)
		return err
	}
	return printValue(ctx, stdout, stderr, res.Value)
}

// evaluateRemote submits spec to o.Tracker, waits for it to finish on a
// worker, and prints what the in-process path prints.
func evaluateRemote(ctx context.Context, o Options, spec *workunit.Spec, stdout, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	name := o.Name
	if name == "" {
		name = "-e"
	}
	var printMu sync.Mutex
	c, err := client.Dial(ctx, o.Tracker, client.Options{Token: o.Token, TLSConfig: o.TLSConfig, Logger: logger, Job: name,
		// The workunit's console lines, as it prints them.
		OnPrint: func(p *wire.Printed) {
			printMu.Lock()
			defer printMu.Unlock()
			printPrinted(stdout, stderr, p)
		}})
	if err != nil {
		connectFailure(stderr, o.Tracker, err)
		return &ConnectError{Tracker: o.Tracker, Err: err}
	}
	defer c.Close()
	// Says when the tracker is lost, and when it is back, as a job does.
	ui := newJobUI(stderr, uiOptions{tracker: o.Tracker, connected: c.Connected})
	call := c.Submit(spec, workunit.Options{Timeout: o.Timeout})
	out, err := call.Wait(ctx)
	ui.Close()
	if out != nil {
		// The lines that streamed first, then the rest, which came with
		// the outcome.
		_ = c.AwaitPrints(ctx)
		printMu.Lock()
		prefix := consolePrefix(out.Worker, out.Key)
		printConsole(stdout, stderr, prefix, out.Console)
		if call.FromMemory() {
			fmt.Fprintln(stderr, prefix+fromMemoryText)
		}
		printMu.Unlock()
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted; the workunit stays with the tracker at %s and runs on: evaluating the same SOURCE again collects its result\n",
			commandName, o.Tracker)
		return &InterruptedError{Submitted: 1, Unfinished: 1, cause: ctx.Err(), script: err}
	}
	if err != nil {
		printFailure(stderr, err)
		return err
	}
	return printValue(ctx, stdout, stderr, out.Result)
}

// connectFailure says that the tracker at addr could not be reached, with
// a hint when nothing listens there.
func connectFailure(w io.Writer, addr string, err error) {
	fmt.Fprintf(w, "%s: connecting to the tracker at %s: %v", commandName, addr, err)
	if errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprint(w, "; is riotd running there? (start it with riotd, or leave out --tracker and $RIOT_TRACKER to use the embedded default)")
	}
	fmt.Fprintln(w)
}

// printValue prints a result as master.FormatValue formats it; an
// interrupt (ctx) stops it.
func printValue(ctx context.Context, stdout, stderr io.Writer, result []byte) error {
	text, _, err := master.FormatValue(ctx, result)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted while printing the result\n", commandName)
		return &InterruptedError{cause: ctx.Err(), script: err}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", commandName, err)
		return err
	}
	fmt.Fprintln(stdout, text)
	return nil
}

// printFailure writes a failed workunit's error, "Name: message" and its
// stack, preceded by the worker's name when it came through a tracker.
func printFailure(w io.Writer, err error) {
	var werr *workunit.Error
	if !errors.As(err, &werr) {
		fmt.Fprintf(w, "%s: %v\n", commandName, err)
		return
	}
	if werr.Worker != "" {
		fmt.Fprintf(w, "worker %s: ", werr.Worker)
	}
	switch {
	case werr.Stack != "":
		fmt.Fprintln(w, werr.Stack)
	case werr.Name != "" && werr.Message != "":
		fmt.Fprintf(w, "%s: %s\n", werr.Name, werr.Message)
	default:
		fmt.Fprintln(w, werr.Name+werr.Message)
	}
}

// interruptedText says what became of a job's work when the user stopped
// it: on a tracker it runs on and a rerun collects it; on the embedded
// default only a --data store keeps what finished.
func interruptedText(e *InterruptedError, o *Options) string {
	what := "interrupted"
	if e.Submitted > 0 {
		what = fmt.Sprintf("interrupted with %d of %s unfinished", e.Unfinished, Workunits(e.Submitted))
	}
	switch {
	case e.Unfinished == 0:
		return what
	case o.Tracker != "" && o.CancelOnInterrupt:
		return what + "; " + canceledText(e, o.Tracker)
	case o.Tracker != "":
		return what + "; they stay with the tracker at " + o.Tracker + " and run on: run the job again to collect their results (with --cancel-on-interrupt, an interrupt cancels them instead)"
	case o.Data != "":
		return what + "; what finished is kept in " + o.Data + ": run the job again with --data " + o.Data + " to pick up where it left off"
	}
	return what + "; the embedded tracker kept nothing (with --data DIR, a rerun picks up where the last one left off)"
}

// canceledText says what --cancel-on-interrupt did with the unfinished
// workunits: those it canceled, those another master still waits for
// (this run joined them, and cancels only what nobody else waits for),
// those it could not look at, and those that finished meanwhile.
func canceledText(e *InterruptedError, tracker string) string {
	if e.Canceled >= e.Unfinished && e.CancelErr == nil {
		return "canceled them at the tracker at " + tracker
	}
	var parts []string
	switch e.Canceled {
	case 0:
		parts = append(parts, "canceled none of them at the tracker at "+tracker)
	default:
		parts = append(parts, fmt.Sprintf("canceled %d of them at the tracker at %s", e.Canceled, tracker))
	}
	if n := e.OtherRuns; n == 1 {
		parts = append(parts, "another master waits for 1 of them (another run of the job, whose work this one joined), "+
			"so it stays with the tracker and runs on")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("another master waits for %d of them (another run of the job, whose work this one joined), "+
			"so they stay with the tracker and run on", n))
	}
	switch {
	case e.CancelErr != nil:
		parts = append(parts, fmt.Sprintf("could not cancel the rest: %v", e.CancelErr))
	case e.Unchecked > 0:
		parts = append(parts, fmt.Sprintf("%d more could not be canceled by this run (another master waits for them, or they finished meanwhile)", e.Unchecked))
	}
	if n := e.Unfinished - e.Canceled - e.OtherRuns - e.Unchecked; e.CancelErr == nil && n > 0 {
		parts = append(parts, fmt.Sprintf("%d finished meanwhile", n))
	}
	return strings.Join(parts, "; ")
}
