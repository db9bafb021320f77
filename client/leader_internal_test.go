package client

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLeaderAmong: which listed address a redirect names, after
// normalising both, and the redirects refused.
func TestLeaderAmong(t *testing.T) {
	t.Parallel()
	urls := []string{"ws://alfred:2355/riot", "ws://[::1]:2355/riot", "wss://riot.example.org/riot", "ws://10.0.0.1/x", "ws://10.0.0.1/riot"}
	for _, tc := range []struct {
		leader string
		want   int
	}{
		{"ws://alfred:2355/riot", 0},
		{"WS://ALFRED:2355/riot", 0},           // case
		{"ws://alfred.:2355/riot", 0},          // a final dot
		{"ws://alfred:02355/elsewhere", 0},     // the listed path is dialed
		{"ws://[0:0::1]:2355/riot", 1},         // an IPv6 address's spelling
		{"wss://riot.example.org:443/riot", 2}, // the scheme's default port
		{"ws://10.0.0.1:80/riot", 4},           // the same path, of two on one host
		{"ws://10.0.0.1/y", 3},                 // else the first on the host
	} {
		got, err := leaderAmong(urls, urls[0], tc.leader)
		if assert.NoError(t, err, tc.leader) {
			assert.Equal(t, tc.want, got, tc.leader)
		}
	}
	for _, tc := range []struct{ from, leader, want string }{
		{urls[0], "ws://bert:2355/riot", "not among the tracker's addresses"},
		{urls[0], "ws://alfred:2356/riot", "not among"},                  // another port
		{urls[0], "wss://alfred:2355/riot", "not among"},                 // another scheme
		{urls[0], "ws://riot.example.org:443/riot", "not among"},         // wss's host, as ws
		{urls[2], "ws://alfred:2355/riot", "from wss:// to plain ws://"}, // listed, but a downgrade
		{urls[0], "http://alfred:2355/riot", "not a ws:// or wss:// URL"},
		{urls[0], "ws:///riot", "not a ws:// or wss:// URL"},
		{urls[0], "ws://alfred:0/riot", "not a ws:// or wss:// URL"},
		{urls[0], "ws://alfred:%zz/riot", "not a URL"},
		{urls[0], "ws://user:hunter2@bert/riot", "user:xxxxx@bert"}, // a password in it is not repeated
	} {
		_, err := leaderAmong(urls, tc.from, tc.leader)
		if assert.Error(t, err, tc.leader) {
			assert.Contains(t, err.Error(), tc.want, tc.leader)
			assert.NotContains(t, err.Error(), "hunter2")
		}
	}
}
