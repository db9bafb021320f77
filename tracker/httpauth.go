package tracker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/riot-go/riot/internal/loopback"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/wire"
)

// Who may use the dashboard and the HTTP API (docs/http.md): without
// credentials, requests that name riotd by a loopback host; with them, a
// master's or a viewer's token, as a Bearer header or as the session
// cookie that POST /login sets. Requests that change state and rely on
// the cookie (or on nothing, without credentials) must come from riotd's
// own origin.

// sessionCookie is the dashboard's session cookie.
const sessionCookie = "riot_session"

// Bounds of the dashboard's sessions.
const (
	sessionLife = 12 * time.Hour
	maxSessions = 10_000
)

// sessions are the dashboard's logins: random ids, never tokens, each
// standing for the credential that logged in. Safe for concurrent use.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

type session struct {
	cred    credSum
	expires time.Time
}

func newSessions() *sessions { return &sessions{m: make(map[string]*session)} }

// add makes a session for cred and returns its id.
func (ss *sessions) add(cred credSum, now time.Time) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= maxSessions {
		// Expired ones first; then the one that expires soonest.
		var oldest string
		for k, s := range ss.m {
			if now.After(s.expires) {
				delete(ss.m, k)
				continue
			}
			if oldest == "" || s.expires.Before(ss.m[oldest].expires) {
				oldest = k
			}
		}
		if len(ss.m) >= maxSessions {
			delete(ss.m, oldest)
		}
	}
	ss.m[id] = &session{cred: cred, expires: now.Add(sessionLife)}
	return id
}

// get returns the credential of session id, if it is live.
func (ss *sessions) get(id string, now time.Time) (credSum, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[id]
	if !ok {
		return credSum{}, false
	}
	if now.After(s.expires) {
		delete(ss.m, id)
		return credSum{}, false
	}
	return s.cred, true
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, id)
	ss.mu.Unlock()
}

// access is what a request may do.
type access int

const (
	accessNone access = iota
	accessRead
	accessCancel
)

// caller is who made a request, as far as the API is concerned.
type caller struct {
	access access
	// name names it in cancellations: its credential's name, or "the
	// dashboard".
	name string
	// ambient: it was let in by its cookie, or by nothing (without
	// credentials), not by a header a page elsewhere cannot send.
	ambient bool
	// admin: its credential is an admin's (RoleAdmin).
	admin bool
}

// hostAllowed reports whether riotd answers a request for r's Host:
// without credentials (and without --unsafe-no-auth, which says riotd is
// reached from elsewhere), only one for a loopback host, so that a web
// page elsewhere that points a name of its own at 127.0.0.1 (DNS
// rebinding) reaches neither the API, the status pages nor the websocket.
func (s *Server) hostAllowed(r *http.Request) bool {
	return s.auth != nil || s.opts.UnsafeNoAuth || loopback.Host(r.Host)
}

// refuseHost answers a request that hostAllowed refuses.
func refuseHost(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("riotd: without --token-file, riotd answers requests for localhost only (this one is for %q): give riotd a --token-file to serve others", r.Host), http.StatusForbidden)
}

// whoIs says who made r. It answers the request itself (and returns ok
// false) when the request is refused.
func (s *Server) whoIs(w http.ResponseWriter, r *http.Request) (caller, bool) {
	if s.auth == nil {
		if !s.hostAllowed(r) {
			apiError(w, http.StatusForbidden, "riotd: without --token-file, riotd answers requests for localhost only (this one is for %q): give riotd a --token-file to serve others", r.Host)
			return caller{}, false
		}
		return caller{access: accessCancel, ambient: true}, true
	}
	if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		cred, valid := s.auth.check(strings.TrimSpace(tok))
		if !valid {
			s.refuseToken(w, r, true)
			return caller{}, false
		}
		return callerOf(cred, false), true
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if cred, ok := s.sessions.get(ck.Value, time.Now()); ok {
			return callerOf(cred, true), true
		}
	}
	apiError(w, http.StatusUnauthorized, "riotd: log in first (POST /login with a master's or a viewer's token), or send Authorization: Bearer TOKEN")
	return caller{}, false
}

func callerOf(cred credSum, ambient bool) caller {
	c := caller{name: cred.name, ambient: ambient, admin: cred.role == RoleAdmin}
	switch cred.role {
	case wire.RoleMaster:
		c.access = accessCancel
	case RoleViewer, RoleAdmin:
		c.access = accessRead
	}
	return c
}

// guessed counts a wrong token of r's address, as failed hellos are
// counted (see throttle), and waits out the delay of an address that has
// failed too often. It reports whether it waited (the answer is then a
// throttled one), and whether r is still there to answer.
func (s *Server) guessed(r *http.Request) (throttled, ok bool) {
	wait := s.throttle.failed(hostOf(r.RemoteAddr))
	if wait <= 0 {
		return false, true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, true
	case <-r.Context().Done():
		return true, false
	}
}

// refuseToken answers a request whose token is wrong, throttled by
// address as failed hellos are.
func (s *Server) refuseToken(w http.ResponseWriter, r *http.Request, api bool) {
	s.counters.authFailures.Add(1)
	if throttled, ok := s.guessed(r); throttled {
		if ok {
			apiError(w, http.StatusTooManyRequests, "riotd: too many failed attempts from this address: wait and try again")
		}
		return
	}
	if api {
		w.Header().Set("WWW-Authenticate", `Bearer realm="riotd"`)
	}
	apiError(w, http.StatusUnauthorized, "riotd: the token is not accepted: give a master's or a viewer's token")
}

