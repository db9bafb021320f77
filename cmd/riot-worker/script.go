package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/master"
	"github.com/riot-go/riot/gpu"
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
	var drv *gpu.Driver
	if f.tracker == "" && f.workers != 0 && !f.noGPU {
		// The embedded default's worker gets this machine's GPUs, as a
		// riot-worker would; without a driver it has none, quietly.
		drv = worker.OpenGPU(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		defer drv.Close()
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
		GPU:       drv,
		Timeout:   f.timeout,
		Progress:  progress,

		CancelOnInterrupt: f.cancelInt,
		Stdout:            stdout,
		Stderr:            stderr,
	})
	var se *master.ScriptError
	var ie *job.InterruptedError
	var ce *job.ConnectError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce) && f.tracker != "":
		return connectFailure(stderr, f.tracker, ce.Err)
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
		what = fmt.Sprintf("interrupted with %d of %s unfinished", e.Unfinished, job.Workunits(e.Submitted))
	}
	switch {
	case e.Unfinished == 0:
		return what
	case f.tracker != "" && f.cancelInt:
		return what + "; " + canceledText(e, f.tracker)
	case f.tracker != "":
		return what + "; they stay with the tracker at " + f.tracker + " and run on: run the job again to collect their results (with --cancel-on-interrupt, an interrupt cancels them instead)"
	case f.data != "":
		return what + "; what finished is kept in " + f.data + ": run the job again with --data " + f.data + " to pick up where it left off"
	}
	return what + "; the embedded tracker kept nothing (with --data DIR, a rerun picks up where the last one left off)"
}

// canceledText says what --cancel-on-interrupt did with the unfinished
// workunits: those it canceled, those that are another run's (an earlier
// run left them waiting and this one joined them: a run cancels only its
// own), those it could not look at, and those that finished meanwhile.
func canceledText(e *job.InterruptedError, tracker string) string {
	if e.Canceled >= e.Unfinished && e.CancelErr == nil {
		return "canceled them at the tracker at " + tracker
	}
	var parts []string
	switch e.Canceled {
	case 0:
		parts = append(parts, "canceled none of them at the tracker at "+tracker)
	default:
		parts = append(parts, fmt.Sprintf("canceled %d of them at the tracker at %s", e.Canceled, tracker))
	}
	if n := e.OtherRuns; n == 1 {
		parts = append(parts, "1 is another run's (an earlier, interrupted run of the job, whose work this one joined): "+
			"a run cancels only its own workunits, so it stays with the tracker and runs on")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d are another run's (an earlier, interrupted run of the job, whose work this one joined): "+
			"a run cancels only its own workunits, so they stay with the tracker and run on", n))
	}
	switch {
	case e.CancelErr != nil:
		parts = append(parts, fmt.Sprintf("could not cancel the rest: %v", e.CancelErr))
	case e.Unchecked > 0:
		parts = append(parts, fmt.Sprintf("%d more could not be canceled by this run (another run's, or finished meanwhile)", e.Unchecked))
	}
	if n := e.Unfinished - e.Canceled - e.OtherRuns - e.Unchecked; e.CancelErr == nil && n > 0 {
		parts = append(parts, fmt.Sprintf("%d finished meanwhile", n))
	}
	return strings.Join(parts, "; ")
}
