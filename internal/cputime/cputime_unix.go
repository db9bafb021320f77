//go:build unix

package cputime

import (
	"fmt"
	"syscall"
	"time"
)

// Process returns the CPU time (user and system) the process has used so
// far.
func Process() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("cputime: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
