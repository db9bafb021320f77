// Package sysmem tells how much memory this process may use, and reads the
// memory limits users write on command lines.
//
// A worker's memory limit (engine.Options.MemoryLimit) is a number of heap
// bytes; users state it as a size ("8GiB") or as a share of the machine
// ("80%"). Total is what a share is of: the machine's RAM, or the limit of
// the process's control group where that is lower, as in a container.
//
// # Usage
//
//	var l sysmem.Limit = sysmem.Percent(80) // the default
//	fs.Var(&l, "memory-limit", "...")
//	...
//	bytes, err := l.Bytes() // 0 when l is no limit
//
// # Caller's duties
//
//  1. Call Bytes once, at start: it reads /proc and /sys each time.
//  2. Treat Bytes's error as "cannot tell": Total fails off Linux, where a
//     percentage has nothing to be a percentage of.
package sysmem
