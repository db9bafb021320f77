package client

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/riot-go/riot/wire"
)

// TrackerURL returns the websocket URL of the tracker that addr names:
//
//	"alfred"                   ws://alfred:2355/riot
//	"alfred:1234"              ws://alfred:1234/riot
//	"[::1]:1234", "::1"        ws://[::1]:1234/riot, ws://[::1]:2355/riot
//	"ws://alfred:1234"         ws://alfred:1234/riot
//	"wss://riot.example.org/x" wss://riot.example.org/x (as given)
//
// Host names and "host:port" take the default port wire.DefaultPort and
// the path wire.Path. A ws:// or wss:// URL is used as given, with path
// wire.Path when it has none (its port defaults to the scheme's, as a
// browser's would, so that a tracker behind a TLS proxy on 443 works).
func TrackerURL(addr string) (string, error) { return trackerURL(addr, false) }

// TrackerURLs returns the websocket URLs of the tracker addresses in
// addrs, separated by commas (the replicas of a replicated tracker:
// "alfred:2355,bert:2355,carl:2355"), each as TrackerURL makes it. A name
// with several addresses in DNS needs no list: the dial tries each, and a
// replica that does not lead names its leader.
func TrackerURLs(addrs string) ([]string, error) { return trackerURLs(addrs, false) }

func trackerURLs(addrs string, secure bool) ([]string, error) {
	var us []string
	for a := range strings.SplitSeq(addrs, ",") {
		if strings.TrimSpace(a) == "" && strings.Contains(addrs, ",") {
			return nil, fmt.Errorf("client: tracker addresses %q: an empty address between commas", addrs)
		}
		u, err := trackerURL(a, secure)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(us, u) {
			us = append(us, u)
		}
	}
	return us, nil
}

// trackerURL is TrackerURL, with wss:// for addresses without a scheme
// when secure.
func trackerURL(addr string, secure bool) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", fmt.Errorf("client: empty tracker address")
	}
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return "", fmt.Errorf("client: tracker address %q: %w", addr, err)
		}
		if u.Scheme != "ws" && u.Scheme != "wss" {
			return "", fmt.Errorf("client: tracker address %q: scheme %q, want ws or wss", addr, u.Scheme)
		}
		if u.Host == "" {
			return "", fmt.Errorf("client: tracker address %q has no host", addr)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = wire.Path
		}
		return u.String(), nil
	}
	host, port := addr, strconv.Itoa(wire.DefaultPort)
	if h, p, err := net.SplitHostPort(addr); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
		host = addr[1 : len(addr)-1]
	}
	if host == "" {
		return "", fmt.Errorf("client: tracker address %q has no host", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("client: tracker address %q: bad port %q", addr, port)
	}
	scheme := "ws"
	if secure {
		scheme = "wss"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port), Path: wire.Path}
	return u.String(), nil
}
