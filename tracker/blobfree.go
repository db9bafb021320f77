package tracker

import (
	"bytes"
	"fmt"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// blobDeleter is a store that can drop a blob it keeps in memory
// (store.Memory).
type blobDeleter interface {
	DeleteBlob(h blob.Hash) bool
}

// DefaultBlobGrace is how long a blob that nothing names any more stays
// before it is freed (Options.BlobGrace).
const DefaultBlobGrace = time.Minute

// blobFree is the part of blobBound that frees, with a store that keeps
// its blobs in memory, the blobs nothing names any more (see
// docs/riotd.md, "Freeing blobs"). A blob is named by
//
//   - the records of the table whose spec names it (waiting and running
//     work) or whose result or error value refers to it (done work kept):
//     refs, which the loop keeps from each Ready's records (trackRecords);
//   - the connections that uploaded it, or asked whether the tracker has
//     it (a client takes a blob-need that leaves it out as stored, until
//     it reconnects): holds, from the request until the connection
//     closes. A hold is taken before the store is asked or written, so a
//     blob a connection was told of is never freed under it.
//
// A blob neither names is idle, and freed once it has been idle for the
// grace (a master that reads a result just after its record is
// forgotten). blobBound.mu guards all of it; the loop's map of what each
// record names (recBlobs) is the loop's own.
type blobFree struct {
	del   blobDeleter // nil: nothing is freed
	grace time.Duration
	refs  map[blob.Hash]int32
	holds map[blob.Hash]int32
	// idleSince numbers each blob's current idle spell; idle lists the
	// spells in the order they began (a spell ended and begun again is
	// found stale by its number).
	idleSince map[blob.Hash]uint64
	idle      []idleBlob
	spells    uint64
	freed     uint64
}

type idleBlob struct {
	h     blob.Hash
	spell uint64
	at    time.Time
}

// frees reports whether blobs nothing names are freed.
func (b *blobBound) frees() bool { return b.free.del != nil }

// hold makes a connection hold blob h (see blobFree) until unhold.
func (b *blobBound) hold(h blob.Hash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free.holds[h]++
	delete(b.free.idleSince, h)
}

// unhold ends the holds of a connection that closes, at now.
func (b *blobBound) unhold(hs map[blob.Hash]struct{}, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	for h := range hs {
		if f.holds[h]--; f.holds[h] <= 0 {
			delete(f.holds, h)
			if f.refs[h] == 0 {
				f.idleLocked(h, now)
			}
		}
	}
}

// changeRefs counts the blobs of add as named by one more record, and
// those of remove by one less, at now.
func (b *blobBound) changeRefs(add, remove []blob.Hash, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	for _, h := range add {
		f.refs[h]++
		delete(f.idleSince, h)
	}
	for _, h := range remove {
		if f.refs[h]--; f.refs[h] <= 0 {
			delete(f.refs, h)
			if f.holds[h] == 0 {
				f.idleLocked(h, now)
			}
		}
	}
}

// idleLocked begins an idle spell of h at now.
func (f *blobFree) idleLocked(h blob.Hash, now time.Time) {
	f.spells++
	f.idleSince[h] = f.spells
	f.idle = append(f.idle, idleBlob{h: h, spell: f.spells, at: now})
}

// sweep frees the blobs idle for the grace or more at now, and returns
// how many it freed.
func (b *blobBound) sweep(now time.Time) int {
	if !b.frees() {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	n, i := 0, 0
	for ; i < len(f.idle) && !f.idle[i].at.Add(f.grace).After(now); i++ {
		e := f.idle[i]
		if f.idleSince[e.h] != e.spell {
			continue // named again since, or idle again later
		}
		delete(f.idleSince, e.h)
		if f.refs[e.h] == 0 && f.holds[e.h] == 0 && f.del.DeleteBlob(e.h) {
			n++
		}
	}
	if i > 0 {
		f.idle = f.idle[:copy(f.idle, f.idle[i:])]
	}
	f.freed += uint64(n)
	return n
}

// freedCount returns how many blobs were freed since the start.
func (b *blobBound) freedCount() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free.freed
}

// blobTag is how a value document starts a blob reference (value.TagBlob,
// then a byte string of blob.Size bytes): resultBlobs looks for it.
var blobTag = func() []byte {
	w := cbor.NewWriter(nil)
	w.Tag(value.TagBlob)
	b := w.Bytes()
	return append(b, 0x40|24, blob.Size) // a byte string of 32 bytes
}()

// docBlobs appends to dst the blobs a value document may refer to:
// every place its bytes hold a blob reference's encoding. It may find
// one that is not a reference (bytes of a string that look like one):
// such a blob is kept longer, which is safe; it never misses one.
func docBlobs(dst []blob.Hash, doc []byte) []blob.Hash {
	for {
		i := bytes.Index(doc, blobTag)
		if i < 0 || len(doc)-i-len(blobTag) < blob.Size {
			return dst
		}
		doc = doc[i+len(blobTag):]
		dst = append(dst, blob.Hash(doc[:blob.Size]))
	}
}

// recordBlobs returns the blobs record r names while the table holds it:
// its spec's while it is waiting or running (had: those it named before,
// kept while running), its result's or error's once finished.
func recordBlobs(r *table.Record, had []blob.Hash, known bool) []blob.Hash {
	switch r.Status {
	case workunit.StatusWaiting, workunit.StatusRunning:
		if r.Spec == nil {
			return had
		}
		if known && r.Status == workunit.StatusRunning {
			return had // the spec it was given when waiting
		}
		_, bl, err := workunit.BlobsOf(r.Spec)
		if err != nil {
			return had // checked when submitted; keep what was named
		}
		return bl
	case workunit.StatusDone:
		return docBlobs(nil, r.Result)
	case workunit.StatusError:
		if r.Err != nil {
			return docBlobs(nil, r.Err.Value)
		}
	}
	return nil
}

// trackRecords counts what the records of a Ready name (Persist: each
// record whose state changed, and the tombstones of those forgotten), on
// the loop, as it takes the Ready.
func (l *loop) trackRecords(recs []table.Record, now time.Time) {
	if !l.s.blobs.frees() {
		return
	}
	for i := range recs {
		r := &recs[i]
		had, known := l.recBlobs[r.ID]
		if r.Status == workunit.StatusUnknown {
			if known {
				delete(l.recBlobs, r.ID)
				l.s.blobs.changeRefs(nil, had, now)
			}
			continue
		}
		now2 := recordBlobs(r, had, known)
		if known && slicesEqual(had, now2) {
			continue
		}
		if len(now2) == 0 {
			delete(l.recBlobs, r.ID)
		} else {
			l.recBlobs[r.ID] = now2
		}
		// Add before remove: a blob named before and after never idles.
		l.s.blobs.changeRefs(now2, had, now)
	}
}

func slicesEqual(a, b []blob.Hash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// missingBlob returns the refusal of a submission (op: submit, child) of
// request req whose spec names a blob the store does not hold, when the
// tracker frees blobs; nil when it holds them all. Without it a worker
// would fail on the missing blob; the client forgets what it believed
// stored, and a master uploads it again.
func (l *loop) missingBlob(req uint64, op string, blobs []blob.Hash) *wire.Error {
	if !l.s.blobs.frees() {
		return nil
	}
	for _, h := range blobs {
		ok, err := l.s.st.HasBlob(l.s.baseCtx, h)
		if err == nil && ok {
			continue
		}
		return &wire.Error{Req: req, Code: wire.CodeUnknownBlob, Message: fmt.Sprintf(
			"tracker: %s: the spec names blob %s, which the tracker does not hold: it frees a blob once no workunit and no connection names it "+
				"(for --blob-grace), and riotd --memory loses its blobs when it restarts. Upload the blob again (EnsureBlobs) and submit again", op, h.Short())}
	}
	return nil
}
