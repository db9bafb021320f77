package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/riot-go/riot/client"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// parent is a running workunit's jschild.Host: it submits the workunit's
// children within its lease, over the worker's connection, and gives up
// its slot while it waits for them.
//
// Giving up the slot takes three steps: the engine lets another run
// evaluate (Sandbox.Secede, done by the binding), the tracker takes the
// lease out of the worker's window and is granted one credit, so that it
// sends other work (the children among it), and another slot goroutine
// starts to run that work. When the children are done, the tracker counts
// the lease again, the engine gives the workunit a slot when one is free
// (Sandbox.Rejoin), and the first slot goroutine that finishes a workunit
// while there are more than Slots + seceded ends.
type parent struct {
	w     *worker
	env   *slotEnv
	lease wire.Lease

	mu    sync.Mutex
	calls map[workunit.Key]*client.Call
}

// Submit implements jschild.Host.
func (p *parent) Submit(spec *workunit.Spec, opts workunit.Options) workunit.Key {
	call := p.w.c.SubmitChild(p.lease, spec, opts)
	p.mu.Lock()
	p.calls[call.Key] = call
	p.mu.Unlock()
	return call.Key
}

func (p *parent) call(key workunit.Key) *client.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key]
}

// Finished implements jschild.Host.
func (p *parent) Finished(key workunit.Key) bool {
	c := p.call(key)
	return c == nil || c.Finished()
}

// Wait implements jschild.Host.
func (p *parent) Wait(ctx context.Context, key workunit.Key) (*workunit.Outcome, error) {
	c := p.call(key)
	if c == nil {
		return nil, fmt.Errorf("not a workunit this one submitted: a workunit waits only for its own children")
	}
	out, err := c.Wait(ctx)
	if out != nil && out.Status == workunit.StatusError {
		return out, nil
	}
	return out, err
}

// Secede implements jschild.Host.
func (p *parent) Secede() {
	w := p.w
	w.c.WaitChildren(p.lease, true)
	w.slotMu.Lock()
	w.seceded++
	w.slotMu.Unlock()
	if p.env.stop.Err() == nil {
		// Room for one more, and a goroutine to run it: a stopping
		// worker asks for none.
		w.credits.sent(1, time.Now()) // before it goes, as at the start
		w.c.Credit(1)
		w.startSlot(p.env)
	}
}

// Rejoin implements jschild.Host.
func (p *parent) Rejoin() {
	w := p.w
	w.c.WaitChildren(p.lease, false)
	w.slotMu.Lock()
	w.seceded--
	w.slotMu.Unlock()
}

// surplus reports whether a slot's goroutine that finished a workunit is
// one too many, now that the workunits that waited for their children
// run again, and counts it out if so: it then ends.
func (w *worker) surplus() bool {
	w.slotMu.Lock()
	defer w.slotMu.Unlock()
	if w.goroutines > w.opts.Slots+w.seceded {
		w.goroutines--
		return true
	}
	return false
}
