package tracker

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// MinTokenBytes is the shortest token riotd accepts in a token file: 16
// bytes, e.g. 32 hex digits from `openssl rand -hex 16`.
const MinTokenBytes = 16

// maxTokenBytes bounds a token (and what a Hello may present as one).
const maxTokenBytes = 4096

// RoleViewer is the role of a credential that may read the dashboard and
// the HTTP API (docs/http.md) and do nothing else: it cannot connect to
// the websocket endpoint, and cannot cancel.
const RoleViewer wire.Role = "viewer"

// RoleAdmin is the role of a credential that may change a replicated
// tracker's membership (Options.AdminRoutes: POST /api/v1/replicas,
// DELETE /api/v1/replicas/{id}, with the token in Authorization: a
// replica added is handed every job's data) and read what a viewer may;
// it cannot connect to the websocket endpoint, and cannot cancel. No other
// role may change membership.
const RoleAdmin wire.Role = "admin"

// Credential is one token that riotd accepts and what it allows.
type Credential struct {
	// Role is wire.RoleMaster, which allows submitting work and what goes
	// with it (watch, info, cancel, blobs; reading and canceling on the
	// dashboard) but not taking work, wire.RoleWorker, which allows
	// taking work, reporting results, handing work back and fetching
	// blobs, but not submitting or reading results, or RoleViewer, which
	// allows reading the dashboard and the HTTP API only, or RoleAdmin,
	// which allows what a viewer may and a replicated tracker's membership
	// changes. A program that
	// both submits and runs work connects twice, with a token of each
	// role (see docs/security.md).
	Role wire.Role
	// Token is the secret: at least MinTokenBytes bytes, printable ASCII
	// without spaces.
	Token string
	// Name names the credential in logs, keeps the JavaScript realms of
	// masters with different credentials apart, and is the memo scope of
	// a master's workunits: masters share memoized results only with
	// masters of the same name (unless Options.SharedCache), so renaming a
	// credential starts its cache afresh (see docs/security.md).
	// ParseTokens gives "ROLE:LINE" when the line names none.
	Name string
}

// ParseTokens reads a token file: one credential per line,
//
//	ROLE TOKEN [NAME]
//
// where ROLE is master, worker, viewer or admin, TOKEN the secret, and NAME an optional
// name for logs. Blank lines and lines starting with # are ignored. It
// refuses a file with no credentials, a token shorter than MinTokenBytes,
// and a token given twice.
func ParseTokens(r io.Reader) ([]Credential, error) {
	var creds []Credential
	seen := make(map[string]int)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), 64<<10)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("tracker: tokens: line %d: want ROLE TOKEN [NAME], with ROLE master, worker, viewer or admin", line)
		}
		c := Credential{Role: wire.Role(f[0]), Token: f[1]}
		if !knownRole(c.Role) {
			return nil, fmt.Errorf("tracker: tokens: line %d: role %q: want master, worker, viewer or admin", line, f[0])
		}
		if err := checkToken(c.Token); err != nil {
			return nil, fmt.Errorf("tracker: tokens: line %d: %w", line, err)
		}
		if prev, ok := seen[c.Token]; ok {
			return nil, fmt.Errorf("tracker: tokens: line %d: the token of line %d again", line, prev)
		}
		seen[c.Token] = line
		c.Name = string(c.Role) + ":" + strconv.Itoa(line)
		if len(f) == 3 {
			c.Name = f[2]
		}
		creds = append(creds, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tracker: tokens: %w", err)
	}
	if len(creds) == 0 {
		return nil, errors.New("tracker: tokens: no credentials (want lines of ROLE TOKEN [NAME])")
	}
	return creds, nil
}

// checkToken says what is wrong with a token, without quoting it.
func checkToken(tok string) error {
	if len(tok) < MinTokenBytes {
		return fmt.Errorf("a token of %d bytes: use at least %d (e.g. openssl rand -hex 16)", len(tok), MinTokenBytes)
	}
	if len(tok) > maxTokenBytes {
		return fmt.Errorf("a token of %d bytes: at most %d", len(tok), maxTokenBytes)
	}
	for i := range len(tok) {
		if tok[i] <= ' ' || tok[i] > '~' {
			return fmt.Errorf("a token with a byte %#x at %d: use printable ASCII", tok[i], i)
		}
	}
	return nil
}

// LoadTokenFile reads the token file at path (see ParseTokens). It
// returns warn, a warning for the log, when every user of the machine may
// read it. (A group may: Kubernetes mounts secrets readable by the pod's
// fsGroup.)
func LoadTokenFile(path string) (creds []Credential, warn string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("tracker: tokens: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o007 != 0 {
		warn = fmt.Sprintf("the token file %s has mode %v: every user of this machine may read it (chmod 600)", path, fi.Mode().Perm())
	}
	creds, err = ParseTokens(f)
	if err != nil {
		return nil, "", fmt.Errorf("%w (in %s)", err, path)
	}
	return creds, warn, nil
}

