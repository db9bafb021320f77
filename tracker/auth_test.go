package tracker

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	masterTok = "m-0123456789abcdef0123456789abcdef"
	workerTok = "w-0123456789abcdef0123456789abcdef"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Credential
		err  string
	}{
		{
			name: "roles, names, comments",
			in:   "# riotd tokens\n\nmaster " + masterTok + " alice\n  worker " + workerTok + "  \n",
			want: []Credential{
				{Role: wire.RoleMaster, Token: masterTok, Name: "alice"},
				{Role: wire.RoleWorker, Token: workerTok, Name: "worker:4"},
			},
		},
		{name: "empty", in: "# nothing\n\n", err: "no credentials"},
		{name: "unknown role", in: "root " + masterTok + "\n", err: `line 1: role "root": want master, worker, viewer or admin`},
		{
			name: "an admin",
			in:   "admin " + masterTok + " ops\n",
			want: []Credential{{Role: RoleAdmin, Token: masterTok, Name: "ops"}},
		},
		{name: "no token", in: "master\n", err: "line 1: want ROLE TOKEN"},
		{name: "too many fields", in: "master " + masterTok + " a b\n", err: "line 1: want ROLE TOKEN"},
		{name: "short token", in: "worker abc\n", err: "line 1: a token of 3 bytes: use at least 16"},
		{name: "control byte", in: "worker " + workerTok + "\x01\n", err: "printable ASCII"},
		{name: "twice", in: "master " + masterTok + "\nworker " + masterTok + "\n", err: "line 2: the token of line 1 again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTokens(strings.NewReader(tt.in))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.NotContains(t, err.Error(), masterTok, "an error never quotes a token")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLoadTokenFile_WarnsWhenReadable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte("master "+masterTok+"\n"), 0o644))
	creds, warn, err := LoadTokenFile(path)
	require.NoError(t, err)
	assert.Len(t, creds, 1)
	assert.Contains(t, warn, "chmod 600")
	for _, mode := range []os.FileMode{0o600, 0o440} {
		require.NoError(t, os.Chmod(path, mode))
		_, warn, err = LoadTokenFile(path)
		require.NoError(t, err)
		assert.Empty(t, warn, "%v", mode)
	}
}

func TestAuthenticator_Check(t *testing.T) {
	t.Parallel()
	a, err := newAuthenticator([]Credential{
		{Role: wire.RoleMaster, Token: masterTok, Name: "alice"},
		{Role: wire.RoleWorker, Token: workerTok},
	})
	require.NoError(t, err)
	c, ok := a.check(masterTok)
	require.True(t, ok)
	assert.Equal(t, "alice", c.name)
	assert.Equal(t, wire.RoleMaster, c.role)
	c, ok = a.check(workerTok)
	require.True(t, ok)
	assert.Equal(t, "worker:2", c.name)
	for _, bad := range []string{"", masterTok[:len(masterTok)-1], masterTok + "x", strings.Repeat("x", 10000)} {
		_, ok := a.check(bad)
		assert.False(t, ok, "%.20q", bad)
	}
	none, err := newAuthenticator(nil)
	require.NoError(t, err)
	assert.Nil(t, none, "no credentials: nothing is checked")
	_, err = newAuthenticator([]Credential{{Role: wire.RoleMaster, Token: "short"}})
	assert.ErrorContains(t, err, "at least 16")
}

func TestRights(t *testing.T) {
	t.Parallel()
	worker, master := rightsOf(wire.RoleWorker), rightsOf(wire.RoleMaster)
	for _, tc := range []struct {
		m                    wire.Msg
		workerMay, masterMay bool
	}{
		{&wire.Submit{}, false, true}, {&wire.Watch{}, false, true}, {&wire.Unwatch{}, false, true},
		{&wire.Info{Key: workunit.Key{1}}, false, true},
		{&wire.Info{}, true, true}, // the zero key: a round trip
		{&wire.Cancel{}, false, true},
		{&wire.BlobHave{}, true, true}, {&wire.BlobPut{}, true, true}, {&wire.BlobWrite{}, true, true},
		{&wire.BlobRead{}, true, true}, {&wire.BlobGet{}, true, true},
		// Taking work is a worker's: a master's token that took work
		// could read other masters' work and forge its results.
		{&wire.Credit{}, true, false}, {&wire.Done{}, true, false}, {&wire.Failed{}, true, false}, {&wire.Return{}, true, false},
	} {
		need, what := needs(tc.m)
		assert.Equal(t, tc.workerMay, worker&need != 0, "a worker may %s", what)
		assert.Equal(t, tc.masterMay, master&need != 0, "a master may %s", what)
		assert.NotZero(t, allRights&need, "without credentials, anyone may %s", what)
	}
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestThrottle(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	th := newThrottle(clk.Now)
	const addr = "192.0.2.7"
	for range freeFailures {
		assert.Zero(t, th.failed(addr), "the first failures are free")
	}
	var waits []time.Duration
	for range 4 {
		waits = append(waits, th.failed(addr))
	}
	assert.Equal(t, []time.Duration{firstDelay, 2 * firstDelay, 4 * firstDelay, 8 * firstDelay}, waits)
	for range 20 {
		th.failed(addr)
	}
	assert.Equal(t, maxAuthDelay, th.failed(addr), "capped")

	// Other addresses are not slowed down.
	assert.Zero(t, th.failed("192.0.2.8"))

	// Failures are forgotten after a quiet while, and only then.
	clk.add(forgetAfter - time.Second)
	assert.Equal(t, maxAuthDelay, th.failed(addr))
	clk.add(forgetAfter + time.Second)
	assert.Zero(t, th.failed(addr))
}

func TestThrottle_Bounded(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{now: time.Unix(1e9, 0)}
	th := newThrottle(clk.Now)
	for i := range maxTracked + 100 {
		th.failed("addr-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	th.mu.Lock()
	n := len(th.addrs)
	th.mu.Unlock()
	assert.LessOrEqual(t, n, maxTracked)
}

func TestRealmOf(t *testing.T) {
	t.Parallel()
	nonce := []byte("nonce")
	a := realmOf("alice", "s1", nonce, 1)
	assert.Equal(t, a, realmOf("alice", "s1", nonce, 2), "a session keeps its realm across connections")
	assert.NotEqual(t, a, realmOf("bob", "s1", nonce, 1), "another credential, another realm")
	assert.NotEqual(t, a, realmOf("alice", "s2", nonce, 1))
	assert.NotEqual(t, realmOf("al", "ices1", nonce, 1), realmOf("alice", "s1", nonce, 1), "no ambiguity in the join")
	assert.NotEqual(t, realmOf("", "", nonce, 1), realmOf("", "", nonce, 2), "no session: a realm per connection")
	assert.NotContains(t, a, "s1")
}

func TestConfigureOptions_TokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(good, []byte("master "+masterTok+"\n"), 0o600))
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte("master short\n"), 0o600))
	parse := func(args ...string) (Options, error) {
		fs := pflag.NewFlagSet("riotd", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return configureOptions(fs, args, env("HOME", "/home/ann"))
	}
	o, err := parse("--token-file", good)
	require.NoError(t, err)
	assert.Equal(t, ":2355", o.Listen, "with credentials: every interface")
	o, err = parse("--token-file", good, "--listen", "10.1.2.3:99")
	require.NoError(t, err)
	assert.Equal(t, "10.1.2.3:99", o.Listen)
	_, err = parse("--token-file", bad)
	assert.ErrorContains(t, err, "at least 16")
}

func TestOptions_Check_Listen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{}, true},
		{Options{Listen: "127.0.0.1:0"}, true},
		{Options{Listen: "[::1]:0"}, true},
		{Options{Listen: "localhost:0"}, true},
		{Options{Listen: ":0"}, false},
		{Options{Listen: "192.0.2.1:0"}, false},
		{Options{Listen: ":0", UnsafeNoAuth: true}, true},
		{Options{Listen: ":0", Tokens: []Credential{{Role: wire.RoleMaster, Token: masterTok}}}, true},
	} {
		err := tc.o.check()
		assert.Equal(t, tc.ok, err == nil, "%+v: %v", tc.o.Listen, err)
	}
	assert.Equal(t, "127.0.0.1:2355", Options{}.withDefaults().Listen)
	assert.Equal(t, ":2355", Options{Tokens: []Credential{{Role: wire.RoleMaster, Token: masterTok}}}.withDefaults().Listen)
}
