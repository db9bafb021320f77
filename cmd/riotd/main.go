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
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/internal/debugserver"
	"github.com/riot-go/riot/internal/devprof"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProf, err := devprof.FromEnv("riotd")
	if err != nil {
		fmt.Fprintln(os.Stderr, "riotd:", err)
		os.Exit(1)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err := stopProf(); err != nil {
		fmt.Fprintln(os.Stderr, "riotd:", err)
	}
	os.Exit(code)
}

// ExitStoreDamaged is riotd's exit status when its store (--data) is
// damaged, or older than what it committed: 65, EX_DATAERR of sysexits.h.
// A restart fails the same way; an operator restores the file from a
// backup or moves it aside (see docs/operations.md).
const ExitStoreDamaged = 65

// storeAdvice follows the error of a damaged store.
const storeAdvice = `the store is damaged: riotd will not serve it. Restore %[2]s from a backup
(and remove %[3]s, which notes the last transaction of the file it replaces),
or move both aside to start with an empty store (every workunit is lost);
then start riotd again. See "A damaged store" in docs/operations.md.`

// run runs riotd and returns the exit status: 0 after a clean shutdown
// (or --help, --version), 1 when it failed, 2 for bad usage,
// ExitStoreDamaged when its store is damaged.
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
	rflags := addReplicaFlags(root.Flags())
	var debugListen string
	root.Flags().StringVar(&debugListen, "debug-listen", "", "serve Go's profiler (/debug/pprof/) on this `HOST:PORT`, such as 127.0.0.1:6060; a port alone is on loopback (default: off)")
	cli.SetHelp(root, flags.Help())
	root.RunE = func(c *cobra.Command, args []string) error {
		opts, err := flags.Options(args)
		if err != nil {
			return cli.Usage(err)
		}
		if rflags.enabled() {
			return runReplica(c.Context(), rflags, opts, c.Flags().Changed("data"), debugListen)
		}
		if err := rflags.notWithout(c.Flags()); err != nil {
			return cli.Usage(err)
		}
		srv, err := tracker.New(opts)
		if errors.Is(err, store.ErrCorrupt) {
			dir := opts.DataDir
			return &cli.ExitError{Code: ExitStoreDamaged, Err: fmt.Errorf("%[1]w\n"+storeAdvice, err,
				filepath.Join(dir, store.FileName), filepath.Join(dir, store.TxidFileName))}
		}
		if err != nil {
			return cli.Fail(err)
		}
		if debugListen != "" {
			ds, err := debugserver.Start(debugListen, srv.Logger())
			if err != nil {
				return cli.Usage(err)
			}
			defer ds.Close(context.WithoutCancel(c.Context()))
		}
		if err := srv.Run(c.Context()); err != nil {
			return cli.Fail(err)
		}
		return nil
	}
	return root
}
