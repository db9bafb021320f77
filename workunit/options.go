package workunit

import (
	"math"
	"time"
)

// Options are what a submission asks beside the workunit's content. They
// are not covered by its Key: the same work with other options is the
// same workunit.
type Options struct {
	// NoCache runs the workunit again even when its result is known
	// (opting out of memoization).
	NoCache bool
	// GPUs is how many GPU devices the worker that runs it must give it.
	GPUs int
	// Timeout is its time limit; zero means the worker's default. It
	// travels in whole milliseconds.
	Timeout time.Duration
}

// MaxTimeout is the longest time limit a workunit may have: 2^32-1 ms,
// about 49 days (the protocol's bound).
const MaxTimeout = math.MaxUint32 * time.Millisecond
