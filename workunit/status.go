package workunit

import "fmt"

// Status is where a workunit stands: Riot's waiting, running, done and
// error, and unknown for a key the tracker has never seen (or has
// forgotten). The numbers travel on the wire and in the tracker's store;
// never reuse one.
type Status uint8

// The statuses.
const (
	// StatusUnknown: the tracker does not know the key. It is never a
	// stored status; in the tracker's table it marks a forgotten record.
	StatusUnknown Status = 0
	// StatusWaiting: queued for a worker.
	StatusWaiting Status = 1
	// StatusRunning: leased to a worker.
	StatusRunning Status = 2
	// StatusDone: finished with a result.
	StatusDone Status = 3
	// StatusError: finished with an *Error; submitting it again runs it
	// again.
	StatusError Status = 4

	maxStatus = StatusError
)

// String returns "unknown", "waiting", "running", "done" or "error".
func (s Status) String() string {
	switch s {
	case StatusUnknown:
		return "unknown"
	case StatusWaiting:
		return "waiting"
	case StatusRunning:
		return "running"
	case StatusDone:
		return "done"
	case StatusError:
		return "error"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Finished reports whether s is StatusDone or StatusError.
func (s Status) Finished() bool { return s == StatusDone || s == StatusError }

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool { return s <= maxStatus }
