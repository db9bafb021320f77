package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker"
)

// TrackerOptions configure a riotd process.
type TrackerOptions struct {
	// Data is the directory of the durable store (--data). Empty: the
	// tracker keeps everything in memory (--memory), unless Durable.
	Data string
	// Durable, with Data empty, keeps the store in a new temporary
	// directory: t.TempDir() for StartTracker; LaunchTracker requires Data.
	Durable bool
	// Port is the port to listen on, on 127.0.0.1; 0 picks a free one.
	// Restart keeps the port of the first start.
	Port int
	// Args are more flags for riotd, e.g. "--max-lost", "2". The harness
	// gives --listen, --port, --log-format json and --data or --memory
	// itself: do not repeat them.
	Args []string
	// Env is added to riotd's environment.
	Env []string
	// Label names the process in logs (default "riotd").
	Label string
	// Scheme is the scheme of the HTTP endpoints (/status, /metrics):
	// "http" by default, "https" for a tracker serving TLS (give its
	// flags in Args and a client that trusts it in HTTPClient).
	Scheme string
	// HTTPClient reads /status and /metrics (default: a client with a
	// 5 s timeout).
	HTTPClient *http.Client
}

// Tracker is a riotd process listening on 127.0.0.1. Its log is JSON
// (--log-format json), one object per line: wait for a message with
// WaitLog(ctx, e2e.LogMsg("workunit reassigned")).
//
// A Tracker is safe for concurrent use.
type Tracker struct {
	*Process
	opts TrackerOptions
	http *http.Client

	mu   sync.Mutex
	addr string
}

// Restored is what riotd found in its store when it started: its first
// log line ("riotd listening") counts the workunits by status.
type Restored struct {
	Done, Error, Waiting int
}

// LaunchTracker starts riotd and returns once it has bound its port and
// answers GET /status, or fails when ctx ends first. The caller must end
// the process (Close, Kill or Stop). Tests use Bins.StartTracker.
func LaunchTracker(ctx context.Context, bins Bins, opts TrackerOptions) (*Tracker, error) {
	if opts.Data == "" && opts.Durable {
		return nil, fmt.Errorf("e2e: launch tracker: Durable needs Data")
	}
	if opts.Label == "" {
		opts.Label = "riotd"
	}
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	tr := &Tracker{opts: opts, http: hc}
	tr.Process = NewProcess(opts.Label, bins.Riotd, tr.argsFor(opts.Port), opts.Env, bins.Root)
	if err := tr.start(ctx); err != nil {
		tr.Process.Close()
		return nil, err
	}
	return tr, nil
}

