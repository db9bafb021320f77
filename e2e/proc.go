package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultStopTimeout bounds how long Process.Close waits for a process to
// exit after SIGTERM before it sends SIGKILL.
const DefaultStopTimeout = 10 * time.Second

// ErrNotRunning is returned by the methods of Process that need a running
// process, when it has exited or was never started.
var ErrNotRunning = errors.New("e2e: process not running")

// Process is a command of riot (riotd, riot-worker) run as a child
// process, with its standard output and standard error captured line by
// line. A Process can be started again after it exits (Start), with the
// same arguments or new ones (Args): its log keeps the lines of every run,
// each run's begun with a marker line, and the waits on the log
// (WaitLog) see only the current run's lines unless told otherwise.
//
// The children are killed when the process that started them dies (on
// Linux, with the parent-death signal), so a test binary that crashes does
// not leave them behind.
//
// A Process is safe for concurrent use.
type Process struct {
	// Label names the process in its log's marker lines and in errors,
	// e.g. "riotd" or "riot-worker w1".
	Label string

	mu      sync.Mutex
	path    string
	args    []string
	env     []string
	dir     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current run has exited
	exitErr error         // the current run's Wait error
	runs    int

	lines    []string
	partial  []byte        // an unfinished line (per stream)
	errPart  []byte        // same for stderr
	runStart int           // index in lines of the current run's first line
	changed  chan struct{} // closed and replaced on each new line and exit
}

// NewProcess returns a Process for the program at path with args, not yet
// started. env is added to the environment of the test (with RIOT_TRACKER
// and RIOT_TOKEN removed from it, so that a developer's settings never
// leak into a test); dir is the working directory ("" the current one).
func NewProcess(label, path string, args, env []string, dir string) *Process {
	return &Process{
		Label:   label,
		path:    path,
		args:    slicesClone(args),
		env:     slicesClone(env),
		dir:     dir,
		changed: make(chan struct{}),
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// Args returns the arguments of the next Start.
func (p *Process) Args() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slicesClone(p.args)
}

// SetArgs sets the arguments of the next Start.
func (p *Process) SetArgs(args []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = slicesClone(args)
}

// Start runs the program. It fails with an error when the process is
// running already or cannot be started.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("e2e: %s: start: already running (pid %d)", p.Label, p.cmd.Process.Pid)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Dir = p.dir
	cmd.Env = childEnv(p.env)
	cmd.Stdout = streamWriter{p: p, stderr: false}
	cmd.Stderr = streamWriter{p: p, stderr: true}
	cmd.SysProcAttr = sysProcAttr()
	p.runs++
	p.partial, p.errPart = nil, nil
	p.appendLocked(fmt.Sprintf("=== e2e: %s run %d: %s %s", p.Label, p.runs, p.path, strings.Join(p.args, " ")))
	p.runStart = len(p.lines)
	if err := cmd.Start(); err != nil {
		p.appendLocked(fmt.Sprintf("=== e2e: %s did not start: %v", p.Label, err))
		return fmt.Errorf("e2e: %s: start: %w", p.Label, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.exitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.flushLocked()
		if p.cmd == cmd {
			p.exitErr = err
		}
		state := "exited"
		if cmd.ProcessState != nil {
			state = cmd.ProcessState.String()
		}
		p.appendLocked(fmt.Sprintf("=== e2e: %s (pid %d) %s", p.Label, cmd.Process.Pid, state))
		close(done)
		p.mu.Unlock()
	}()
	return nil
}

func closed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// childEnv is the test's environment without riot's own settings, plus
// extra.
func childEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "RIOT_TRACKER=") || strings.HasPrefix(kv, "RIOT_TOKEN=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// Running reports whether the process has been started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// Pid returns the process id of the current run, 0 before the first.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited returns a channel closed when the current run has exited (closed
// already when there is none).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// ExitCode returns the exit status of the last run once it has exited: -1
// for a process ended by a signal. ok is false while it runs.
func (p *Process) ExitCode() (code int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !closed(p.done) {
		return 0, false
	}
	return p.cmd.ProcessState.ExitCode(), true
}

// Signal sends sig to the running process (SIGSTOP and SIGCONT make a
// process that stops answering without closing its connections).
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return fmt.Errorf("e2e: %s: signal %v: %w", p.Label, sig, ErrNotRunning)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("e2e: %s: signal %v: %w", p.Label, sig, err)
	}
	return nil
}

