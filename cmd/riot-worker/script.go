package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/job"
)

// runScript runs a job script (riot-worker eval SCRIPT.js) and returns the
// exit status.
func runScript(ctx context.Context, f *evalFlags, stdout, stderr io.Writer) int {
	progress := job.ProgressAuto
	switch {
	case f.progress:
		progress = job.ProgressOn
	case f.quiet:
		progress = job.ProgressOff
	}
	err := job.Run(ctx, job.Options{
		Script:   f.script,
		Args:     f.scriptArgs,
		Tracker:  f.tracker,
		Token:    f.token,
		Workers:  f.workers,
		Data:     f.data,
		Engine:   engine.Options{Timeout: f.timeout, MemoryLimit: f.memory},
		Progress: progress,
		Stdout:   stdout,
		Stderr:   stderr,
	})
	var se *engine.ScriptError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &se):
		stack := se.Stack
		if stack == "" {
			stack = se.Error()
		}
		fmt.Fprintln(stderr, stack)
	default:
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
	}
	return 1
}
