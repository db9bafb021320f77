package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/internal/debugserver"
)

// opsCloseTimeout bounds how long the metrics and debug servers let
// requests under way end when Run returns.
const opsCloseTimeout = 5 * time.Second

// ops is what a worker shows its operators: the metrics and probes server
// of Options.MetricsListen and the profiler of Options.DebugListen. Its
// methods are safe on a nil *ops (neither server asked for) where noted.
type ops struct {
	ctx     context.Context // Run's: once it ends the worker is stopping
	tracker string
	metrics *workerMetrics // nil without MetricsListen

	// state is set once the worker is connected and has asked for work
	// (Options.Ready's moment); nil before.
	state atomic.Pointer[opsState]

	srv   *http.Server
	done  chan struct{} // closed when srv's Serve returned
	debug *debugserver.Server
}

// opsState is what the probes and metrics read of a started worker.
type opsState struct {
	c       *client.Client
	gpus    *gpuPool
	eng     *engine.Engine
	credits *credits
	name    string
}

// startOps starts the servers that w's Options ask for (none: it returns
// a nil *ops), before the worker dials, so that the liveness probe
// answers while the tracker cannot be reached.
func (w *worker) startOps(ctx context.Context) (*ops, error) {
	if w.opts.MetricsListen == "" && w.opts.DebugListen == "" {
		return nil, nil
	}
	o := &ops{ctx: ctx, tracker: w.opts.Tracker}
	if w.opts.DebugListen != "" {
		ds, err := debugserver.Start(w.opts.DebugListen, w.opts.Logger)
		if err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
		o.debug = ds
	}
	if w.opts.MetricsListen != "" {
		ln, err := net.Listen("tcp", w.opts.MetricsListen)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("worker: --metrics-listen: %w", err)
		}
		o.metrics = newMetrics(w, o)
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.metrics.reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(rw, "ok: the worker serves")
		})
		mux.HandleFunc("GET /readyz", o.serveReady)
		o.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		o.done = make(chan struct{})
		go func() {
			defer close(o.done)
			if err := o.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.opts.Logger.Warn("worker: metrics server stopped", "err", err)
			}
		}()
		w.opts.Logger.Info("worker: metrics and probes listening (/metrics, /healthz, /readyz)", "addr", ln.Addr().String())
		if w.opts.metricsListening != nil {
			w.opts.metricsListening(ln.Addr())
		}
	}
	return o, nil
}

// started records that the worker is connected and has asked for work. It
// is a no-op on a nil *ops.
func (o *ops) started(w *worker, name string) {
	if o == nil {
		return
	}
	o.state.Store(&opsState{c: w.c, gpus: w.gpus, eng: w.eng, credits: w.credits, name: name})
}

// ready says whether the worker takes work now, and why not.
func (o *ops) ready() (bool, string) {
	st := o.state.Load()
	switch {
	case o.ctx.Err() != nil:
		return false, "stopping: the worker takes no more work"
	case st == nil:
		return false, "not connected yet: dialing the tracker " + o.tracker
	case !st.c.Connected():
		return false, "the connection to the tracker was lost; reconnecting"
	}
	return true, "connected to the tracker as " + st.c.Name() + ", taking work"
}

// serveReady is GET /readyz: 200 while the worker is connected and takes
// work, 503 otherwise, with a line that says which.
func (o *ops) serveReady(rw http.ResponseWriter, _ *http.Request) {
	ok, why := o.ready()
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok {
		fmt.Fprintln(rw, "ready:", why)
		return
	}
	rw.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(rw, "not ready:", why)
}

// close stops both servers. It is a no-op on a nil *ops.
func (o *ops) close() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opsCloseTimeout)
	defer cancel()
	if o.srv != nil {
		_ = o.srv.Shutdown(ctx)
		<-o.done
	}
	if o.debug != nil {
		_ = o.debug.Close(ctx)
	}
}
