package table

import "github.com/riot-go/riot/workunit"

// Ready is what the shell must do, in this order:
//
//  1. Persist: write every record, atomically and durably (one fsync'd
//     commit). Nothing below may leave the process before that commit.
//  2. Send: send every message, in order (each names its destination).
//  3. Notify: deliver every Notification, in order.
//
// Then call Table.Advance(rd). If step 1 fails, call Table.PersistFailed(rd)
// instead, after step 2 with each Ack and CancelReply replaced by a
// refusal, and without step 3: the table holds the notifications back and
// gives them again in a later Ready, behind the write of what they report.
//
// Every Ack and every Notification depends only on records in its own
// Ready's Persist or on records already durable (in an earlier Ready that
// was Advanced): that is the persist-before-ack rule, made structural, and
// a Finished never reports what the store does not have. Other messages do
// not depend on durability.
//
// Ready's slices and the values they hold belong to the table; they are
// valid until Advance or PersistFailed, after which the table reuses them.
type Ready struct {
	// Persist lists records whose durable state changed, each once, as they
	// stand at the time of the Ready() call: first the tombstones of
	// forgotten workunits (Status Unknown: delete the stored record of
	// that ID), then the rest.
	Persist []Record
	// Send lists messages to workers (Assign, Revoke) and masters (Ack,
	// InfoReply, CancelReply), in the order the table made them.
	Send []Message
	// Notify lists the answers to watches, in the order they fired.
	Notify []Notification
	// Discarded lists stale completions rejected since the last Ready, for
	// logs and metrics. Nothing needs to be done with them.
	Discarded []Discard

	// Requeued lists the workunits taken back from a worker (lost, or its
	// lease expired) and put back at the front of the queue since the last
	// Ready, for logs and metrics; one that another worker took at once is
	// among them too.
	Requeued []Requeue
	// Retried lists the workunits whose attempt failed and that were put
	// back at the front of the queue to run again (Options.Retries) since
	// the last Ready, for logs and metrics.
	Retried []Retry

	// inflight holds the record indices of Persist; gen identifies the
	// Ready for Advance.
	inflight []uint32
	gen      uint64
	// tombs is how many tombstones Persist starts with.
	tombs int
	// The messages that Send points to.
	acks    []Ack
	assigns []Assign
	infos   []InfoReply
}

// Empty reports whether rd holds nothing to do.
func (rd Ready) Empty() bool {
	return len(rd.Persist) == 0 && len(rd.Send) == 0 && len(rd.Notify) == 0 && len(rd.Discarded) == 0 && len(rd.Requeued) == 0 && len(rd.Retried) == 0
}

// Message is something to send: an *Assign or a *Revoke (to a worker), an
// *Ack, an *InfoReply or a *CancelReply (to a master). Switch on the
// concrete type. The pointers are the table's, valid until Advance: copy
// what must outlive it.
type Message interface {
	isMessage()
}

// Assign leases a workunit to a worker.
type Assign struct {
	Worker WorkerID
	Key    workunit.Key
	// Token identifies this lease; the worker's Complete or Fail must carry
	// it.
	Token   Token
	Spec    []byte
	Options workunit.Options
	// Owner is the record's Owner (the principal whose submission made it
	// waiting), so
	// that the shell can keep the work of different owners apart on
	// workers.
	Owner string
	// Delivery counts the leases given for the workunit, this one included
	// (1 for a first try).
	Delivery int
}

// Ack answers a Submit: the key's Outcome after the submission (done with
// a result when answered from memory; waiting or running otherwise). An
// Ack may be sent only once its Ready's Persist is durable; when
// persisting fails, the shell sends the master a refusal instead.
type Ack struct {
	Master MasterID
	Req    uint64
	workunit.Outcome
	// Stored is the record ID whose result the shell must read from its
	// store, Outcome.Result being nil (Config.ResultsInStore); 0 when
	// Outcome is complete.
	Stored uint64
}

// InfoReply answers a GetInfo: the key's Outcome now (status unknown for a
// key the table does not know).
type InfoReply struct {
	Master MasterID
	Req    uint64
	workunit.Outcome
	// Stored is the record ID whose result the shell must read from its
	// store, Outcome.Result being nil (Config.ResultsInStore); 0 when
	// Outcome is complete.
	Stored uint64
}

// CancelReply answers a Cancel: Keys lists the keys canceled, in the order
// asked. Like an Ack, it may be sent only once its Ready's Persist is
// durable; when persisting fails, the shell sends a refusal instead.
type CancelReply struct {
	Master MasterID
	Req    uint64
	Keys   []workunit.Key
}

// Revoke tells a worker that the workunit of its lease Token was
// canceled: it should stop it, or not start it, and answer the lease.
type Revoke struct {
	Worker WorkerID
	Key    workunit.Key
	Token  Token
}

func (*Assign) isMessage()      {}
func (*Ack) isMessage()         {}
func (*InfoReply) isMessage()   {}
func (*CancelReply) isMessage() {}
func (*Revoke) isMessage()      {}

// Notification answers a watch: the key is finished (done or error), or
// is unknown to the table. Req is the Watch's (or the Submit's). The
// Outcome's Console and Elapsed are the finishing run's when the
// notification comes from that completion; empty when the key was already
// finished at the time of the watch.
type Notification struct {
	Master MasterID
	Req    uint64
	workunit.Outcome
	// Stored is the record ID whose result the shell must read from its
	// store, Outcome.Result being nil (Config.ResultsInStore); 0 when
	// Outcome is complete.
	Stored uint64
	// rec is the record index + 1 whose finished outcome it reports (0:
	// none, e.g. an unknown key), for PersistFailed, and scope that
	// record's memo scope (a name index).
	rec, scope uint32
}

// Requeue is a workunit taken back from a worker and queued again.
type Requeue struct {
	Key workunit.Key
	// LostFrom names the worker it was taken from.
	LostFrom string
	// Losses is how many workers it has been lost from so far.
	Losses int
}

// Retry is a workunit whose attempt failed, queued to run again.
type Retry struct {
	Key workunit.Key
	// Attempt is the failed attempt: its worker and error.
	Attempt workunit.Attempt
	// Attempts is how many attempts failed so far, and Retries how many
	// retries it has in all (it runs at most Retries+1 times).
	Attempts, Retries int
}

// Discard is a stale completion the table rejected.
type Discard struct {
	Worker WorkerID
	Key    workunit.Key
	Token  Token
	// Reason says why, e.g. "lease expired".
	Reason string
}