// rights say what a connection may do.
type rights uint8

const (
	// mayWork: credit, done, failed, return.
	mayWork rights = 1 << iota
	// maySubmit: submit, watch, unwatch, info, cancel.
	maySubmit
	// mayBlob: the blob messages (a master uploads what its workunits
	// capture and reads large results; a worker reads those and uploads
	// a result too large for a done).
	mayBlob
	allRights = mayWork | maySubmit | mayBlob
)

// rightsOf returns what a token of role allows. Without credentials, a
// connection may do everything (allRights).
func rightsOf(role wire.Role) rights {
	switch role {
	case wire.RoleWorker:
		return mayWork | mayBlob
	case RoleViewer, RoleAdmin:
		return 0
	}
	return maySubmit | mayBlob
}

// knownRole reports whether a credential may have role.
func knownRole(role wire.Role) bool {
	return role == wire.RoleMaster || role == wire.RoleWorker || role == RoleViewer || role == RoleAdmin
}

// needs returns the rights a message from a client needs (any of them
// will do), and the words that name what it does, for the refusal.
func needs(m wire.Msg) (rights, string) {
	switch m := m.(type) {
	case *wire.Submit:
		return maySubmit, "submit workunits"
	case *wire.Watch, *wire.Unwatch:
		return maySubmit, "watch workunits"
	case *wire.Info:
		if m.Key == (workunit.Key{}) {
			// The zero key names no workunit: its info (unknown) tells
			// nothing, and a worker uses it as a round trip (client.Sync)
			// when it stops.
			return allRights, "ask for info"
		}
		return maySubmit, "ask for a workunit's info"
	case *wire.Cancel:
		return maySubmit, "cancel workunits"
	case *wire.Child, *wire.Wait:
		// A worker submits children within a lease it holds: the table
		// checks the lease.
		return mayWork, "submit the children of a running workunit (a worker does, within the parent's lease)"
	case *wire.BlobHave, *wire.BlobPut, *wire.BlobGet, *wire.BlobWrite, *wire.BlobRead:
		return mayBlob, "store or read blobs"
	}
	return mayWork, "take work"
}

// authenticator checks tokens against the credentials, in constant time.
// It is read-only after newAuthenticator: safe for concurrent use.
type authenticator struct {
	creds []credSum
}

type credSum struct {
	sum  [sha256.Size]byte
	role wire.Role
	name string
}

func newAuthenticator(creds []Credential) (*authenticator, error) {
	if len(creds) == 0 {
		return nil, nil
	}
	a := &authenticator{}
	seen := make(map[[sha256.Size]byte]bool)
	for i, c := range creds {
		if !knownRole(c.Role) {
			return nil, fmt.Errorf("tracker: credential %d: role %q: want master, worker, viewer or admin", i, c.Role)
		}
		if err := checkToken(c.Token); err != nil {
			return nil, fmt.Errorf("tracker: credential %d (%s): %w", i, c.Name, err)
		}
		sum := sha256.Sum256([]byte(c.Token))
		if seen[sum] {
			return nil, fmt.Errorf("tracker: credential %d (%s): a token given twice", i, c.Name)
		}
		seen[sum] = true
		name := c.Name
		if name == "" {
			name = string(c.Role) + ":" + strconv.Itoa(i+1)
		}
		a.creds = append(a.creds, credSum{sum: sum, role: c.Role, name: name})
	}
	return a, nil
}

