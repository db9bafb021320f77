//go:build !race

package worker

// raceEnabled: the race detector is on.
const raceEnabled = false
