package dashboard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/tracker/dashboard"
)

// mux mounts the dashboard as riotd does.
func mux(d *dashboard.Dashboard) *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /ui/{file...}", d.ServeAsset)
	m.HandleFunc("GET /{$}", d.ServeIndex)
	m.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		d.ServeLogin(w, r, http.StatusUnauthorized, r.URL.Query().Get("m"))
	})
	return m
}

func get(t *testing.T, h http.Handler, target string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

var assetRE = regexp.MustCompile(`(?:src|href)="(/ui/[^"?]+)\?v=([0-9a-f]+)"`)

// TestIndex_LinksVersionedAssets: the page names every script and style
// with its digest, and each of those URLs serves the file with its
// Content-Type and a year's caching.
func TestIndex_LinksVersionedAssets(t *testing.T) {
	h := mux(dashboard.New(dashboard.Options{Title: "riot-1:2355"}))
	resp, body := get(t, h, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, "same-origin", resp.Header.Get("Referrer-Policy"), "no-referrer would make the browser send Origin: null on the page's POSTs")
	assert.Contains(t, body, "<title>riot-1:2355</title>")
	assert.NotContains(t, body, "Log out", "no Logout button unless asked")
	assert.NotContains(t, body, `data-route="replicas"`, "no Replicas page unless asked")
	assert.NotContains(t, body, "https://", "nothing loads from elsewhere")

	links := assetRE.FindAllStringSubmatch(body, -1)
	want := map[string]string{
		"/ui/js/app.js": "text/javascript; charset=utf-8", "/ui/js/stream.js": "text/javascript; charset=utf-8",
		"/ui/vendor/uplot/uPlot.iife.min.js": "text/javascript; charset=utf-8",
		"/ui/app.css":                        "text/css; charset=utf-8", "/ui/vendor/uplot/uPlot.min.css": "text/css; charset=utf-8",
	}
	seen := map[string]bool{}
	for _, l := range links {
		resp, content := get(t, h, l[1]+"?v="+l[2])
		require.Equal(t, http.StatusOK, resp.StatusCode, l[1])
		assert.NotEmpty(t, content, l[1])
		assert.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"), l[1])
		assert.Equal(t, `"`+l[2]+`"`, resp.Header.Get("ETag"), l[1])
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), l[1])
		if ct, ok := want[l[1]]; ok {
			assert.Equal(t, ct, resp.Header.Get("Content-Type"), l[1])
		}
		seen[l[1]] = true
	}
	for p := range want {
		assert.True(t, seen[p], "the page links %s", p)
	}
}

// TestAsset_Caching: without the current version a file is revalidated,
// and its ETag answers 304; unknown files and the templates are 404.
func TestAsset_Caching(t *testing.T) {
	h := mux(dashboard.New(dashboard.Options{}))
	resp, body := get(t, h, "/ui/js/app.js")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	assert.Contains(t, body, "riot.page")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)

	resp, _ = get(t, h, "/ui/js/app.js?v=0000", "If-None-Match", etag)
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), "an old version is not cached for a year")

	resp, body = get(t, h, "/ui/vendor/uplot/LICENSE")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, body, "MIT")

	for _, p := range []string{"/ui/nope.js", "/ui/index.html.tmpl", "/ui/login.html.tmpl", "/ui/js", "/ui/"} {
		resp, _ := get(t, h, p)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
	}
}

// TestLogin_Page: the login page posts a token field to /login, escapes
// its message, holds no token, and warns about clear text only off TLS
// and off loopback.
func TestLogin_Page(t *testing.T) {
	h := mux(dashboard.New(dashboard.Options{Title: "tr"}))
	resp, body := get(t, h, "http://localhost:2355/login?m=wrong+<b>token</b>")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Contains(t, body, `<form method="post" action="/login"`)
	assert.Contains(t, body, `type="password" id="token" name="token"`)
	assert.Contains(t, body, "wrong &lt;b&gt;token&lt;/b&gt;")
	assert.NotContains(t, body, "value=", "the field is never filled in")
	assert.NotContains(t, body, "clear text", "loopback: no warning")

	for _, host := range []string{"localhost", "127.0.0.1:2355", "[::1]:2355", "a.localhost:80"} {
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.NotContains(t, rec.Body.String(), "clear text", host)
	}
	var req *http.Request
	for _, host := range []string{"riot.example:2355", "127.attacker.example", "10.0.0.7:2355"} {
		req = httptest.NewRequest(http.MethodGet, "/login", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Contains(t, rec.Body.String(), "clear text", host)
	}
	rec := httptest.NewRecorder()

	mux(dashboard.New(dashboard.Options{Secure: true})).ServeHTTP(rec, req)
	assert.NotContains(t, rec.Body.String(), "clear text", "TLS: no warning")
	assert.NotContains(t, rec.Body.String(), `id="login-message"`, "no message, no paragraph")
}

// TestIndex_Logout: Options.Logout shows a form that POSTs /logout.
func TestIndex_Logout(t *testing.T) {
	_, body := get(t, mux(dashboard.New(dashboard.Options{Logout: true})), "/")
	assert.Contains(t, body, `<form method="post" action="/logout"`)
	assert.True(t, strings.Contains(body, "<title>riotd</title>"), "default title")
}

// TestIndex_Replicas: a replicated riotd's page links its Replicas page.
func TestIndex_Replicas(t *testing.T) {
	_, body := get(t, mux(dashboard.New(dashboard.Options{Replicas: true})), "/")
	assert.Contains(t, body, `<a href="#/replicas" data-route="replicas">Replicas</a>`)
}
