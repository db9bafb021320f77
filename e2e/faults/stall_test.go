package faults_test

import (
	"net"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/workunit"
)

// proxy forwards TCP connections from its own address to a target, until
// Stall: then it stops forwarding, both ways, without closing anything
// (not even a connection that one side closes), as a network that drops
// every packet would; Resume forwards again what was held and what comes
// next.
type proxy struct {
	ln     net.Listener
	target string
	// upReads counts the reads from clients, forwarded to the target.
	upReads atomic.Int64

	mu      sync.Mutex
	stalled bool
	resumed chan struct{} // closed by Resume
	conns   []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, resumed: make(chan struct{})}
	close(p.resumed)
	t.Cleanup(p.close)
	go p.accept()
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		go p.pipe(up, down, &p.upReads)
		go p.pipe(down, up, nil)
	}
}

// gate waits while the proxy is stalled.
func (p *proxy) gate() {
	p.mu.Lock()
	ch := p.resumed
	p.mu.Unlock()
	<-ch
}

// pipe copies src to dst through the gate, before each read and after it:
// what was read, and the end of src, wait there while the proxy is
// stalled. When src ends, it closes both. It counts its reads in reads,
// when not nil.
func (p *proxy) pipe(dst, src net.Conn, reads *atomic.Int64) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		p.gate()
		n, err := src.Read(buf)
		p.gate()
		if n > 0 {
			if reads != nil {
				reads.Add(1)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF, a reset, or closed: the pipe is done
			return
		}
	}
}

func (p *proxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled = true
		p.resumed = make(chan struct{})
	}
}

func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resumed)
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.resume()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestFaults_StalledWorker: a worker whose connection stops forwarding
// without closing (a proxy in between holds every byte, and every close)
// loses its workunit once it misses the tracker's ping deadline; another
// worker runs it, and the master gets that result. When the network comes
// back, the stalled worker reconnects and sends its late result, which the
// tracker discards.
func TestFaults_StalledWorker(t *testing.T) {
	ctx := e2e.Context(t, jobWait)
	tr := bins.StartTracker(t, e2e.TrackerOptions{Args: []string{"--ping-interval", "200ms"}})
	px := startProxy(t, tr.Addr())
	stalled := bins.StartWorker(t, px.addr(), e2e.WorkerOptions{Name: "stalled", Slots: 1})
	m := master(t, tr.Addr())

	spec := &workunit.Spec{Kind: workunit.Eval, Name: "slow.js", Source: "sleep(1); riot.worker.name"}
	call := m.Submit(spec, workunit.Options{})
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Running == 1 })
	// The worker has the workunit once it has answered pings that the
	// tracker sent after the assign (a connection's frames keep their
	// order): wait for three pongs.
	reads := px.upReads.Load()
	require.NoError(t, e2e.CheckFor(ctx, 5*time.Millisecond, func() error {
		if px.upReads.Load() < reads+3 {
			return errNotYet
		}
		return nil
	}))

	px.stall()
	mark := tr.Mark()
	_, err := tr.WaitLogAfter(ctx, mark,
		regexp.MustCompile(`"msg":"worker lost: its workunits go back to the queue".*"reason":"missed its ping deadline`))
	require.NoError(t, err, "the tracker drops the silent worker")
	tr.WaitFor(t, func(s tracker.Status) bool { return s.Workunits.Waiting == 1 && len(s.Workers) == 0 })

	healthy := bins.StartWorker(t, tr.Addr(), e2e.WorkerOptions{Name: "healthy", Slots: 1})
	out, err := call.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, healthy.Name(), out.Worker)
	v, err := out.Value()
	require.NoError(t, err)
	assert.Equal(t, "healthy", v)

	// The stalled worker comes back and reports what it finished meanwhile.
	px.resume()
	late, err := tr.WaitLogAfter(ctx, mark,
		regexp.MustCompile(`"msg":"stale result discarded","worker":"([^"]*)","key":"`+spec.Key().Short()+`"`))
	require.NoError(t, err, "the stalled worker's late result is discarded")
	assert.NotEqual(t, healthy.Name(), late[1])
	st := tr.WaitFor(t, func(s tracker.Status) bool { return s.Discarded >= 1 && len(s.Workers) == 2 })
	info, err := m.Info(ctx, spec.Key())
	require.NoError(t, err)
	assert.Equal(t, healthy.Name(), info.Worker, "the result stays the healthy worker's")
	v, err = info.Value()
	require.NoError(t, err)
	assert.Equal(t, "healthy", v)
	t.Logf("stalled worker %s: workunits 1, reassigned after the ping deadline; late results discarded %d; results lost 0, duplicates delivered 0",
		stalled.Name(), st.Discarded)
}
