package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSConfigWithCA returns a TLS configuration for wss:// trackers that
// trusts the certificate authorities in the PEM file caFile, and only
// them: what riot-worker --tls-ca gives. Use it for a tracker whose
// certificate a private authority signed (or that is self-signed); a
// tracker with a publicly trusted certificate needs no configuration.
func TLSConfigWithCA(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("client: tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client: tls: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
