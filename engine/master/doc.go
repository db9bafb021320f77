// Package master runs riot job scripts: the JavaScript program, on the
// master, that hands workunits out to workers through a tracker and
// gathers their results (docs/reference.md). It is what riot-worker eval
// SCRIPT.js runs (through package job, which connects it to a tracker).
//
// A job script runs in a standalone sandbox of the engine
// (engine.NewStandalone): the ECMAScript built-ins, console (to
// ScriptOptions.Stdout and Stderr), performance, sleep and the timers,
// the web globals a workunit has too (structuredClone, TextEncoder,
// TextDecoder, URL, URLSearchParams, atob, btoa, crypto), and what this
// package installs there through the engine's seam:
//
//   - the riot object: riot.args, doWork, forWork, doWorkCall, doWorkEval,
//     their await forms run, map, runCall, runEval and result (promises
//     that settle on the event loop), with, waitUntilDone, callWhenDone,
//     cancel, connect,
//     connectToTracker, currentClient, readFile, readLines, writeFile, and
//     the WorkunitError class;
//   - the low-level client objects (riot.currentClient(),
//     riot.connectToTracker(...)): Riot's client API in camelCase, whoAmI,
//     workunitInfo, addWorkunit, waitForWork, completeWorkunit, ...;
//   - require, for the job's own CommonJS modules, resolved as Node
//     resolves them (package modules), each instrumented like the script;
//   - the capture hook that the instrumented script calls (package
//     engine/capture), which records on every function the script makes
//     where it is and how to read its free variables, so that it can be
//     sent to a worker as a value.Function.
//
// A job script that is an ES module or TypeScript (.mjs, .ts, .mts, .cts,
// or a .js script with import, export or a top-level await) is bundled
// first, with the modules it imports, by package engine/bundle (esbuild),
// and its body runs as an async function whose promise the event loop
// awaits (top-level await). The capture pass instruments the bundled
// JavaScript, so workers get plain JavaScript; an inline source map gives
// the master's stacks the original files' positions, and the master maps
// the positions of workunits' stacks and of its own messages back the
// same way (docs/reference.md, "Modules and TypeScript").
//
// The master runs the script top to bottom, then runs an event loop, as
// Node does: the callbacks of riot.callWhenDone, the settling of the
// await forms' promises and the script's timers, until none is pending. Values go to workers as value documents; one
// that is large, or carried by many workunits, goes as a blob, uploaded
// once (ScriptOptions.BlobThreshold, MinBlobBytes). A tracker that no
// longer holds one (riotd --memory frees a blob once nothing names it,
// and loses every blob when it restarts) refuses the submission that
// names it with unknown-blob; the master uploads it again, encoding the
// value again if it dropped the encoding (KeepBlobBytes), and submits
// again: through an UploadingConn, which asks the script's goroutine
// for the upload (it serves the request in its event loop and in its
// waits for the tracker), also for a workunit the client submits again
// after a restart.
//
// The master reaches the tracker only through Conn, which package job
// implements over the Go client (client.Client); the tests use a fake.
// Conn, Submission and Work are that adapter's interface (and
// UploadingConn, which it implements too); what crosses it
// is in package workunit's words (Spec, Options, Outcome, Error), the same
// the client, the protocol and the tracker use. The worker loop (package worker) never imports this
// package: workunits see only riot.worker.
//
// FormatValue is how riot-worker eval prints a result.
//
// # Usage
//
//	err := master.RunScript(ctx, master.ScriptOptions{
//		Path:    "job.js",
//		Args:    args,
//		Conn:    conn,    // a master.Conn: package job adapts *client.Client
//		Connect: dial,    // for riot.connect; nil: the script cannot connect
//		Events:  ui,      // progress and workunits' console output; may be nil
//	})
//	var se *master.ScriptError
//	if errors.As(err, &se) { ... se.Stack ... }
//
// The caller's duties:
//
//  1. Give a Conn that is safe for concurrent use: its callbacks come on
//     the connection's goroutines, and must never wait for the script.
//  2. End ctx to stop the script: its waits for the tracker, sleep and
//     the event loop end with it (a script that computes without waiting
//     is not interrupted). RunScript closes the connections the script
//     opened itself; ScriptOptions.Conn stays the caller's to close.
//  3. Expect ScriptEvents methods from several goroutines.
package master
