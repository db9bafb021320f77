// Package loopback says whether a host names this machine's loopback
// interface, for riotd's listen address and the Host of its requests (a
// tracker without credentials answers loopback hosts only).
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host, a host name or address with or without a
// port (a Host header, "[::1]:2355"), names the loopback interface:
// localhost, a name under .localhost, or a loopback address.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
