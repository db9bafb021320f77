package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/riot-go/riot/e2e"
	"github.com/riot-go/riot/tracker"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// connsResult is one --conns run: n one-slot worker connections held by
// a fresh riotd --memory, idle, then busy with trivial workunits.
type connsResult struct {
	conns int
	// What riotd held with the connections idle, less what it held before
	// them: resident memory (VmRSS), Go heap and stacks in use, goroutines.
	rss, heap, stack int64
	goroutines       int
	// The busy run: workunits answered at once by the connections,
	// submitted by one master at most connsWindow outstanding.
	n          int
	elapsed    time.Duration
	riotdCPU   time.Duration
	busyRSS    int64 // riotd's VmHWM at the end of the busy run
	frames     int64 // frames the peers read and wrote in the busy run
	framesIdle int64
}

// connsWindow and connsBatch are the busy master's most workunits
// outstanding and its submits per frame (BenchmarkServer_ManyWorkerConns's).
const connsWindow, connsBatch = 4096, 256

// runConns measures, for each --conns N, riotd --memory holding N
// websocket connections of one-slot workers (lean protocol peers in
// riot-bench's own process, not riot-worker processes): its memory per
// idle connection, then --n trivial workunits through them, each
// answered at once.
func (b *bench) runConns(ctx context.Context, w io.Writer) error {
	most := 0
	for _, n := range b.cfg.conns {
		most = max(most, n)
	}
	if err := raiseFileLimit(uint64(most) + 256); err != nil {
		return err
	}
	var results []connsResult
	for _, n := range b.cfg.conns {
		r, err := b.connsOnce(ctx, n)
		if err != nil {
			return b.failed(fmt.Errorf("--conns %d: %w", n, err))
		}
		results = append(results, r)
	}
	fmt.Fprintf(w, "riot-bench %s\n%s, load %s\n\n", strings.Join(b.cfg.args, " "), environment(), loadAverage())
	fmt.Fprintln(w, "| connections | riotd RSS per idle connection | heap per idle connection | stacks per idle connection | goroutines per connection | workunits | workunits/s | riotd CPU per workunit | frames per workunit | riotd peak RSS |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %.1f KiB | %.1f KiB | %.1f KiB | %.2f | %d | %.0f | %.1f µs | %.2f | %.0f MiB |\n", r.conns,
			float64(r.rss)/float64(r.conns)/1024, float64(r.heap)/float64(r.conns)/1024, float64(r.stack)/float64(r.conns)/1024, float64(r.goroutines)/float64(r.conns),
			r.n, float64(r.n)/r.elapsed.Seconds(), float64(r.riotdCPU)/float64(r.n)/float64(time.Microsecond),
			float64(r.frames)/float64(r.n), float64(r.busyRSS)/(1<<20))
	}
	return nil
}

// raiseFileLimit raises this process's soft limit on open files to at
// least n (riotd, started afterwards, inherits it), or says why it cannot.
func raiseFileLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("--conns: reading the open-files limit: %w", err)
	}
	if lim.Cur >= n {
		return nil
	}
	if lim.Max < n {
		return fmt.Errorf("--conns: %d connections need %d open files, and the hard limit is %d: raise it (ulimit -Hn, as root) or ask for fewer", n-256, n, lim.Max)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("--conns: raising the open-files limit to %d: %w", n, err)
	}
	return nil
}

// connsPeer is one connection: a worker that answers each assign at once
// with a done and a credit, in one frame per frame of assigns.
type connsPeer struct {
	ws     *websocket.Conn
	dec    wire.Decoder
	enc    wire.Encoder
	frames int64 // read and written; owned by the peer's goroutine until it ends
}

func dialPeer(ctx context.Context, url string, h wire.Hello) (*connsPeer, error) {
	d := websocket.Dialer{Subprotocols: []string{wire.Subprotocol}, ReadBufferSize: 1024, WriteBufferSize: 1024}
	ws, resp, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	p := &connsPeer{ws: ws}
	h.Version = wire.ProtocolVersion
	if err := p.write(&h); err != nil {
		ws.Close()
		return nil, err
	}
	msgs, err := p.read()
	if err != nil {
		ws.Close()
		return nil, err
	}
	if len(msgs) == 0 {
		ws.Close()
		return nil, errors.New("an empty first frame, not a welcome")
	}
	if r, ok := msgs[0].(*wire.Refused); ok {
		ws.Close()
		return nil, fmt.Errorf("refused: %s", r.Message)
	}
	p.frames = 0
	return p, nil
}

func (p *connsPeer) write(msgs ...wire.Msg) error {
	p.enc.Reset()
	for _, m := range msgs {
		if err := p.enc.Add(m); err != nil {
			return err
		}
	}
	p.frames++
	return p.ws.WriteMessage(websocket.BinaryMessage, p.enc.Frame())
}

func (p *connsPeer) read() ([]wire.Msg, error) {
	_, frame, err := p.ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	p.frames++
	return p.dec.Decode(frame)
}

// work answers assigns until the connection ends.
func (p *connsPeer) work() {
	res := []byte{0xf6} // a result of one byte: riotd keeps results without decoding them
	var dones []wire.Done
	var out []wire.Msg
	for {
		msgs, err := p.read()
		if err != nil {
			return
		}
		dones, out = dones[:0], out[:0]
		for _, m := range msgs {
			if a, ok := m.(*wire.Assign); ok {
				dones = append(dones, wire.Done{Key: a.Key, Token: a.Token, Result: res, Elapsed: time.Microsecond})
			}
		}
		for i := range dones {
			out = append(out, &dones[i])
		}
		if len(dones) > 0 {
			out = append(out, &wire.Credit{N: len(dones)})
			if p.write(out...) != nil {
				return
			}
		}
	}
}

