package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
)

// bigScript sends one Float64Array of N elements to a worker, captured,
// and has the worker return a copy with one element changed (another
// blob, uploaded again): the value goes master → riotd → worker and back,
// each way as a blob in pieces. It prints the times and the master's own
// peak memory, once when doWork returns (the value sent: its upload's
// peak) and once at the end (the result received too).
const bigScript = `
const n = %d
const big = new Float64Array(n)
for (let i = 0; i < n; i += 512) big[i] = i
const t0 = Date.now()
const id = riot.doWork(() => { const a = new Float64Array(big); a[1] = -1; return a })
const t1 = Date.now()
const hwmUp = riot.readLines('/proc/self/status').find((l) => l.startsWith('VmHWM'))
const back = riot.waitUntilDone(id)
const t2 = Date.now()
let ok = back.length === n && back[1] === -1
for (let i = 512; i < n && ok; i += 512) ok = back[i] === i
const hwm = riot.readLines('/proc/self/status').find((l) => l.startsWith('VmHWM'))
console.log(JSON.stringify({ up: t1 - t0, total: t2 - t0, ok, hwm, hwmUp }))
`

// bigResult is one --big run.
type bigResult struct {
	store     string
	bytes     int64 // the value's encoded size
	up, total time.Duration
	// Peak resident memory of each process, from /proc/PID/status: VmHWM
	// where it could be read at the end, else the largest VmRSS sampled.
	masterHWM, riotdHWM, workerHWM int64
	// masterUpHWM is the master's VmHWM when doWork returned: the peak of
	// sending the value, before the result came.
	masterUpHWM int64
	// riotd's and the worker's resident memory before the run.
	riotdBase, workerBase int64
	masterSampled         int64
	// CPU time (user and system) each process spent on the run.
	masterCPU, riotdCPU, workerCPU time.Duration
	// followersHWM is the largest VmHWM of the followers, with replicas
	// (riotd's figures are the leader's).
	followersHWM int64
}

// runBig measures one value of cfg.big bytes through riotd and one worker
// and back, in each store.
func (b *bench) runBig(ctx context.Context, w io.Writer) error {
	n := b.cfg.big / 8
	script := filepath.Join(b.tmp, "big.js")
	if err := os.WriteFile(script, fmt.Appendf(nil, bigScript, n), 0o644); err != nil {
		return err
	}
	var results []bigResult
	for _, store := range b.cfg.stores {
		r, err := b.bigOnce(ctx, store, script)
		if err != nil {
			return b.failed(fmt.Errorf("--big, %s: %w", store, err))
		}
		results = append(results, r)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
	fmt.Fprintf(w, "riot-bench %s\n%s, load %s\n\n", strings.Join(b.cfg.args, " "), environment(), loadAverage())
	fmt.Fprintln(w, "| store | value | master → worker (doWork) | round trip (→ worker → back) | throughput, both ways | master peak (VmHWM; when doWork returned) | riotd peak (VmHWM; before) | worker peak (VmHWM; before) | CPU: master, riotd, worker |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		rate := 2 * float64(r.bytes) / r.total.Seconds() / 1e6
		riotd := fmt.Sprintf("%s; %s", mib(r.riotdHWM), mib(r.riotdBase))
		if r.store == "replicas" {
			riotd = fmt.Sprintf("leader %s; %s; followers %s", mib(r.riotdHWM), mib(r.riotdBase), mib(r.followersHWM))
		}
		fmt.Fprintf(w, "| %s | %s | %v (%.0f MB/s) | %v | %.0f MB/s | %s; %s | %s | %s; %s | %.2fs, %.2fs, %.2fs |\n", r.store, mib(r.bytes),
			r.up.Round(time.Millisecond), float64(r.bytes)/r.up.Seconds()/1e6, r.total.Round(time.Millisecond), rate,
			mib(r.masterHWM), mib(r.masterUpHWM), riotd, mib(r.workerHWM), mib(r.workerBase),
			r.masterCPU.Seconds(), r.riotdCPU.Seconds(), r.workerCPU.Seconds())
	}
	return nil
}

func (b *bench) bigOnce(ctx context.Context, store, script string) (bigResult, error) {
	res := bigResult{store: store, bytes: b.cfg.big + 7}
	sv, err := b.serve(ctx, store)
	if err != nil {
		return res, err
	}
	defer sv.close()
	tr, addr := sv.tr, sv.addr
	// With replicas, riotd's figures are the leader's; the followers'
	// peak too.
	followersHWM := func() (most int64) {
		if sv.rs == nil {
			return 0
		}
		for i := range sv.rs.Len() {
			if i != sv.leader {
				v, _ := procMem(sv.rs.Proc(i).Pid(), "VmHWM")
				most = max(most, v)
			}
		}
		return most
	}
	wk, err := e2e.LaunchWorker(ctx, b.bins, addr, e2e.WorkerOptions{Name: "big", Slots: 1, Label: "riot-worker big (" + store + ")"})
	if err != nil {
		return res, err
	}
	b.procs = append(b.procs, wk.Process)
	defer wk.Close()
	if _, err := tr.WaitStatus(ctx, func(s tracker.Status) bool { return len(s.Workers) == 1 }); err != nil {
		return res, err
	}
	res.riotdBase, _ = procMem(tr.Pid(), "VmHWM")
	res.workerBase, _ = procMem(wk.Pid(), "VmHWM")
	riotdCPU0, workerCPU0 := procCPU(tr.Pid()), procCPU(wk.Pid())

	cmd := exec.CommandContext(ctx, b.bins.RiotWorker, "eval", "--tracker", addr, script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	// Sample the master's resident memory while it runs: its VmHWM is
	// gone with it (the script prints its own, which is the same).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := procMem(cmd.Process.Pid, "VmRSS"); err == nil {
				res.masterSampled = max(res.masterSampled, v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err = cmd.Wait()
	close(stop)
	wg.Wait()
	if err != nil {
		return res, fmt.Errorf("riot-worker eval: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Up, Total int64
		OK        bool
		HWM       string
		HWMUp     string
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		return res, fmt.Errorf("the script printed %q: %w", stdout.String(), err)
	}
	if !out.OK {
		return res, fmt.Errorf("the value came back changed")
	}
	res.up, res.total = time.Duration(out.Up)*time.Millisecond, time.Duration(out.Total)*time.Millisecond
	res.masterCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	res.riotdCPU, res.workerCPU = procCPU(tr.Pid())-riotdCPU0, procCPU(wk.Pid())-workerCPU0
	res.masterHWM = max(parseKB(out.HWM), res.masterSampled)
	res.masterUpHWM = parseKB(out.HWMUp)
	if res.riotdHWM, err = procMem(tr.Pid(), "VmHWM"); err != nil {
		return res, err
	}
	if res.workerHWM, err = procMem(wk.Pid(), "VmHWM"); err != nil {
		return res, err
	}
	res.followersHWM = followersHWM()
	return res, nil
}

// procMem returns a field of /proc/PID/status in bytes ("VmHWM: 1234 kB").
func procMem(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), field+":") {
			return parseKB(sc.Text()), nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// procCPU returns the CPU time (user and system) process pid has used,
// from /proc/PID/stat (in clock ticks of 10 ms); 0 if it cannot.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// parseKB reads "VmHWM:   1234 kB" as bytes; 0 if it cannot.
func parseKB(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}
