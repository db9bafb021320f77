package loopback

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:2355": true, "app.localhost": true, "127.0.0.1": true, "127.0.0.1:2355": true,
		"127.8.9.10": true, "[::1]:2355": true, "::1": true,
		"": false, "riot.example": false, "127.attacker.example": false, "10.0.0.1:2355": false, "localhost.evil.example": false,
		"[::2]:80": false,
	} {
		assert.Equal(t, want, Host(host), host)
	}
}
