package table

import (
	"time"

	"github.com/riot-go/riot/workunit"
)

// WorkerID names one worker connection. The shell assigns it (unique for
// the table's lifetime; never reuse an ID after WorkerLost).
type WorkerID uint64

// MasterID names one master connection. The shell assigns it; the table
// uses it only to address replies and to drop watches on MasterLost.
type MasterID uint64

// Token identifies one delivery (lease) of a workunit to a worker. A
// Complete or Fail must present the token of the current lease; any other
// token is stale.
type Token uint64

// MaxGPUs is the most GPUs a workunit may ask for, and a worker may offer.
const MaxGPUs = 255

// Record is one workunit's durable state: the unit of persistence. The
// table lists changed records in Ready.Persist; the store writes them and
// gives them back to Restore after a restart.
//
// A Record with Status Unknown is a tombstone: the workunit of that Key
// and ID was forgotten (Config.KeepFinished), and the store deletes its
// record. Only Key and ID are set. A later record of the same key, if it
// is submitted again, has a new ID.
//
// Byte slices (Spec, Result) belong to the table and are never modified by
// it; a store may keep them as they are until it has written them, and
// must copy them when it must outlive the table's use of them (it need not:
// the table never modifies them).
type Record struct {
	Key workunit.Key
	// ID numbers the record: the table gives each new key the next ID,
	// from 1 up, and keeps it while it has the key (Restore brings IDs
	// back). A forgotten key submitted again gets a new ID. IDs are unique
	// among the records stored at any one time (after a restart, the ID of
	// a forgotten record may be given again). A store may key records by ID
	// rather than Key: IDs grow with time, so the writes of a busy table
	// land near each other.
	ID uint64
	// Scope is the memo scope of the record (Submit.Scope): a key is
	// unique within its scope, and may be stored once in each scope. ""
	// for records stored before scopes were (and for masters that share
	// their results).
	Scope string
	// Seq orders the records in the waiting queue: a record restored as
	// waiting goes to the queue in Seq order. It is negative for records
	// that were put back at the front after a lost delivery.
	Seq int64
	// Spec is the workunit as the master sent it, opaque to the table. It
	// is set while the record is Waiting or Running and nil once it is
	// finished (the table keeps no spec for finished work: a resubmission
	// brings its own). A store may delete the stored spec when it sees a
	// finished record.
	Spec    []byte
	Options workunit.Options
	// Owner is the principal whose submission last made the record
	// waiting: its first submitter, or whoever ran it again after an
	// error or with NoCache (the shell's realm of that master, which keeps
	// the work of different masters apart on workers); may be "".
	Owner  string
	Status workunit.Status
	// Worker is the name of the worker that holds it (Running) or that
	// finished it (Done, Error); "" while Waiting, and for an Error that no
	// worker gave (WorkersLost, Canceled).
	Worker string
	// Result is the encoded value of a Done workunit; nil otherwise, and
	// nil when Stored.
	Result []byte
	// Stored says that a Done record's result is in the store, not in the
	// table (Config.ResultsInStore): Result is nil. A store given such a
	// record to write keeps the result it holds for its ID. Restore takes
	// a Done record with Stored (and no Result) as one whose result the
	// store has.
	Stored bool
	// Err is the error of an Error workunit; nil otherwise. Shared: do not
	// modify it.
	Err *workunit.Error
	// LastChange is the time of the last status change, as the last Tick
	// before it gave it (the zero time before any Tick).
	LastChange time.Time
	// LostFrom names, in order, the workers that lost a delivery of the
	// record (disconnected, missed their pings, or let its lease expire).
	// Repeats are kept: a worker that lost it twice is named twice.
	LostFrom []string
	// Deliveries counts the leases given for it, all attempts together.
	Deliveries int
	// Attempts are the failed attempts of a Waiting or Running record
	// submitted with retries (Options.Retries), each run again: the next
	// one fails it once Options.Retries are spent, with these and its own
	// in its Err.Attempts. Nil for finished records (see Err) and without
	// retries. Shared: do not modify it.
	Attempts []workunit.Attempt
	// Submitted is when it last became waiting (its submission, or the
	// one that ran it again), and Assigned when its last lease was given,
	// as the last Tick before them gave them; zero when unknown or, for
	// Assigned, before any lease. They are for status pages: the store
	// does not keep them, so that a restart brings them back zero.
	Submitted, Assigned time.Time
}

