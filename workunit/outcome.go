package workunit

import (
	"errors"
	"fmt"
	"time"

	"github.com/riot-go/riot/value"
)

// ErrNotFinished is the error of Outcome.Value for a workunit that is not
// done or in error.
var ErrNotFinished = errors.New("workunit: not finished")

// Outcome is a workunit's state as the tracker reports it: Riot's status,
// client (the worker), result and last change, with the error, console
// output and run time beside them. The tracker's table makes it, the
// protocol carries it (Accepted, Finished, InfoReply), and masters receive
// it: one type all the way.
type Outcome struct {
	// Key is the workunit's key.
	Key Key
	// Status is waiting, running, done or error; unknown when the tracker
	// does not know the key (every other field is then zero).
	Status Status
	// Worker names the worker that holds (running) or finished (done,
	// error) the workunit; "" when none, and for an error no worker gave
	// (WorkersLost, Canceled).
	Worker string
	// Result is the value-encoded result of a done workunit (see
	// docs/values.md and Value); nil otherwise.
	Result []byte
	// Err is the error of a workunit in status error; nil otherwise.
	// Masters receive it with Worker and Key filled in, so that its
	// message names the worker.
	Err *Error
	// Console is the console output of the run that finished it, when the
	// tracker still had it (it keeps it only until it has told the
	// watchers).
	Console Console
	// LastChange is when its status last changed, to the millisecond;
	// zero when unknown.
	LastChange time.Time
	// Elapsed is how long the finishing run took on its worker, to the
	// microsecond; zero when unknown.
	Elapsed time.Duration
}

// Finished reports whether the workunit is done or in error.
func (o *Outcome) Finished() bool { return o.Status.Finished() }

// Value returns the result of a done workunit as a Go value (see
// value.Unmarshal), the *Error of a failed one, or an error wrapping
// ErrNotFinished.
func (o *Outcome) Value() (any, error) {
	switch o.Status {
	case StatusDone:
		v, err := value.Unmarshal(o.Result)
		if err != nil {
			return nil, fmt.Errorf("workunit: result of %s: %w", o.Key.Short(), err)
		}
		return v, nil
	case StatusError:
		if o.Err == nil {
			return nil, &Error{Kind: Internal, Name: "Error", Message: "the tracker gave no error", Key: o.Key, Worker: o.Worker}
		}
		return nil, o.Err
	}
	return nil, fmt.Errorf("%w: %s is %s", ErrNotFinished, o.Key.Short(), o.Status)
}
