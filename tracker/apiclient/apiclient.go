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
	"strings"
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

// Client calls one tracker's HTTP API. It is safe for concurrent use.
type Client struct {
	base  string // http(s)://host:port
	token string
	hc    *http.Client
}

// New returns a Client of the tracker at addr: HOST, HOST:PORT, or a
// ws://, wss://, http:// or https:// URL, as riot-worker's --tracker takes
// it.
func New(addr string, opts Options) (*Client, error) {
	a := strings.TrimSpace(addr)
	switch {
	case strings.HasPrefix(a, "http://"):
		a = "ws://" + strings.TrimPrefix(a, "http://")
	case strings.HasPrefix(a, "https://"):
		a = "wss://" + strings.TrimPrefix(a, "https://")
	}
	ws, err := client.TrackerURL(a)
	if err != nil {
		return nil, fmt.Errorf("apiclient: %w", err)
	}
	u, err := url.Parse(ws)
	if err != nil {
		return nil, fmt.Errorf("apiclient: tracker address %q: %w", addr, err)
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	if opts.TLSConfig != nil {
		u.Scheme = "https"
	}
	u.Path, u.RawQuery = "", ""
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = opts.TLSConfig
	return &Client{base: u.String(), token: opts.Token, hc: &http.Client{Timeout: opts.Timeout, Transport: tr}}, nil
}

// Base returns the tracker's HTTP address, e.g. http://riot-1:2355.
func (c *Client) Base() string { return c.base }

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
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("apiclient: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("apiclient: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("apiclient: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &Error{Status: resp.StatusCode, Message: msg, URL: c.base + path}
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
	return tracker.JobInfo{}, &Error{Status: http.StatusNotFound, URL: c.base + "/api/v1/jobs",
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
