// Package e2e tests riot end to end with real processes: riotd and
// riot-worker built from this module with `go build`, started as child
// processes on loopback, driven by a Go client master (package client) or
// by `riot-worker eval`. Its tests are in this package's _test.go files;
// its harness, in the other files, is exported for any test of the module
// (and for cmd/riot-bench) that needs real processes: to kill them with
// SIGKILL, stop them with SIGTERM, restart them, and wait on what they say.
//
// # Usage
//
// Build the binaries once per test binary, in TestMain:
//
//	var bins e2e.Bins
//
//	func TestMain(m *testing.M) {
//		dir, _ := os.MkdirTemp("", "riot-e2e-")
//		var err error
//		bins, err = e2e.Build(context.Background(), dir)
//		if err != nil { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
//		code := m.Run()
//		os.RemoveAll(dir)
//		os.Exit(code)
//	}
//
// Then, in a test:
//
//	tr := bins.StartTracker(t, e2e.TrackerOptions{Durable: true}) // riotd --data t.TempDir()
//	w := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "w1", Slots: 2})
//	tr.WaitFor(t, func(s tracker.Status) bool { return len(s.Workers) == 1 })
//	require.NoError(t, w.Kill())                      // kill -9
//	require.NoError(t, tr.Kill())
//	require.NoError(t, tr.Restart(ctx))               // same port, same --data
//	res := bins.RunEval(t, "--tracker", tr.Addr(), "-e", "1 + 1")
//	// res.Stdout == "2\n", res.Code == 0
//
// Readiness is read from the processes, never guessed with sleeps: riotd's
// "riotd listening" log line gives its address (the harness lets it pick a
// free port) and GET /status must answer; riot-worker's "worker: ready"
// line gives the name the tracker gave it. Tracker.WaitFor and
// Tracker.WaitStatus poll GET /status until a condition holds;
// Process.WaitLog waits for a log line; CheckFor polls anything with a
// deadline. riotd logs JSON (match its messages with LogMsg); riot-worker
// logs log/slog's text format.
//
// The harness has two faces: Launch* functions and methods that return
// errors, for programs (cmd/riot-bench) and for use off the test's
// goroutine, and Bins.StartTracker, Bins.StartWorker, Bins.RunEval and
// Tracker.WaitFor that fail the test, stop the process when the test ends,
// and print the process's whole log (every run of it) when the test
// failed, or always when RIOT_E2E_LOG is set in the environment.
//
// # The caller's duties
//
//  1. Build once per test binary (TestMain) and share the Bins; building
//     in each test is slow on a 2-core machine.
//  2. End every process that a Launch* function started (Close, Kill or
//     Stop); the Start* functions do it for the test. On Linux, children
//     also die with the process that started them.
//  3. Bound every wait: give contexts with deadlines (Context(t, d)), or
//     use the test forms, which use DefaultWait.
//  4. Call the test forms (StartTracker, StartWorker, RunEval, WaitFor)
//     from the test's goroutine: they call t.Fatal.
//  5. Remember that the harness owns riotd's --listen, --port,
//     --log-format, --data and --memory, and riot-worker's tracker
//     argument: give other flags in Args.
package e2e
