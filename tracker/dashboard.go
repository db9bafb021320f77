package tracker

import (
	"html/template"
	"net/http"
)

// The dashboard's pages. Until its front end is built in, riotd serves a
// plain page that points at the API.

var plainLogin = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>riotd: log in</title></head>
<body><h1>riotd</h1>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/login">
<label>Token <input type="password" name="token" autocomplete="current-password" required></label>
<button type="submit">Log in</button>
</form></body></html>
`))

// loginPage writes the login page with status and message.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = plainLogin.Execute(w, message)
}

// dashboardIndex writes the dashboard's page.
func (s *Server) dashboardIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>riotd</title></head>
<body><h1>riotd</h1><p>The JSON API is at <a href="/api/v1/overview">/api/v1/overview</a> (docs/http.md).</p></body></html>
`))
}

// dashboardRoutes adds the dashboard's assets to mux.
func (s *Server) dashboardRoutes(mux *http.ServeMux) {}
