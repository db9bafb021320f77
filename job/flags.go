package job

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/internal/cliflag"
)

// Help is riot-worker eval's help, before the list of its flags
// (AddFlags).
const Help = `Usage: riot-worker eval [flags] SCRIPT.js [ARGS...]
       riot-worker eval [flags] -e SOURCE

With SCRIPT.js, runs the job script as a master (docs/reference.md): its
riot.forWork, riot.doWork, riot.doWorkCall and riot.doWorkEval hand out
workunits, to the tracker named by --tracker (or RIOT_TRACKER), or, with
neither, to the embedded default: a tracker in this process with a local
worker of --workers slots. ARGS are the script's riot.args: eval's own
flags go before SCRIPT.js, and everything after it, flags too, goes to the
script. --timeout is the time limit of each workunit the script submits
without one of its own (riot.with({timeout})). While work is outstanding a
progress bar shows on stderr (when it is a terminal), and each workunit's
console output shows as it prints it (in batches of a tenth of a second
while it runs): console.log, info and debug on stdout, console.warn and
error on stderr, each line prefixed with its worker's name and the
workunit's short key, [alfred 3f2a6b1c9d0e]. --trace FILE writes the
job's workunits to FILE when the script ends (also when it fails or is
interrupted), as Chrome trace-event JSON: open it in
https://ui.perfetto.dev or chrome://tracing. An uncaught error ends the
script: its message, naming the workunit and the worker when it came from
one, and its stacks go to stderr, and the status is 1.

With -e, evaluates SOURCE as an eval workunit (Riot's do-work/eval) and prints its
value on stdout. With --tracker (or RIOT_TRACKER), the workunit is submitted
to that tracker and runs on one of its workers; without, it runs in this
process. The value is printed:

  - as JSON, when the value is JSON without loss: null, booleans, finite
    numbers, strings, arrays and plain objects, without cycles;
  - otherwise in the readable form console.log uses (undefined, NaN, -0,
    10n, Map(1) { 'a' => 1 }, 2026-11-30T06:56:44.000Z, ...).

The workunit's console output shows as it prints it, log, info and debug
on stdout and warn and error on stderr, each line prefixed with the
worker's name and the workunit's short key ("local" in process). When SOURCE throws, riot-worker prints
"Name: message" and the stack on stderr (through a tracker, preceded by the
name of the worker that raised it) and exits with status 1. A runaway
workunit (time limit, stack depth, memory) fails the same way.

A tracker remembers finished workunits: evaluating the same SOURCE again
through it answers from memory, without its console output, and says so
on stderr ("(from memory: ...)").

Exit status: 0 success, 1 the workunit (or the script) failed, 2 bad usage,
130 stopped by SIGINT or SIGTERM (workunits stay with a tracker named by
--tracker, and run on, unless a job script's --cancel-on-interrupt).
`

// Flags are riot-worker eval's flags, registered on a FlagSet by
// AddFlags. Once the FlagSet has parsed a command line, Options returns
// what it asks for.
type Flags struct {
	fs          *pflag.FlagSet
	getenv      func(string) string
	source      string
	timeout     time.Duration
	memory      *cliflag.MemoryLimit
	tracker     string
	token       string
	workerToken string
	tlsCA       string
	workers     cliflag.AutoInt
	data        string
	progress    bool
	quiet       bool
	cancelInt   bool
	noGPU       bool
	job         string
	trace       string
}

// AddFlags defines riot-worker eval's flags on fs and returns them, for
// Options after fs has parsed the command line. The command's parser must
// stop at the script's name (fs.SetInterspersed(false)): what follows it
// is the script's.
func AddFlags(fs *pflag.FlagSet) *Flags { return addFlags(fs, os.Getenv) }