// Outcome returns what the record says of its workunit: its status,
// worker, result or error and last change.
func (r *Record) Outcome() workunit.Outcome {
	return workunit.Outcome{Key: r.Key, Status: r.Status, Worker: r.Worker, Result: r.Result, Err: r.Err, LastChange: r.LastChange}
}

// Default values for Config fields left zero.
const (
	DefaultMaxLost             = 3
	DefaultLeaseGrace          = 10 * time.Second
	DefaultMaxWatchesPerMaster = 1 << 20
	DefaultMaxWorkerWindow     = 1024
)

// Config tunes a Table. The zero Config is usable: every zero field takes
// its documented default.
type Config struct {
	// MaxLost is how many lost deliveries a workunit survives: at the
	// MaxLost-th loss it fails with a workunit.WorkersLost error that names
	// the workers. DefaultMaxLost if zero.
	MaxLost int
	// LeaseTimeout is the lease of a workunit without a Timeout: a worker
	// that holds one longer without progress loses it (it goes back to the
	// queue, and the worker gets a Revoke, to stop it). Progress is an
	// answer (Complete or Fail) from its worker to a lease given before
	// it, which restarts the clocks of the leases the worker holds queued
	// behind its running ones. Zero: such leases never expire; only
	// WorkerLost takes them back.
	LeaseTimeout time.Duration
	// LeaseGrace is added to a workunit's own Timeout to get its lease: the
	// worker enforces the Timeout and answers with a TimeLimit error, so the
	// lease expires only when that answer does not come. Its clock
	// restarts with progress, as LeaseTimeout's does. DefaultLeaseGrace
	// if zero.
	LeaseGrace time.Duration
	// FirstToken is the first lease token. Tokens count up from it. Give a
	// restarted table a FirstToken that the previous run cannot have reached
	// (the start time in nanoseconds does: tokens grow far slower than a
	// nanosecond clock), so that a token from before the restart is never
	// mistaken for a new one. 1 if zero.
	FirstToken Token
	// HashSeed seeds the hash of the key index. Keys are SHA-256 sums, so
	// any seed spreads honest keys; give a random seed (crypto/rand) where
	// masters are not trusted, so that none can choose keys that collide.
	HashSeed uint64
	// MaxOpenPerOwner bounds the workunits of one quota (Submit.Quota, or
	// Submit.Owner when that is ""; the tracker gives a credential's
	// name) that are waiting or running: a Submit
	// that would make one more is refused with ErrLimit. A Submit that
	// joins a waiting or running workunit, or is answered from memory,
	// is never refused. Zero: no bound.
	MaxOpenPerOwner int
	// MaxWatchesPerMaster bounds the pending watches of one master (a
	// connection): a Watch, or a Submit with Watch, that would give it one
	// more is refused with ErrLimit and changes nothing. A master has at
	// most one watch of a key, however often it watches it, so the bound
	// counts keys; watches of finished keys, answered at once, never count.
	// A watch given back because the result it was answered with was not
	// written (see Table.Ready) may pass it. DefaultMaxWatchesPerMaster if
	// zero; negative: no bound.
	MaxWatchesPerMaster int
	// MaxWorkerWindow bounds a worker's window (WorkerJoin's Slots plus
	// Prefetch, the most leases it holds): a worker that asks for a larger
	// one gets this one (its Slots too are cut to it, if larger), and
	// holds no more, whatever credit it grants. DefaultMaxWorkerWindow if
	// zero; negative: no bound.
	MaxWorkerWindow int
	// KeepFinished is how long a finished workunit (done or error) is kept
	// after it finished. The first Tick past that forgets it: its result,
	// error and record go, Ready.Persist lists it as a forgotten record (a
	// tombstone), and its key is unknown again, so that a submission runs
	// it again. A memoized answer does not extend it. Zero: kept for good,
	// as Riot's memoized workunits were.
	KeepFinished time.Duration
	// ResultsInStore says that the shell's store keeps every finished
	// result, and can read it back by record ID: the table lets go of a
	// done record's result once the Ready that wrote it is advanced (and
	// of restored ones at Restore), and reports the outcome of such a
	// record with a nil Result and the record's ID in the Stored field of
	// its Ack, InfoReply or Notification, for the shell to read it (see
	// Record.Stored). So the table's memory does not grow with the
	// results it has handed out. False: the table keeps every result, as
	// a tracker without a durable store must.
	ResultsInStore bool
	// MaxBytes bounds the bytes the table holds for workunits, as
	// Stats.Bytes counts them: RecordBytes for each record, and the specs
	// of waiting and running ones, the results of done ones (until they
	// are in the store, with ResultsInStore) and the errors of failed
	// ones. A Submit that would make the table hold more, with its spec
	// and its record, is refused with a *FullError (ErrFull) and changes
	// nothing; one that joins a waiting or running workunit, or is
	// answered from memory, is never refused. Nothing accepted is
	// dropped: the results of accepted work are taken even past the bound,
	// and submissions are refused until the table holds less (records
	// forgotten, Config.KeepFinished; results written, ResultsInStore).
	// Zero or negative: no bound.
	MaxBytes int64
	// PackBudget lets the dispatch give one worker several workunits at
	// once when they are short, so that they go out in one message frame
	// (and come back in one) rather than one frame a workunit to as many
	// workers: a worker with room gets up to PackBudget divided by the
	// mean run time of its owner's recent workunits (Complete's and
	// Fail's Elapsed), at most MaxPack, before the next worker gets any.
	// The budget is so the most a packed workunit waits behind the others
	// of its pack. Until an owner's workunits have run, and with zero, the
	// dispatch goes round the workers one workunit each.
	PackBudget time.Duration
}

