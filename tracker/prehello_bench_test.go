package tracker

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/stretchr/testify/require"
)

// idleConns is how many idle connections BenchmarkServer_IdleConnBytes
// opens.
const idleConns = 1000

// rawUpgrade opens a TCP connection to srv and upgrades it to a websocket
// by hand, holding nothing but the net.Conn: the client side of the
// benchmark costs next to nothing, so what the heap grows by is the
// tracker's.
func rawUpgrade(tb testing.TB, srv *Server) net.Conn {
	tb.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(tb, err)
	// The Host is the address dialed: riotd refuses other hosts (403,
	// against DNS rebinding), which it named before riotd checked hosts.
	req := "GET " + wire.Path + " HTTP/1.1\r\nHost: " + srv.Addr().String() + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: " + wire.Subprotocol + "\r\n\r\n"
	_, err = nc.Write([]byte(req))
	require.NoError(tb, err)
	// Read the answer up to its blank line, and not a byte further.
	var head []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		_, err := nc.Read(b)
		require.NoError(tb, err)
		head = append(head, b[0])
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	require.NoError(tb, err)
	require.Equal(tb, http.StatusSwitchingProtocols, resp.StatusCode)
	return nc
}

// inUse is the memory the process holds in its heap and its goroutines'
// stacks, after a collection.
func inUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// BenchmarkServer_IdleConnBytes measures what a connection that never
// says hello costs the tracker: it opens idleConns websockets that send
// nothing and reports the growth of HeapInuse+StackInuse per connection
// (bytes/conn). Its time per op means nothing.
func BenchmarkServer_IdleConnBytes(b *testing.B) {
	srv := startServer(b, Options{MaxHandshakes: idleConns, PingInterval: time.Minute})
	live := func() int {
		srv.liveMu.Lock()
		defer srv.liveMu.Unlock()
		return len(srv.live)
	}
	var perConn float64
	for b.Loop() {
		before := inUse()
		conns := make([]net.Conn, 0, idleConns)
		for range idleConns {
			conns = append(conns, rawUpgrade(b, srv))
		}
		for live() < idleConns {
			time.Sleep(time.Millisecond) // tracked after the upgrade is answered
		}
		perConn = float64(inUse()-before) / idleConns
		for _, nc := range conns {
			nc.Close()
		}
		for live() > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric(perConn, "bytes/conn")
}
