// Command riot-worker evaluates riot workunits.
//
//	riot-worker eval -e SOURCE        evaluate JavaScript and print its value
//
// See docs/getting-started.md and `riot-worker eval --help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `riot-worker: a riot worker and master

Usage:
  riot-worker eval [flags] -e SOURCE   evaluate SOURCE and print its value
  riot-worker help                     show this help

Run 'riot-worker eval --help' for the flags of eval.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches on the subcommand and returns the exit status: 0 success,
// 1 the work failed, 2 bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "eval":
		return runEval(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "riot-worker: unknown command %q\n\n%s", args[0], usage)
	return 2
}
