// Command riot-worker is riot's worker and master command.
//
//	riot-worker [flags] HOST[:PORT]               run a worker for the tracker at HOST
//	riot-worker eval [flags] SCRIPT.js [ARGS...]  run a job script (.js, .mjs, .ts) as a master
//	riot-worker eval [flags] -e SOURCE            evaluate JavaScript and print its value
//	riot-worker status [HOST[:PORT]]              the tracker at a glance
//	riot-worker jobs | workunits | cancel | logs  list and cancel a tracker's work
//	riot-worker types                             print riot.d.ts, the typings of job scripts
//	riot-worker version                           print the version and the build
//	riot-worker completion bash|zsh|fish          print a shell completion script
//
// The flags are package worker's (worker.AddFlags) and package job's
// (job.AddFlags); this main wires them to commands. See docs/workers.md and
// `riot-worker --help`, `riot-worker eval --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/internal/devprof"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/worker"
)

const usage = `riot-worker: a riot worker and master

Usage:
  riot-worker [flags] HOST[:PORT]               run a worker for the tracker at HOST
  riot-worker eval [flags] SCRIPT.js [ARGS...]  run a job script as a master,
                                                on the tracker named by --tracker
                                                or on the embedded default
  riot-worker eval [flags] -e SOURCE            evaluate SOURCE and print its value
  riot-worker status [HOST[:PORT]]              the tracker at a glance: workers,
                                                workunits, jobs in progress
  riot-worker jobs                              the tracker's jobs
  riot-worker workunits [--job J] [--status S]  its workunits, newest first
  riot-worker cancel JOB|KEY...                 cancel a job's work, or workunits
  riot-worker logs KEY                          a workunit's console, result or error
  riot-worker types                             print riot.d.ts, the TypeScript typings
                                                of job scripts and workunits
  riot-worker version                           print the version and the build
  riot-worker completion bash|zsh|fish          print a shell completion script
  riot-worker help [COMMAND]                    show this help, or a command's

Run 'riot-worker eval --help' for eval's flags; those below are the worker's.

`

// hostRule is the help's word on what in HOST's place is a command.
const hostRule = `
A word in HOST's place is a command if it looks like one: a plain word
(no dot, colon, slash or bracket, and not localhost) that does not resolve
as a host name, and that is one of the words kept for commands
(` + reservedWords + `) or within two letters of a
command (evl, hlep, verison), is an unknown command (exit status 2). Any
other word is the tracker's host, and one that does not resolve yet is
waited for, as a tracker that is down. Give a tracker named like a command
with its domain or its port (status.lan, status:2355).
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
	stopProf, err := devprof.FromEnv("riot-worker")
	if err != nil {
		fmt.Fprintln(os.Stderr, "riot-worker:", err)
		os.Exit(1)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err := stopProf(); err != nil {
		fmt.Fprintln(os.Stderr, "riot-worker:", err)
	}
	os.Exit(code)
}

// run runs the command line args and returns the exit status: 0 success,
// 1 the work failed, 2 bad usage, 130 eval interrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Execute(ctx, newCommand(net.DefaultResolver.LookupHost), args, stdout, stderr)
}

// newCommand builds riot-worker's command tree: the worker at its root,
// eval and version below it (cobra adds help and completion). lookupHost
// resolves host names, for the rule on words in HOST's place.
func newCommand(lookupHost func(ctx context.Context, host string) ([]string, error)) *cobra.Command {
	root := &cobra.Command{
		Use:               "riot-worker [flags] HOST[:PORT]",
		Short:             "a riot worker and master",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cli.SetHelp(root, usage+worker.Help+hostRule)
	wf := worker.AddFlags(root.Flags())
	root.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 && c.Flags().NFlag() == 0 {
			c.SetOut(c.ErrOrStderr())
			_ = c.Help()
			return cli.Exit(cli.ExitUsage)
		}
		if len(args) == 1 && looksLikeCommand(c.Context(), args[0], commandNames(c), lookupHost) {
			return &cli.UsageError{
				Err: fmt.Errorf("unknown command %q (nor a tracker host that resolves); the commands are %s",
					args[0], joinWords(commandNames(c))),
				Hint: "run 'riot-worker help' for the commands",
			}
		}
		opts, err := wf.Options(args, c.ErrOrStderr())
		if err != nil {
			return cli.Usage(err)
		}
		if wf.NoGPU() {
			opts.Logger.Info("riot-worker: GPUs disabled (--no-gpu)")
		} else {
			// Opened even when it has no devices, so that workunits asking
			// for one are told why there is none.
			drv := worker.OpenGPU(opts.Logger)
			defer drv.Close()
			opts.GPU = drv
		}
		if err := worker.Run(c.Context(), opts); err != nil {
			return cli.Fail(err)
		}
		return nil
	}
	root.AddCommand(evalCommand(), statusCommand(), jobsCommand(), workunitsCommand(), cancelCommand(), logsCommand(),
		typesCommand(), cli.VersionCommand("riot-worker"))
	return root
}

// evalCommand is riot-worker eval: a job script, or -e SOURCE.
func evalCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "eval [flags] SCRIPT.js [ARGS...] | -e SOURCE",
		Short: "run a job script as a master, or evaluate JavaScript (-e)",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []cobra.Completion{"js", "mjs", "cjs", "ts", "mts", "cts"}, cobra.ShellCompDirectiveFilterFileExt
			}
			return nil, cobra.ShellCompDirectiveDefault // the script's own arguments
		},
	}
	cli.SetHelp(c, job.Help)
	flags := job.AddFlags(c.Flags())
	cli.FlagsBeforeArgs(c) // what follows SCRIPT.js is the script's
	c.RunE = func(c *cobra.Command, args []string) error {
		o, err := flags.Options(args)
		if err != nil {
			return cli.Usage(err)
		}
		err = job.RunCommand(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		var ie *job.InterruptedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ie):
			return cli.Exit(130)
		}
		return cli.Exit(cli.ExitFailure)
	}
	return c
}
