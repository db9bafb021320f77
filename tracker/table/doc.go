// Package table is riot's workunit table: the tracker's decisions, as a
// deterministic state machine with no I/O.
//
// It holds every workunit the tracker knows (waiting, running, done,
// error), the queue, the workers and their leases, and the masters'
// watches. It has no sockets, disk, clock, randomness or goroutines: events
// come in through Step, time comes in only as Tick events, and everything
// the tracker must do comes out as a Ready value. The tracker's shell
// (package tracker) owns the network, the store and the clock, and drives
// the table from one goroutine. This is etcd raft's shape (Step, Tick,
// Ready, Advance), with leases in the manner of nomad's EvalBroker.
//
// # Usage
//
//	t := table.New(table.Config{FirstToken: table.Token(time.Now().UnixNano())})
//	recs, err := store.Load(ctx)       // after a restart
//	err = t.Restore(recs)
//	t.Step(table.Tick{Now: time.Now()}) // before anything else
//	for {
//		select {
//		case ev := <-events:            // decoded messages, joins, losses
//			err := t.Step(ev)           // an error: answer the sender
//		case now := <-ticker.C:
//			t.Step(table.Tick{Now: now})
//		}
//		if t.HasReady() {
//			rd := t.Ready()
//			if err := store.Apply(ctx, rd.Persist); err != nil {
//				// send rd.Send with every *Ack replaced by a refusal;
//				// not rd.Notify: the table gives it back
//				t.PersistFailed(rd)
//				continue
//			}
//			send(rd.Send)               // to workers and masters, in order
//			notify(rd.Notify)           // finished results to watchers
//			t.Advance(rd)
//		}
//	}
//
// Events that arrive together (the messages of one frame) may be stepped
// between BeginBatch and EndBatch: the table then hands out work once, at
// EndBatch, so that a worker can be given several short workunits at once
// (Config.PackBudget) rather than one per event.
//
// The shell may keep stepping events while a Ready is being persisted
// (Ready is then empty until Advance): what they produce goes into the next
// Ready, which so batches everything that arrived during the commit.
//
// # The caller's duties
//
//  1. Own the table from one goroutine; it is not safe for concurrent use.
//  2. Give each connection a unique WorkerID or MasterID, and report every
//     worker and master that goes away (WorkerLost, MasterLost). A worker
//     that misses its ping deadline is lost: say so with WorkerLost.
//  3. Tick regularly (every 100 ms to 1 s): lease deadlines are checked
//     only on Ticks, and LastChange is the latest Tick's time.
//  4. For each Ready, in order: persist rd.Persist atomically and durably;
//     only then send rd.Send, in order; then deliver rd.Notify; then call
//     Advance(rd). Finish one Ready before taking the next. Its Assigns
//     alone may go out as the Ready is taken, before the write (package
//     tracker does so): the table takes the answers to them stepped while
//     the Ready is persisted, or after PersistFailed, and a write that
//     never happens loses a run, never an acknowledgement; they then go
//     before the rest of rd.Send (a Revoke of the same Ready after them).
//  5. Persist first: never send an Ack, nor deliver a Notification,
//     before its Ready's Persist is durable. If the write fails, send a
//     refusal instead of each Ack (and CancelReply), send the rest of
//     rd.Send, deliver none of rd.Notify (the table gives the
//     notifications again in a later Ready), and call PersistFailed(rd)
//     instead of Advance.
//  6. Do not keep or modify what a Ready holds after Advance: the table
//     reuses its buffers. Do not modify byte slices given to Step.
//  7. After a restart, Restore the stored records before the first Step,
//     and give Config.FirstToken a value the last run cannot have reached.
//
// # Workunits
//
// A workunit is identified by its key (workunit.Key) within its memo
// scope (Submit.Scope), and runs its spec, bytes the table never decodes.
// The same key in two scopes is two workunits: a submission joins, or is
// answered from, only the workunit of its own scope. Its status goes
//
//	waiting → running → done | error
//
// and back to waiting when its worker is lost, when its lease expires,
// when its worker hands it back (Return, which counts no loss), or when an
// errored (or, with Options.NoCache, a done) key is submitted again. Submitting a done key answers at once with its result, as Riot's
// memoized workunits did. A workunit lost MaxLost times fails with a
// workunit.WorkersLost error that names the workers.
//
// A workunit submitted with Options.Retries goes back to waiting, at the
// front of the queue, when an attempt fails with an error its options retry
// (workunit.Options.Retryable) and retries are left: the attempt (worker,
// name, message) is recorded in Record.Attempts, nobody is notified, and
// Ready.Retried lists it. The attempt that ends it (the last one, or one not
// retried) fails it with every attempt in its Err.Attempts. Losses count
// apart, against MaxLost.
//
// A master that joins a waiting or running workunit keeps its own time
// limit for it: its watch ends with a TimeoutError when the limit passes,
// and the workunit stops when no other master waits for it; a master's
// Cancel of a workunit it joined ends its wait the same way (see Submit
// and Cancel).
//
// # Dispatch
//
// First come, first served: the oldest waiting workunit goes first, and
// one that was put back after a loss goes to the front. Workers pull with
// credit: a worker gets work only while it has credit (from WorkerJoin and
// WorkerCredit) and holds fewer than Slots+Prefetch leases, so a slow
// worker never holds more than its window, which Config.MaxWorkerWindow
// bounds. Workers with credit are served
// round-robin, one workunit each in turn. A workunit that needs GPUs goes
// only to a worker with that many GPUs free; workunits are queued by GPU
// count, so work needing no GPU (or fewer) is not held up behind it.
//
// # Leases
//
// Each assignment is a lease with a Token. The worker answers with
// Complete or Fail and that token, or hands it back with Return. A lease
// ends when answered or returned, when its worker is lost, or when its
// deadline passes (Options.Timeout plus
// Config.LeaseGrace, or Config.LeaseTimeout, after it was given or after
// its worker's last progress towards it: an answer to a lease given before
// it, see Config.LeaseTimeout): then the workunit goes back
// to the front of the queue with the worker's name in its LostFrom. Late
// answers to ended leases are stale: rejected with ErrStale and listed in
// Ready.Discarded, the same way every time. An expired lease still counts
// in its worker's window until the worker answers it, since the worker is
// presumably still busy with it.
//
// # Children
//
// A running workunit submits children through its worker (Submit with
// Parent): the table checks that the worker holds the parent's current
// lease, and files the child under the parent's owner, quota and scope,
// so that it is the parent's job's work, memoized with it. Canceling a
// parent cancels its open children that nothing else waits for, and
// theirs. A lease whose workunit waits for its children (Wait) leaves its
// worker's window, so that the worker takes other work in its place, and
// has no deadline until it runs again. The links between parents and
// children are not persisted.
//
// # Memory
//
// A record is about 120 bytes plus 8 to 16 in the key index and the
// queue; spec and result bytes are kept as they were given, never copied.
// A million waiting workunits take about 140 MB besides their specs
// (BenchmarkTable_Memory_MillionWaiting).
package table
