//go:build !unix

package replica

import (
	"testing"
	"time"
)

// processCPU returns 0: the CPU time of the process is read on Unix only.
func processCPU(*testing.B) time.Duration { return 0 }
