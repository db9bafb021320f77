package table

import (
	"errors"
	"fmt"

	"github.com/riot-go/riot/workunit"
)

// Errors returned by Step and Restore, wrapped with details; test with
// errors.Is. An event that Step rejects with an error leaves the table as
// it was, except for the Discard that a stale completion adds.
var (
	// ErrInvalid: the event or record is malformed (a zero key, an empty
	// spec, a GPU count out of range, a worker with no window, ...). The
	// shell should answer its sender with an error.
	ErrInvalid = errors.New("table: invalid")
	// ErrStale: a Complete or Fail whose token is not a current lease of
	// that worker. Normal after a lease expired or a worker was lost: log
	// it, nothing more.
	ErrStale = errors.New("table: stale lease")
	// ErrUnknownWorker: a WorkerCredit for a worker that has not joined or
	// was lost.
	ErrUnknownWorker = errors.New("table: unknown worker")
	// ErrDuplicateWorker: a WorkerJoin with an ID already joined, or a name
	// that a joined worker has.
	ErrDuplicateWorker = errors.New("table: duplicate worker")
	// ErrLimit: a Submit that would give its owner more workunits waiting
	// or running than Config.MaxOpenPerOwner, or a Watch (or a Submit with
	// Watch) that would give its master more pending watches than
	// Config.MaxWatchesPerMaster. The shell should answer its sender with a
	// limit error; nothing was stored.
	ErrLimit = errors.New("table: limit passed")
	// ErrFull: a Submit that would make the table hold more bytes than
	// Config.MaxBytes. The error is a *FullError, which says how much.
	// The shell should answer its sender with an error that says the
	// tracker's memory is full; nothing was stored.
	ErrFull = errors.New("table: memory bound reached")
	// ErrNotHeld: a child's Submit (Submit.Parent) from a worker that does
	// not hold the parent's lease (it ended, expired, was revoked, or was
	// never given). The shell should refuse it: nothing was stored.
	ErrNotHeld = errors.New("table: parent lease not held")
	// ErrNotEmpty: Restore on a table that already holds records or
	// workers.
	ErrNotEmpty = errors.New("table: restore into a table in use")
)

// FullError is the error of a Submit refused because the table would hold
// more than Config.MaxBytes. errors.Is(err, ErrFull) holds.
type FullError struct {
	// Key is the refused workunit's key.
	Key workunit.Key
	// Held is what the table holds (Stats.Bytes), Need what the
	// submission would add (its spec, and a record if it is new), Limit
	// Config.MaxBytes.
	Held, Need, Limit int64
	// Elsewhere is what the submission said the tracker holds outside
	// the table (Submit.HeldElsewhere): Held, Elsewhere and Need pass
	// Limit.
	Elsewhere int64
	// Records is the number of records the table holds.
	Records int
}

// Error returns e.g. "table: memory bound reached: submit 1a2b3c4d: the
// table holds 1048000 bytes for 5000 workunits, and 300 more would pass
// its bound of 1048576".
func (e *FullError) Error() string {
	elsewhere := ""
	if e.Elsewhere > 0 {
		elsewhere = fmt.Sprintf(" (and %d held elsewhere)", e.Elsewhere)
	}
	return fmt.Sprintf("%v: submit %s: the table holds %d bytes for %d workunits%s, and %d more would pass its bound of %d",
		ErrFull, e.Key.Short(), e.Held, e.Records, elsewhere, e.Need, e.Limit)
}

// Unwrap returns ErrFull.
func (e *FullError) Unwrap() error { return ErrFull }