// Wait waits until the current run exits and returns its exit status (-1
// when a signal ended it), or ctx's error.
func (p *Process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.Exited():
	case <-ctx.Done():
		return 0, fmt.Errorf("e2e: %s: waiting for exit: %w", p.Label, ctx.Err())
	}
	code, _ := p.ExitCode()
	return code, nil
}

// Kill sends SIGKILL (kill -9) and waits until the process has exited: no
// goodbye to anyone, as when a machine dies. Killing a process that is not
// running does nothing.
func (p *Process) Kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("e2e: %s: kill: %w", p.Label, err)
	}
	<-done
	return nil
}

// Stop sends SIGTERM and waits until the process exits, or ctx ends; it
// returns the exit status. A process that is not running gives its last
// exit status (0 if it never ran).
func (p *Process) Stop(ctx context.Context) (int, error) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return 0, nil
	}
	if !closed(done) {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return 0, fmt.Errorf("e2e: %s: stop: %w", p.Label, err)
		}
	}
	select {
	case <-done:
	case <-ctx.Done():
		return 0, fmt.Errorf("e2e: %s: no exit after SIGTERM: %w", p.Label, ctx.Err())
	}
	return cmd.ProcessState.ExitCode(), nil
}

// Close ends the process however it can: SIGTERM, then SIGKILL after
// DefaultStopTimeout. It reports whether SIGTERM sufficed.
func (p *Process) Close() (graceful bool) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultStopTimeout)
	defer cancel()
	if _, err := p.Stop(ctx); err == nil {
		return true
	}
	_ = p.Kill()
	return false
}

// streamWriter splits one output stream of the process into lines.
type streamWriter struct {
	p      *Process
	stderr bool
}

func (w streamWriter) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	part := &p.partial
	if w.stderr {
		part = &p.errPart
	}
	buf := append(*part, b...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		p.appendLocked(string(buf[:i]))
		buf = buf[i+1:]
	}
	*part = append([]byte(nil), buf...)
	return len(b), nil
}

// flushLocked appends unfinished lines, at exit.
func (p *Process) flushLocked() {
	for _, part := range []*[]byte{&p.partial, &p.errPart} {
		if len(*part) > 0 {
			p.appendLocked(string(*part))
			*part = nil
		}
	}
}

func (p *Process) appendLocked(line string) {
	p.lines = append(p.lines, line)
	close(p.changed)
	p.changed = make(chan struct{})
}

// Log returns every line the process wrote, of every run, with the
// harness's marker lines ("=== e2e: ...") between runs.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// Mark returns a position in the log, for WaitLogAfter and CountLogAfter:
// the lines written from now on.
func (p *Process) Mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// RunMark returns the position of the current run's first line.
func (p *Process) RunMark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runStart
}

// WaitLog waits until a line of the current run matches re and returns
// its submatches (re.FindStringSubmatch), or fails when ctx ends or the
// process exits first.
func (p *Process) WaitLog(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	return p.WaitLogAfter(ctx, p.RunMark(), re)
}

// WaitLogAfter waits until a line at or after mark matches re, as WaitLog.
func (p *Process) WaitLogAfter(ctx context.Context, mark int, re *regexp.Regexp) ([]string, error) {
	for i := mark; ; {
		p.mu.Lock()
		for ; i < len(p.lines); i++ {
			if m := re.FindStringSubmatch(p.lines[i]); m != nil {
				p.mu.Unlock()
				return m, nil
			}
		}
		changed, done := p.changed, p.done
		p.mu.Unlock()
		if closed(done) {
			// One more pass: lines written just before the exit.
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if i < n {
				continue
			}
			return nil, fmt.Errorf("e2e: %s exited before a line matched %q", p.Label, re)
		}
		select {
		case <-changed:
		case <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("e2e: %s: waiting for a line matching %q: %w", p.Label, re, ctx.Err())
		}
	}
}

// CountLogAfter returns how many lines at or after mark match re.
func (p *Process) CountLogAfter(mark int, re *regexp.Regexp) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines[min(mark, len(p.lines)):] {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}
