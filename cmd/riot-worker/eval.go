package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/jsgpu"
	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/workunit"
)

const evalUsage = `Usage: riot-worker eval [flags] SCRIPT.js [ARGS...]
       riot-worker eval [flags] -e SOURCE

With SCRIPT.js, runs the job script as a master (docs/reference.md): its
riot.forWork, riot.doWork, riot.doWorkCall and riot.doWorkEval hand out
workunits, to the tracker named by --tracker (or RIOT_TRACKER), or, with
neither, to the embedded default: a tracker in this process with a local
worker of --workers slots. ARGS are the script's riot.args: eval's own
flags go before SCRIPT.js. --timeout is the time limit of each workunit
the script submits without one of its own (riot.with({timeout})). While
work is outstanding a progress bar shows on stderr (when it is a
terminal), and each workunit's console output appears there, prefixed
with its worker's name. An uncaught error ends the script: its message,
naming the workunit and the worker when it came from one, and its stacks
go to stderr, and the status is 1.

With -e, evaluates SOURCE as an eval workunit (Riot's do-work/eval) and prints its
value on stdout. With --tracker (or RIOT_TRACKER), the workunit is submitted
to that tracker and runs on one of its workers; without, it runs in this
process. The value is printed:

  - as JSON, when the value is JSON without loss: null, booleans, finite
    numbers, strings, arrays and plain objects, without cycles;
  - otherwise in the readable form console.log uses (undefined, NaN, -0,
    10n, Map(1) { 'a' => 1 }, 2026-11-30T06:56:44.000Z, ...).

The workunit's console output goes to stderr, each line prefixed with the
worker's name ("local" in process). When SOURCE throws, riot-worker prints
"Name: message" and the stack on stderr (through a tracker, preceded by the
name of the worker that raised it) and exits with status 1. A runaway
workunit (time limit, stack depth, memory) fails the same way.

A tracker remembers finished workunits: evaluating the same SOURCE again
through it answers from memory (without its console output).

Exit status: 0 success, 1 the workunit (or the script) failed, 2 bad usage,
130 stopped by SIGINT or SIGTERM (workunits stay with a tracker named by
--tracker, and run on, unless a job script's --cancel-on-interrupt).

Flags:
`

type evalFlags struct {
	source   string
	timeout  time.Duration // of each workunit that sets none
	memory   uint64        // --memory-limit in bytes, 0 for none
	memLimit sysmem.Limit
	tracker  string
	token    string
	tlsCA    string
	// Job scripts only.
	script     string
	scriptArgs []string
	workers    int // -1: one slot per CPU
	workersF   autoInt
	data       string
	progress   bool
	cancelInt  bool
	quiet      bool
	noGPU      bool
}

func parseEvalFlags(args []string, stderr io.Writer) (*evalFlags, error) {
	fs := flag.NewFlagSet("riot-worker eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &evalFlags{}
	fs.StringVar(&f.source, "e", "", "evaluate this JavaScript `source`")
	fs.Var((*units.Duration)(&f.timeout), "timeout", "time limit of each workunit that sets none, a `duration` such as 30s or 5m; -e: of the workunit (default: none)")
	memoryLimitFlag(fs, &f.memLimit, "workunits run in this process are")
	fs.StringVar(&f.tracker, "tracker", os.Getenv("RIOT_TRACKER"), "run the work on this tracker's workers, `HOST[:PORT]` (default: $RIOT_TRACKER, else in process: the embedded default for job scripts)")
	// The token's default is read after parsing, so that --help never prints it.
	fs.StringVar(&f.token, "token", "", "the tracker's credentials, a `token` (default: $RIOT_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", os.Getenv("RIOT_TLS_CA"), "reach the tracker over TLS, trusting the authority in this PEM `FILE` (default: $RIOT_TLS_CA; a wss:// address uses the system's authorities)")
	fs.Var(&f.workersF, "workers", "job scripts on the embedded default: the local worker's `slots`, 0 for none (default: one per CPU)")
	fs.StringVar(&f.data, "data", "", "job scripts on the embedded default: keep the tracker's store in this `DIR` (default: memory only)")
	fs.BoolVar(&f.cancelInt, "cancel-on-interrupt", false, "job scripts with --tracker: on SIGINT or SIGTERM, cancel the script's unfinished workunits instead of leaving them to run on")
	fs.BoolVar(&f.progress, "progress", false, "job scripts: show the progress bar even when stderr is not a terminal")
	fs.BoolVar(&f.quiet, "quiet", false, "job scripts: never show the progress bar")
	fs.BoolVar(&f.noGPU, "no-gpu", false, "job scripts on the embedded default: give the local worker no GPUs")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), evalUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if f.token == "" {
		f.token = os.Getenv("RIOT_TOKEN")
	}
	if f.workers = f.workersF.or(-1); f.workersF.set && f.workers < 0 {
		return nil, fmt.Errorf("--workers %d: want 0 or more", f.workers)
	}
	var err error
	if f.memory, err = memoryLimitBytes(fs, f.memLimit); err != nil {
		return nil, err
	}
	if f.tracker != "" && flagGiven(fs, "memory-limit") {
		return nil, errors.New("--memory-limit applies in process only: give it to the workers (riot-worker --memory-limit)")
	}
	switch {
	case f.source != "" && fs.NArg() > 0:
		return nil, fmt.Errorf("give -e SOURCE or a SCRIPT.js, not both (unexpected arguments: %q)", fs.Args())
	case f.source == "" && fs.NArg() == 0:
		return nil, errors.New("a SCRIPT.js or -e SOURCE is required")
	case fs.NArg() > 0:
		f.script, f.scriptArgs = fs.Arg(0), fs.Args()[1:]
		if found := flagsAfterScript(fs, f.scriptArgs); len(found) > 0 {
			verb := "comes after the script, so it goes to the script"
			if len(found) > 1 {
				verb = "come after the script, so they go to the script"
			}
			fmt.Fprintf(stderr, "riot-worker eval: warning: %s %s (riot.args), not to eval: "+
				"eval's flags go before the script, as in riot-worker eval [flags] %s [ARGS...]\n", strings.Join(found, ", "), verb, f.script)
		}
		if f.progress && f.quiet {
			return nil, errors.New("--progress and --quiet contradict each other")
		}
		if f.cancelInt && f.tracker == "" {
			return nil, errors.New("--cancel-on-interrupt needs --tracker: on the embedded default, the job's work ends with it anyway")
		}
		return f, nil
	}
	if f.cancelInt {
		return nil, errors.New("--cancel-on-interrupt is for job scripts (SCRIPT.js), not -e")
	}
	return f, nil
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseEvalFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return usageFailure(stderr, "riot-worker eval", err)
	}
	if f.script != "" {
		return runScript(ctx, f, stdout, stderr)
	}
	if f.tracker != "" {
		return evalRemote(ctx, f, stdout, stderr)
	}
	// No driver: in process, the workunit sees the GPU globals as on a
	// worker without a GPU.
	eng, err := engine.New(engine.Options{Slots: 1, Timeout: f.timeout, MemoryLimit: f.memory,
		Bindings: []engine.Binding{jsgpu.Binding(nil)}})
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
		return 1
	}
	defer eng.Close()
	spec := &workunit.Spec{Kind: workunit.Eval, Source: f.source, Name: "eval"}
	res, err := eng.Run(ctx, engine.Request{Spec: spec})
	if res != nil {
		printConsole(stderr, "local", res.Console)
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "riot-worker eval: interrupted")
		return 130
	}
	if err != nil {
		return printFailure(stderr, err)
	}
	return printValue(stdout, stderr, res.Value)
}

