package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// daskScript measures Dask distributed as riot-bench measures riot; see
// its docstring.
//
//go:embed peers/dask_bench.py
var daskScript []byte

// peerResult is what the peer's script measured, as it reports it in JSON.
type peerResult struct {
	Peer      string    `json:"peer"`
	Version   string    `json:"version"`
	Python    string    `json:"python"`
	Setup     string    `json:"setup"`
	N         int       `json:"n"`
	Seconds   float64   `json:"seconds"`
	Latencies []float64 `json:"latencies"` // seconds, one per task
}

// peer is a measured peer: its report and the same measures as riot's.
type peer struct {
	peerResult
	rate    rate
	latency latency
}

// parsePeer reads a peer script's JSON report.
func parsePeer(out []byte) (peer, error) {
	var p peer
	if err := json.Unmarshal(bytes.TrimSpace(out), &p.peerResult); err != nil {
		return peer{}, fmt.Errorf("its report does not decode (%w): %q", err, clip(out, 200))
	}
	if p.N <= 0 || p.Seconds <= 0 || len(p.Latencies) == 0 {
		return peer{}, fmt.Errorf("its report measured nothing: %q", clip(out, 200))
	}
	p.rate = rate{n: p.N, elapsed: time.Duration(p.Seconds * float64(time.Second))}
	lat := make([]time.Duration, len(p.Latencies))
	for i, s := range p.Latencies {
		lat[i] = time.Duration(s * float64(time.Second))
	}
	p.latency = distribution(lat)
	return p, nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// pythonWithDask returns a Python that can import distributed: the one
// given, else python3 on PATH, else /usr/bin/python3 (Debian's
// python3-distributed installs there, beside a pyenv's python3).
func pythonWithDask(ctx context.Context, given string) (string, error) {
	candidates := []string{"python3", "/usr/bin/python3"}
	if given != "" {
		candidates = []string{given}
	}
	var tried []string
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		out, err := exec.CommandContext(ctx, path, "-c", "import distributed").CombinedOutput()
		if err == nil {
			return path, nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, lastLine(out, err)))
	}
	return "", fmt.Errorf("no Python with dask.distributed (%s): install it (Debian and Ubuntu: apt-get install python3-distributed; else pip install \"dask[distributed]\"), or give --python PATH",
		strings.Join(tried, "; "))
}

func lastLine(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	return err.Error()
}

// runDask measures Dask distributed with as many worker processes and
// threads as riot's run has workers and slots.
func (b *bench) runDask(ctx context.Context) (peer, error) {
	py, err := pythonWithDask(ctx, b.cfg.python)
	if err != nil {
		return peer{}, err
	}
	script := filepath.Join(b.tmp, "dask_bench.py")
	if err := os.WriteFile(script, daskScript, 0o644); err != nil {
		return peer{}, err
	}
	fmt.Fprintf(b.log, "riot-bench: Dask distributed (%s): throughput, %d workers, %d tasks; latency, %d tasks one at a time\n",
		py, b.cfg.workers, b.cfg.peerN, b.cfg.peerLatencyN)
	cmd := exec.CommandContext(ctx, py, script,
		"--workers", strconv.Itoa(b.cfg.workers), "--threads", strconv.Itoa(b.cfg.slots),
		"--n", strconv.Itoa(b.cfg.peerN), "--warmup", strconv.Itoa(min(b.cfg.warmup, b.cfg.peerN)),
		"--latency-n", strconv.Itoa(b.cfg.peerLatencyN))
	cmd.Dir = b.tmp
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return peer{}, fmt.Errorf("%s %s: %w\n%s", py, script, err, clip(stderr.Bytes(), 4000))
	}
	p, err := parsePeer(stdout.Bytes())
	if err != nil {
		return peer{}, fmt.Errorf("%s %s: %w", py, script, err)
	}
	return p, nil
}
