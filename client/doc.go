// Package client is riot's Go client: the connection to a tracker that
// masters use to submit workunits and collect their results, and that
// workers use to take work and report it. The JavaScript master
// (riot-worker eval with a job script) and the worker loop (package
// worker) are built on it.
//
// # Connecting
//
// Dial connects to a tracker ("host", "host:port", or a ws:// or wss://
// URL; port 2355 by default) and says hello: the tracker answers with the
// client's unique name (Name, Riot's client-who-am-i) or refuses it (a
// *VersionError for a protocol version mismatch, naming both versions, or
// a *RefusedError). After that, the Client survives connection drops: it
// dials again with a capped, jittered backoff under the same session,
// sends again every request not yet answered, watches again every key
// still waited for, grants its unused credit again, and blocking calls go
// on waiting until their context ends. Close ends it.
//
// # Masters
//
// Submit queues a workunit and returns a *Call at once; submissions are
// pipelined (the writer puts every message that is ready into one frame),
// so 10,000 workunits cost a few frames, not 10,000 round trips:
//
//	c, err := client.Dial(ctx, "alfred", client.Options{})
//	defer c.Close()
//	calls := make([]*client.Call, n)
//	for i := range calls {
//		calls[i] = c.Submit(spec(i), workunit.Options{})
//	}
//	for _, k := range calls {
//		out, err := k.Wait(ctx) // a failed workunit: err is its *workunit.Error
//		v, err := out.Value()   // the result as a Go value
//	}
//
// The Call's Key is computed locally (the tracker computes the same); its
// Accepted waits for the durable acknowledgement (a known result comes
// inline: memoization), Wait for the Outcome, OnDone calls back. WaitFor,
// Watch and CallWhenDone wait for any key; Info reads a key's state now.
// EnsureBlobs uploads the blobs (modules, large values) that specs refer
// to, each once per client. Errors the tracker sends are *wire.Error
// values with their code (wire.IsCode); a failed workunit's error is a
// *workunit.Error whose Worker and Key are filled in.
//
// Riot's forms have Go names (docs/client.md, "Riot's master forms" and
// "Riot's low-level client"): WhoAmI, WorkunitInfo,
// CallWithWorkunitInfo, WaitForWork, AddWorkunit, CallWithNewWorkunit,
// WaitForFinishedWorkunit, CallWithFinishedWorkunit, CompleteWorkunit,
// and the master's DoWork, DoWorkCall, DoWorkEval, ForWork, WaitUntilDone
// and Cancel.
//
// # Workers
//
// A worker dials with Role wire.RoleWorker and its Slots and Prefetch,
// grants Credit, takes assignments with NextAssignment, fetches blobs with
// FetchBlob, and answers each with Done or Failed (and its Credit), or
// hands it back with Return. A running workunit's children go out with
// SubmitChild, within its lease (a Call, as Submit's), and WaitChildren
// tells the tracker that the workunit waits for them, its slot given up.
// Package worker does all of this.
//
// # Concurrency
//
// A Client is safe for concurrent use. Each connection has exactly one
// reader goroutine and one writer goroutine; nothing else touches the
// websocket except to close it. Every call that blocks takes a context.
// Callbacks (Call.OnDone, CallWhenDone) run one at a time, in the order
// their outcomes arrived, on one goroutine of the client's: never on the
// reader, so a slow callback delays other callbacks but not the
// connection.
//
// # The caller's duties
//
//  1. Close the Client when done; calls still waiting fail with ErrClosed.
//  2. Give each blocking call a context: it bounds the wait, across
//     reconnects.
//  3. Keep specs within the tracker's limits (Limits): put large values in
//     blobs and EnsureBlobs them before submitting the specs that need
//     them.
//  4. Set workunit.Options.Watch on submissions whose results are wanted, so
//     that the result comes without another request.
//  5. A worker answers every Assignment with Done, Failed or Return, and
//     grants credit only for room it has.
//  6. Treat Outcome.Result and Assignment.Spec as read-only: they may share
//     memory with the frame they came in.
package client
