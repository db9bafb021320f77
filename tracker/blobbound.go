package tracker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/wire"
)

// memBlobs is what a store that keeps its blobs in memory (store.Memory)
// tells of them: their bytes and number.
type memBlobs interface {
	BlobBytes() (bytes int64, blobs int)
}

// blobBound makes a store's blobs held in memory (riotd --memory) count
// toward Options.MaxMemory with the table's bytes: one bound. The readers
// check each upload against it (reserve) before the store holds a byte
// of it; the loop gives each submission what the blobs hold
// (table.Submit.HeldElsewhere) and publishes what the table holds after
// each round (setTable), for the readers.
//
// A blob being uploaded counts from its first piece (which gives its
// size) until it is stored, then as the store's; a blob that is stored
// counts until it is freed (blobFree: a store the tracker made in
// memory) or riotd ends.
type blobBound struct {
	limit int64    // Options.MaxMemory; 0: blobs count for nothing
	held  memBlobs // nil: the store keeps its blobs on disk
	table atomic.Int64
	// refused counts the uploads refused since the start.
	refused atomic.Uint64

	mu      sync.Mutex
	pending int64 // bytes of uploads reserved and not yet stored
	free    blobFree
}

// newBlobBound returns the bound of MaxMemory limit on st's blobs, which
// count when st keeps them in memory (it is a memBlobs: store.Memory),
// whether the tracker made it (no data directory) or was given it
// (Options.Store): a store that keeps its blobs in files (store.Bolt)
// holds none in memory. With free (the tracker made st, and keeps every
// result in the table, where it can see which blobs they name) the blobs
// nothing names are freed grace after (blobFree), whatever limit.
func newBlobBound(limit int, st any, free bool, grace time.Duration) *blobBound {
	b := &blobBound{limit: int64(limit)}
	if m, ok := st.(memBlobs); ok {
		b.held = m
	}
	if d, ok := st.(blobDeleter); ok && free {
		b.free = blobFree{del: d, grace: grace, refs: make(map[blob.Hash]int32),
			holds: make(map[blob.Hash]int32), conns: make(map[uint64]map[blob.Hash]struct{}),
			idleSince: make(map[blob.Hash]uint64)}
	}
	return b
}

// counts reports whether blobs count toward a bound: MaxMemory is set and
// the store keeps its blobs in memory.
func (b *blobBound) counts() bool { return b.held != nil && b.limit > 0 }

// blobs returns the bytes and number of the blobs held in memory (0 with a
// durable store).
func (b *blobBound) blobs() (int64, int) {
	if b.held == nil {
		return 0, 0
	}
	return b.held.BlobBytes()
}

// elsewhere returns what counts toward the bound besides the table: the
// blobs held, and the uploads reserved.
func (b *blobBound) elsewhere() int64 {
	if !b.counts() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n, _ := b.held.BlobBytes()
	return n + b.pending
}

// setTable records what the table holds, for reserve; the loop calls it
// after each round.
func (b *blobBound) setTable(n int64) { b.table.Store(n) }

// reserve counts size bytes of an upload of blob h toward the bound, or
// refuses it with the Error of code wire.CodeMemoryFull that answers
// request req of op (blob-put, blob-write): past the bound nothing of it
// is stored. A reservation is given back with release once the blob is
// stored (the store counts it then) or dropped. Safe for concurrent use.
func (b *blobBound) reserve(op string, req uint64, h blob.Hash, size int64) (refusal *wire.Error) {
	if !b.counts() {
		return nil
	}
	tab := b.table.Load()
	// The store is read with b.mu held: an upload reserved, stored and
	// released by another reader in between would otherwise be in
	// neither n nor b.pending (release takes b.mu, after the store
	// counts the blob), and two such uploads could pass the bound. Read
	// under the lock it counts in one or, for a moment, both.
	b.mu.Lock()
	defer b.mu.Unlock()
	n, count := b.held.BlobBytes()
	if tab+n+b.pending+size <= b.limit {
		b.pending += size
		return nil
	}
	b.refused.Add(1)
	noun := "blobs"
	if count == 1 {
		noun = "blob"
	}
	pending := ""
	if b.pending > 0 {
		pending = fmt.Sprintf(", %s for uploads under way", units.FormatBytes(b.pending))
	}
	stay := "blobs held in memory stay until riotd restarts"
	if b.frees() {
		stay = "a blob is freed --blob-grace after no workunit and no connection names it (finished workunits name theirs until --keep-results forgets them): " +
			"upload again once work has finished, shorten --keep-results"
	}
	return &wire.Error{Req: req, Code: wire.CodeMemoryFull, Message: fmt.Sprintf(
		"tracker: memory full: %s of blob %s refused: the tracker holds %s for workunits (records, specs of waiting and running work, results and errors) "+
			"and %s for %d %s (large arguments, large results, modules)%s, and this one needs %s more, past its --max-memory of %s. "+
			"Nothing already accepted is dropped; %s; to upload more, raise --max-memory, "+
			"or run riotd with --data (blobs then stay on disk, not in memory)",
		op, h.Short(), units.FormatBytes(tab), units.FormatBytes(n), count, noun, pending, units.FormatBytes(size), units.FormatBytes(b.limit), stay)}
}

// release gives back a reservation of size bytes (reserve).
func (b *blobBound) release(size int64) {
	if !b.counts() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending -= size
}
