package main

import (
	"net"
	"sync"
	"sync/atomic"
)

// countingProxy forwards TCP connections from its own loopback address to
// a target and counts the bytes each way: Up from the clients to the
// target, Down back. It sees the raw TCP stream, websocket framing and
// all, so what it counts is what a network would carry.
//
// A countingProxy is safe for concurrent use.
type countingProxy struct {
	ln     net.Listener
	target string
	up     atomic.Int64
	down   atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startProxy listens on 127.0.0.1 with a free port and forwards to target.
func startProxy(target string) (*countingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where clients connect instead of the target.
func (p *countingProxy) Addr() string { return p.ln.Addr().String() }

// Bytes returns the bytes forwarded so far: up (clients to target) and
// down (target to clients).
func (p *countingProxy) Bytes() (up, down int64) { return p.up.Load(), p.down.Load() }

func (p *countingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, t) {
			return
		}
		p.wg.Add(2)
		go p.pipe(t, c, &p.up)
		go p.pipe(c, t, &p.down)
	}
}

// track remembers a pair of connections, to close them on Close; false
// when the proxy is closed already.
func (p *countingProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst, counting, until either side ends; then it closes
// both, so the peer of each sees the end.
func (p *countingProxy) pipe(dst, src net.Conn, n *atomic.Int64) {
	defer p.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := dst.Write(buf[:k]); werr != nil {
				break
			}
		}
		if err != nil { // io.EOF or a closed connection: done either way
			break
		}
	}
	src.Close()
	dst.Close()
}

// Close stops listening, closes every connection, and waits for the
// copying to end.
func (p *countingProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