// check returns the credential whose token is tok. It compares SHA-256
// sums (so the token's length leaks nothing) with every credential,
// without stopping at a match, so that its time does not depend on which
// credential matches, or on how much of a wrong token is right.
func (a *authenticator) check(tok string) (credSum, bool) {
	if len(tok) > maxTokenBytes {
		tok = tok[:maxTokenBytes+1] // still wrong, but hashed in bounded time
	}
	sum := sha256.Sum256([]byte(tok))
	match := -1
	for i := range a.creds {
		eq := subtle.ConstantTimeCompare(sum[:], a.creds[i].sum[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return credSum{}, false
	}
	return a.creds[match], true
}

// Throttling of failed authentications, by remote address.
const (
	// freeFailures is how many failures an address may have before its
	// failed attempts are slowed down.
	freeFailures = 5
	// firstDelay is the delay after freeFailures; each further failure
	// doubles it, up to maxAuthDelay.
	firstDelay   = 100 * time.Millisecond
	maxAuthDelay = 5 * time.Second
	// forgetAfter: an address that has not failed for this long starts
	// afresh.
	forgetAfter = 10 * time.Minute
	// maxTracked bounds the addresses remembered.
	maxTracked = 1 << 14
)

// throttle slows down the failed attempts of addresses that keep failing
// to authenticate. It sees only attempts whose token is wrong: the token
// is checked first, and a right one is answered at once whatever its
// address did, so that strangers behind the same proxy or NAT cannot lock
// out a client with valid credentials. After freeFailures failures, the
// answer to each further failure of the address waits (firstDelay,
// doubling per failure, at most maxAuthDelay) and is a throttled refusal
// (wire.CodeThrottled). A success does not forget the failures (a worker
// token's holder cannot guess master tokens between successes); a quiet
// forgetAfter does. Safe for concurrent use.
type throttle struct {
	now func() time.Time

	mu    sync.Mutex
	addrs map[string]*strikes
}

type strikes struct {
	failures int
	last     time.Time // of the last failure
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, addrs: make(map[string]*strikes)}
}

// hostOf returns the host of a remote address "host:port" (the address
// itself when it has no port).
func hostOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}

// delayFor returns the wait of the next failed attempt after n failures.
func delayFor(n int) time.Duration {
	if n < freeFailures {
		return 0
	}
	d := firstDelay
	for range n - freeFailures {
		d *= 2
		if d >= maxAuthDelay {
			return maxAuthDelay
		}
	}
	return d
}

// failed counts a failure of addr, and returns how long its answer must
// wait: 0 while addr has had fewer than freeFailures failures (answer
// bad-credentials), more after (answer throttled, after the wait). Every
// failed attempt waits its turn, none is answered sooner, so that an
// address cannot learn faster that its guesses are wrong by opening more
// connections; the tracker's connection bound (Options.MaxConns) bounds
// those that wait.
func (t *throttle) failed(addr string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	s := t.addrs[addr]
	if s == nil {
		if len(t.addrs) >= maxTracked {
			t.evictLocked(now)
		}
		s = &strikes{}
		t.addrs[addr] = s
	} else if now.Sub(s.last) > forgetAfter {
		s.failures = 0
	}
	wait := delayFor(s.failures)
	s.failures++
	s.last = now
	return wait
}

// evictLocked makes room: it drops the addresses not heard of for
// forgetAfter, then those not yet throttled, then any, until at most
// half of maxTracked are left.
func (t *throttle) evictLocked(now time.Time) {
	for a, s := range t.addrs {
		if now.Sub(s.last) > forgetAfter {
			delete(t.addrs, a)
		}
	}
	for _, keepThrottled := range []bool{true, false} {
		for a, s := range t.addrs {
			if len(t.addrs) < maxTracked/2 {
				return
			}
			if !keepThrottled || s.failures < freeFailures {
				delete(t.addrs, a)
			}
		}
	}
}

// quotaOf returns what --max-waiting (Options.MaxWaitingPerMaster) counts
// a master's workunits by: its credential's name, shared by every session
// and connection of the credential, so that opening sessions with new ids
// gets no more room; without credentials, the name the master asked for
// in its Hello (before the tracker made it unique), which is all that
// tells masters apart there. The prefixes keep the two kinds apart.
func quotaOf(principal, helloName string) string {
	if principal != "" {
		return "credential\x00" + principal
	}
	return "name\x00" + helloName
}

// scopeOf returns the table's memo scope (table.Submit.Scope) of the
// workunits of a master of credential principal: the credential's name,
// so that masters share memoized results (and runs they join) only with
// masters of the same credential; "" when they share them all (shared,
// --shared-cache), which is also the one scope of a tracker without
// credentials. Records stored before scopes were are in scope "".
func scopeOf(principal string, shared bool) string {
	if shared {
		return ""
	}
	return principal
}

// realmOf returns the realm of a master's workunits: a digest of its
// credential's name and its session, so that masters of different
// credentials never share one, a worker that sees realms learns no
// session, and a master that reconnects with its session gets its realm
// back. A connection without a session gets a realm of its own.
func realmOf(principal, session string, nonce []byte, conn uint64) string {
	h := sha256.New()
	if session == "" {
		h.Write([]byte("riot-realm-conn\x00"))
		h.Write(nonce)
		h.Write([]byte(strconv.FormatUint(conn, 10)))
	} else {
		h.Write([]byte("riot-realm\x00"))
		h.Write([]byte(strconv.Itoa(len(principal))))
		h.Write([]byte{0})
		h.Write([]byte(principal))
		h.Write([]byte(session))
	}
	var sum [sha256.Size]byte
	return "r" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}
