// Command riot-worker is riot's worker and master command.
//
//	riot-worker [flags] HOST[:PORT]               run a worker for the tracker at HOST
//	riot-worker eval [flags] SCRIPT.js [ARGS...]  run a job script as a master
//	riot-worker eval [flags] -e SOURCE            evaluate JavaScript and print its value
//
// See docs/workers.md and `riot-worker --help`, `riot-worker eval --help`.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const usage = `riot-worker: a riot worker and master

Usage:
  riot-worker [flags] HOST[:PORT]               run a worker for the tracker at HOST
  riot-worker eval [flags] SCRIPT.js [ARGS...]  run a job script as a master,
                                                on the tracker named by --tracker
                                                or on the embedded default
  riot-worker eval [flags] -e SOURCE            evaluate SOURCE and print its value
  riot-worker help                              show this help

Run 'riot-worker --help' for the flags of the worker and 'riot-worker eval
--help' for those of eval.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops gracefully; a second one exits at once.
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		<-again
		fmt.Fprintln(os.Stderr, "riot-worker: interrupted again; exiting now")
		os.Exit(130)
	}()
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
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	// No subcommand: worker mode (its flags, then the tracker's HOST).
	if mistypedCommand(ctx, args[0]) {
		fmt.Fprintf(stderr, "riot-worker: unknown command %q (nor a tracker host that resolves)\nrun 'riot-worker help' for the commands\n", args[0])
		return 2
	}
	return runWorker(ctx, args, stderr)
}

// mistypedCommand reports whether word, in the command's place, is more
// likely a mistyped command than the tracker's host: a plain word (no dot,
// colon or slash) within two edits of a command ("evl", "hlep") that does
// not resolve as a host name. Any other word is a host, even one that
// does not resolve yet: a worker started before the network's names are
// up (a service at boot) waits for them, as for a tracker that is down.
func mistypedCommand(ctx context.Context, word string) bool {
	if word == "" || strings.HasPrefix(word, "-") || strings.ContainsAny(word, ".:/[") || word == "localhost" {
		return false
	}
	if editDistance(word, "eval") > 2 && editDistance(word, "help") > 2 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupHost(ctx, word)
	return err != nil
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
