// Package worker is riot's worker loop: it connects to a tracker, takes
// workunits, evaluates them with the engine, and reports their results.
// The riot-worker command is a thin main around Run.
//
// # What Run does
//
//  1. Dials the tracker as a worker (package client), retrying while it
//     cannot be reached, and gets its unique name (alfred, alfred-2, ...).
//  2. Starts an engine with Slots slots named after the worker, and grants
//     the tracker credit for Slots + Prefetch workunits (with Prefetch
//     left 0, a window it sizes as it goes: see Prefetch below).
//  3. For each assignment: decodes its spec, starts fetching the blobs it
//     lists that are not in the blob cache (a bounded LRU by bytes, filled
//     from the tracker), and queues it for a slot. A slot evaluates it with
//     the assignment's realm and time limit, and sends Done with the
//     result and console output, or Failed with the workunit's error (a
//     throw, a time limit, a memory limit, a result too large), then
//     grants one credit (more or fewer while it sizes its window). A
//     workunit's failure never stops the worker.
//  4. A workunit submits child workunits (riot.doWork and the rest, package
//     engine/jschild) within its lease, over the worker's connection (the
//     child message): the tracker runs them for the job that owns the
//     parent. While it waits for them, it gives up its slot: the engine lets
//     another workunit evaluate, the tracker takes the lease out of the
//     worker's window (the wait message) and gets one credit, and another
//     slot goroutine runs what comes, its children among it. When they are
//     done, the parent takes a slot back when one is free; the goroutines
//     past Slots plus the waiting parents end as they finish. At most
//     Engine.MaxSeceded (riot-worker --max-waiting-parents) wait at once.
//  5. When the connection drops, the client reconnects; results of leases
//     from the old connection are still sent (the tracker discards those
//     it no longer holds). A reconnect may rename the worker (its name was
//     taken meanwhile, say by a connection that came back first after a
//     tracker restart): the workunits that start from then on see the new
//     name as riot.worker.name, and the logs say it.
//  6. When ctx ends, it stops gracefully: no more credit, no new work;
//     running workunits get Grace to finish, less the engine's
//     AbandonAfter, then are interrupted (one stuck in a built-in call is
//     abandoned by the end of Grace); every lease not finished
//     (interrupted, queued, or prefetched) is handed back with Return, and
//     the connection closes.
//  7. A workunit stuck in a call that does not return after its stop is
//     reported failed, and another goroutine takes its slot; once
//     Options.MaxStuck are stuck, the worker stops as in 6 and Run returns
//     an error wrapping ErrStuck.
//
// # Prefetch
//
// With Options.Prefetch 0 the worker sizes its prefetch itself (credits.go):
// it holds twice the credit-to-work latency's worth of workunits per slot,
// from their average duration, between DefaultPrefetchPerSlot and
// MaxPrefetchPerSlot a slot, its window (slots and prefetch) at most
// MaxWindow. The latency is measured, not assumed: one grant of credit at a
// time is timed until the last workunit it buys has come (the credit
// granted before it comes first), as a moving average clamped to
// MinPrefetchLatency..MaxPrefetchLatency, starting from PrefetchLatency;
// a sample is taken at most eight times the average, and a grant not
// filled within MaxPrefetchLatency is a sample of that much, after which
// the credit owed is forgotten (a tracker drops credit past its
// --max-worker-window). So trivial workunits behind a replicated tracker
// (a Raft commit before the work is sent) get a deep queue, and slow
// workunits get DefaultPrefetchPerSlot whatever the latency. A positive
// Prefetch fixes it and measures nothing.
//
// # Usage
//
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	err := worker.Run(ctx, worker.Options{
//		Tracker: "alfred:2355",
//		Slots:   8,
//		Engine:  engine.Options{Timeout: 10 * time.Minute, MemoryLimit: 8 << 30},
//	})
//
// # The caller's duties
//
//  1. Give Options.Tracker; everything else has a default.
//  2. End ctx to stop the worker, and expect Run to take up to Grace (plus
//     a close handshake) to return.
//  3. When Options.GPU is set, open the driver before Run (OpenGPU
//     opens it and logs what it found, as riot-worker does) and close it
//     after.
//
// # Metrics and probes
//
// With Options.MetricsListen, Run serves Prometheus metrics (/metrics:
// slots busy, workunits by outcome, evaluation time, heap, GPUs) and two
// probes over HTTP, from before it dials until it returns: /healthz
// answers 200 while the process serves, /readyz 200 only while the worker
// is connected and takes work (503 with the reason while it dials,
// reconnects or stops). Options.DebugListen serves Go's profiler. At the
// debug level the worker logs one line per workunit it finishes. See
// docs/workers.md, "Metrics and probes".
//
// # The garbage collector
//
// With Options.GCPacing set (riot-worker sets it, less what GOGC and
// GOMEMLIMIT set), Run sets its process's soft memory limit to
// Engine.MemoryLimit and, after each collection, a GC percent from the
// engine's idle runtimes (gcpace.go): the heap may grow by the live heap
// that is not idle runtimes plus IdleHeadroom times their estimated
// bytes (the goal it sets at most half of Engine.MemoryLimit), so that
// the marking of hundreds of masters' idle runtimes is shared by more
// allocation. Run sets both back when it returns. See
// docs/workers.md, "The garbage collector".
//
// # GPUs
//
// The worker's hello lists the devices of Options.GPU, so that the
// tracker gives it workunits that ask for GPUs ({gpus: n}) only while it
// has n devices free. The worker hands its devices to those workunits
// round robin, as the seed's device-for-worker does, and gives each its
// own for as long as it runs (engine.Request.GPUs, riot.worker.gpus in
// JavaScript; the GPU functions default to the first). Its engine always
// has the GPU bindings (engine/jsgpu), with a driver or without. See
// docs/gpu.md.
package worker
