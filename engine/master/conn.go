package master

import (
	"context"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// Conn is what a job script's riot object needs from its connection to a
// tracker. The client package's *client.Client satisfies it through
// client.MasterConn; tests use a fake. Implementations must be safe for
// concurrent use: callbacks arrive on the connection's goroutines.
type Conn interface {
	// Name is the name the tracker gave this client (Riot's
	// client-who-am-i).
	Name() string
	// Submit sends a workunit without waiting; Submission.Accepted waits
	// for the tracker's durable acknowledgement. The submission watches
	// its key: the tracker reports the outcome when it is finished, and
	// OnFinished callbacks and Wait see it without another round trip.
	Submit(spec *workunit.Spec, opts workunit.Options) Submission
	// Wait blocks until the workunit is finished and returns its outcome.
	Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error)
	// OnFinished calls fn once, on another goroutine, when the workunit is
	// finished.
	OnFinished(key workunit.Key, fn func(*workunit.Outcome))
	// Info returns a workunit's state now; an unknown key has status
	// workunit.StatusUnknown.
	Info(ctx context.Context, key workunit.Key) (*workunit.Outcome, error)
	// Cancel cancels this master's workunits among keys that are waiting
	// or running, and returns the keys it canceled (client.Client.Cancel).
	Cancel(ctx context.Context, keys []workunit.Key) ([]workunit.Key, error)
	// EnsureBlobParts makes sure the tracker holds every blob given, each
	// the concatenation of its parts, uploading those it lacks, and
	// returns once they are durable (client.Client.EnsureBlobParts). The
	// parts are read, not copied: the master sends a large typed array
	// from its buffer's own bytes.
	EnsureBlobParts(ctx context.Context, blobs map[blob.Hash]blob.Parts) error
	// WaitForWork takes one workunit to run, as a worker does (Riot's
	// client-wait-for-work).
	WaitForWork(ctx context.Context) (*Work, error)
	// CompleteWork reports the result of a workunit taken with
	// WaitForWork: result (a value document) or, when failed is set, err.
	CompleteWork(ctx context.Context, w *Work, result []byte, err *workunit.Error) error
	// Close ends the connection.
	Close() error
}

// Submission is a submitted workunit, identified by its key from the start.
// Its outcome, once known, is kept: waiting on it again asks the tracker
// nothing.
type Submission interface {
	Key() workunit.Key
	// Accepted waits for the tracker's durable acknowledgement. A workunit
	// already finished (memoized) comes back with its outcome.
	Accepted(ctx context.Context) (*workunit.Outcome, error)
	// Wait blocks until the workunit is finished and returns its outcome.
	Wait(ctx context.Context) (*workunit.Outcome, error)
	// OnDone calls fn once, on another goroutine, when it is finished.
	OnDone(fn func(*workunit.Outcome))
	// OnFinished calls fn once, on another goroutine, when it is finished,
	// with its status and console but not necessarily its value: a result
	// the worker sent as a blob is not fetched for it.
	OnFinished(fn func(*workunit.Outcome))
}

// Work is a workunit taken with Conn.WaitForWork.
type Work struct {
	Key   workunit.Key
	Token uint64
	Spec  *workunit.Spec
	// Blobs gives the modules and values the spec refers to.
	Blobs blob.Source
}
