package tracker

import (
	"net/http"

	"github.com/riot-go/riot/tracker/dashboard"
)

// The dashboard's pages and files come from package tracker/dashboard;
// who may see them is decided here (serveRoot, the login).

// loginPage writes the login page with status and message.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.dash.ServeLogin(w, r, status, message)
}

// dashboardIndex writes the dashboard's page.
func (s *Server) dashboardIndex(w http.ResponseWriter, r *http.Request) {
	s.dash.ServeIndex(w, r)
}

// dashboardRoutes makes the dashboard and adds its files to mux, under
// /ui/. They hold nothing secret (the page's code and styles), so they
// need no session: the login page uses them too.
func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	s.dash = dashboard.New(dashboard.Options{Title: s.name, Secure: s.tls, Logout: s.auth != nil, Replicas: s.opts.Replicas != nil})
	mux.HandleFunc("GET /ui/{file...}", s.dash.ServeAsset)
}
