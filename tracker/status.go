package tracker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/wire"
)

// Stats counts what the tracker holds: the table's counts and the
// connections, with counters since the start.
type Stats struct {
	// Stats are the table's: workunits by status, joined workers, leases,
	// watches, discarded stale results, forgotten finished workunits.
	table.Stats
	// Connections is the number of connections past their hello; Masters
	// those whose hello said role master.
	Connections, Masters int
	// Submitted counts accepted submissions (Submit events the table
	// took), Completed and Failed the results and errors workers reported
	// that were not stale, and Canceled the workunits masters canceled,
	// since the start.
	Submitted, Completed, Failed, Canceled uint64
	// StoreErrors counts failed writes of the store; Commits the writes
	// that succeeded (one fsync each, for every record that a Ready
	// persists) and Records the records they wrote.
	StoreErrors, Commits, Records uint64
	// RefusedMemory counts the submissions of new workunits refused since
	// the start because the table held Options.MaxMemory (Stats.Bytes,
	// with BlobBytes).
	RefusedMemory uint64
	// BlobBytes and Blobs are the bytes and number of the blobs the
	// tracker holds in memory (a store without a data directory): they
	// count toward Options.MaxMemory with the table's bytes. 0 with a
	// durable store, which keeps its blobs in files. RefusedBlobs counts
	// the blob uploads refused since the start for Options.MaxMemory;
	// FreedBlobs the blobs freed since the start because nothing named
	// them (a store the tracker made in memory: see Options.BlobGrace).
	BlobBytes    int64
	Blobs        int
	RefusedBlobs uint64
	FreedBlobs   uint64
}

// Status is the tracker's state at a glance, as GET /status gives it (in
// JSON).
type Status struct {
	Tracker       string    `json:"tracker"`
	Protocol      int       `json:"protocol_version"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	// Data is the data directory, or "" when nothing is written.
	Data    string `json:"data"`
	Durable bool   `json:"durable"`
	// Workunits counts the table's workunits by status.
	Workunits struct {
		Waiting int `json:"waiting"`
		Running int `json:"running"`
		Done    int `json:"done"`
		Error   int `json:"error"`
	} `json:"workunits"`
	Leases    int    `json:"leases"`
	Watches   int    `json:"watches"`
	Discarded uint64 `json:"discarded"`
	Submitted uint64 `json:"submitted"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Canceled  uint64 `json:"canceled"`
	// Forgotten counts the finished workunits forgotten since the start,
	// KeepResultsSeconds after they finished (0: results are kept for
	// good).
	Forgotten          uint64  `json:"forgotten"`
	KeepResultsSeconds float64 `json:"keep_results_seconds"`
	// HeldBytes is what --max-memory bounds: what the tracker holds in
	// memory for its workunits (about 160 bytes each, specs, results not
	// in the store, errors) and, with --memory, for blobs (BlobBytes of
	// it); MaxMemoryBytes the bound (0: none), and RefusedMemory the
	// submissions it refused since the start. BlobBytes and Blobs are the
	// blobs held in memory (large arguments and results, modules; none
	// with --data, whose blobs are in files), RefusedBlobs the uploads
	// refused for the bound, FreedBlobs the blobs freed once nothing named
	// them (with --memory, --blob-grace after).
	HeldBytes      int64  `json:"held_bytes"`
	MaxMemoryBytes int64  `json:"max_memory_bytes"`
	RefusedMemory  uint64 `json:"refused_memory"`
	BlobBytes      int64  `json:"blob_bytes"`
	Blobs          int    `json:"blobs"`
	RefusedBlobs   uint64 `json:"refused_blobs"`
	FreedBlobs     uint64 `json:"freed_blobs"`
	// FinishedPerSecond is the rate of results and errors over the last
	// ten seconds.
	FinishedPerSecond float64        `json:"finished_per_second"`
	Workers           []WorkerStatus `json:"workers"`
	Masters           []ConnStatus   `json:"masters"`
	// Jobs are the jobs in progress and those that ended in the last hour
	// (docs/http.md, GET /api/v1/jobs).
	Jobs []JobInfo `json:"jobs"`
	// Replicas are the replicas of a replicated tracker (docs/replicas.md),
	// this one (the leader) first; absent for a single riotd.
	Replicas []ReplicaStatus `json:"replicas,omitempty"`
}

