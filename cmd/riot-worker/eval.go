package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/workunit"
)

const evalUsage = `Usage: riot-worker eval [flags] -e SOURCE

Evaluates SOURCE as an eval workunit (Riot's do-work/eval) and prints its
value on stdout:

  - as JSON, when the value is JSON without loss: null, booleans, finite
    numbers, strings, arrays and plain objects, without cycles;
  - otherwise in the readable form console.log uses (undefined, NaN, -0,
    10n, Map(1) { 'a' => 1 }, 2026-11-30T06:56:44.000Z, ...).

The workunit's console output goes to stderr, each line prefixed with the
worker's name. When SOURCE throws, riot-worker prints "Name: message" and the
stack on stderr and exits with status 1. A runaway workunit (time limit,
stack depth, memory) fails the same way.

Exit status: 0 success, 1 the workunit failed, 2 bad usage.

Flags:
`

type evalFlags struct {
	source  string
	timeout time.Duration
	memory  uint64
}

func parseEvalFlags(args []string, stderr io.Writer) (*evalFlags, error) {
	fs := flag.NewFlagSet("riot-worker eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &evalFlags{}
	fs.StringVar(&f.source, "e", "", "evaluate this JavaScript `source`")
	fs.DurationVar(&f.timeout, "timeout", 0, "time limit of the workunit, such as 30s or 5m (default: none)")
	fs.Uint64Var(&f.memory, "memory-limit", 0, "heap `bytes` past which the workunit is interrupted (default: none)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), evalUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if f.source == "" {
		fs.Usage()
		return nil, errors.New("-e SOURCE is required")
	}
	return f, nil
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseEvalFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
		return 2
	}
	eng, err := engine.New(engine.Options{Slots: 1, Timeout: f.timeout, MemoryLimit: f.memory})
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
	if err != nil {
		return printFailure(stderr, err)
	}
	text, _, err := engine.FormatValue(res.Value)
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

// printFailure writes a failed workunit's error, "Name: message" and its
// stack, and returns the exit status.
func printFailure(w io.Writer, err error) int {
	var werr *workunit.Error
	if !errors.As(err, &werr) {
		fmt.Fprintf(w, "riot-worker eval: %v\n", err)
		return 1
	}
	if werr.Stack != "" {
		fmt.Fprintln(w, werr.Stack)
	} else {
		fmt.Fprintln(w, werr.Error())
	}
	return 1
}