// RecordBytes is what Config.MaxBytes counts for a record besides its
// spec, result and error: the record itself, its place in the key index
// and the queue, rounded up (see BenchmarkTable_Memory_MillionWaiting).
const RecordBytes int64 = 160

func (c Config) withDefaults() Config {
	if c.MaxLost <= 0 {
		c.MaxLost = DefaultMaxLost
	}
	if c.LeaseGrace <= 0 {
		c.LeaseGrace = DefaultLeaseGrace
	}
	if c.FirstToken == 0 {
		c.FirstToken = 1
	}
	if c.LeaseTimeout < 0 {
		c.LeaseTimeout = 0
	}
	if c.MaxWatchesPerMaster == 0 {
		c.MaxWatchesPerMaster = DefaultMaxWatchesPerMaster
	}
	if c.MaxWorkerWindow == 0 {
		c.MaxWorkerWindow = DefaultMaxWorkerWindow
	}
	if c.KeepFinished < 0 {
		c.KeepFinished = 0
	}
	return c
}

// Stats counts what the table holds. Cheap; for metrics.
type Stats struct {
	Waiting, Running, Done, Error int
	// Workers is the number of joined workers; Leases the leases they hold,
	// expired ones they have not answered included.
	Workers, Leases int
	// Watches is the number of pending watches.
	Watches int
	// Discarded counts stale completions rejected so far.
	Discarded uint64
	// Forgotten counts finished workunits forgotten so far
	// (Config.KeepFinished).
	Forgotten uint64
	// Bytes is what Config.MaxBytes bounds: RecordBytes a record, and the
	// specs, results and errors the table holds.
	Bytes int64
}

// WorkerInfo describes a joined worker, for status pages.
type WorkerInfo struct {
	// Name is the worker's name.
	Name string
	// Window is Slots+Prefetch: the most leases it may hold.
	Window int
	// Credit is how many more assignments it has asked for (at most
	// Window).
	Credit int
	// Leases is how many leases it holds, expired ones it has not answered
	// included.
	Leases int
	// GPUs is its number of GPU devices; GPUsUsed how many its leases use.
	GPUs, GPUsUsed int
	// Waiting is how many of its leases wait for their children (Wait):
	// they are not in its window.
	Waiting int
}
