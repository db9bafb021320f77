package client_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

const (
	masterTok = "master-0123456789abcdef0123456789"
	workerTok = "worker-0123456789abcdef0123456789"
)

func secured(t *testing.T, more ...trackertest.Option) *trackertest.Tracker {
	t.Helper()
	return trackertest.Start(t, append([]trackertest.Option{trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: masterTok},
		tracker.Credential{Role: wire.RoleWorker, Token: workerTok},
	)}, more...)...)
}

// TestClient_Token: a client with the right token works; without one, or
// with a wrong one, Dial fails at once with the tracker's reason.
func TestClient_Token(t *testing.T) {
	t.Parallel()
	tr := secured(t)
	for _, tc := range []struct {
		name, token, want string
	}{
		{"none", "", "needs a token"},
		{"wrong", "wrong-0123456789abcdef0123456789", "unknown token"},
	} {
		_, err := client.Dial(ctxFor(t), tr.Addr(), client.Options{Token: tc.token})
		require.Error(t, err, tc.name)
		var re *client.RefusedError
		require.True(t, errors.As(err, &re), "%v", err)
		assert.True(t, wire.IsCode(err, wire.CodeAuth))
		assert.Contains(t, err.Error(), "bad-credentials")
		assert.Contains(t, err.Error(), tc.want)
	}

	m := dial(t, tr.Addr(), client.Options{Token: masterTok})
	w := dial(t, tr.Addr(), client.Options{Token: workerTok, Role: wire.RoleWorker, Slots: 1})
	k := m.Submit(eval("1 + 1"), workunit.Options{})
	work(t, w, 1, echo)
	out, err := k.Wait(ctxFor(t))
	require.NoError(t, err)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "1 + 1", v)

	// A worker's token may not submit: the call fails with forbidden.
	_, err = w.Submit(eval("2"), workunit.Options{}).Accepted(ctxFor(t))
	require.Error(t, err)
	assert.True(t, wire.IsCode(err, wire.CodeForbidden), "%v", err)
	_, err = w.Info(ctxFor(t), k.Key)
	assert.True(t, wire.IsCode(err, wire.CodeForbidden), "%v", err)
}

// TestClient_TLS: wss:// with the tracker's certificate authority; a
// TLSConfig makes a plain host:port mean wss://.
func TestClient_TLS(t *testing.T) {
	t.Parallel()
	cert := trackertest.NewCert(t)
	tr := secured(t, trackertest.TLS(cert))
	conf, err := client.TLSConfigWithCA(cert.CAFile)
	require.NoError(t, err)
	for _, addr := range []string{tr.URL(), tr.Addr()} {
		m := dial(t, addr, client.Options{Token: masterTok, TLSConfig: conf})
		_, err := m.Submit(eval("'secret'"), workunit.Options{}).Accepted(ctxFor(t))
		require.NoError(t, err, addr)
	}

	// Without the authority, the certificate is not trusted.
	_, err = client.Dial(ctxFor(t), tr.URL(), client.Options{Token: masterTok})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")

	// Plain ws:// to a TLS tracker says what to do.
	_, err = client.Dial(ctxFor(t), tr.Addr(), client.Options{Token: masterTok})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does the tracker serve TLS? then reach it with wss://, or give --tls-ca")
}

func TestTLSConfigWithCA_Errors(t *testing.T) {
	t.Parallel()
	_, err := client.TLSConfigWithCA(filepath.Join(t.TempDir(), "none.pem"))
	assert.ErrorContains(t, err, "no such file")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate"), 0o600))
	_, err = client.TLSConfigWithCA(junk)
	assert.ErrorContains(t, err, "no PEM certificate")
}

// TestClient_Limits: requests over the tracker's limits fail with a clear
// error, one by one; the client and its other requests go on.
func TestClient_Limits(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Limits.MaxFrameBytes = 1 << 20
		o.MaxWaitingPerMaster = 2
	}))
	m := dial(t, tr.Addr(), client.Options{})

	big := m.Submit(eval("'"+strings.Repeat("x", 1<<20)+"'"), workunit.Options{})
	_, err := big.Wait(ctxFor(t))
	require.ErrorIs(t, err, wire.ErrLimit)
	assert.Contains(t, err.Error(), "put large values in blobs")

	a := m.Submit(eval("1"), workunit.Options{})
	b := m.Submit(eval("2"), workunit.Options{})
	c := m.Submit(eval("3"), workunit.Options{})
	_, err = a.Accepted(ctxFor(t))
	require.NoError(t, err)
	_, err = b.Accepted(ctxFor(t))
	require.NoError(t, err)
	_, err = c.Wait(ctxFor(t))
	require.Error(t, err)
	assert.True(t, wire.IsCode(err, wire.CodeLimit), "%v", err)
	assert.Contains(t, err.Error(), "waiting or running")

	// Once one finishes, there is room again.
	w := dial(t, tr.Addr(), client.Options{Slots: 1})
	work(t, w, 1, echo)
	select {
	case <-waitAny(t, a, b):
	case <-ctxFor(t).Done():
		t.Fatal("no result")
	}
	_, err = m.Submit(eval("3"), workunit.Options{}).Accepted(ctxFor(t))
	require.NoError(t, err)
	assert.True(t, m.Connected())
}

// waitAny returns a channel closed when one of the calls is finished.
func waitAny(t *testing.T, calls ...*client.Call) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{})
	once := make(chan struct{}, 1)
	once <- struct{}{}
	for _, k := range calls {
		k.OnDone(func(*workunit.Outcome, error) {
			select {
			case <-once:
				close(ch)
			default:
			}
		})
	}
	return ch
}
