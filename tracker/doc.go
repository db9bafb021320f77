// Package tracker is riotd, the riot tracker: the I/O shell around the
// workunit table (package tracker/table) and the durable store (package
// tracker/store). It serves the protocol of package wire on a websocket
// endpoint (ws://HOST:2355/riot), drives the table from one goroutine,
// persists what the table asks before it acknowledges anything, pings
// every connection, and shows its state on GET /status and GET /metrics.
// The decisions (memoization, dispatch with credit, leases, reassignment,
// failure after too many losses) are the table's; this package owns the
// network, the disk, the clock and every goroutine.
//
// # Usage
//
//	fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
//	opts, err := tracker.ConfigureOptions(fs, os.Args[1:])
//	srv, err := tracker.New(opts)     // opens the store, listens
//	err = srv.Run(ctx)                // serves until ctx ends, then shuts down
//
// Tests start a tracker with package tracker/trackertest.
//
// # Goroutines
//
//   - The loop (one): owns the table. Readers hand it decoded frames; it
//     steps the table, takes each Ready, has its records written, sends
//     its messages and advances the table. While a commit is in flight it
//     keeps stepping events, which the next Ready batches: one fsync serves
//     every submission that arrived during the previous one.
//   - The persister (one): writes each Ready's records (Store.Apply, one
//     fsync'd commit) so that the loop never blocks on fsync. The loop has
//     at most one Ready with it at a time: that is the group commit, and
//     the store needs none of its own.
//   - Per websocket, a reader, and a writer while there is something to
//     write. The reader is a goroutine of its own (the HTTP handler
//     returns once it has upgraded, so that net/http lets go of the
//     request); it reads and decodes frames, computes workunit keys,
//     answers blob requests from the store, and hands the rest to the loop;
//     it waits for the loop to take a frame before it decodes the next,
//     which is the connection's back-pressure. The writer is started when
//     messages are queued, a ping is due (a timer per connection) or the
//     connection closes; it writes every message that is ready batched
//     into as few frames as fit, with an encoder from a pool, and returns
//     when nothing is left. An idle connection holds one goroutine, its
//     websocket's 4 KiB read buffer and its state.
//   - The HTTP server's.
//
// # Protocol choices
//
//   - Names are unique among connections: a second "alfred" is "alfred-2".
//   - A connection whose Hello has slots or prefetch joins the table as a
//     worker with no credit; it gets work once it sends Credit. Any
//     connection may submit.
//   - The realm of an Assign is a digest of the submitting master's
//     credential and Session (one per connection when it gave none), kept
//     as the record's Owner: work of different masters never shares a
//     JavaScript realm on a worker, and workers learn no session.
//   - Credentials (Options.TokenFile, Options.Tokens): a Hello must carry
//     a known token, compared in constant time, and checked first: a
//     valid one connects at once; the wrong ones of addresses that keep
//     failing are answered late, with wire.CodeThrottled (see throttle). A worker's token allows the
//     worker's half of the protocol only; other requests get
//     wire.CodeForbidden. Without credentials, riotd listens on loopback
//     unless Options.UnsafeNoAuth. See docs/security.md.
//   - Limits: frames (read by the reader itself, so that a frame too large
//     is refused with a reason), specs, results and blobs (wire.Limits),
//     workunits waiting per master (Options.MaxWaitingPerMaster, counted
//     by the table per credential: see quotaOf), keys watched per master connection
//     (Options.MaxWatchesPerMaster, counted by the table), the bytes held
//     for all workunits (Options.MaxMemory, the table's Config.MaxBytes: a
//     new workunit past it is refused with wire.CodeMemoryFull and a
//     message that says what is full and what to do; see loop.refusal),
//     connections (Options.MaxConns, with a slack for handshakes). Lines about
//     connections are bounded too (logLimiter): a flood of hellos logs a
//     summary, not a line each.
//   - Blobs (riotd --memory): the blobs that no record of the table and no
//     connection names are freed Options.BlobGrace later (blobFree); a
//     submission or child that names a blob the store lacks is refused
//     with wire.CodeUnknownBlob (see loop.missingBlob). With a durable
//     store nothing is freed or checked.
//   - Welcome.Resumed is always false: the tracker keeps no state of a
//     connection once it is gone. A master that reconnects watches its keys
//     again (finished ones are answered at once); a worker's leases go back
//     to the queue the moment its connection ends.
//   - Each connection's outgoing queue is bounded (Options.QueueBytes): a
//     peer that does not read is dropped when it fills, with a logged
//     reason, so it never stalls the tracker or anyone else.
//
// # Durability
//
// With a data directory, an Accepted (and a BlobStored) is sent only after
// the record (the blob) is on disk, and a Finished only after the result
// is. Assignments do not wait: a Ready's go to their workers as its records
// go to the persister, so a worker runs a workunit while its submission is
// written (a durable round trip waits for one write less; through
// replicas, one Raft commit less). A tracker that stops before the write
// leaves that run unacknowledged: the master submits again and the
// workunit runs again, the first result discarded. If a write fails, the submissions that
// waited for it are refused with wire.CodeStore; if it fails with
// store.ErrFenced (another tracker writes the store now: a replica that lost
// the lead), they are refused with wire.CodeShutdown instead, which clients
// send again on their next connection, and the Server stops: it hands out
// and acknowledges nothing more, revokes what it assigned as that write
// began, and Run returns the error. Finished results survive a
// restart; waiting and running workunits are waiting again after one. Without
// a data directory nothing is written (--memory).
//
// # The caller's duties
//
//  1. Build Options with ConfigureOptions (flags) or by hand; call New once.
//  2. Call Run once; it returns after ctx ends and the shutdown is done.
//     Or call Shutdown, from any goroutine, to stop it sooner.
//  3. A given Options.Store becomes the Server's: do not use or close it.
package tracker
