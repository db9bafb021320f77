package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// dashboardLoad is what a browser with riotd's dashboard open costs the
// tracker: an event stream (GET /api/v1/events), and on each of its
// updates the requests a page makes to redraw (the overview's, the
// workers', the jobs' and a page of workunits).
type dashboardLoad struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	events   atomic.Int64
	requests atomic.Int64
	err      atomic.Pointer[error]
}

// openDashboard starts a dashboardLoad on the tracker at addr.
func openDashboard(ctx context.Context, addr string) *dashboardLoad {
	ctx, cancel := context.WithCancel(ctx)
	d := &dashboardLoad{cancel: cancel}
	base := "http://" + addr
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events", nil)
		if err != nil {
			d.err.Store(&err)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				d.err.Store(&err)
			}
			return
		}
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			d.events.Add(1)
			for _, path := range []string{"/api/v1/overview", "/api/v1/workers", "/api/v1/jobs", "/api/v1/workunits?limit=50"} {
				if err := get(ctx, base+path); err != nil {
					if ctx.Err() == nil {
						d.err.Store(&err)
					}
					return
				}
				d.requests.Add(1)
			}
		}
	}()
	return d
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// close stops the load and returns the updates it saw and the requests it
// made.
func (d *dashboardLoad) close() (events, requests int64, err error) {
	d.cancel()
	d.wg.Wait()
	if p := d.err.Load(); p != nil {
		err = *p
	}
	return d.events.Load(), d.requests.Load(), err
}
