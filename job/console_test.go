package job

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/riot-go/riot/workunit"
)

// TestPrintConsole_EachLinePrefixed: a console text of several lines has
// the worker's name before each of them, not only the first.
func TestPrintConsole_EachLinePrefixed(t *testing.T) {
	var b strings.Builder
	printConsole(&b, "w1", workunit.EncodeConsole([]workunit.ConsoleLine{
		{Level: workunit.LevelLog, Text: "one\ntwo"},
		{Level: workunit.LevelError, Text: "three"},
	}))
	assert.Equal(t, "[w1] one\n[w1] two\n[w1] three\n", b.String())
}