// sameOrigin reports whether r, a request that changes state, may come
// from a page of another site: not when its Origin names another host, or
// the browser says Sec-Fetch-Site other than same-origin (or none). A
// request with neither header is not a browser's (browsers send Origin
// with every POST, and Sec-Fetch-Site with every request): a script's,
// such as riot-worker cancel, which holds its credentials itself.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// reader is who reads the API: a master's token reads the work of its
// own memo scope (own) only, as on the websocket; a viewer's, and
// everyone without credentials or with --shared-cache, all of it (all).
// Workers and counts are everyone's.
type reader struct {
	own string
	all bool
}

// may reports whether rd may see work of memo scope scope.
func (rd reader) may(scope string) bool { return rd.all || scope == rd.own }

// api wraps an API handler that reads.
func (s *Server) api(h func(http.ResponseWriter, *http.Request, reader)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.whoIs(w, r)
		if !ok {
			return
		}
		if c.access < accessRead {
			apiError(w, http.StatusForbidden, "riotd: a worker's token cannot read the dashboard: use a master's or a viewer's")
			return
		}
		h(w, r, reader{own: scopeOf(c.name, s.opts.SharedCache),
			all: s.auth == nil || s.opts.SharedCache || c.access == accessRead})
	}
}

// canceler is who cancels from the dashboard: who names it in the
// workunits' errors; it may cancel the work of the memo scope own, or of
// every scope when all (no credentials, or --shared-cache: masters trust
// each other).
type canceler struct {
	who, own string
	all      bool
}

// may reports whether c may cancel work of memo scope scope.
func (c canceler) may(scope string) bool { return c.all || scope == c.own }

// apiChange wraps an API handler that changes state (a cancel): it needs
// a master's token, and a request let in by the cookie (or by nothing)
// must come from riotd's own origin. A master's token cancels the work of
// its own credential only, unless masters share their work
// (--shared-cache), as on the websocket.
func (s *Server) apiChange(h func(http.ResponseWriter, *http.Request, canceler)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.whoIs(w, r)
		if !ok {
			return
		}
		if c.access < accessCancel {
			apiError(w, http.StatusForbidden, "riotd: canceling needs a master's token; this one may only look")
			return
		}
		if c.ambient && !sameOrigin(r) {
			apiError(w, http.StatusForbidden, "riotd: a request that changes state must come from the dashboard's own page (Origin %q is not %q)", r.Header.Get("Origin"), r.Host)
			return
		}
		who := "the HTTP API"
		if c.ambient {
			who = "the dashboard"
		}
		if c.name != "" {
			who += " (" + c.name + ")"
		}
		h(w, r, canceler{who: who, own: scopeOf(c.name, s.opts.SharedCache),
			all: s.auth == nil || s.opts.SharedCache})
	}
}

// apiAdmin wraps a handler of a replicated tracker's membership changes
// (Options.AdminRoutes), which hand a replica added every job's data:
// with credentials it needs an admin's token (RoleAdmin) in the
// request's Authorization header; no other role's, and no dashboard
// session (a page elsewhere can make a browser send its cookie), will
// do. Without credentials (riotd on loopback) it answers as apiChange
// does: requests for a loopback host, from riotd's own origin.
func (s *Server) apiAdmin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth != nil && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			if _, err := r.Cookie(sessionCookie); err == nil {
				apiError(w, http.StatusForbidden, "riotd: membership changes need an admin's token in the request (Authorization: Bearer TOKEN), not a dashboard session")
				return
			}
		}
		c, ok := s.whoIs(w, r)
		if !ok {
			return
		}
		if s.auth != nil && (!c.admin || c.ambient) {
			apiError(w, http.StatusForbidden, "riotd: membership changes need an admin's token (a line \"admin TOKEN\" in --token-file, sent as Authorization: Bearer TOKEN); a master's, a viewer's or a worker's token may not")
			return
		}
		if c.ambient && !sameOrigin(r) {
			apiError(w, http.StatusForbidden, "riotd: a request that changes state must come from the dashboard's own page (Origin %q is not %q)", r.Header.Get("Origin"), r.Host)
			return
		}
		h(w, r)
	}
}

// serveLogin answers POST /login: a right token gets a session cookie
// and a redirect to the dashboard; a wrong one the login page again.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		apiError(w, http.StatusForbidden, "riotd: log in from riotd's own login page")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	// A form of 16 KiB comes at once: a client that trickles it holds a
	// connection no longer than this.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := r.ParseForm(); err != nil {
		s.loginPage(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	cred, valid := s.auth.check(strings.TrimSpace(r.PostForm.Get("token")))
	if !valid || (cred.role != wire.RoleMaster && cred.role != RoleViewer && cred.role != RoleAdmin) {
		s.counters.authFailures.Add(1)
		if !valid { // a worker's token is no guess: not throttled
			if _, ok := s.guessed(r); !ok {
				return
			}
		}
		msg := "That token is not accepted. Give a master's or a viewer's token."
		if valid {
			msg = "A worker's token cannot open the dashboard. Give a master's or a viewer's token."
		}
		s.loginPage(w, r, http.StatusUnauthorized, msg)
		return
	}
	id := s.sessions.add(cred, time.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.tls, MaxAge: int(sessionLife.Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// serveLogout ends the session of the request's cookie.
func (s *Server) serveLogout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		apiError(w, http.StatusForbidden, "riotd: log out from riotd's own page")
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.remove(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.tls, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// loggedIn reports whether a browser's request carries a live session
// (or needs none).
func (s *Server) loggedIn(r *http.Request) bool {
	if s.auth == nil {
		return true
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	_, ok := s.sessions.get(ck.Value, time.Now())
	return ok
}
