// Package devprof writes the profiles a developer asks of riot's commands
// through the environment, for docs/benchmarks.md's figures: a CPU
// profile of the whole run (RIOT_CPUPROFILE) and the heap profile at the
// heap's largest (RIOT_MEMPROFILE). They are tools, not features: nothing
// is written unless the variable is set.
package devprof

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// FromEnv starts the profiles that MemProfileEnv and CPUProfileEnv ask
// for, if any, and returns what stops them and writes their files (with
// the error of any that could not be). A name's $PID is this process's
// id: riot-bench's workers share one environment. command names the
// command in what it prints.
func FromEnv(command string) (stop func() error, err error) {
	pid := strconv.Itoa(os.Getpid())
	var stops []func() error
	if path := os.Getenv(CPUProfileEnv); path != "" {
		s, err := StartCPUProfile(strings.ReplaceAll(path, "$PID", pid))
		if err != nil {
			return nil, err
		}
		stops = append(stops, s)
	}
	if path := os.Getenv(MemProfileEnv); path != "" {
		stops = append(stops, StartPeakProfile(command, strings.ReplaceAll(path, "$PID", pid)).Stop)
	}
	return func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}, nil
}

// MemProfileEnv names the environment variable that, set to a file name,
// has the command write a heap profile there as it exits: the profile taken
// when the heap in use was at its largest (sampled every tenth of a
// second). It is a developer's tool, for docs/benchmarks.md's figures of
// who holds the memory at the peak: go tool pprof -sample_index
// inuse_space BINARY FILE.
const MemProfileEnv = "RIOT_MEMPROFILE"

// CPUProfileEnv names the environment variable that, set to a file name,
// has the command write a CPU profile of its whole run there (all its
// parts: with riot-worker eval's embedded default, the tracker's, the
// worker's and the master's), for docs/benchmarks.md's figures of where
// the time goes: go tool pprof -top BINARY FILE.
const CPUProfileEnv = "RIOT_CPUPROFILE"

// StartCPUProfile starts the CPU profile for path and returns what stops
// it and closes the file.
func StartCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CPUProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", CPUProfileEnv, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", CPUProfileEnv, err)
		}
		return nil
	}, nil
}

// PeakProfiler keeps the heap profile of the largest heap seen so far.
type PeakProfiler struct {
	path    string
	command string // names the command in what Stop prints
	stop    chan struct{}
	done    chan struct{}
	peak    uint64
	prof    bytes.Buffer
}

// StartPeakProfile starts sampling the heap for path; Stop writes the
// profile and says so on stderr, naming command.
func StartPeakProfile(command, path string) *PeakProfiler {
	p := &PeakProfiler{command: command, path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *PeakProfiler) loop() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > p.peak+p.peak/20 {
			// Another 5% over the last profile's: profile this one.
			p.peak = ms.HeapInuse
			p.prof.Reset()
			_ = pprof.Lookup("heap").WriteTo(&p.prof, 0)
		}
	}
}

// Stop ends the sampling and writes the peak's profile to the file.
func (p *PeakProfiler) Stop() error {
	close(p.stop)
	<-p.done
	if err := os.WriteFile(p.path, p.prof.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", MemProfileEnv, err)
	}
	fmt.Fprintf(os.Stderr, "%s: the heap profile at a heap in use of %d MiB: %s\n", cmp.Or(p.command, os.Args[0]), p.peak>>20, p.path)
	return nil
}
