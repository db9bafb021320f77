package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/riot-go/riot/internal/cli"
	"github.com/riot-go/riot/types"
)

// typesCommand is riot-worker types: it prints riot.d.ts, the TypeScript
// declarations of the globals of job scripts and workunits.
func typesCommand() *cobra.Command {
	c := &cobra.Command{
		Use:               "types",
		Short:             "print riot.d.ts, the TypeScript declarations of riot's globals",
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	cli.SetHelp(c, `riot-worker types: print riot.d.ts

Usage:
  riot-worker types > riot.d.ts

Prints the TypeScript declarations of the globals that job scripts and
workunits see: riot (doWork, forWork, run, map, with, waitUntilDone, ...),
riot.worker, console, sleep, the timers, performance, structuredClone,
TextEncoder, TextDecoder, URL, atob, btoa, crypto and the GPU functions.
List the file in a tsconfig.json or jsconfig.json beside the job's scripts
so that an editor completes and checks them, and tsc --noEmit type-checks
them (docs/getting-started.md, "TypeScript").
`)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if _, err := io.WriteString(c.OutOrStdout(), types.RiotDTS()); err != nil {
			return cli.Fail(err)
		}
		return nil
	}
	return c
}
