package trackertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker"
)

// Cert is a certificate authority made for one test, and a server
// certificate it signed, as PEM files in a temporary directory.
type Cert struct {
	// CAFile holds the authority's certificate: what a client trusts
	// (riot-worker --tls-ca).
	CAFile string
	// CertFile and KeyFile are the server's certificate and key (riotd
	// --tls-cert, --tls-key).
	CertFile, KeyFile string
	// Pool holds the authority's certificate.
	Pool *x509.CertPool
}

// NewCert makes a certificate authority and a server certificate for
// hosts (IP addresses or DNS names; default 127.0.0.1, ::1 and
// localhost), valid for a day, in t.TempDir().
func NewCert(t testing.TB, hosts ...string) *Cert {
	t.Helper()
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1", "::1", "localhost"}
	}
	fail := func(err error) {
		if err != nil {
			t.Fatalf("trackertest: cert: %v", err)
		}
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fail(err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "riot test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	fail(err)
	ca, err := x509.ParseCertificate(caDER)
	fail(err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fail(err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	fail(err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	fail(err)

	dir := t.TempDir()
	c := &Cert{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
		Pool:     x509.NewCertPool(),
	}
	c.Pool.AddCert(ca)
	write := func(path, typ string, der []byte, mode os.FileMode) {
		fail(os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode))
	}
	write(c.CAFile, "CERTIFICATE", caDER, 0o644)
	write(c.CertFile, "CERTIFICATE", der, 0o644)
	write(c.KeyFile, "PRIVATE KEY", keyDER, 0o600)
	return c
}

// ClientConfig returns a TLS configuration that trusts the authority
// only.
func (c *Cert) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}

// TLS makes the tracker serve TLS with c's certificate: its URL is
// wss://127.0.0.1:PORT/riot.
func TLS(c *Cert) Option {
	return WithOptions(func(o *tracker.Options) {
		o.TLSCertFile, o.TLSKeyFile = c.CertFile, c.KeyFile
	})
}

// Tokens makes the tracker check credentials: these.
func Tokens(creds ...tracker.Credential) Option {
	return WithOptions(func(o *tracker.Options) { o.Tokens = append(o.Tokens, creds...) })
}
