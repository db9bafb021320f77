//go:build !unix

package cputime

import (
	"errors"
	"time"
)

// Process reports that this system's CPU time is not read here.
func Process() (time.Duration, error) {
	return 0, errors.New("cputime: the process's CPU time is read on unix systems only")
}
