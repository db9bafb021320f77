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
		Stdout:    stdout,
		Stderr:    stderr,
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
