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

// TestClient_UnsendableReport: a report that cannot be sent (a frame over
// the tracker's limit: a huge error, or a console that does not fit with
// its result) fails its workunit with an error that says why, sent in its
// place. A regression test: it was only logged, and the workunit stayed
// running for ever.
func TestClient_UnsendableReport(t *testing.T) {
	t.Parallel()
	tr := trackertest.Start(t, trackertest.WithOptions(func(o *tracker.Options) {
		o.Limits.MaxFrameBytes = 64 << 10
	}))
	m := dial(t, tr.Addr(), client.Options{})
	w := dial(t, tr.Addr(), client.Options{Slots: 1})
	var big workunit.ConsoleBuilder
	big.Add(workunit.LevelLog, strings.Repeat("c", 100<<10))
	for _, tc := range []struct {
		name   string
		report func(a *client.Assignment) error
		want   string
	}{
		{"failed", func(a *client.Assignment) error {
			return w.Failed(a.Lease(), &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: strings.Repeat("x", 1<<20)}, nil, 0)
		}, "the worker could not send the workunit's error with its console output: wire: cannot encode failed: a frame of"},
		{"done", func(a *client.Assignment) error {
			return w.Done(a.Lease(), []byte{0xf6}, big.Console(), 0)
		}, "the worker could not send the workunit's result with its console output: wire: cannot encode done: a frame of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := m.Submit(eval("'"+tc.name+"'"), workunit.Options{})
			a, err := w.WaitForWork(ctxFor(t))
			require.NoError(t, err)
			require.NoError(t, tc.report(a))
			_, err = k.Wait(ctxFor(t))
			var werr *workunit.Error
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, workunit.ResultLimit, werr.Kind)
			assert.Contains(t, werr.Message, tc.want)
			assert.Contains(t, werr.Message, "(riotd --max-frame-bytes)")
			assert.Less(t, len(werr.Message), 2<<10)
		})
	}
	// A thrown value over the tracker's limit is dropped, and the message
	// says so.
	k := m.Submit(eval("'value'"), workunit.Options{})
	a, err := w.WaitForWork(ctxFor(t))
	require.NoError(t, err)
	require.NoError(t, w.Failed(a.Lease(), &workunit.Error{Kind: workunit.Thrown, Message: "Uncaught x", Value: make([]byte, 60<<10)}, nil, 0))
	_, err = k.Wait(ctxFor(t))
	var werr *workunit.Error
	require.ErrorAs(t, err, &werr)
	assert.Nil(t, werr.Value)
	assert.Regexp(t, `^Uncaught x \(the thrown value is not sent: its encoding of 61440 bytes is over the tracker's limit of \d+\)$`, werr.Message)
}
