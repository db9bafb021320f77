// Package cliflag has the pflag values and helpers that riot's command-line
// flags share (tracker, worker and job register theirs with them):
// durations and sizes in package units' forms, memory limits, log levels,
// whole numbers whose default is worked out at run time, and the
// one-dash spelling of long flags (-port) that riot's commands took
// before they moved to pflag.
package cliflag

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/riot-go/riot/sysmem"
	"github.com/riot-go/riot/units"
)

// Duration returns a flag value for *p that units.ParseDuration reads
// ("30s", "5m", "1d"; a bare number is refused).
func Duration(p *time.Duration) pflag.Value { return (*duration)(p) }

type duration time.Duration

func (d *duration) String() string {
	if *d == 0 {
		return "0" // the zero default goes unprinted in the help
	}
	return (*units.Duration)(d).String()
}
func (d *duration) Set(s string) error { return (*units.Duration)(d).Set(s) }
func (d *duration) Type() string       { return "duration" }

// Size returns a flag value for *p, bytes that units.ParseSize reads
// ("512MiB", "2GiB", "1048576").
func Size(p *int) pflag.Value { return (*size)(p) }

type size int

func (z *size) String() string     { return (*units.Size)(z).String() }
func (z *size) Set(s string) error { return (*units.Size)(z).Set(s) }
func (z *size) Type() string       { return "size" }

// LogLevel returns a flag value for *p that reads and prints debug, info,
// warn and error.
func LogLevel(p *slog.Level) pflag.Value { return (*logLevel)(p) }

type logLevel slog.Level

func (l *logLevel) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *logLevel) Set(s string) error {
	var v slog.Level
	if err := v.UnmarshalText([]byte(s)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	*l = logLevel(v)
	return nil
}

func (l *logLevel) Type() string { return "level" }

// AutoInt is a whole-number flag whose default the command works out when
// it runs (one slot per CPU, a prefetch sized from durations): the flag's
// usage says what that default is, and an unset AutoInt prints as "", so
// that the help adds no "(default ...)" of its own.
type AutoInt struct {
	n   int
	set bool
}

// String returns the number given, or "" when none was.
func (a *AutoInt) String() string {
	if a == nil || !a.set {
		return ""
	}
	return strconv.Itoa(a.n)
}

// Set parses a whole number.
func (a *AutoInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	a.n, a.set = n, true
	return nil
}

// Type names the value in the help ("int").
func (a *AutoInt) Type() string { return "int" }

// Given reports whether the command line set the flag.
func (a *AutoInt) Given() bool { return a.set }

// Or returns the number given, else auto.
func (a *AutoInt) Or(auto int) int {
	if !a.set {
		return auto
	}
	return a.n
}

// DefaultMemoryLimit is --memory-limit's default, in percent: most of the
// memory this process may use (the machine's, or its container's),
// leaving room for what the heap does not count (goroutine stacks, memory
// the runtime has not yet returned) and for the machine's other programs.
// Without a limit, a workunit that allocates without end would get the
// whole process killed by the kernel, and a worker must not die of a
// workunit's fault.
const DefaultMemoryLimit = 80

// MemoryLimit is a --memory-limit flag (AddMemoryLimit).
type MemoryLimit struct {
	fs    *pflag.FlagSet
	limit sysmem.Limit
}

// AddMemoryLimit registers --memory-limit on fs, DefaultMemoryLimit
// percent unless given; what says what passing it does, as in "running
// workunits are" (interrupted).
func AddMemoryLimit(fs *pflag.FlagSet, what string) *MemoryLimit {
	m := &MemoryLimit{fs: fs, limit: sysmem.Percent(DefaultMemoryLimit)}
	fs.Var((*memoryLimit)(&m.limit), "memory-limit", "heap `size` past which "+what+
		" interrupted: bytes or a size such as 8GiB, a percentage of this machine's memory (or its container's), or none")
	return m
}

// Given reports whether the command line set --memory-limit.
func (m *MemoryLimit) Given() bool { return m.fs.Changed("memory-limit") }

// Bytes resolves the limit to bytes (0: none), for engine.Options. A
// percentage the user gave fails where the machine's memory cannot be
// read; the default there is no limit.
func (m *MemoryLimit) Bytes() (uint64, error) {
	n, err := m.limit.Bytes()
	if err == nil {
		return n, nil
	}
	if !m.Given() {
		return 0, nil
	}
	return 0, fmt.Errorf("--memory-limit %s: %w", m.limit, err)
}

type memoryLimit sysmem.Limit

func (l *memoryLimit) String() string     { return (*sysmem.Limit)(l).String() }
func (l *memoryLimit) Set(s string) error { return (*sysmem.Limit)(l).Set(s) }
func (l *memoryLimit) Type() string       { return "size" }

// NormalizeFlag rewrites arg, one argument of a command line for fs, as
// pflag reads it: a one-dash long flag of fs ("-port", "-port=1", the Go
// flag package's spelling, which riot's commands took before) gets its
// second dash, and so does a one-dash word of two letters or more whose
// first letter is no shorthand of fs ("-nope": pflag then says "unknown
// flag: --nope" rather than complain of the letter n). Shorthands ("-e",
// "-eSOURCE", "-h") and everything else are left as they are. value
// reports whether the next argument is arg's value (a flag that takes one,
// given without "=").
func NormalizeFlag(fs *pflag.FlagSet, arg string) (normalized string, value bool) {
	if len(arg) < 2 || arg[0] != '-' || arg == "--" {
		return arg, false
	}
	if arg[1] == '-' {
		name, _, hasValue := strings.Cut(arg[2:], "=")
		return arg, !hasValue && takesValue(fs.Lookup(name))
	}
	name, _, hasValue := strings.Cut(arg[1:], "=")
	if len(name) >= 2 && (fs.Lookup(name) != nil || (fs.ShorthandLookup(name[:1]) == nil && isLetter(name[0]))) {
		return "-" + arg, !hasValue && takesValue(fs.Lookup(name))
	}
	// Shorthands: "-e VALUE" takes the next argument, "-eVALUE" and
	// "-e=VALUE" do not.
	return arg, len(arg) == 2 && takesValue(fs.ShorthandLookup(arg[1:]))
}

// NormalizeArgs returns args with every flag rewritten by NormalizeFlag,
// the values of flags left as they are. It stops at "--" and, unless
// interspersed, at the first argument that is not a flag (the arguments
// of a script follow its name).
func NormalizeArgs(fs *pflag.FlagSet, args []string, interspersed bool) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || (!interspersed && !isFlag(a)) {
			return append(out, args[i:]...)
		}
		n, value := NormalizeFlag(fs, a)
		out = append(out, n)
		if value && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// isFlag reports whether a is a flag, as pflag sees it.
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// takesValue reports whether f needs a value (a bool, say, does not).
func takesValue(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }
