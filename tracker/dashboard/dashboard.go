// Package dashboard is riotd's web dashboard: a single-page application of
// plain HTML, CSS and JavaScript, embedded in the binary, that shows what
// the tracker's JSON API (docs/http.md) says and updates itself from its
// server-sent events. It has no build step and loads nothing from
// elsewhere; its one library, uPlot (the throughput chart), is vendored
// under static/vendor/uplot by scripts/update-uplot.sh.
//
// The package serves pages and files only; the API, the login and the
// session cookie are the tracker's. riotd mounts it as:
//
//	d := dashboard.New(dashboard.Options{Title: name, Secure: tls})
//	mux.HandleFunc("GET /ui/{file...}", d.ServeAsset)
//	// GET / for a browser (Accept: text/html): d.ServeIndex, or, without
//	// a session, d.ServeLogin(w, r, http.StatusUnauthorized, "")
//
// The page's links are hash routes (#/jobs/ID), so that GET / is its only
// HTML URL. Its scripts and styles are named with a digest of their content
// (/ui/app.js?v=DIGEST) and may be cached for a year; the HTML is never
// cached.
package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"github.com/riot-go/riot/internal/loopback"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Options configure the dashboard.
type Options struct {
	// Title names the tracker in the page's title and header (default
	// "riotd"), e.g. the tracker's name.
	Title string
	// Secure says that riotd serves TLS. Without it the login page warns
	// that a token would cross the network in clear text when the page
	// is not on a loopback address.
	Secure bool
	// Logout shows a "Log out" button (a form that POSTs /logout): set it
	// when riotd has credentials (--token-file) and so sessions.
	Logout bool
	// Replicas shows the Replicas page in the navigation: the replicas of
	// a replicated riotd, from GET /api/v1/replicas. Set it when riotd
	// runs as a replica (tracker.Options.Replicas).
	Replicas bool
}

// Dashboard serves the dashboard's pages and files. It is read-only after
// New: safe for concurrent use.
type Dashboard struct {
	opts   Options
	assets map[string]asset
	index  []byte
	login  *template.Template
}

// asset is one embedded file, with what it is served with.
type asset struct {
	data        []byte
	contentType string
	digest      string // hex, of data: the ETag and the version in URLs
}

// contentTypes are the types of the embedded files, by extension; set
// here rather than read from the system's MIME tables, which vary.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	"":      "text/plain; charset=utf-8", // LICENSE, VERSION
}

// scripts are the page's scripts, in the order they run: app.js first
// (the helpers and the router the pages register with).
var scripts = []string{
	"vendor/uplot/uPlot.iife.min.js",
	"js/app.js",
	"js/overview.js",
	"js/workers.js",
	"js/jobs.js",
	"js/workunits.js",
	"js/failures.js",
	"js/stream.js",
	"js/replicas.js",
}

var styles = []string{"vendor/uplot/uPlot.min.css", "app.css"}

// New returns the dashboard. It reads the embedded files once; it panics
// only if they are broken, which the package's tests rule out.
func New(opts Options) *Dashboard {
	if opts.Title == "" {
		opts.Title = "riotd"
	}
	d := &Dashboard{opts: opts, assets: make(map[string]asset)}
	root, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	err = fs.WalkDir(root, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasSuffix(p, ".tmpl") {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(data)
		d.assets[p] = asset{data: data, contentType: ct, digest: hex.EncodeToString(sum[:8])}
		return nil
	})
	if err != nil {
		panic(err)
	}
	funcs := template.FuncMap{"asset": d.assetURL}
	tmpl := template.Must(template.New("").Funcs(funcs).ParseFS(root, "*.tmpl"))
	var b bytes.Buffer
	err = tmpl.ExecuteTemplate(&b, "index.html.tmpl", map[string]any{
		"Title": opts.Title, "Logout": opts.Logout, "Replicas": opts.Replicas, "Scripts": scripts, "Styles": styles,
	})
	if err != nil {
		panic(err)
	}
	d.index = b.Bytes()
	d.login = tmpl.Lookup("login.html.tmpl")
	return d
}

// assetURL is the URL of an embedded file, versioned by its digest.
func (d *Dashboard) assetURL(name string) (string, error) {
	a, ok := d.assets[name]
	if !ok {
		return "", fs.ErrNotExist
	}
	return "/ui/" + name + "?v=" + a.digest, nil
}

// pageHeaders are the headers of the HTML pages: never cached, never
// framed, scripts and styles from riotd only. Referrer-Policy is
// same-origin (not no-referrer), so that the browser still sends Origin
// on the dashboard's own POSTs, which riotd's CSRF check reads.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; "+
		"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "+
		"form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

// ServeIndex writes the single-page application's HTML: riotd's answer
// to GET / from a browser allowed to see it.
func (d *Dashboard) ServeIndex(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(d.index)
}

// ServeLogin writes the login page with the given status (401 for a
// browser without a session or with a wrong token) and message (shown
// above the form; "" for none). Its form POSTs the field "token" to
// /login. The page never holds a token: the message must not quote one.
func (d *Dashboard) ServeLogin(w http.ResponseWriter, r *http.Request, status int, message string) {
	var b bytes.Buffer
	err := d.login.Execute(&b, map[string]any{
		"Title": d.opts.Title, "Message": message, "Insecure": !d.opts.Secure && !loopback.Host(r.Host),
		"CSS": d.mustURL("app.css"), "Icon": d.mustURL("favicon.svg"),
	})
	if err != nil {
		slog.Error("dashboard: the login page", "err", err)
		http.Error(w, "riotd: the login page failed", http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

func (d *Dashboard) mustURL(name string) string {
	u, err := d.assetURL(name)
	if err != nil {
		panic(err)
	}
	return u
}

// ServeAsset serves GET /ui/{file...}: an embedded file, with its
// Content-Type and an ETag. A request that names the file's current
// version (?v=DIGEST, as the page's links do) may be cached for a year;
// any other is revalidated each time.
func (d *Dashboard) ServeAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "" {
		name = strings.TrimPrefix(r.URL.Path, "/ui/")
	}
	a, ok := d.assets[name]
	if !ok {
		http.Error(w, "riotd: no such file of the dashboard: "+name, http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", `"`+a.digest+`"`)
	if r.URL.Query().Get("v") == a.digest {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.data))
}
