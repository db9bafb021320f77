package e2e_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
)

// lineStream reads a pipe's lines as they come: each to a channel, and
// all of them kept, for the end.
type lineStream struct {
	ch   chan string
	mu   sync.Mutex
	all  []string
	done chan struct{}
}

func readLines(r io.Reader) *lineStream {
	s := &lineStream{ch: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.mu.Lock()
			s.all = append(s.all, sc.Text())
			s.mu.Unlock()
			s.ch <- sc.Text()
		}
	}()
	return s
}

// wait returns the submatches of the first line from now on that matches
// re, failing the test when ctx ends or the stream does first.
func (s *lineStream) wait(t *testing.T, ctx context.Context, re *regexp.Regexp) []string {
	t.Helper()
	for {
		select {
		case line, ok := <-s.ch:
			if !ok {
				t.Fatalf("the output ended before a line matched %q", re)
			}
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-ctx.Done():
			t.Fatalf("no line matched %q: %v", re, ctx.Err())
		}
	}
}

func (s *lineStream) lines() []string {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.all...)
}

// waitEval waits for the eval's output to end, then for its process: Wait
// closes the pipes, so a Wait before the last lines were read could lose
// them (it did: the result line of a workunit that had just ended).
func waitEval(cmd *exec.Cmd, stdout, stderr *lineStream) error {
	<-stdout.done
	<-stderr.done
	return cmd.Wait()
}

// evalCmd starts riot-worker eval ARGS with its stdout and stderr read
// as streams.
func evalCmd(t *testing.T, ctx context.Context, args ...string) (*exec.Cmd, *lineStream, *lineStream) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bins.RiotWorker, append([]string{"eval"}, args...)...)
	cmd.Dir = bins.Root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RIOT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	return cmd, readLines(stdout), readLines(stderr)
}

// A workunit's console lines reach the master while it runs: the first
// line shows on riot-worker eval's stdout (console.log) and the warning
// on its stderr (console.warn), each prefixed with the worker and the
// workunit's short key, while the tracker still reports the workunit
// running, which the test then cancels from outside. A workunit that
// streams and then ends shows every line once, in order, and riot-worker
// logs has them all.
func TestE2E_LiveConsole(t *testing.T) {
	t.Parallel()
	tr := bins.StartTracker(t, e2e.TrackerOptions{})
	bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "live-w", Slots: 1})
	tr.WaitFor(t, workers(1))
	ctx := e2e.Context(t, e2e.DefaultWait)

	// It never ends by itself: only the cancel below ends it.
	cmd, stdout, stderr := evalCmd(t, ctx, "--tracker", tr.Addr(), "--job", "live-e2e",
		"-e", "console.log('first line'); console.warn('a warning'); for (;;) sleep(1)")
	m := stdout.wait(t, ctx, regexp.MustCompile(`^\[live-w ([0-9a-f]{12})\] first line$`))
	short := m[1]
	stderr.wait(t, ctx, regexp.MustCompile(`^\[live-w `+short+`\] a warning$`))
	st, err := tr.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Workunits.Running, "the lines came while the workunit runs")

	res := bins.RunWorker(t, []string{"RIOT_TRACKER=" + tr.Addr()}, "cancel", "live-e2e")
	require.Equal(t, 0, res.Code, res.String())
	err = waitEval(cmd, stdout, stderr)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the canceled workunit fails the eval")
	out, errs := stdout.lines(), stderr.lines()
	assert.Equal(t, []string{"[live-w " + short + "] first line"}, out, "once, on stdout")
	assert.Contains(t, strings.Join(errs, "\n"), "canceled")
	assert.Equal(t, 1, strings.Count(strings.Join(errs, "\n"), "a warning"), "once, on stderr")

	// Streams, then ends: a line before a busy wait far past the batch's
	// delay, one after it, and the result.
	cmd, stdout, stderr = evalCmd(t, ctx, "--tracker", tr.Addr(),
		"-e", "console.log('before'); const t0 = Date.now(); while (Date.now() - t0 < 1500) {} console.log('after'); console.error('oops'); 42")
	stdout.wait(t, ctx, regexp.MustCompile(`\] before$`))
	require.NoError(t, waitEval(cmd, stdout, stderr))
	out = stdout.lines()
	require.Len(t, out, 3, "%q", out)
	m = regexp.MustCompile(`^\[live-w ([0-9a-f]{12})\] before$`).FindStringSubmatch(out[0])
	require.NotNil(t, m, "%q", out)
	assert.Equal(t, []string{"[live-w " + m[1] + "] before", "[live-w " + m[1] + "] after", "42"}, out)
	assert.Equal(t, []string{"[live-w " + m[1] + "] oops"}, stderr.lines())

	res = bins.RunWorker(t, []string{"RIOT_TRACKER=" + tr.Addr()}, "logs", m[1])
	require.Equal(t, 0, res.Code, res.String())
	assert.Regexp(t, `(?s)before.*after.*oops`, res.Stdout, "the run's console has the streamed lines and the rest")
}
