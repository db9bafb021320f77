//go:build !race

package engine

// raceDetector is set when the tests run with -race.
const raceDetector = false
