package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/riot-go/riot/sysmem"
)

// defaultMemoryLimit is --memory-limit's default: most of the memory this
// process may use (the machine's, or its container's), leaving room for
// what the heap does not count (goroutine stacks, memory the runtime has
// not yet returned) and for the machine's other programs. Without a limit,
// a workunit that allocates without end would get the whole process killed
// by the kernel, and a worker must not die of a workunit's fault.
const defaultMemoryLimit = 80 // percent

// memoryLimitFlag registers --memory-limit on fs with its default.
func memoryLimitFlag(fs *flag.FlagSet, l *sysmem.Limit, what string) {
	*l = sysmem.Percent(defaultMemoryLimit)
	fs.Var(l, "memory-limit", "heap `size` past which "+what+" interrupted: bytes or a size such as 8GiB, a percentage of this machine's memory (or its container's), or none")
}

// memoryLimitBytes resolves --memory-limit to bytes for engine.Options. A
// percentage the user gave fails where the machine's memory cannot be
// read; the default there is no limit.
func memoryLimitBytes(fs *flag.FlagSet, l sysmem.Limit) (uint64, error) {
	n, err := l.Bytes()
	if err == nil {
		return n, nil
	}
	if !flagGiven(fs, "memory-limit") {
		return 0, nil
	}
	return 0, fmt.Errorf("--memory-limit %s: %w", l, err)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			given = true
		}
	})
	return given
}

// autoInt is an int flag whose default the command works out when it runs
// (one slot per CPU, a prefetch sized from durations). The flag's usage
// text says what that default is; an unset autoInt prints as "", so that
// flag.PrintDefaults adds no "(default -1)" of its own.
type autoInt struct {
	n   int
	set bool
}

func (a *autoInt) String() string {
	if a == nil || !a.set {
		return ""
	}
	return strconv.Itoa(a.n)
}

// Set parses a whole number, for flag.Value.
func (a *autoInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	a.n, a.set = n, true
	return nil
}

// or returns the value given, else auto.
func (a autoInt) or(auto int) int {
	if !a.set {
		return auto
	}
	return a.n
}

// parseFlags parses args with fs without printing the whole help on a bad
// flag: the flag package's error (which names the flag, the value and what
// was wanted) is returned, for the caller to print first, with a line that
// points to --help. -h or --help prints the help (fs.Usage) and returns
// flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	return err
}

// usageFailure prints a usage error and where to find the flags, and
// returns the exit status of bad usage, 2. cmd is "riot-worker" or
// "riot-worker eval".
func usageFailure(w io.Writer, cmd string, err error) int {
	fmt.Fprintf(w, "%s: %v\nrun '%s --help' for the flags\n", cmd, err, cmd)
	return 2
}

// flagsAfterScript returns the arguments after a job script's path (its
// riot.args) that look like eval's own flags: up to a "--", an argument
// "-NAME", "--NAME" or "--NAME=VALUE" where fs defines NAME.
func flagsAfterScript(fs *flag.FlagSet, args []string) []string {
	var found []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name != "" && fs.Lookup(name) != nil {
			found = append(found, a)
		}
	}
	return found
}
