// Package units reads durations and sizes as riot's users write them on
// command lines: durations in Go's form or in days ("90s", "12h", "30d"),
// sizes in bytes with an optional unit ("1048576", "64MiB", "1.5GB").
//
// # Usage
//
//	fs.Var((*units.Duration)(&o.KeepResults), "keep-results", "...")
//	fs.Var((*units.Size)(&o.QueueBytes), "queue-bytes", "...")
//	d, err := units.ParseDuration("30d")
//	n, err := units.ParseSize("512MiB")
//
// Duration and Size are flag.Values over a time.Duration and an int: their
// String gives back what the parsers read, and their errors say what form
// was wanted, so that a flag package error names the flag, the value and
// the form in one line. Neither keeps any state of its own.
package units
