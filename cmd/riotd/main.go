// Command riotd is the riot tracker: it hands workunits from masters to
// workers and results back.
//
//	riotd [--port 2355] [--listen HOST[:PORT]] [--data DIR | --memory]
//	      [--token-file FILE] [--tls-cert FILE --tls-key FILE]
//	riotd --version
//	riotd completion bash|zsh|fish
//
// Without --token-file it checks no credentials and listens on loopback
// only. Its flags are package tracker's (tracker.AddFlags). See
// docs/riotd.md, docs/security.md, docs/operations.md and `riotd --help`.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/tracker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs riotd and returns the exit status: 0 after a clean shutdown
// (or --help, --version), 1 when it failed, 2 for bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Execute(ctx, newCommand(), args, stdout, stderr)
}

// newCommand builds riotd's command: the tracker, with tracker's flags
// (cobra adds completion).
func newCommand() *cobra.Command {
	root := &cobra.Command{
		Use:               "riotd [flags]",
		Short:             "the riot tracker",
		Args:              cobra.ArbitraryArgs, // refused by Options, with riotd's words
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	flags := tracker.AddFlags(root.Flags())
	cli.SetHelp(root, flags.Help())
	root.RunE = func(c *cobra.Command, args []string) error {
		opts, err := flags.Options(args)
		if err != nil {
			return cli.Usage(err)
		}
		srv, err := tracker.New(opts)
		if err != nil {
			return cli.Fail(err)
		}
		if err := srv.Run(c.Context()); err != nil {
			return cli.Fail(err)
		}
		return nil
	}
	return root
}
