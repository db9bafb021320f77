// Package cputime reads the CPU time the process has used, for
// benchmarks that report CPU per operation (cpu-ns/op) rather than wall
// time: what an operation costs, whatever else shares the cores.
package cputime

import (
	"testing"
	"time"
)

// Of returns the CPU time (user and system) the process has used so far,
// failing b when it cannot be read.
func Of(b testing.TB) time.Duration {
	d, err := Process()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
