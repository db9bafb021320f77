// Package debugserver serves Go's profiler (net/http/pprof) on an address
// of its own, for riotd's and riot-worker's --debug-listen: off by
// default, and never on the port that masters and workers reach, since a
// profile shows the process's insides.
package debugserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Server is a running debug server.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Start listens on addr (HOST:PORT; a port of 0 picks one) and serves
// /debug/pprof/ there until Close. Without a host it listens on
// loopback: a profile is for the machine's own operator.
func Start(addr string, log *slog.Logger) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-listen %q: want HOST:PORT, such as 127.0.0.1:6060: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("--debug-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug server stopped", "err", err)
		}
	}()
	log.Info("debug server listening (Go's profiler: go tool pprof http://ADDR/debug/pprof/profile)", "addr", ln.Addr().String())
	return s, nil
}

// Addr returns the address it listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops it, letting requests under way end within ctx.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
