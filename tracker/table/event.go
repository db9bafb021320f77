package table

import (
	"time"

	"github.com/riot-go/riot/workunit"
)

// Event is an input to Table.Step. The concrete types are the structs in
// this file: Submit, Watch, Unwatch, GetInfo, Cancel, MasterLost,
// WorkerJoin, WorkerCredit, WorkerLost, Complete, Fail, Return and Tick.
// Events are values; the table keeps the byte slices they carry (Spec,
// Result) without copying them, so the shell must not reuse those buffers
// after Step.
type Event interface {
	isEvent()
}

// Submit adds a workunit, or joins the one the table has under Key in
// Scope.
//
// The answer is an Ack to Master (with Req) carrying the key's Info after
// the submission:
//   - unknown key: a new Waiting record (persisted first);
//   - Waiting or Running: joined as it is (Spec and Options of this
//     submission are ignored, but for its time limit: see below);
//   - Done: answered at once with its result (memoization), unless
//     Options.NoCache, which runs it again with this Spec and Options;
//   - Error: reset to Waiting with this Spec and Options; it runs again.
//
// A submitter's time limit holds for what it waits on, joined or not. A
// Watch submission with Options.Timeout that joins a workunit whose own
// limit is longer, or that has none, watches it with that limit, counted
// from the first Tick that finds the workunit running after the join (and
// again from the start if it runs again, after a loss): so it passes up
// to a Tick late, never early. When it passes, Master gets a Notification with status
// error and a workunit.TimeLimit error (TimeoutError), its watch ends,
// and, if no other watch of the workunit is left, the workunit is stopped
// with that error: its lease is revoked, as Cancel does. A watch without a
// limit (or with a later one) keeps the workunit running. A Watch event
// carries no limit, but gets back the one of its Owner's lost master.
type Submit struct {
	Master MasterID
	// Req is the master's request id, echoed in the Ack (and in the
	// Notification when Watch is set). Opaque to the table.
	Req uint64
	// Owner is the submitter's principal, stored with a new record and
	// with one that this submission makes waiting again (after an error,
	// or with NoCache).
	Owner string
	// Quota names what Config.MaxOpenPerOwner counts by: the workunits
	// waiting or running of every Owner whose latest Submit gave this
	// Quota (the tracker gives the credential, which holds across the
	// owners of its sessions). "": Owner itself. An Owner's restored
	// workunits count for its Quota from its first Submit on.
	Quota string
	// Scope is the memo scope: the table keeps the workunits of each scope
	// apart, so that a submission joins, or is answered from, only a
	// workunit submitted in the same scope. The same key in two scopes is
	// two workunits, each run on its own. The tracker gives the
	// credential's name, or "" where masters share their results. The
	// events that name a key (Watch, Unwatch, GetInfo, Cancel) name it in
	// their Scope.
	Scope string
	Key   workunit.Key
	// Spec is the encoded workunit; the table never decodes it. Must not be
	// empty.
	Spec    []byte
	Options workunit.Options
	// Watch also watches the key, as a Watch with the same Req would,
	// saving the master a message.
	Watch bool
	// Parent, when set, makes this a child's submission: a workunit that
	// the running workunit Parent.Key submits, from the worker that holds
	// its lease Parent.Token (Parent.Worker; Master is that worker's
	// connection). The table checks that the worker holds that lease
	// (not expired, not revoked): if not, Step returns an error wrapping
	// ErrNotHeld and stores nothing. A child is submitted on behalf of
	// the parent's submitter: Owner, Quota and Scope are the parent's
	// (its Record's Owner and Scope, and that owner's quota), whatever
	// the event gives. The table remembers the child with its parent's
	// run, so that canceling the parent cancels it (see Cancel).
	Parent *ParentLease
	// HeldElsewhere is what the tracker holds outside the table that
	// counts toward Config.MaxBytes with the table's bytes (a Memory
	// store's blobs): a submission that becomes waiting is refused when
	// the table's bytes, HeldElsewhere and its own pass MaxBytes. The
	// table keeps nothing of it.
	HeldElsewhere int64
}

