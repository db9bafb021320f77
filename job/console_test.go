package job

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// TestPrintConsole_EachLinePrefixed: a console text of several lines has
// the worker's name and the short key before each of them, not only the
// first; log lines go to stdout, error lines to stderr.
func TestPrintConsole_EachLinePrefixed(t *testing.T) {
	var out, errs strings.Builder
	printConsole(&out, &errs, "[w1] ", workunit.EncodeConsole([]workunit.ConsoleLine{
		{Level: workunit.LevelLog, Text: "one\ntwo"},
		{Level: workunit.LevelError, Text: "three"},
	}))
	assert.Equal(t, "[w1] one\n[w1] two\n", out.String())
	assert.Equal(t, "[w1] three\n", errs.String())
}

// Each level goes where Node sends it: log, info and debug to stdout;
// warn, error (and trace and assert, which print at error) to stderr.
func TestConsole_StdoutAndStderr(t *testing.T) {
	key := workunit.Key{0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67}
	var out, errs strings.Builder
	printPrinted(&out, &errs, &wire.Printed{Key: key, Worker: "alfred", Lines: []wire.Line{
		{Level: workunit.LevelLog, Text: "log", Time: time.Now()},
		{Level: workunit.LevelInfo, Text: "info"},
		{Level: workunit.LevelDebug, Text: "debug"},
		{Level: workunit.LevelWarn, Text: "warn"},
		{Level: workunit.LevelError, Text: "error"},
	}})
	assert.Equal(t, "[alfred abcdef012345] log\n[alfred abcdef012345] info\n[alfred abcdef012345] debug\n", out.String())
	assert.Equal(t, "[alfred abcdef012345] warn\n[alfred abcdef012345] error\n", errs.String())

	// Lines the tracker dropped for a slow master are counted.
	out.Reset()
	errs.Reset()
	printPrinted(&out, &errs, &wire.Printed{Key: key, Worker: "alfred", Missed: 7, Lines: []wire.Line{{Level: workunit.LevelLog, Text: "x"}}})
	assert.Equal(t, "[alfred abcdef012345] x\n", out.String())
	assert.Contains(t, errs.String(), "7 console lines of running workunits not shown")

	assert.Equal(t, "[? abcdef012345] ", consolePrefix("", key))
	assert.Equal(t, "[local] ", consolePrefix("local", workunit.Key{}))
}
