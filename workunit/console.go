package workunit

import (
	"fmt"
	"unicode/utf8"

	"github.com/riot-go/riot/cbor"
)

// Level is the console method a line was written with.
type Level string

// Console levels: the methods of a workunit's console (trace and assert
// write at LevelError, dir at LevelLog).
const (
	LevelLog   Level = "log"
	LevelInfo  Level = "info"
	LevelWarn  Level = "warn"
	LevelError Level = "error"
	LevelDebug Level = "debug"
)

// ConsoleLine is one call of a console method, its arguments formatted as
// Node formats them.
type ConsoleLine struct {
	Level Level
	Text  string
}

// Console is a workunit's console output as it travels, in one form from
// the worker to the master: the CBOR array of [level, text] arrays that
// docs/protocol.md gives. The worker encodes it once (ConsoleBuilder or
// EncodeConsole), the tracker passes its bytes on without decoding them,
// and the master reads the lines with Lines where it shows them. Nil is no
// output.
type Console []byte

// EncodeConsole returns the Console of lines; nil when there are none.
func EncodeConsole(lines []ConsoleLine) Console {
	var b ConsoleBuilder
	for _, l := range lines {
		b.Add(l.Level, l.Text)
	}
	return b.Console()
}

// Lines decodes the console. The strings are copies: they do not alias c.
func (c Console) Lines() ([]ConsoleLine, error) {
	if len(c) == 0 {
		return nil, nil
	}
	r := cbor.NewReader(c)
	n, err := consoleHead(r)
	if err != nil {
		return nil, fmt.Errorf("workunit: console: %w", err)
	}
	lines := make([]ConsoleLine, 0, n)
	for range n {
		level, text, err := consoleLine(r)
		if err != nil {
			return nil, fmt.Errorf("workunit: console: %w", err)
		}
		lines = append(lines, ConsoleLine{Level: levelOf(level), Text: string(text)})
	}
	if r.Remaining() != 0 {
		return nil, fmt.Errorf("workunit: console: %d bytes after the end", r.Remaining())
	}
	return lines, nil
}

// ReadConsole reads one console item from r and returns its bytes, which
// alias r's data; an empty console gives nil. It checks the whole form
// (text strings of valid UTF-8) without allocating, so that a tracker can
// pass on what a worker sent, knowing that the master can read it.
func ReadConsole(r *cbor.Reader) (Console, error) {
	start := r.Offset()
	n, err := consoleHead(r)
	if err != nil {
		return nil, err
	}
	for range n {
		if _, _, err := consoleLine(r); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	return Console(r.Span(start)), nil
}

// minConsoleItem is the smallest encoded [level, text]: an array head and
// two empty strings.
const minConsoleItem = 3

// next reads a head, which must be in its preferred (shortest) form, as
// every riot writer makes it: the console a tracker checks and passes on
// is then the one bytes of its lines, with nothing else to tell apart.
func next(r *cbor.Reader) (cbor.Head, error) {
	start := r.Offset()
	h, err := r.Next()
	if err != nil {
		return h, err
	}
	if n := r.Offset() - start; n != headSize(h.Arg) {
		return h, r.Errorf("a head of %d bytes for %d: not in its shortest form", n, h.Arg)
	}
	return h, nil
}

// headSize is the size of a head of argument arg in its shortest form.
func headSize(arg uint64) int {
	switch {
	case arg < 24:
		return 1
	case arg <= 0xff:
		return 2
	case arg <= 0xffff:
		return 3
	case arg <= 0xffffffff:
		return 5
	}
	return 9
}

func consoleHead(r *cbor.Reader) (uint64, error) {
	h, err := next(r)
	if err != nil {
		return 0, err
	}
	if h.Major != cbor.MajorArray {
		return 0, r.Errorf("want an array of console lines")
	}
	if err := r.CheckCount(h.Arg, minConsoleItem); err != nil {
		return 0, err
	}
	return h.Arg, nil
}

// consoleLine reads one [level, text], aliasing r's data.
func consoleLine(r *cbor.Reader) (level, text []byte, err error) {
	h, err := next(r)
	if err != nil {
		return nil, nil, err
	}
	if h.Major != cbor.MajorArray {
		return nil, nil, r.Errorf("want a console line [level, text], have major type %d", h.Major)
	}
	if h.Arg != 2 {
		return nil, nil, r.Errorf("want a console line [level, text], have an array of %d items", h.Arg)
	}
	if level, err = textBytes(r); err != nil {
		return nil, nil, err
	}
	if text, err = textBytes(r); err != nil {
		return nil, nil, err
	}
	return level, text, nil
}

func textBytes(r *cbor.Reader) ([]byte, error) {
	h, err := next(r)
	if err != nil {
		return nil, err
	}
	if h.Major != cbor.MajorText {
		return nil, r.Errorf("want a text string")
	}
	b, err := r.Bytes(h.Arg)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, r.Errorf("text string is not valid UTF-8")
	}
	return b, nil
}

// levelOf returns the level named b, sharing the strings of the usual
// ones.
func levelOf(b []byte) Level {
	switch Level(b) {
	case LevelLog:
		return LevelLog
	case LevelInfo:
		return LevelInfo
	case LevelWarn:
		return LevelWarn
	case LevelError:
		return LevelError
	case LevelDebug:
		return LevelDebug
	}
	return Level(b)
}

// ConsoleBuilder encodes a Console line by line, as the lines are
// written. The zero ConsoleBuilder is empty and ready to use; it is for one
// goroutine at a time.
type ConsoleBuilder struct {
	items cbor.Writer
	n     int
}

// Add appends a line. Text that is not valid UTF-8 is written with U+FFFD
// in place of the bad bytes.
func (b *ConsoleBuilder) Add(level Level, text string) {
	b.items.ArrayHeader(2)
	b.items.String(string(level))
	b.items.String(text)
	b.n++
}

// Lines returns the number of lines added.
func (b *ConsoleBuilder) Lines() int { return b.n }

// Size returns the encoded size of the lines added so far (the Console
// adds a head of at most 9 bytes).
func (b *ConsoleBuilder) Size() int { return b.items.Len() }

// Console returns the lines added so far as a Console of its own (nil when
// none), and empties the builder.
func (b *ConsoleBuilder) Console() Console {
	if b.n == 0 {
		return nil
	}
	items := b.items.Bytes()
	w := cbor.NewWriter(make([]byte, 0, len(items)+9))
	w.ArrayHeader(b.n)
	w.Raw(items)
	b.items.Reset()
	b.n = 0
	return Console(w.Bytes())
}
