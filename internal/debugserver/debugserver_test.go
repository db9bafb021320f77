package debugserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStart_ServesPprof(t *testing.T) {
	t.Parallel()
	s, err := Start(":0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Contains(t, s.Addr().String(), "127.0.0.1:", "no host: loopback")
	resp, err := http.Get("http://" + s.Addr().String() + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "goroutine profile")
	require.NoError(t, s.Close(context.Background()))

	_, err = Start("6060", slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, `--debug-listen "6060": want HOST:PORT`)
}
