// Package faults holds riot's fault-injection tests: real riotd and
// riot-worker processes (built and run by package e2e's harness) on
// loopback, killed with SIGKILL (also while riotd forgets every result
// at once, --keep-results 1ms), cut off by a proxy that stops forwarding,
// or denied the disk (RLIMIT_FSIZE on riotd), while a master runs a job. Each test checks that every result arrives, is right, and
// arrives once, and logs its figures (kills, workunits, results lost,
// duplicates). The package has no code besides its tests.
//
// # Usage
//
//	go test ./e2e/faults/                # all of them, about a minute
//	go test -short ./e2e/faults/         # the short forms
//	RIOT_E2E_LOG=1 go test -v ./e2e/faults/ -run TrackerKilled
//
// # The caller's duties
//
//  1. Run them on Linux (RLIMIT_FSIZE is set with prlimit(2)); the test
//     of the store is skipped elsewhere.
//  2. Give them the machine: they start up to six processes and do not
//     run in parallel with each other.
package faults
