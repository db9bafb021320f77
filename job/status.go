package job

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
)

// remoteWorkers returns a function that reports the workers of a remote
// tracker, from its status page (GET /status, with the master's token),
// read once a second in the background while ctx lasts. When a read
// fails, it reports nothing known (workerStats.ok false) until the next
// read succeeds, rather than what the tracker said last.
func remoteWorkers(ctx context.Context, addr, token string, tlsConf *tls.Config) func() workerStats {
	// Of several (a tracker's replicas), the first: one that does not
	// lead redirects the request to the leader.
	first, _, _ := strings.Cut(addr, ",")
	ws, err := client.TrackerURL(first)
	if err != nil {
		return nil
	}
	pu, err := url.Parse(ws)
	if err != nil {
		return nil
	}
	pu.Scheme = strings.Replace(pu.Scheme, "ws", "http", 1)
	if tlsConf != nil {
		pu.Scheme = "https"
	}
	pu.Path = "/status"
	u := pu.String()
	var (
		mu    sync.Mutex
		stats workerStats
		hc    = &http.Client{Timeout: 2 * time.Second}
	)
	poll := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		fresh := workerStats{} // not ok: what the tracker said last is not known to hold
		defer func() {
			mu.Lock()
			stats = fresh
			mu.Unlock()
		}()
		resp, err := hc.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		var st tracker.Status
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
			return
		}
		fresh = workerStatsOf(&st)
	}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			poll()
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() workerStats {
		mu.Lock()
		defer mu.Unlock()
		return stats
	}
}
