package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/tracker/table"
)

// Committer batches concurrent Apply calls into one write of the
// underlying Store (group commit): at most one write is in flight, and
// every Apply that arrives meanwhile goes into the next one, so that each
// waits for at most two commits and the fsyncs are shared.
//
// A Committer is a Store: the methods other than Apply go straight to the
// underlying store. It owns that store: Close closes it. It is safe for
// concurrent use; one goroutine of its own writes, from NewCommitter to
// Close.
type Committer struct {
	s    Store
	wake chan struct{} // buffered 1: work is queued
	quit chan struct{}
	done chan struct{} // closed when the writer has stopped

	mu     sync.Mutex
	queue  []*request
	closed bool
	stats  CommitterStats
}

type request struct {
	recs []table.Record
	done chan error // buffered 1
}

// CommitterStats counts a Committer's work.
type CommitterStats struct {
	// Commits is the number of writes to the store; Requests the Apply
	// calls they served; Records the records they wrote.
	Commits, Requests, Records uint64
}

// NewCommitter returns a Committer writing to s, and starts its writer.
func NewCommitter(s Store) *Committer {
	c := &Committer{
		s:    s,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.run()
	return c
}

// Apply implements Store: it queues batch for the next commit and waits
// for it. If ctx is done first, Apply returns ctx's error and the batch
// may still be committed. Apply copies batch, which the caller may reuse
// once it returns.
func (c *Committer) Apply(ctx context.Context, batch []table.Record) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: apply: %w", err)
	}
	if len(batch) == 0 {
		return nil
	}
	req := &request{recs: slices.Clone(batch), done: make(chan error, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("store: apply: %w", ErrClosed)
	}
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the writer has been woken already
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store: apply: %w", ctx.Err())
	}
}

// run is the writer: it takes everything queued, commits it as one batch,
// and answers every request with the commit's result.
func (c *Committer) run() {
	defer close(c.done)
	var batch []table.Record
	for {
		select {
		case <-c.wake:
		case <-c.quit:
			// Apply refuses new requests once closed: commit what is queued.
			c.commitQueued(&batch)
			return
		}
		c.commitQueued(&batch)
	}
}

func (c *Committer) commitQueued(batch *[]table.Record) {
	c.mu.Lock()
	reqs := c.queue
	c.queue = nil
	c.mu.Unlock()
	if len(reqs) == 0 {
		return
	}
	recs := reqs[0].recs
	if len(reqs) > 1 {
		// Later records for a key come later in the batch and win.
		*batch = (*batch)[:0]
		for _, r := range reqs {
			*batch = append(*batch, r.recs...)
		}
		recs = *batch
	}
	// The commit is shared by requests with their own contexts: none of
	// them may cancel it.
	err := c.s.Apply(context.Background(), recs)
	clear(*batch)
	c.mu.Lock()
	c.stats.Commits++
	c.stats.Requests += uint64(len(reqs))
	c.stats.Records += uint64(len(recs))
	c.mu.Unlock()
	for _, r := range reqs {
		r.done <- err
	}
}

// Stats returns counts of the Committer's work so far.
func (c *Committer) Stats() CommitterStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Load implements Store.
func (c *Committer) Load(ctx context.Context) ([]table.Record, error) { return c.s.Load(ctx) }

// PutBlob implements Store.
func (c *Committer) PutBlob(ctx context.Context, h blob.Hash, data []byte) error {
	return c.s.PutBlob(ctx, h, data)
}

// GetBlob implements Store.
func (c *Committer) GetBlob(ctx context.Context, h blob.Hash) ([]byte, error) {
	return c.s.GetBlob(ctx, h)
}

// HasBlob implements Store.
func (c *Committer) HasBlob(ctx context.Context, h blob.Hash) (bool, error) {
	return c.s.HasBlob(ctx, h)
}

// Close commits what is queued, stops the writer and closes the
// underlying store. Apply calls after Close fail with ErrClosed.
func (c *Committer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.quit)
	<-c.done
	return c.s.Close()
}
