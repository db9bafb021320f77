package tracker

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certCheckEvery bounds how often the certificate file is looked at for a
// change (at a handshake).
const certCheckEvery = 10 * time.Second

// serverTLS returns the TLS configuration the options ask for, or nil for
// none.
func (o *Options) serverTLS(log *slog.Logger) (*tls.Config, error) {
	var conf *tls.Config
	switch {
	case o.TLSConfig != nil:
		conf = o.TLSConfig.Clone()
	case o.TLSCertFile != "":
		r := &certReloader{certFile: o.TLSCertFile, keyFile: o.TLSKeyFile, log: log, now: time.Now}
		if err := r.load(); err != nil {
			return nil, err
		}
		conf = &tls.Config{GetCertificate: r.get}
	default:
		return nil, nil
	}
	if conf.MinVersion == 0 {
		conf.MinVersion = tls.VersionTLS12
	}
	// Websockets upgrade HTTP/1.1 requests; no HTTP/2.
	conf.NextProtos = []string{"http/1.1"}
	return conf, nil
}

// certReloader serves a certificate from files, and reads them again when
// the certificate file's modification time changes (a renewed
// certificate, e.g. from cert-manager or certbot). A new pair that does
// not load is logged and the old one kept. Safe for concurrent use.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// load reads the pair.
func (r *certReloader) load() error {
	fi, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("tracker: tls: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tracker: tls: %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.mu.Lock()
	r.cert, r.modTime, r.checked = &cert, fi.ModTime(), r.now()
	r.mu.Unlock()
	return nil
}

// get is the GetCertificate of the tracker's TLS configuration.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	cert, stale := r.cert, r.now().Sub(r.checked) >= certCheckEvery
	if stale {
		r.checked = r.now()
	}
	mod := r.modTime
	r.mu.Unlock()
	if stale {
		if fi, err := os.Stat(r.certFile); err == nil && !fi.ModTime().Equal(mod) {
			if err := r.load(); err != nil {
				r.log.Error("riotd: tls: the certificate changed but does not load; keeping the old one", "err", err)
			} else {
				r.log.Info("riotd: tls: certificate reloaded", "file", r.certFile)
				r.mu.Lock()
				cert = r.cert
				r.mu.Unlock()
			}
		}
	}
	return cert, nil
}