// ReplicaStatus is one replica of a replicated tracker on the status
// page, as the leader sees it.
type ReplicaStatus struct {
	ID string `json:"id"`
	// Client and Raft are its client and replication addresses.
	Client string `json:"client"`
	Raft   string `json:"raft"`
	// State is its Raft state (Leader, Follower, Candidate), or
	// "unreachable" when it did not answer.
	State string `json:"state"`
	// Voter: it votes (raft's suffrage).
	Voter bool `json:"voter"`
	// Term and AppliedIndex are its Raft term and the index of the last
	// log entry it applied to its store.
	Term         uint64 `json:"term"`
	AppliedIndex uint64 `json:"applied_index"`
	// Error says why it is unreachable.
	Error string `json:"error,omitempty"`
}

// withReplicas adds the replicas to st, when the tracker has them.
func (s *Server) withReplicas(ctx context.Context, st *Status) {
	if s.opts.Replicas != nil {
		st.Replicas = s.opts.Replicas(ctx)
	}
}

// ConnStatus describes a connection on the status page.
type ConnStatus struct {
	Name   string    `json:"name"`
	Role   string    `json:"role"`
	Remote string    `json:"remote"`
	Agent  string    `json:"agent"`
	Since  time.Time `json:"since"`
}

// WorkerStatus describes a worker on the status page.
type WorkerStatus struct {
	ConnStatus
	Slots    int `json:"slots"`
	Prefetch int `json:"prefetch"`
	GPUs     int `json:"gpus"`
	// Busy is how many workunits it holds; Credit how many more it asked
	// for.
	Busy   int `json:"busy"`
	Credit int `json:"credit"`
	// Running is how many of those it runs (at most its slots), and
	// Prefetched how many wait in its queue.
	Running    int `json:"running"`
	Prefetched int `json:"prefetched"`
	// Waiting is how many wait for their children, their slots given up
	// (docs/reference.md, "Workunits that make workunits").
	Waiting int `json:"waiting,omitempty"`
}

// Status returns the tracker's state at a glance.
func (s *Server) Status(ctx context.Context) (Status, error) {
	var st Status
	err := s.do(ctx, func(l *loop) { st = l.status() })
	return st, err
}

