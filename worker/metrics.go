package worker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/metrics"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/riot-go/riot/client"
)

// evalBuckets span a trivial workunit's 100 µs to a long one's hours, as
// riotd's riot_workunit_run_seconds do.
var evalBuckets = []float64{0.0001, 0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}

// outcomeDone is the outcome label of a workunit that returned a value;
// one that failed has its error's kind (thrown, time-limit, canceled...).
const outcomeDone = "done"

// workerMetrics are a worker's Prometheus metrics (docs/workers.md, "Metrics
// and probes"): counted as workunits end, and read from the worker at
// each scrape.
type workerMetrics struct {
	reg       *prometheus.Registry
	workunits *prometheus.CounterVec
	done      prometheus.Counter // workunits's outcome "done", resolved once
	eval      prometheus.Histogram
}

func newMetrics(w *worker, o *ops) *workerMetrics {
	m := &workerMetrics{
		reg: prometheus.NewRegistry(),
		workunits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "riot_worker_workunits_total",
			Help: "Workunits this worker finished, by outcome: done, or the error's kind (thrown, time-limit, memory-limit, canceled, ...)."},
			[]string{"outcome"}),
		eval: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "riot_worker_eval_seconds",
			Help:    "How long this worker's workunits ran, from the start of their evaluation to its end.",
			Buckets: evalBuckets}),
	}
	m.done = m.workunits.WithLabelValues(outcomeDone)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.workunits, m.eval,
		newWorkerCollector(w, o),
	)
	return m
}

// observe counts a workunit's end.
func (m *workerMetrics) observe(r *client.Report) {
	if r.Error == nil {
		m.done.Inc()
	} else {
		m.workunits.WithLabelValues(r.Error.Kind.String()).Inc()
	}
	if r.Elapsed > 0 {
		m.eval.Observe(r.Elapsed.Seconds())
	}
}

// finished is called once per workunit as its end is reported: it logs
// the workunit at the debug level and counts it in the metrics.
func (w *worker) finished(r *client.Report) {
	if w.ops != nil && w.ops.metrics != nil {
		w.ops.metrics.observe(r)
	}
	log := w.ident.Load().log
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	if r.Error == nil {
		log.Debug("worker: workunit finished", "key", r.Lease.Key.Short(), "outcome", outcomeDone, "elapsed", r.Elapsed)
		return
	}
	msg := r.Error.Message
	if len(msg) > maxLoggedError {
		msg = msg[:maxLoggedError] + "…"
	}
	log.Debug("worker: workunit finished", "key", r.Lease.Key.Short(), "outcome", r.Error.Kind.String(), "elapsed", r.Elapsed,
		"error", r.Error.Name+": "+msg)
}

// maxLoggedError bounds the error message a workunit's debug line shows.
const maxLoggedError = 200

// workerCollector reads the worker's state at each scrape.
type workerCollector struct {
	w *worker
	o *ops

	// GPU devices, read once: the driver's are fixed for the worker's life.
	gpuNames  []string
	gpuMemory []uint64

	slots, busy, connected, heap, memLimit *prometheus.Desc
	stuck, abandoned                       *prometheus.Desc
	window, creditLatency                  *prometheus.Desc
	gpus, gpuMem, gpuWorkunits             *prometheus.Desc
}

func newWorkerCollector(w *worker, o *ops) *workerCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("riot_worker_"+name, help, labels, nil)
	}
	c := &workerCollector{
		w:         w,
		o:         o,
		slots:     desc("slots", "Workunits this worker runs at once (--slots)."),
		busy:      desc("slots_busy", "Slots running a workunit now."),
		connected: desc("connected", "1 while the worker is connected to the tracker, 0 while it dials or reconnects."),
		heap:      desc("heap_bytes", "Bytes held by heap objects, live or not yet collected: the heap size that --memory-limit is checked against."),
		memLimit:  desc("memory_limit_bytes", "The heap limit the worker enforces on running workunits (--memory-limit); 0 for none."),
		stuck: desc("stuck_workunits",
			"Workunits abandoned because they did not return after their stop, whose call still runs (--max-stuck stops the worker)."),
		abandoned: desc("abandoned_workunits_total", "Workunits abandoned so far because they did not return after their stop."),
		window: desc("window",
			"Workunits the worker lets itself hold, running and queued: its slots plus its prefetch (--prefetch, or sized by the worker)."),
		creditLatency: desc("credit_latency_seconds",
			"The moving average of the time from granting the tracker credit to receiving the workunits it buys, which a worker that sizes its prefetch measures to size it; 0 with a fixed --prefetch."),
		gpus:   desc("gpus", "GPU devices the worker offers to workunits."),
		gpuMem: desc("gpu_memory_bytes", "Each GPU device's total memory.", "device", "name"),
		gpuWorkunits: desc("gpu_workunits", "Workunits holding each GPU device now.",
			"device"),
	}
	if drv := w.opts.GPU; drv != nil {
		// As helloGPUs lists them (which logs an unreadable device once).
		for i := range drv.DeviceCount() {
			name, mem := fmt.Sprintf("device %d", i), uint64(0)
			if d, err := drv.Device(i); err == nil {
				name, mem = d.Name, d.TotalMemory
			}
			c.gpuNames = append(c.gpuNames, name)
			c.gpuMemory = append(c.gpuMemory, mem)
		}
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.slots, c.busy, c.connected, c.heap, c.memLimit, c.stuck, c.abandoned,
		c.window, c.creditLatency, c.gpus, c.gpuMem, c.gpuWorkunits} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *workerCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c.w.mu.Lock()
	busy := len(c.w.running)
	c.w.mu.Unlock()
	st := c.o.state.Load()
	connected := 0.0
	if st != nil && st.c.Connected() {
		connected = 1
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)

	gauge(c.slots, float64(c.w.opts.Slots))
	gauge(c.busy, float64(busy))
	gauge(c.connected, connected)
	gauge(c.heap, float64(sample[0].Value.Uint64()))
	gauge(c.memLimit, float64(c.w.opts.Engine.MemoryLimit))
	gauge(c.gpus, float64(len(c.gpuNames)))
	var held []int
	stuck, abandoned := 0, 0
	if st != nil {
		held = st.gpus.held()
		stuck, abandoned = st.eng.Stuck(), st.eng.Abandoned()
	}
	gauge(c.stuck, float64(stuck))
	if st != nil {
		window, lat := st.credits.state()
		gauge(c.window, float64(window))
		gauge(c.creditLatency, lat.Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.abandoned, prometheus.CounterValue, float64(abandoned))
	for i, name := range c.gpuNames {
		dev := strconv.Itoa(i)
		gauge(c.gpuMem, float64(c.gpuMemory[i]), dev, name)
		n := 0
		if i < len(held) {
			n = held[i]
		}
		gauge(c.gpuWorkunits, float64(n), dev)
	}
}

// held returns how many workunits hold each device now, by ordinal.
func (p *gpuPool) held() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.busy...)
}
