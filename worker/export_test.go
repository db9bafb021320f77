package worker

import "net"

// WithMetricsListening returns opts with a hook that is told the metrics
// server's address once it listens (tests listen on port 0).
func WithMetricsListening(opts Options, got func(net.Addr)) Options {
	opts.metricsListening = got
	return opts
}