func (l *loop) status() Status {
	ts := l.tab.Stats()
	var st Status
	st.Tracker = l.s.name
	st.Protocol = wire.ProtocolVersion
	st.Started = l.s.started.UTC()
	st.UptimeSeconds = time.Since(l.s.started).Seconds()
	st.Data = l.s.opts.DataDir
	st.Durable = l.s.durable
	st.Workunits.Waiting, st.Workunits.Running, st.Workunits.Done, st.Workunits.Error = ts.Waiting, ts.Running, ts.Done, ts.Error
	st.Leases, st.Watches, st.Discarded = ts.Leases, ts.Watches, ts.Discarded
	st.Forgotten, st.KeepResultsSeconds = ts.Forgotten, l.s.opts.KeepResults.Seconds()
	st.Submitted, st.Completed, st.Failed, st.Canceled = l.submitted, l.completed, l.failed, l.canceled
	st.HeldBytes, st.MaxMemoryBytes, st.RefusedMemory = ts.Bytes, int64(l.s.opts.MaxMemory), l.refusedMemory
	st.BlobBytes, st.Blobs = l.s.blobs.blobs()
	st.HeldBytes += st.BlobBytes
	st.RefusedBlobs = l.s.blobs.refused.Load()
	st.FreedBlobs = l.s.blobs.freedCount()
	st.FinishedPerSecond = l.rate.perSecond()
	st.Workers = []WorkerStatus{}
	st.Masters = []ConnStatus{}
	for _, c := range l.conns {
		cs := ConnStatus{Name: c.name, Role: string(c.role), Remote: c.remote, Agent: c.agent, Since: c.since.UTC()}
		if wi, ok := l.tab.Worker(table.WorkerID(c.id)); ok {
			running := c.runningOf(wi.Leases - wi.Waiting)
			st.Workers = append(st.Workers, WorkerStatus{ConnStatus: cs, Slots: c.slots, Prefetch: c.prefetch,
				GPUs: wi.GPUs, Busy: wi.Leases, Credit: wi.Credit, Running: running, Prefetched: wi.Leases - wi.Waiting - running, Waiting: wi.Waiting})
		} else {
			st.Masters = append(st.Masters, cs)
		}
	}
	st.Jobs = l.jobInfos(reader{all: true})
	slices.SortFunc(st.Workers, func(a, b WorkerStatus) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(st.Masters, func(a, b ConnStatus) int { return cmp.Compare(a.Name, b.Name) })
	return st
}

// routes returns the tracker's HTTP handler: the websocket endpoint, the
// status page and the metrics.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.Path, s.serveWS)
	mux.HandleFunc("GET /status", s.needMaster(s.serveStatus))
	metrics := promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			refuseHost(w, r)
			return
		}
		metrics.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", s.serveHealth)
	mux.HandleFunc("GET /{$}", s.serveRoot)
	// The dashboard's login, and the HTTP API under it (docs/http.md).
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { s.loginPage(w, r, http.StatusOK, "") })
	mux.HandleFunc("POST /login", s.serveLogin)
	mux.HandleFunc("POST /logout", s.serveLogout)
	mux.HandleFunc("GET /api/v1/overview", s.api(s.apiOverview))
	mux.HandleFunc("GET /api/v1/workers", s.api(s.apiWorkers))
	mux.HandleFunc("GET /api/v1/jobs", s.api(s.apiJobs))
	mux.HandleFunc("GET /api/v1/jobs/{id}", s.api(s.apiJob))
	mux.HandleFunc("POST /api/v1/jobs/{id}/cancel", s.apiChange(s.apiJobCancel))
	mux.HandleFunc("GET /api/v1/workunits", s.api(s.apiWorkunits))
	mux.HandleFunc("GET /api/v1/workunits/{key}", s.api(s.apiWorkunit))
	mux.HandleFunc("POST /api/v1/workunits/{key}/cancel", s.apiChange(s.apiWorkunitCancel))
	mux.HandleFunc("GET /api/v1/failures", s.api(s.apiFailures))
	mux.HandleFunc("GET /api/v1/stream", s.api(s.apiStream))
	mux.HandleFunc("GET /api/v1/events", s.api(s.apiEvents))
	if s.opts.Replicas != nil {
		mux.HandleFunc("GET /api/v1/replicas", s.api(s.apiReplicas))
	}
	s.dashboardRoutes(mux)
	for pattern, h := range s.opts.AdminRoutes {
		mux.HandleFunc(pattern, s.apiAdmin(h))
	}
	return mux
}

// apiReplicas answers GET /api/v1/replicas, for a replicated tracker:
// {"replicas": [...]}, each as GET /status's replicas (ReplicaStatus).
func (s *Server) apiReplicas(w http.ResponseWriter, r *http.Request, _ reader) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	rs := s.opts.Replicas(ctx)
	if rs == nil {
		rs = []ReplicaStatus{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"replicas": rs})
}