func (b *bench) connsOnce(ctx context.Context, n int) (connsResult, error) {
	res := connsResult{conns: n, n: b.cfg.n}
	tr, err := e2e.LaunchTracker(ctx, b.bins, e2e.TrackerOptions{
		Label: fmt.Sprintf("riotd (%d connections)", n),
		Args:  []string{"--max-conns", strconv.Itoa(n + 64)},
	})
	if err != nil {
		return res, err
	}
	b.procs = append(b.procs, tr.Process)
	defer tr.Close()
	url := "ws://" + tr.Addr() + wire.Path
	before, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	rss0, _ := procMem(tr.Pid(), "VmRSS")

	peers := make([]*connsPeer, n)
	dialErr := make(chan error, 1)
	var dialing sync.WaitGroup
	next := make(chan int)
	for range 64 { // below riotd's --max-handshakes (256)
		dialing.Go(func() {
			for i := range next {
				p, err := dialPeer(ctx, url, wire.Hello{Role: wire.RoleWorker, Name: "c" + strconv.Itoa(i), Slots: 1, Prefetch: b.cfg.prefetch})
				if err != nil {
					select {
					case dialErr <- fmt.Errorf("connection %d: %w", i+1, err):
					default:
					}
					continue
				}
				peers[i] = p
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	dialing.Wait()
	var working sync.WaitGroup
	defer func() {
		for _, p := range peers {
			if p != nil {
				p.ws.Close()
			}
		}
		working.Wait()
	}()
	select {
	case err := <-dialErr:
		return res, err
	default:
	}
	for _, p := range peers {
		if err := p.write(&wire.Credit{N: 1 + b.cfg.prefetch}); err != nil {
			return res, err
		}
	}
	if _, err := tr.WaitStatus(ctx, func(s tracker.Status) bool { return len(s.Workers) == n }); err != nil {
		return res, err
	}
	after, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	rss1, _ := procMem(tr.Pid(), "VmRSS")
	res.rss = rss1 - rss0
	res.heap = int64(after["go_memstats_heap_inuse_bytes"] - before["go_memstats_heap_inuse_bytes"])
	res.stack = int64(after["go_memstats_stack_inuse_bytes"] - before["go_memstats_stack_inuse_bytes"])
	res.goroutines = int(after["go_goroutines"] - before["go_goroutines"])

	for _, p := range peers {
		res.framesIdle += p.frames
		working.Go(p.work)
	}
	cpu0 := procCPU(tr.Pid())
	if res.elapsed, res.frames, err = connsMaster(ctx, url, b.cfg.n); err != nil {
		return res, err
	}
	res.riotdCPU = procCPU(tr.Pid()) - cpu0
	res.busyRSS, _ = procMem(tr.Pid(), "VmHWM")
	for _, p := range peers {
		p.ws.Close()
	}
	working.Wait()
	for _, p := range peers {
		res.frames += p.frames
	}
	res.frames -= res.framesIdle
	return res, nil
}

// connsMaster submits n trivial workunits, distinct, at most connsWindow
// outstanding in frames of connsBatch, and waits for them all. It returns
// the time they took and the frames it read and wrote.
func connsMaster(ctx context.Context, url string, n int) (time.Duration, int64, error) {
	m, err := dialPeer(ctx, url, wire.Hello{Role: wire.RoleMaster, Name: "m"})
	if err != nil {
		return 0, 0, fmt.Errorf("the master: %w", err)
	}
	defer m.ws.Close()
	stop := context.AfterFunc(ctx, func() { m.ws.Close() })
	defer stop()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	free := make(chan int, connsWindow/connsBatch+1)
	for range connsWindow / connsBatch {
		free <- connsBatch
	}
	read := make(chan error, 1)
	start := time.Now()
	var readFrames int64
	go func() {
		got, batch := 0, 0
		for got < n {
			msgs, err := m.read()
			if err != nil {
				read <- fmt.Errorf("the master, after %d of %d results: %w", got, n, err)
				return
			}
			for _, msg := range msgs {
				switch msg := msg.(type) {
				case *wire.Finished:
					got++
					if batch++; batch == connsBatch {
						free <- batch
						batch = 0
					}
				case *wire.Error:
					read <- fmt.Errorf("the master: %s", msg.Message)
					return
				}
			}
		}
		readFrames = m.frames
		read <- nil
	}()
	var subs []wire.Submit
	var out []wire.Msg
	var wrote int64
	for i := 0; i < n; {
		select {
		case <-free:
		case err := <-read:
			return 0, 0, err
		}
		subs, out = subs[:0], out[:0]
		for ; i < n && len(subs) < connsBatch; i++ {
			spec, _ := (&workunit.Spec{Kind: workunit.Eval, Source: run + "+" + strconv.Itoa(i), Name: "conns.js"}).MarshalBinary()
			subs = append(subs, wire.Submit{Req: uint64(i + 1), Spec: spec, Watch: true})
		}
		for j := range subs {
			out = append(out, &subs[j])
		}
		m.enc.Reset()
		for _, s := range out {
			if err := m.enc.Add(s); err != nil {
				return 0, 0, err
			}
		}
		wrote++
		if err := m.ws.WriteMessage(websocket.BinaryMessage, m.enc.Frame()); err != nil {
			return 0, 0, err
		}
	}
	if err := <-read; err != nil {
		return 0, 0, err
	}
	return time.Since(start), readFrames + wrote, nil
}
