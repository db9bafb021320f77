package job

import (
	"fmt"
	"io"
	"strings"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A workunit's console lines show on the master as a Node user expects
// them: log, info and debug on standard output, warn and error (trace and
// assert too, which print at error) on standard error. Each line of their
// text is prefixed with "[WORKER KEY] ", the worker that ran it and the
// workunit's short key, whether it streamed while the workunit ran
// (wire.Printed) or came with its result.

// toStderr reports whether lines of level go to standard error.
func toStderr(level workunit.Level) bool {
	return level == workunit.LevelWarn || level == workunit.LevelError
}

// consolePrefix is what each line of a workunit's console output starts
// with: its worker's name ("?" when unknown) and, when known, its short
// key.
func consolePrefix(worker string, key workunit.Key) string {
	if worker == "" {
		worker = "?"
	}
	if key == (workunit.Key{}) {
		return "[" + worker + "] "
	}
	return "[" + worker + " " + key.Short() + "] "
}

// writeLine writes one console line's text, each of its lines prefixed.
func writeLine(stdout, stderr io.Writer, prefix string, level workunit.Level, text string) {
	w := stdout
	if toStderr(level) {
		w = stderr
	}
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		b.WriteString(prefix)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// printConsole writes a workunit's console output, which came with its
// outcome, each line prefixed with prefix (consolePrefix).
func printConsole(stdout, stderr io.Writer, prefix string, c workunit.Console) {
	lines, err := c.Lines()
	if err != nil {
		fmt.Fprintf(stderr, "%s(console output that does not decode: %v)\n", prefix, err)
	}
	for _, l := range lines {
		writeLine(stdout, stderr, prefix, l.Level, l.Text)
	}
}

// printPrinted writes console lines that streamed while their workunit
// ran, and first, when the tracker dropped some for this master, a line
// on stderr that says how many.
func printPrinted(stdout, stderr io.Writer, p *wire.Printed) {
	prefix := consolePrefix(p.Worker, p.Key)
	if p.Missed > 0 {
		fmt.Fprintf(stderr, "riot: %d console lines of running workunits not shown: this master did not read them fast enough\n", p.Missed)
	}
	for i := range p.Lines {
		writeLine(stdout, stderr, prefix, p.Lines[i].Level, p.Lines[i].Text)
	}
}

// fromMemoryText is what the master says of a result the tracker answered
// from memory: nothing ran, and its console output was not kept.
const fromMemoryText = "(from memory: the tracker had this result; nothing ran, so there is no console output)"