// needMaster wraps a handler of the status pages, which name every
// connection and its address: when the tracker has credentials, a request
// must carry a master's or a viewer's token as "Authorization: Bearer
// TOKEN", or the dashboard's session cookie. Wrong tokens are throttled as
// hellos are (see throttle); a right one is served at once.
func (s *Server) needMaster(h http.HandlerFunc) http.HandlerFunc {
	if s.auth == nil {
		return func(w http.ResponseWriter, r *http.Request) {
			if !s.hostAllowed(r) {
				refuseHost(w, r)
				return
			}
			h(w, r)
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !found && s.loggedIn(r) {
			h(w, r)
			return
		}
		cred, valid := s.auth.check(strings.TrimSpace(tok))
		if found && valid && (cred.role == wire.RoleMaster || cred.role == RoleViewer || cred.role == RoleAdmin) {
			h(w, r)
			return
		}
		s.counters.authFailures.Add(1)
		if !found || !valid { // a worker's token is no guess: not throttled
			if throttled, ok := s.guessed(r); throttled {
				if ok {
					http.Error(w, "riotd: too many failed attempts from this address: wait and try again", http.StatusTooManyRequests)
				}
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="riotd"`)
		http.Error(w, "riotd: the status page needs a master's or a viewer's token: Authorization: Bearer TOKEN", http.StatusUnauthorized)
	}
}

// serveHealth answers GET /healthz, for probes (Kubernetes, load
// balancers): 200 "ok" while the table's loop answers within two seconds,
// else 503. It needs no credentials and tells nothing else.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.do(ctx, func(*loop) {}); err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.Status(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.withReplicas(ctx, &st)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}

// serveRoot answers GET /: the dashboard for browsers (a request that
// accepts text/html), the status as text for curl.
func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request) {
	if !acceptsHTML(r) {
		s.needMaster(s.serveIndex)(w, r)
		return
	}
	if !s.hostAllowed(r) {
		refuseHost(w, r)
		return
	}
	if !s.loggedIn(r) {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	s.dashboardIndex(w, r)
}

// acceptsHTML reports whether r asks for an HTML page, as browsers do.
func acceptsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
			return true
		}
	}
	return false
}

// serveIndex shows the status as text, for people with curl.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := s.Status(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.withReplicas(ctx, &st)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	data := st.Data
	if !st.Durable {
		data = "(memory only)"
	}
	fmt.Fprintf(w, "riotd %s, up %s, data %s\n", st.Tracker, time.Duration(st.UptimeSeconds*float64(time.Second)).Round(time.Second), data)
	canceled := ""
	if st.Canceled > 0 {
		canceled = fmt.Sprintf(" (%d canceled since the start)", st.Canceled)
	}
	fmt.Fprintf(w, "workunits: %d waiting, %d running, %d done, %d error%s; %.1f finished/s\n",
		st.Workunits.Waiting, st.Workunits.Running, st.Workunits.Done, st.Workunits.Error, canceled, st.FinishedPerSecond)
	if st.KeepResultsSeconds > 0 {
		fmt.Fprintf(w, "results kept for %s after they finish; %d forgotten\n",
			units.FormatDuration(time.Duration(st.KeepResultsSeconds*float64(time.Second))), st.Forgotten)
	}
	if st.MaxMemoryBytes > 0 {
		fmt.Fprintf(w, "memory for workunits: %s held of --max-memory %s; %d submissions refused\n",
			units.FormatBytes(st.HeldBytes), units.FormatBytes(st.MaxMemoryBytes), st.RefusedMemory)
	}
	if st.Blobs > 0 || st.RefusedBlobs > 0 || st.FreedBlobs > 0 {
		fmt.Fprintf(w, "blobs in memory: %d, %s (counted in --max-memory when set); %d uploads refused; %d freed\n",
			st.Blobs, units.FormatBytes(st.BlobBytes), st.RefusedBlobs, st.FreedBlobs)
	}
	fmt.Fprintf(w, "workers: %d\n", len(st.Workers))
	for _, wk := range st.Workers {
		fmt.Fprintf(w, "  %-24s running %d of %d slots, %d prefetched (up to %d), %d GPUs, %s\n",
			wk.Name, wk.Running, wk.Slots, wk.Prefetched, wk.Prefetch, wk.GPUs, wk.Remote)
	}
	fmt.Fprintf(w, "masters: %d\n", len(st.Masters))
	for _, m := range st.Masters {
		fmt.Fprintf(w, "  %-24s %s\n", m.Name, m.Remote)
	}
	fmt.Fprintf(w, "jobs: %d\n", len(st.Jobs))
	for _, j := range st.Jobs {
		canceled := ""
		if j.Canceled > 0 {
			canceled = fmt.Sprintf(", %d canceled", j.Canceled)
		}
		fmt.Fprintf(w, "  %-24s %-7s %d submitted: %d waiting, %d running, %d done, %d failed%s, %d from memory\n",
			j.Name, j.State, j.Submitted, j.Waiting, j.Running, j.Done, j.Failed, canceled, j.FromMemory)
	}
	if len(st.Replicas) > 0 {
		fmt.Fprintf(w, "replicas: %d\n", len(st.Replicas))
		for _, r := range st.Replicas {
			state := r.State
			if r.Error != "" {
				state += " (" + r.Error + ")"
			}
			fmt.Fprintf(w, "  %-24s %-11s term %d, applied %d, client %s, raft %s\n", r.ID, state, r.Term, r.AppliedIndex, r.Client, r.Raft)
		}
	}
	fmt.Fprintf(w, "\nOpen this address in a browser for the dashboard; GET /status for JSON, /api/v1/ for the API (docs/http.md), /metrics for Prometheus.\n")
}

// histograms are the distributions of workunits' queue waits and run
// times, observed by the loop as results and errors come.
type histograms struct {
	wait prometheus.Histogram
	run  *prometheus.HistogramVec
	// runDone and runError are run's two series, looked up once: a label
	// lookup per result would cost the hot path a hash.
	runDone, runError prometheus.Observer
}

// durationBuckets span a trivial workunit's 100 µs to a long one's hours.
var durationBuckets = []float64{0.0001, 0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}

// newMetrics returns the registry of the tracker's Prometheus metrics.
func (s *Server) newMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	s.hist.wait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "riot_workunit_wait_seconds",
		Help:    "How long finished workunits waited, from their submission to the start of the run that finished them (to the tracker's tick, 0.1 s by default).",
		Buckets: durationBuckets})
	s.hist.run = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "riot_workunit_run_seconds",
		Help:    "How long the runs that finished workunits took on their workers, by outcome (done, error).",
		Buckets: durationBuckets}, []string{"outcome"})
	s.hist.runDone, s.hist.runError = s.hist.run.WithLabelValues("done"), s.hist.run.WithLabelValues("error")
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newCollector(s),
		s.hist.wait, s.hist.run,
	)
	reg.MustRegister(s.opts.Collectors...)
	return reg
}

// collector exports the tracker's Stats as Prometheus metrics, read from
// the table's loop at each scrape. See docs/riotd.md for the list.
type collector struct {
	s *Server

	workunits, workers, masters, conns, leases, watches  *prometheus.Desc
	submitted, finished, discarded, storeErrors, commits *prometheus.Desc
	forgotten                                            *prometheus.Desc
	records, frames, messages, bytes, dropped            *prometheus.Desc
	authFailures, forbidden, refusedFull                 *prometheus.Desc
	heldBytes, refusedMemory                             *prometheus.Desc
	blobBytes, blobs, refusedBlobs, freedBlobs           *prometheus.Desc
	jobs, jobWorkunits                                   *prometheus.Desc
}

func newCollector(s *Server) *collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("riot_"+name, help, labels, nil)
	}
	return &collector{
		s:           s,
		workunits:   desc("workunits", "Workunits in the table, by status.", "status"),
		workers:     desc("workers", "Connected workers."),
		masters:     desc("masters", "Connected masters."),
		conns:       desc("connections", "Connections past their hello."),
		leases:      desc("leases", "Workunits held by workers."),
		watches:     desc("watches", "Pending watches of masters."),
		submitted:   desc("submitted_total", "Submissions taken."),
		finished:    desc("finished_total", "Workunits finished: results and errors workers reported (done, error), and cancellations (canceled), by outcome.", "outcome"),
		discarded:   desc("discarded_total", "Stale results discarded."),
		forgotten:   desc("forgotten_total", "Finished workunits forgotten, --keep-results after they finished."),
		storeErrors: desc("store_errors_total", "Failed writes of the store."),
		commits:     desc("store_commits_total", "Commits (fsyncs) of the store."),
		records:     desc("store_records_total", "Records written to the store."),
		frames:      desc("frames_total", "Websocket frames, by direction.", "direction"),
		messages:    desc("messages_total", "Protocol messages, by direction.", "direction"),
		bytes:       desc("bytes_total", "Bytes of frames, by direction.", "direction"),
		dropped:     desc("connections_dropped_total", "Connections dropped for a full queue or a failed write."),
		authFailures: desc("auth_failures_total",
			"Hellos and status requests refused for their credentials (missing, unknown, or a worker's token for a master)."),
		forbidden:   desc("requests_forbidden_total", "Requests refused because the connection's token does not allow them."),
		refusedFull: desc("connections_refused_full_total", "Connections refused because the tracker was full (--max-conns, --max-handshakes)."),
		heldBytes: desc("held_bytes",
			"Bytes the tracker holds in memory for workunits, as --max-memory counts them: about 160 a workunit, specs, results not in the store, errors, and (with --memory) blobs."),
		blobBytes:     desc("blob_bytes", "Bytes of the blobs the tracker holds in memory (with --memory; with --data blobs are in files): part of riot_held_bytes."),
		blobs:         desc("blobs", "Blobs the tracker holds in memory (with --memory)."),
		refusedBlobs:  desc("blobs_refused_memory_total", "Blob uploads refused because the tracker held --max-memory."),
		freedBlobs:    desc("blobs_freed_total", "Blobs freed because no workunit and no connection named them any more (with --memory, --blob-grace after)."),
		refusedMemory: desc("submissions_refused_memory_total", "Submissions of new workunits refused because the tracker held --max-memory."),
		jobs:          desc("jobs", "Jobs the tracker knows, by state: running (their master is connected) or ended (in the last hour).", "state"),
		jobWorkunits: desc("job_workunits", "The workunits of each running job, by its id and status (from_memory: answered at once from earlier results); GET /api/v1/jobs names the ids.",
			"job_id", "status"),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.workunits, c.workers, c.masters, c.conns, c.leases,
		c.watches, c.submitted, c.finished, c.discarded, c.storeErrors, c.commits, c.records,
		c.frames, c.messages, c.bytes, c.dropped, c.authFailures, c.forbidden, c.refusedFull, c.forgotten,
		c.heldBytes, c.refusedMemory, c.blobBytes, c.blobs, c.refusedBlobs, c.freedBlobs,
		c.jobs, c.jobWorkunits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.s.Stats(ctx)
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.workunits, float64(st.Waiting), "waiting")
	gauge(c.workunits, float64(st.Running), "running")
	gauge(c.workunits, float64(st.Done), "done")
	gauge(c.workunits, float64(st.Error), "error")
	gauge(c.workers, float64(st.Workers))
	gauge(c.masters, float64(st.Masters))
	gauge(c.conns, float64(st.Connections))
	gauge(c.leases, float64(st.Leases))
	gauge(c.watches, float64(st.Watches))
	counter(c.submitted, st.Submitted)
	counter(c.finished, st.Completed, "done")
	counter(c.finished, st.Failed, "error")
	counter(c.finished, st.Canceled, "canceled")
	counter(c.discarded, st.Discarded)
	counter(c.forgotten, st.Forgotten)
	counter(c.storeErrors, st.StoreErrors)
	counter(c.commits, st.Commits)
	counter(c.records, st.Records)
	ioc := &c.s.counters
	counter(c.frames, ioc.framesIn.Load(), "in")
	counter(c.frames, ioc.framesOut.Load(), "out")
	counter(c.messages, ioc.messagesIn.Load(), "in")
	counter(c.messages, ioc.messagesOut.Load(), "out")
	counter(c.bytes, ioc.bytesIn.Load(), "in")
	counter(c.bytes, ioc.bytesOut.Load(), "out")
	counter(c.dropped, ioc.dropped.Load())
	counter(c.authFailures, ioc.authFailures.Load())
	counter(c.forbidden, ioc.forbidden.Load())
	counter(c.refusedFull, ioc.refusedFull.Load())
	gauge(c.heldBytes, float64(st.Bytes+st.BlobBytes))
	gauge(c.blobBytes, float64(st.BlobBytes))
	gauge(c.blobs, float64(st.Blobs))
	counter(c.refusedBlobs, st.RefusedBlobs)
	counter(c.freedBlobs, st.FreedBlobs)
	counter(c.refusedMemory, st.RefusedMemory)
	var jobs []JobInfo
	if c.s.do(ctx, func(l *loop) { jobs = l.jobInfos(reader{all: true}) }) != nil {
		return
	}
	running := 0
	for _, j := range jobs {
		if j.State != "running" {
			continue
		}
		running++
		gauge(c.jobWorkunits, float64(j.Waiting), j.ID, "waiting")
		gauge(c.jobWorkunits, float64(j.Running), j.ID, "running")
		gauge(c.jobWorkunits, float64(j.Done), j.ID, "done")
		gauge(c.jobWorkunits, float64(j.Failed), j.ID, "error")
		gauge(c.jobWorkunits, float64(j.Canceled), j.ID, "canceled")
		gauge(c.jobWorkunits, float64(j.FromMemory), j.ID, "from_memory")
	}
	gauge(c.jobs, float64(running), "running")
	gauge(c.jobs, float64(len(jobs)-running), "ended")
}