// ParentLease names the lease of a running workunit that submits a
// child: the worker that holds it, its token and the workunit's key.
type ParentLease struct {
	Worker WorkerID
	Token  Token
	Key    workunit.Key
}

// Wait says that worker Worker's lease Token of Key waits for the
// workunit's children (Waiting), or runs again (not Waiting). A waiting
// lease does not count in its worker's window, so that the worker may
// take other work (its children among them) in its place, and has no
// deadline while it waits: when it runs again, its clock starts again
// from that Tick. A Wait for a lease the worker does not hold is ignored.
type Wait struct {
	Worker  WorkerID
	Key     workunit.Key
	Token   Token
	Waiting bool
}

// Watch asks for one Notification to Master when Key is finished: at once
// if it is already Done or Error, or Unknown if the table has never seen
// it. A master's pending watches of a key are one: a Watch (or a Submit
// with Watch) of a key it watches already gives that watch its Req (and
// its time limit, see Submit), so the key is answered once, with the
// latest Req, unless the master is lost first. A Watch that would give its
// master more than Config.MaxWatchesPerMaster pending watches is refused
// with ErrLimit.
//
// A Watch carries no time limit, but keeps one: when a master of Owner
// that watched Key with a time limit (see Submit) was lost, and Key still
// waits or runs, the first Watch of Key by a master of the same Owner (a
// reconnect) watches it with that limit again, counting as before.
type Watch struct {
	Master MasterID
	Req    uint64
	// Owner is the watching master's principal, as in Submit.
	Owner string
	// Scope is the memo scope of Key, as in Submit.
	Scope string
	Key   workunit.Key
}

// Unwatch drops Master's pending watch of Key, whatever its Req. It is
// not answered; a watch that has fired already is not taken back. Unknown
// keys and keys without such watches are no error.
type Unwatch struct {
	Master MasterID
	Scope  string // of Key, as in Submit
	Key    workunit.Key
}

// GetInfo asks for a key's Outcome, answered with an InfoReply to Master. An
// unknown key is answered with status unknown.
type GetInfo struct {
	Master MasterID
	Req    uint64
	Scope  string // of Key, as in Submit
	Key    workunit.Key
}

// Cancel fails workunits on their master's request. Each key that is
// Waiting or Running, and whose Owner is Owner, becomes Error with a
// workunit.Canceled error ("canceled by By"), leaves the queue or has its
// lease taken back, and its watches fire. A taken-back lease gets a
// Revoke to its worker and keeps its place in the worker's window until
// the worker answers it; the answer is stale. Other keys (done, in error,
// unknown, or another owner's) are left as they are. The answer is a
// CancelReply to Master listing the keys canceled, sent once they are
// durable. Submitting a canceled key again runs it again, as after any
// error.
//
// A key of another owner that Master watches is not left as it is: Master
// stops waiting for it (its watches of the key are dropped, unanswered),
// and when no other watch of it is left, it is canceled as above ("canceled
// by By, the last master waiting for it") and listed in the reply. So a
// master that joined the work of one gone (an interrupted run of the same
// job) can stop what nobody else waits for, and never what another master
// still waits for.
type Cancel struct {
	Master MasterID
	Req    uint64
	// Owner is the canceling master's principal; only its own workunits
	// are canceled.
	Owner string
	// By names the master in the error, e.g. its connection's name.
	By string
	// Scope is the memo scope of Keys, as in Submit.
	Scope string
	Keys  []workunit.Key
}

// MasterLost says a master connection is gone. Its watches are dropped;
// its workunits keep running and their results stay in the table.
type MasterLost struct {
	Master MasterID
}

