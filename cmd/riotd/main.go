// Command riotd is the riot tracker: it hands workunits from masters to
// workers and results back.
//
//	riotd [--port 2355] [--listen HOST[:PORT]] [--data DIR | --memory]
//	      [--token-file FILE] [--tls-cert FILE --tls-key FILE]
//
// Without --token-file it checks no credentials and listens on loopback
// only. See docs/riotd.md, docs/security.md, docs/operations.md and
// `riotd --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/riot-go/riot/tracker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run runs riotd and returns the exit status: 0 after a clean shutdown
// (or --help), 1 when it failed, 2 for bad usage.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	opts, err := tracker.ConfigureOptions(fs, args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "riotd: %v\nrun 'riotd --help' for the flags\n", err)
		return 2
	}
	srv, err := tracker.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "riotd: %v\n", err)
		return 1
	}
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "riotd: %v\n", err)
		return 1
	}
	return 0
}
