//go:build race

package worker

// raceEnabled: the race detector is on (sync.Pool then drops some of
// what it is given, and allocation counts mean nothing).
const raceEnabled = true
