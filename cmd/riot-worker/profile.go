package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// memProfileEnv names the environment variable that, set to a file name,
// has riot-worker write a heap profile there as it exits: the profile taken
// when the heap in use was at its largest (sampled every tenth of a
// second). It is a developer's tool, for docs/benchmarks.md's figures of
// who holds the memory at the peak: go tool pprof -sample_index
// inuse_space riot-worker FILE.
const memProfileEnv = "RIOT_MEMPROFILE"

// cpuProfileEnv names the environment variable that, set to a file name,
// has riot-worker write a CPU profile of its whole run there (all its
// parts: with eval's embedded default, the tracker's, the worker's and
// the master's), for docs/benchmarks.md's figures of where the time goes:
// go tool pprof -top riot-worker FILE.
const cpuProfileEnv = "RIOT_CPUPROFILE"

// startCPUProfile starts the CPU profile for path and returns what stops
// it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("riot-worker: %s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("riot-worker: %s: %w", cpuProfileEnv, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("riot-worker: %s: %w", cpuProfileEnv, err)
		}
		return nil
	}, nil
}

// peakProfiler keeps the heap profile of the largest heap seen so far.
type peakProfiler struct {
	path string
	stop chan struct{}
	done chan struct{}
	peak uint64
	prof bytes.Buffer
}

// startPeakProfile starts sampling the heap for path; Stop writes the
// profile.
func startPeakProfile(path string) *peakProfiler {
	p := &peakProfiler{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *peakProfiler) loop() {
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
func (p *peakProfiler) Stop() error {
	close(p.stop)
	<-p.done
	if err := os.WriteFile(p.path, p.prof.Bytes(), 0o644); err != nil {
		return fmt.Errorf("riot-worker: %s: %w", memProfileEnv, err)
	}
	fmt.Fprintf(os.Stderr, "riot-worker: the heap profile at a heap in use of %d MiB: %s\n", p.peak>>20, p.path)
	return nil
}
