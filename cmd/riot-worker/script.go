package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/job"
	"github.com/riot-go/riot/worker"
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
	tlsConf, err := f.tlsConfig()
	if err != nil {
		fmt.Fprintf(stderr, "riot-worker eval: %v\n", err)
		return 2
	}
	eo := engine.Options{Timeout: f.timeout, MemoryLimit: f.memory}
	if f.tracker == "" && f.workers != 0 && !f.noGPU {
		// The embedded default's worker gets this machine's GPUs, as a
		// riot-worker would; without a driver it has none, quietly.
		drv := worker.OpenGPU(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		defer drv.Close()
		eo.GPU = drv
	}
	err = job.Run(ctx, job.Options{
		Script:    f.script,
		Args:      f.scriptArgs,
		Tracker:   f.tracker,
		Token:     f.token,
		TLSConfig: tlsConf,
		Workers:   f.workers,
		Data:      f.data,
		Engine:    eo,
		Progress:  progress,

		CancelOnInterrupt: f.cancelInt,
		Stdout:            stdout,
		Stderr:            stderr,
	})
	var se *engine.ScriptError
	var ie *job.InterruptedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "riot-worker eval: %s\n", interruptedText(ie, f))
		return 130
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

// interruptedText says what became of a job's work when the user stopped
// it: on a tracker it runs on and a rerun collects it; on the embedded
// default only a --data store keeps what finished.
func interruptedText(e *job.InterruptedError, f *evalFlags) string {
	what := "interrupted"
	if e.Submitted > 0 {
		what = fmt.Sprintf("interrupted with %d of %d workunits unfinished", e.Unfinished, e.Submitted)
	}
	switch {
	case e.Unfinished == 0:
		return what
	case f.tracker != "" && f.cancelInt && e.CancelErr != nil:
		return fmt.Sprintf("%s; canceled %d of them at the tracker at %s, and could not cancel the rest: %v", what, e.Canceled, f.tracker, e.CancelErr)
	case f.tracker != "" && f.cancelInt && e.Canceled < e.Unfinished:
		return fmt.Sprintf("%s; canceled %d of them at the tracker at %s (the others finished meanwhile)", what, e.Canceled, f.tracker)
	case f.tracker != "" && f.cancelInt:
		return fmt.Sprintf("%s; canceled them at the tracker at %s", what, f.tracker)
	case f.tracker != "":
		return what + "; they stay with the tracker at " + f.tracker + " and run on: run the job again to collect their results (with --cancel-on-interrupt, an interrupt cancels them instead)"
	case f.data != "":
		return what + "; what finished is kept in " + f.data + ": run the job again with --data " + f.data + " to pick up where it left off"
	}
	return what + "; the embedded tracker kept nothing (with --data DIR, a rerun picks up where the last one left off)"
}