// WorkerJoin says a worker connected. Name must be unique among the joined
// workers (it is the name that Info, errors and LostFrom show).
//
// The worker holds at most Slots+Prefetch leases (its window, cut to
// Config.MaxWorkerWindow) and takes work only while it has credit: Credit here, plus every WorkerCredit
// since. Each assignment uses one credit. Credit beyond the window is not
// kept.
type WorkerJoin struct {
	Worker WorkerID
	Name   string
	// Slots is how many workunits it runs at once; Prefetch how many more
	// it may hold queued locally. Slots+Prefetch must be at least 1.
	Slots, Prefetch int
	// GPUs is its number of GPU devices (0 to MaxGPUs).
	GPUs int
	// Credit is the number of workunits it asks for now, typically
	// Slots+Prefetch.
	Credit int
}

// WorkerCredit grants N more assignments to a worker (N ≥ 1): a worker
// sends one with each result to keep its window full.
type WorkerCredit struct {
	Worker WorkerID
	N      int
}

// WorkerLost says a worker is gone: its connection closed, or it missed its
// ping deadline. Every lease it held goes back to the front of the queue,
// in the order it was given, with the worker's name added to LostFrom; a
// workunit that reaches Config.MaxLost losses fails (workunit.WorkersLost).
// Expired leases it still held were already put back when they expired.
type WorkerLost struct {
	Worker WorkerID
}

// Complete is a worker's result for the lease Token of Key. A token that
// is not the key's current lease held by Worker (the lease expired, the
// worker was lost, or it was never given) is stale: Step returns an error
// wrapping ErrStale and the Ready lists a Discard; the table is otherwise
// unchanged, except that an expired lease now answered frees its place in
// the worker's window.
type Complete struct {
	Worker WorkerID
	Key    workunit.Key
	Token  Token
	// Result is the encoded value.
	Result []byte
	// Console is the run's console output and Elapsed its time on the
	// worker, passed to the Notifications this completion triggers; the
	// table does not keep them.
	Console workunit.Console
	Elapsed time.Duration
}

// Fail is a worker's error for the lease Token of Key. Stale tokens are
// handled as for Complete. The table stores a copy of Err with Worker and
// Key filled in.
type Fail struct {
	Worker  WorkerID
	Key     workunit.Key
	Token   Token
	Err     *workunit.Error
	Console workunit.Console
	Elapsed time.Duration
}

// LeaseRef names one lease: the workunit's key and the lease's token.
type LeaseRef struct {
	Key   workunit.Key
	Token Token
}

// Return is a worker handing leases back unfinished, as a worker that shuts
// down gracefully does. Each returned lease ends, and its workunit goes back
// to the front of the queue, the first listed first, without counting a
// loss: LostFrom is unchanged and the return never makes it fail. Its
// delivery still counts in Deliveries. A worker that returns work is
// leaving: its credit drops to zero, so that none of the work comes back to
// it; it gets more only once it grants credit again (WorkerCredit).
//
// A lease that is not a current lease of Worker is stale, as for Complete:
// listed as a Discard, with an error wrapping ErrStale from Step. Unlike
// other events, a Return with stale leases still returns the current ones
// it lists (Step reports the first stale one).
type Return struct {
	Worker WorkerID
	Leases []LeaseRef
}

// Tick brings the time. Time enters the table only here: it stamps
// LastChange and lease deadlines with the latest Tick's Now, and on each
// Tick every lease whose deadline has passed expires (the workunit goes
// back to the front of the queue, as if its worker had lost it). Now must
// not go backwards (an earlier Now is ignored).
type Tick struct {
	Now time.Time
}

func (Submit) isEvent()       {}
func (Watch) isEvent()        {}
func (Unwatch) isEvent()      {}
func (GetInfo) isEvent()      {}
func (Cancel) isEvent()       {}
func (MasterLost) isEvent()   {}
func (WorkerJoin) isEvent()   {}
func (WorkerCredit) isEvent() {}
func (WorkerLost) isEvent()   {}
func (Complete) isEvent()     {}
func (Fail) isEvent()         {}
func (Return) isEvent()       {}
func (Tick) isEvent()         {}
func (Wait) isEvent()         {}