func addFlags(fs *pflag.FlagSet, getenv func(string) string) *Flags {
	f := &Flags{fs: fs, getenv: getenv}
	fs.StringVarP(&f.source, "e", "e", "", "evaluate this JavaScript `source`")
	fs.Var(cliflag.Duration(&f.timeout), "timeout", "time limit of each workunit that sets none, a `duration` such as 30s or 5m; -e: of the workunit (default: none)")
	f.memory = cliflag.AddMemoryLimit(fs, "workunits run in this process are")
	fs.StringVar(&f.tracker, "tracker", getenv("RIOT_TRACKER"), "run the work on this tracker's workers, `HOST[:PORT]` (default: $RIOT_TRACKER, else in process: the embedded default for job scripts)")
	// The token's default is read by Options, so that --help never prints it.
	fs.StringVar(&f.token, "token", "", "the tracker's credentials, a `token` (default: $RIOT_TOKEN)")
	fs.StringVar(&f.workerToken, "worker-token", "",
		"job scripts with --tracker: the worker's `token` with which the script takes work itself (waitForWork) where the tracker checks tokens (default: $RIOT_WORKER_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", getenv("RIOT_TLS_CA"), "reach the tracker over TLS, trusting the authority in this PEM `FILE` (default: $RIOT_TLS_CA; a wss:// address uses the system's authorities)")
	fs.Var(&f.workers, "workers", "job scripts on the embedded default: the local worker's `slots`, 0 for none (default: one per CPU)")
	fs.StringVar(&f.data, "data", "", "job scripts on the embedded default: keep the tracker's store in this `DIR` (default: memory only)")
	fs.BoolVar(&f.cancelInt, "cancel-on-interrupt", false, "job scripts with --tracker: on SIGINT or SIGTERM, cancel the script's unfinished workunits instead of leaving them to run on")
	fs.BoolVar(&f.progress, "progress", false, "job scripts: show the progress bar even when stderr is not a terminal")
	fs.BoolVar(&f.quiet, "quiet", false, "job scripts: never show the progress bar")
	fs.BoolVar(&f.noGPU, "no-gpu", false, "job scripts on the embedded default: give the local worker no GPUs")
	fs.StringVar(&f.trace, "trace", "", "job scripts: write the job's workunits to this `FILE` when the script ends, as Chrome trace-event JSON: "+
		"their queue waits and their runs, a track per worker lane (open it in https://ui.perfetto.dev or chrome://tracing)")
	fs.StringVar(&f.job, "job", "", "the job's `name` on the tracker's status pages and dashboard (default: the script's file name, or -e)")
	return f
}

// ConfigureOptions defines riot-worker eval's flags on fs (AddFlags),
// parses args with it up to the script's name (one-dash long flags such
// as -timeout read as --timeout), and returns what they ask for
// (Flags.Options). It returns pflag.ErrHelp for -h and --help before the
// script, after fs's Usage.
func ConfigureOptions(fs *pflag.FlagSet, args []string) (CommandOptions, error) {
	f := AddFlags(fs)
	fs.SetInterspersed(false)
	if err := fs.Parse(cliflag.NormalizeArgs(fs, args, false)); err != nil {
		return CommandOptions{}, fmt.Errorf("job: %w", err)
	}
	return f.Options(fs.Args())
}