// evalRemote submits the workunit to f.tracker, waits for it to finish on
// a worker, and prints what the in-process path prints.
func evalRemote(ctx context.Context, f *evalFlags, stdout, stderr io.Writer) int {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	tlsConf, err := f.tlsConfig()
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
		return 2
	}
	c, err := client.Dial(ctx, f.tracker, client.Options{Token: f.token, TLSConfig: tlsConf, Logger: logger})
	if err != nil {
		return connectFailure(stderr, f.tracker, err)
	}
	defer c.Close()
	spec := &workunit.Spec{Kind: workunit.Eval, Source: f.source, Name: "eval"}
	out, err := c.Submit(spec, workunit.Options{Timeout: f.timeout}).Wait(ctx)
	if out != nil {
		printWireConsole(stderr, out.Worker, out.Console)
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "riot-worker eval: interrupted; the workunit stays with the tracker at %s and runs on: evaluating the same SOURCE again collects its result\n", f.tracker)
		return 130
	}
	if err != nil {
		return printFailure(stderr, err)
	}
	return printValue(stdout, stderr, out.Result)
}

// connectFailure prints that the tracker at addr could not be reached,
// with a hint when nothing listens there, and returns the exit status, 1.
func connectFailure(w io.Writer, addr string, err error) int {
	fmt.Fprintf(w, "riot-worker eval: connecting to the tracker at %s: %v", addr, err)
	if errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprint(w, "; is riotd running there? (start it with riotd, or leave out --tracker and $RIOT_TRACKER to use the embedded default)")
	}
	fmt.Fprintln(w)
	return 1
}

// tlsConfig returns the TLS configuration --tls-ca asks for, or nil.
func (f *evalFlags) tlsConfig() (*tls.Config, error) {
	if f.tlsCA == "" {
		return nil, nil
	}
	conf, err := client.TLSConfigWithCA(f.tlsCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	return conf, nil
}

// printValue prints a result as master.FormatValue formats it.
func printValue(stdout, stderr io.Writer, result []byte) int {
	text, _, err := master.FormatValue(result)
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, text)
	return 0
}

// printConsole writes a workunit's console lines, each prefixed with the
// worker's name.
func printConsole(w io.Writer, worker string, lines []engine.ConsoleLine) {
	for _, l := range lines {
		fmt.Fprintf(w, "[%s] %s\n", worker, l.Text)
	}
}

// printWireConsole writes console lines that came through a tracker, as
// printConsole does.
func printWireConsole(w io.Writer, worker string, console workunit.Console) {
	lines, err := console.Lines()
	if err != nil {
		fmt.Fprintf(w, "[%s] (console output that does not decode: %v)\n", worker, err)
	}
	for _, l := range lines {
		fmt.Fprintf(w, "[%s] %s\n", worker, l.Text)
	}
}

// printFailure writes a failed workunit's error, "Name: message" and its
// stack, and returns the exit status.
func printFailure(w io.Writer, err error) int {
	var werr *workunit.Error
	if !errors.As(err, &werr) {
		fmt.Fprintf(w, "riot-worker eval: %v\n", err)
		return 1
	}
	if werr.Worker != "" {
		// Through a tracker: name the worker that raised it.
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
	return 1
}
