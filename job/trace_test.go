package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/engine/master"
)

// traceFile is what the tests read of a trace.
type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   int64          `json:"ts"`
		Dur  *int64         `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
	OtherData map[string]any `json:"otherData"`
}

func parseTrace(t *testing.T, b []byte) traceFile {
	t.Helper()
	require.True(t, json.Valid(b), "%s", b)
	var tf traceFile
	require.NoError(t, json.Unmarshal(b, &tf))
	return tf
}

func writeJob(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.js")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// TestRun_Trace: Options.Trace gets a run per workunit on the local
// worker, of its duration at least, and a memoized answer as an
// instant.
func TestRun_Trace(t *testing.T) {
	t.Parallel()
	script := writeJob(t, `
const spin = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} return ms; };
console.log(JSON.stringify(riot.forWork([60, 1, 2], spin)));
console.log(riot.waitUntilDone(riot.doWork(spin, 5)), riot.waitUntilDone(riot.doWork(spin, 5)));
`)
	var buf bytes.Buffer
	stdout, stderr, err := runJob(t, Options{Script: script, Workers: 2, Trace: &buf})
	require.NoError(t, err, stderr)
	assert.Equal(t, "[60,1,2]\n5 5\n", stdout)
	tf := parseTrace(t, buf.Bytes())
	procs := map[int]string{}
	var runs, memo int
	for _, ev := range tf.TraceEvents {
		switch {
		case ev.Name == "process_name":
			procs[ev.Pid] = ev.Args["name"].(string)
		case ev.Cat == "run":
			runs++
			require.NotNil(t, ev.Dur)
		case ev.Cat == "outcome":
			memo++
			assert.Equal(t, "from memory", threadName(tf, ev.Pid, ev.Tid))
		}
	}
	assert.Equal(t, 4, runs, "the fifth workunit is the fourth's: from memory")
	assert.Equal(t, 1, memo)
	assert.Equal(t, "job.js", procs[1])
	assert.Equal(t, "local", procs[2])
	// The longest run is the spin of 60 ms (by Date.now()'s milliseconds),
	// at least 50 ms. (Only a lower bound: on a loaded machine a spin of
	// 5 ms can last as long.)
	var longest float64
	for _, ev := range tf.TraceEvents {
		if ev.Cat == "run" {
			longest = max(longest, float64(*ev.Dur))
		}
	}
	assert.GreaterOrEqual(t, longest, 50_000.0, "the 60 ms workunit's run lasts 50 ms at least")
	assert.EqualValues(t, 5, tf.OtherData["submissions"])
	assert.EqualValues(t, 1, tf.OtherData["from_memory"])
}

func threadName(tf traceFile, pid, tid int) string {
	for _, ev := range tf.TraceEvents {
		if ev.Name == "thread_name" && ev.Pid == pid && ev.Tid == tid {
			return ev.Args["name"].(string)
		}
	}
	return ""
}

// TestRun_TraceOfAFailedScript: a script that throws still gets its
// trace, with the workunit that failed.
func TestRun_TraceOfAFailedScript(t *testing.T) {
	t.Parallel()
	script := writeJob(t, `riot.forWork([1, 2], (n) => { if (n === 2) throw new TypeError('two'); return n; });`)
	var buf bytes.Buffer
	_, _, err := runJob(t, Options{Script: script, Workers: 1, Trace: &buf})
	var se *master.ScriptError
	require.True(t, errors.As(err, &se), "%v", err)
	tf := parseTrace(t, buf.Bytes())
	var failed []string
	for _, ev := range tf.TraceEvents {
		if ev.Cat == "run,error" {
			failed = append(failed, ev.Args["error"].(string))
		}
	}
	assert.Equal(t, []string{"TypeError: two"}, failed)
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRun_TraceWriteError: a trace that cannot be written is Run's
// *TraceError, which keeps the script's own error.
func TestRun_TraceWriteError(t *testing.T) {
	t.Parallel()
	ok := writeJob(t, `riot.forWork([1], (n) => n);`)
	_, _, err := runJob(t, Options{Script: ok, Workers: 1, Trace: brokenWriter{}})
	var te *TraceError
	require.True(t, errors.As(err, &te), "%v", err)
	assert.NoError(t, te.Script)
	assert.Equal(t, "job: the trace was not written: timeline: writing the trace: disk full", err.Error())

	bad := writeJob(t, `throw new Error('no');`)
	_, _, err = runJob(t, Options{Script: bad, Workers: 1, Trace: brokenWriter{}})
	require.True(t, errors.As(err, &te), "%v", err)
	var se *master.ScriptError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.True(t, strings.HasSuffix(err.Error(), "; job: the trace was not written: timeline: writing the trace: disk full"), err.Error())
}

// TestRunCommand_Trace: --trace FILE is written; one that cannot be
// created fails before the script runs; -e refuses it.
func TestRunCommand_Trace(t *testing.T) {
	t.Parallel()
	script := writeJob(t, `console.log(riot.forWork([1, 2], (n) => n * 2).join(','));`)
	path := filepath.Join(t.TempDir(), "job.trace.json")
	var stdout, stderr bytes.Buffer
	err := RunCommand(t.Context(), CommandOptions{Job: Options{Script: script, Workers: 1, Progress: ProgressOff}, Trace: path}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Equal(t, "2,4\n", stdout.String())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	tf := parseTrace(t, b)
	assert.EqualValues(t, 2, tf.OtherData["runs"])

	stdout.Reset()
	stderr.Reset()
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "t.json")
	err = RunCommand(t.Context(), CommandOptions{Job: Options{Script: script, Workers: 1, Progress: ProgressOff}, Trace: missing}, &stdout, &stderr)
	require.Error(t, err)
	assert.Empty(t, stdout.String(), "the script did not run")
	assert.Equal(t, "riot-worker eval: --trace "+missing+": open "+missing+": no such file or directory "+
		"(give a file in a directory that exists and that you may write)\n", stderr.String())

	_, err = parseFlags(t, []string{"--trace", path, "-e", "1"})
	assert.EqualError(t, err, "--trace is for job scripts (SCRIPT.js), not -e: leave it out")
	_, err = parseFlags(t, []string{"--trace=", script})
	assert.EqualError(t, err, "--trace needs a FILE to write the timeline to: give --trace job.trace.json")
	o, err := parseFlags(t, []string{"--trace", path, script})
	require.NoError(t, err)
	assert.Equal(t, path, o.Trace)
}

// TestRunCommand_TraceNotWritten: a --trace FILE whose write fails (a
// full disk: /dev/full) is said on stderr, after the script's output, and
// fails the command.
func TestRunCommand_TraceNotWritten(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	script := writeJob(t, `console.log(riot.forWork([1], (n) => n).join(','));`)
	var stdout, stderr bytes.Buffer
	err := RunCommand(t.Context(), CommandOptions{Job: Options{Script: script, Workers: 1, Progress: ProgressOff}, Trace: "/dev/full"}, &stdout, &stderr)
	var te *TraceError
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Equal(t, "1\n", stdout.String())
	assert.Equal(t, "riot-worker eval: --trace /dev/full: the trace was not written: write /dev/full: no space left on device\n", stderr.String())
}
