// Package apiclient is a Go client of riotd's HTTP API (docs/http.md):
// the tracker's overview, workers, jobs, workunits and failures, and
// cancellation from outside a job. riot-worker's status, jobs,
// workunits, cancel and logs commands use it.
//
//	c, err := apiclient.New("riot-1:2355", apiclient.Options{Token: tok})
//	ov, err := c.Overview(ctx)
package apiclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/tracker"
)

// Options configure a Client.
type Options struct {
	// Token is a master's or a viewer's token ("" when riotd checks
	// none); it goes as Authorization: Bearer.
	Token string
	// TLSConfig is for a tracker that serves TLS; when set, an address
	// without a scheme means https.
	TLSConfig *tls.Config
	// Timeout bounds one request. Default: 30 seconds.
	Timeout time.Duration
}

// Client calls a tracker's HTTP API: one riotd, or the replicas of a
// replicated one (docs/replicas.md), of which it asks the leader. It is
// safe for concurrent use.
type Client struct {
	bases []string // http(s)://host:port, one a replica
	token string
	hc    *http.Client
	good  atomic.Int32 // the base that answered last
}

// New returns a Client of the tracker at addr: HOST, HOST:PORT, or a
// ws://, wss://, http:// or https:// URL, as riot-worker's --tracker takes
// it; or several, separated by commas, for a replicated tracker's
// replicas. A replica that does not lead answers with a redirect to the
// leader (HTTP 307), which the Client follows only to one of addr's
// addresses, since the request carries the token (as package client
// does); one that knows no leader (503), or cannot be reached, is passed
// for the next.
func New(addr string, opts Options) (*Client, error) {
	var bases []string
	for a := range strings.SplitSeq(addr, ",") {
		b, err := baseOf(a, opts.TLSConfig != nil)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(bases, b) {
			bases = append(bases, b)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = opts.TLSConfig
	hc := &http.Client{Timeout: opts.Timeout, Transport: tr,
		// A replica's redirect is followed by do, within bases only.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Client{bases: bases, token: opts.Token, hc: hc}, nil
}

// baseOf returns the HTTP base URL (scheme://host:port) of a tracker
// address.
func baseOf(addr string, secure bool) (string, error) {
	a := strings.TrimSpace(addr)
	switch {
	case strings.HasPrefix(a, "http://"):
		a = "ws://" + strings.TrimPrefix(a, "http://")
	case strings.HasPrefix(a, "https://"):
		a = "wss://" + strings.TrimPrefix(a, "https://")
	}
	ws, err := client.TrackerURL(a)
	if err != nil {
		return "", fmt.Errorf("apiclient: %w", err)
	}
	u, err := url.Parse(ws)
	if err != nil {
		return "", fmt.Errorf("apiclient: tracker address %q: %w", addr, err)
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	if secure {
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "", ""
	u.Host = strings.ToLower(u.Host)
	return u.String(), nil
}

// Base returns the tracker's HTTP address, e.g. http://riot-1:2355: of
// several, the one that answered last.
func (c *Client) Base() string { return c.bases[int(c.good.Load())] }

// Error is an answer of the API other than 200: its status and what riotd
// said.
type Error struct {
	Status  int
	Message string
	URL     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.URL, e.Status, http.StatusText(e.Status), e.Message)
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	body, err := c.ask(ctx, method, path)
	if err != nil {
		return err
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], body...)
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("apiclient: %s %s: the answer does not decode (is this riotd?): %w", method, path, err)
	}
	return nil
}

// ask sends the request to the tracker, trying each replica from the one
// that answered last, and following a replica's redirect to its leader
// when the leader is one of c.bases; it returns the body of a 200.
func (c *Client) ask(ctx context.Context, method, path string) ([]byte, error) {
	n := len(c.bases)
	start := int(c.good.Load())
	var errs []error
	tried := make([]bool, n)
	for i := range n {
		// The next listed address, then the leader it names, if listed.
		for idx := (start + i) % n; idx >= 0 && !tried[idx]; {
			tried[idx] = true
			body, leader, err := c.askOne(ctx, method, c.bases[idx], path)
			if err == nil {
				c.good.Store(int32(idx))
				return body, nil
			}
			var e *Error
			switch idx = slices.Index(c.bases, leader); {
			case ctx.Err() != nil:
				return nil, err
			case leader != "" && idx < 0:
				err = fmt.Errorf("%w; it names its leader %s, which is not among the tracker's addresses (%s): not followed, the request carries the token; give every replica's address, as riotd's --peers names them",
					err, leader, strings.Join(c.bases, ","))
			case leader == "" && errors.As(err, &e) && e.Status != http.StatusServiceUnavailable:
				return nil, err // the tracker's own answer
			}
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// askOne sends the request to base. A replica's redirect comes back as
// an error with the leader's base URL.
func (c *Client) askOne(ctx context.Context, method, base, path string) (body []byte, leader string, err error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return nil, "", fmt.Errorf("apiclient: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("apiclient: %w", err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("apiclient: %s %s: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return body, "", nil
	}
	var e struct{ Error string }
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusConflict {
		if loc := resp.Header.Get(client.LeaderHeader); loc != "" {
			if b, err := baseOf(loc, strings.HasPrefix(base, "https://")); err == nil {
				leader = b
			}
		} else if loc := resp.Header.Get("Location"); loc != "" {
			if lu, err := url.Parse(loc); err == nil && lu.Host != "" {
				leader = strings.ToLower(lu.Scheme + "://" + lu.Host)
			}
		}
		if msg == "" {
			msg = "this replica does not lead"
		}
	}
	return nil, leader, &Error{Status: resp.StatusCode, Message: msg, URL: base + path}
}

// Raw returns the JSON document of GET path (such as /api/v1/jobs), as
// riotd wrote it.
func (c *Client) Raw(ctx context.Context, path string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, path, &raw)
	return raw, err
}

// Overview returns GET /api/v1/overview.
func (c *Client) Overview(ctx context.Context) (tracker.Overview, error) {
	var o tracker.Overview
	err := c.do(ctx, http.MethodGet, "/api/v1/overview", &o)
	return o, err
}

// Workers returns GET /api/v1/workers.
func (c *Client) Workers(ctx context.Context) ([]tracker.WorkerInfo, error) {
	var out struct{ Workers []tracker.WorkerInfo }
	err := c.do(ctx, http.MethodGet, "/api/v1/workers", &out)
	return out.Workers, err
}

// Jobs returns GET /api/v1/jobs.
func (c *Client) Jobs(ctx context.Context) ([]tracker.JobInfo, error) {
	var out struct{ Jobs []tracker.JobInfo }
	err := c.do(ctx, http.MethodGet, "/api/v1/jobs", &out)
	return out.Jobs, err
}

// Job returns GET /api/v1/jobs/{id}.
func (c *Client) Job(ctx context.Context, id string) (tracker.JobInfo, error) {
	var j tracker.JobInfo
	err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id), &j)
	return j, err
}

// FindJob returns the job that ref names: its id, or its name. Of several
// jobs of that name it takes the one running, or else the newest; two
// running ones are an error that lists their ids.
func (c *Client) FindJob(ctx context.Context, ref string) (tracker.JobInfo, error) {
	jobs, err := c.Jobs(ctx)
	if err != nil {
		return tracker.JobInfo{}, err
	}
	var named, running []tracker.JobInfo
	for _, j := range jobs {
		if j.ID == ref {
			return j, nil
		}
		if j.Name == ref {
			named = append(named, j)
			if j.State == "running" {
				running = append(running, j)
			}
		}
	}
	switch {
	case len(running) == 1:
		return running[0], nil
	case len(running) > 1:
		ids := make([]string, len(running))
		for i, j := range running {
			ids[i] = j.ID
		}
		return tracker.JobInfo{}, fmt.Errorf("%d running jobs are named %q: give one's id (%s)", len(running), ref, strings.Join(ids, ", "))
	case len(named) > 0:
		newest := named[0]
		for _, j := range named[1:] {
			if j.Started > newest.Started {
				newest = j
			}
		}
		return newest, nil
	}
	return tracker.JobInfo{}, &Error{Status: http.StatusNotFound, URL: c.Base() + "/api/v1/jobs",
		Message: fmt.Sprintf("no job with the id or name %q (riot-worker jobs lists them; ended jobs are kept for an hour)", ref)}
}

// Filter selects workunits for Workunits; zero fields select all.
type Filter struct {
	// Status is waiting, running, done or error, or several separated by
	// commas.
	Status string
	// Job is a job's id.
	Job string
	// Worker is a worker's name.
	Worker string
	// Error is text in the error's name or message.
	Error string
	// Limit is the most to return (riotd's default when 0).
	Limit int
	// Cursor is the Next of the page before.
	Cursor string
}

// Page is a page of workunits.
type Page struct {
	Workunits []tracker.WorkunitSummary `json:"workunits"`
	Next      string                    `json:"next"`
	Partial   bool                      `json:"partial"`
}

// Workunits returns one page of GET /api/v1/workunits.
func (c *Client) Workunits(ctx context.Context, f Filter) (Page, error) {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "job": f.Job, "worker": f.Worker, "error": f.Error, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", fmt.Sprint(f.Limit))
	}
	path := "/api/v1/workunits"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p Page
	err := c.do(ctx, http.MethodGet, path, &p)
	return p, err
}

// Workunit returns GET /api/v1/workunits/{key}: key is the 64 hex digits,
// or at least the first 12 of a recent workunit's.
func (c *Client) Workunit(ctx context.Context, key string) (tracker.WorkunitDetail, error) {
	var d tracker.WorkunitDetail
	err := c.do(ctx, http.MethodGet, "/api/v1/workunits/"+url.PathEscape(key), &d)
	return d, err
}

// Failures returns GET /api/v1/failures.
func (c *Client) Failures(ctx context.Context) ([]tracker.FailureGroup, error) {
	var out struct{ Failures []tracker.FailureGroup }
	err := c.do(ctx, http.MethodGet, "/api/v1/failures", &out)
	return out.Failures, err
}

// CancelJob cancels the waiting and running workunits of the job with id,
// and returns how many it canceled. It needs a master's token.
func (c *Client) CancelJob(ctx context.Context, id string) (int, error) {
	var out struct{ Canceled int }
	err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(id)+"/cancel", &out)
	return out.Canceled, err
}

// CancelWorkunit cancels the workunit key names, if it waits or runs, and
// returns how many it canceled (0 or 1). It needs a master's token.
func (c *Client) CancelWorkunit(ctx context.Context, key string) (int, error) {
	var out struct{ Canceled int }
	err := c.do(ctx, http.MethodPost, "/api/v1/workunits/"+url.PathEscape(key)+"/cancel", &out)
	return out.Canceled, err
}
