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
	// Retries is how many times more the tracker runs it after a failed
	// attempt, at most MaxRetries: a workunit with Retries 2 runs up to 3
	// times. Only errors of its own count (Retryable): a lost worker is
	// counted apart (riotd --max-lost).
	Retries int
	// RetryOn, when not empty, lists the error names that are retried
	// ("TypeError", a user class's name, "TimeoutError"): another error
	// fails the workunit at once. Empty: every error its code throws, and
	// its time limit (TimeoutError), is retried.
	RetryOn []string
}

// MaxRetries bounds Options.Retries.
const MaxRetries = 100

// MaxRetryOn bounds the names in Options.RetryOn, and MaxRetryName the
// bytes of one.
const (
	MaxRetryOn   = 64
	MaxRetryName = 256
)

// Retryable reports whether a failed attempt with err is run again under
// these options, attempts failed so far (err's included): while attempts
// are at most Retries, an error its code threw (Thrown) or its time limit
// (TimeLimit, named TimeoutError) is, when RetryOn is empty or names it.
// Other kinds never are: the limits on stack, memory and result, an
// unsendable result and a malformed workunit fail again the same way, and
// a cancel or riot's own error is no attempt's.
func (o Options) Retryable(err *Error, attempts int) bool {
	if err == nil || attempts > o.Retries {
		return false
	}
	if err.Kind != Thrown && err.Kind != TimeLimit {
		return false
	}
	if len(o.RetryOn) == 0 {
		return true
	}
	for _, n := range o.RetryOn {
		if n == err.Name {
			return true
		}
	}
	return false
}

// MaxTimeout is the longest time limit a workunit may have: 2^32-1 ms,
// about 49 days (the protocol's bound).
const MaxTimeout = math.MaxUint32 * time.Millisecond
