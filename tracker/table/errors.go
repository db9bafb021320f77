package table

import "errors"

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
	// ErrNotHeld: a child's Submit (Submit.Parent) from a worker that does
	// not hold the parent's lease (it ended, expired, was revoked, or was
	// never given). The shell should refuse it: nothing was stored.
	ErrNotHeld = errors.New("table: parent lease not held")
	// ErrNotEmpty: Restore on a table that already holds records or
	// workers.
	ErrNotEmpty = errors.New("table: restore into a table in use")
)