// Options checks the parsed flags and the command line's positional
// arguments, args: SCRIPT.js and its own arguments, or none with -e. It
// reads --tls-ca's file, and gives a warning for each of eval's flags that
// follows the script (it goes to the script, as riot.args).
func (f *Flags) Options(args []string) (CommandOptions, error) {
	o := CommandOptions{Source: f.source, GPU: !f.noGPU, Trace: f.trace}
	j := &o.Job
	j.Tracker, j.Token, j.Data, j.Timeout, j.CancelOnInterrupt = f.tracker, f.token, f.data, f.timeout, f.cancelInt
	j.Name = f.job
	if j.Token == "" {
		j.Token = f.getenv("RIOT_TOKEN")
	}
	if j.WorkerToken = f.workerToken; j.WorkerToken == "" {
		j.WorkerToken = f.getenv("RIOT_WORKER_TOKEN")
	}
	if j.Workers = f.workers.Or(-1); f.workers.Given() && j.Workers < 0 {
		return CommandOptions{}, fmt.Errorf("--workers %d: want 0 or more", j.Workers)
	}
	memory, err := f.memory.Bytes()
	if err != nil {
		return CommandOptions{}, err
	}
	if j.Tracker != "" && f.memory.Given() {
		return CommandOptions{}, errors.New("--memory-limit applies in process only: give it to the workers (riot-worker --memory-limit)")
	}
	if err := f.embeddedOnly(j.Tracker); err != nil {
		return CommandOptions{}, err
	}
	if j.Tracker != "" {
		if _, err := client.TrackerURLs(j.Tracker); err != nil {
			return CommandOptions{}, fmt.Errorf("--tracker: %s: give HOST, HOST:PORT, ws://HOST[:PORT] or wss://HOST[:PORT], or several separated by commas (the replicas of a tracker)", strings.TrimPrefix(err.Error(), "client: "))
		}
	}
	j.Engine = engine.Options{Timeout: f.timeout, MemoryLimit: memory}
	switch {
	case f.source != "" && len(args) > 0:
		return CommandOptions{}, fmt.Errorf("give -e SOURCE or a SCRIPT.js, not both (unexpected arguments: %q)", args)
	case f.source == "" && len(args) == 0:
		return CommandOptions{}, errors.New("a SCRIPT.js or -e SOURCE is required")
	case len(args) > 0:
		j.Script, j.Args = args[0], args[1:]
		if found := f.flagsAfterScript(j.Args); len(found) > 0 {
			verb := "comes after the script, so it goes to the script"
			if len(found) > 1 {
				verb = "come after the script, so they go to the script"
			}
			o.Warnings = append(o.Warnings, fmt.Sprintf("%s %s (riot.args), not to eval: "+
				"eval's flags go before the script, as in riot-worker eval [flags] %s [ARGS...]", strings.Join(found, ", "), verb, j.Script))
		}
		switch {
		case f.progress && f.quiet:
			return CommandOptions{}, errors.New("--progress and --quiet contradict each other")
		case f.progress:
			j.Progress = ProgressOn
		case f.quiet:
			j.Progress = ProgressOff
		}
		if f.fs.Changed("trace") && f.trace == "" {
			return CommandOptions{}, errors.New("--trace needs a FILE to write the timeline to: give --trace job.trace.json")
		}
		if f.cancelInt && j.Tracker == "" {
			return CommandOptions{}, errors.New("--cancel-on-interrupt needs --tracker: on the embedded default, the job's work ends with it anyway")
		}
	case f.cancelInt:
		return CommandOptions{}, errors.New("--cancel-on-interrupt is for job scripts (SCRIPT.js), not -e")
	default:
		// -e runs one workunit, in process or on --tracker's workers:
		// nothing of the embedded default's, and no progress bar.
		for _, name := range []string{"workers", "data", "no-gpu", "progress", "quiet", "trace"} {
			if f.fs.Changed(name) {
				return CommandOptions{}, fmt.Errorf("--%s is for job scripts (SCRIPT.js), not -e: leave it out", name)
			}
		}
	}
	// -e in process reaches no tracker: it needs no authority.
	if f.tlsCA != "" && (j.Script != "" || j.Tracker != "") {
		if j.TLSConfig, err = client.TLSConfigWithCA(f.tlsCA); err != nil {
			return CommandOptions{}, fmt.Errorf("--tls-ca: %w", err)
		}
	}
	return o, nil
}

// embeddedOnly refuses the flags that configure the embedded default
// (--workers, --data, --no-gpu) when the work goes to a tracker, which
// would ignore them: tracker is --tracker's value, or $RIOT_TRACKER's.
func (f *Flags) embeddedOnly(tracker string) error {
	if tracker == "" {
		return nil
	}
	var given []string
	for _, name := range []string{"workers", "data", "no-gpu"} {
		if f.fs.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) == 0 {
		return nil
	}
	from := "--tracker " + tracker
	if !f.fs.Changed("tracker") {
		from = "$RIOT_TRACKER (" + tracker + ")"
	}
	what, verb := given[0], "configures"
	if len(given) > 1 {
		what, verb = strings.Join(given, " and "), "configure"
	}
	return fmt.Errorf("%s %s the embedded default, and %s sends the work to a tracker's workers instead: "+
		"leave out %s, or leave out the tracker to run on the embedded default", what, verb, from, what)
}

// flagsAfterScript returns the arguments after a job script's path (its
// riot.args) that look like eval's own flags: up to a "--", an argument
// "-NAME", "--NAME" or "--NAME=VALUE" where eval defines NAME.
func (f *Flags) flagsAfterScript(args []string) []string {
	var found []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name != "" && name != "help" && f.fs.Lookup(name) != nil {
			found = append(found, a)
		}
	}
	return found
}
