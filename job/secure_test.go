package job

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/tracker/trackertest"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/worker"
)

// TestRun_TokensAndTLS runs a job script on a tracker that checks tokens
// and serves TLS: the script's connection, and the progress bar's status
// poll, both use the token and the authority.
func TestRun_TokensAndTLS(t *testing.T) {
	t.Parallel()
	const masterToken, workerToken = "master-token-0123456789", "worker-token-0123456789"
	cert := trackertest.NewCert(t)
	tr := trackertest.Start(t, trackertest.Quiet(), trackertest.TLS(cert), trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: masterToken},
		tracker.Credential{Role: wire.RoleWorker, Token: workerToken},
	))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Options{
			Tracker: tr.Addr(), Name: "secure", Slots: 2,
			Client: client.Options{Token: workerToken, TLSConfig: cert.ClientConfig()},
			Logger: slog.New(slog.DiscardHandler),
			Ready:  func(string) { close(ready) },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-ready

	script := filepath.Join(t.TempDir(), "job.js")
	require.NoError(t, os.WriteFile(script, []byte(`
		const ids = [1, 2, 3].map((n) => riot.doWork((x) => { sleep(0.05); return [x * 2, riot.worker.name]; }, n));
		console.log(JSON.stringify(ids.map(riot.waitUntilDone)));
	`), 0o644))
	var out, errb bytes.Buffer
	err := Run(context.Background(), Options{
		Script: script, Tracker: tr.Addr(), Token: masterToken, TLSConfig: cert.ClientConfig(),
		Progress: ProgressOn, Stdout: &out, Stderr: &errb,
	})
	require.NoError(t, err, errb.String())
	assert.Equal(t, `[[2,"secure"],[4,"secure"],[6,"secure"]]`+"\n", out.String())

	// A wrong token is refused with a reason.
	err = Run(context.Background(), Options{Script: script, Tracker: tr.Addr(), Token: "wrong-token-0123456789", TLSConfig: cert.ClientConfig(),
		Stdout: &out, Stderr: &errb})
	require.Error(t, err)
	assert.Regexp(t, regexp.MustCompile(`credentials`), err.Error())
}

// TestRun_TakesWork_WorkerToken: a job script that takes work itself
// (waitForWork) on a tracker that checks tokens does so with a worker's
// token (Options.WorkerToken); with its master's token alone it is
// refused, and the error says how to give one.
func TestRun_TakesWork_WorkerToken(t *testing.T) {
	t.Parallel()
	const masterToken, workerToken = "master-token-0123456789", "worker-token-0123456789"
	tr := trackertest.Start(t, trackertest.Quiet(), trackertest.Tokens(
		tracker.Credential{Role: wire.RoleMaster, Token: masterToken},
		tracker.Credential{Role: wire.RoleWorker, Token: workerToken},
	))
	script := filepath.Join(t.TempDir(), "self.js")
	require.NoError(t, os.WriteFile(script, []byte(`
		const client = riot.currentClient();
		const id = client.addWorkunit((a, b) => a * b, 6, 7);
		const [key, work] = client.waitForWork();
		client.completeWorkunit(key, false, work.fn(...work.args));
		const [, finished, , result] = client.waitForFinishedWorkunit(id);
		console.log(finished, result);
	`), 0o644))
	var out, errb bytes.Buffer
	err := Run(context.Background(), Options{Script: script, Tracker: tr.Addr(), Token: masterToken, WorkerToken: workerToken,
		Stdout: &out, Stderr: &errb})
	require.NoError(t, err, errb.String())
	assert.Equal(t, "done 42\n", out.String())

	out.Reset()
	errb.Reset()
	err = Run(context.Background(), Options{Script: script, Tracker: tr.Addr(), Token: masterToken, Stdout: &out, Stderr: &errb})
	require.Error(t, err)
	msg := err.Error() + errb.String()
	assert.Contains(t, msg, "a master's token cannot take work")
	assert.Contains(t, msg, "--worker-token or $RIOT_WORKER_TOKEN")
}