// StartTracker starts riotd for the test: in memory, or durable with
// opts.Durable (in t.TempDir()) or opts.Data. It fails the test if riotd
// does not come up, stops it when the test ends, and writes its log to the
// test's output if the test failed (or always with RIOT_E2E_LOG=1).
func (b Bins) StartTracker(t testing.TB, opts TrackerOptions) *Tracker {
	t.Helper()
	if opts.Durable && opts.Data == "" {
		opts.Data = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	tr, err := LaunchTracker(ctx, b, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cleanupProcess(t, tr.Process)
	return tr
}

func (tr *Tracker) argsFor(port int) []string {
	args := []string{"--listen", "127.0.0.1", "--port", strconv.Itoa(port), "--log-format", "json"}
	if tr.opts.Data != "" {
		args = append(args, "--data", tr.opts.Data)
	} else {
		args = append(args, "--memory")
	}
	return append(args, tr.opts.Args...)
}

// start runs the process and waits for its address and its status page.
func (tr *Tracker) start(ctx context.Context) error {
	if err := tr.Start(); err != nil {
		return err
	}
	m, err := tr.WaitLog(ctx, listeningRE)
	if err != nil {
		return err
	}
	addr, err := listenAddr(m[0])
	if err != nil {
		return fmt.Errorf("e2e: %s: %w", tr.Label, err)
	}
	tr.mu.Lock()
	tr.addr = addr
	tr.mu.Unlock()
	return CheckFor(ctx, 5*time.Millisecond, func() error {
		_, err := tr.Status(ctx)
		return err
	})
}

var listeningRE = regexp.MustCompile(`^\{.*"msg":"riotd listening".*\}$`)

// listenAddr reads the address from riotd's "riotd listening" JSON line;
// slog writes a *net.TCPAddr as {"IP":...,"Port":...}, a string as is.
func listenAddr(line string) (string, error) {
	var rec struct {
		Addr json.RawMessage `json:"addr"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return "", fmt.Errorf("reading the listening line %q: %w", line, err)
	}
	var s string
	if json.Unmarshal(rec.Addr, &s) == nil && s != "" {
		return s, nil
	}
	var a struct {
		IP   string
		Port int
	}
	if err := json.Unmarshal(rec.Addr, &a); err != nil || a.Port == 0 {
		return "", fmt.Errorf("no address in the listening line %q", line)
	}
	ip := a.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	return net.JoinHostPort(ip, strconv.Itoa(a.Port)), nil
}

// Addr returns the tracker's address, "127.0.0.1:PORT": what riot-worker,
// riot-worker eval --tracker and client.Dial take. It stays the same
// across Restart.
func (tr *Tracker) Addr() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.addr
}

// Data returns the data directory, "" for a tracker in memory.
func (tr *Tracker) Data() string { return tr.opts.Data }

// Restart starts riotd again on the same port and data directory (after a
// Kill or Stop; a running one is stopped first) and waits until it is up.
// Clients and workers reconnect by themselves. It fails if another socket
// took the port in the meantime (rare: the port was picked from the
// ephemeral range).
func (tr *Tracker) Restart(ctx context.Context) error {
	if tr.Running() {
		if _, err := tr.Stop(ctx); err != nil {
			return err
		}
	}
	_, port, err := net.SplitHostPort(tr.Addr())
	if err != nil {
		return fmt.Errorf("e2e: %s: restart: %w", tr.Label, err)
	}
	p, _ := strconv.Atoi(port)
	tr.SetArgs(tr.argsFor(p))
	return tr.start(ctx)
}

// Restored returns what the current run of riotd restored from its store,
// as its "riotd listening" line says.
func (tr *Tracker) Restored(ctx context.Context) (Restored, error) {
	m, err := tr.WaitLog(ctx, listeningRE)
	if err != nil {
		return Restored{}, err
	}
	var r Restored
	if err := json.Unmarshal([]byte(m[0]), &r); err != nil {
		return Restored{}, fmt.Errorf("e2e: %s: reading the listening line: %w", tr.Label, err)
	}
	return r, nil
}

func (tr *Tracker) get(ctx context.Context, path string) ([]byte, error) {
	url := tr.opts.Scheme + "://" + tr.Addr() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	resp, err := tr.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("e2e: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("e2e: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("e2e: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// Status returns the tracker's GET /status.
func (tr *Tracker) Status(ctx context.Context) (tracker.Status, error) {
	var st tracker.Status
	body, err := tr.get(ctx, "/status")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("e2e: decoding /status: %w", err)
	}
	return st, nil
}

// WaitStatus polls GET /status until cond holds and returns that status,
// or fails when ctx ends, with the last status in the error.
func (tr *Tracker) WaitStatus(ctx context.Context, cond func(tracker.Status) bool) (tracker.Status, error) {
	var st tracker.Status
	last := "none read"
	err := CheckFor(ctx, 5*time.Millisecond, func() error {
		s, err := tr.Status(ctx)
		if err != nil {
			return err
		}
		st, last = s, brief(s)
		if !cond(s) {
			return errors.New("condition not met")
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("e2e: %s: waiting for a status: %w; last status: %s", tr.Label, err, last)
	}
	return st, nil
}

// WaitFor is WaitStatus for tests: it fails the test when cond does not
// hold within DefaultWait.
func (tr *Tracker) WaitFor(t testing.TB, cond func(tracker.Status) bool) tracker.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), DefaultWait)
	defer cancel()
	st, err := tr.WaitStatus(ctx, cond)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return st
}

// brief is a status in one line, for errors.
func brief(st tracker.Status) string {
	w := st.Workunits
	var b strings.Builder
	fmt.Fprintf(&b, "waiting %d, running %d, done %d, error %d; submitted %d, completed %d, failed %d; workers",
		w.Waiting, w.Running, w.Done, w.Error, st.Submitted, st.Completed, st.Failed)
	for _, wk := range st.Workers {
		fmt.Fprintf(&b, " %s(busy %d/%d)", wk.Name, wk.Busy, wk.Slots)
	}
	fmt.Fprintf(&b, "; masters %d", len(st.Masters))
	return b.String()
}

// Metrics returns the tracker's GET /metrics as series → value, each
// series named as Prometheus writes it: `riot_workers`,
// `riot_bytes_total{direction="in"}`.
func (tr *Tracker) Metrics(ctx context.Context) (map[string]float64, error) {
	body, err := tr.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body))
}

func parseMetrics(text string) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("e2e: metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("e2e: metrics: bad value in %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// LogMsg matches a JSON log line of riotd whose message is msg.
func LogMsg(msg string) *regexp.Regexp {
	q, _ := json.Marshal(msg)
	return regexp.MustCompile(`"msg":` + regexp.QuoteMeta(string(q)))
}
