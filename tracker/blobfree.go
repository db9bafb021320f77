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
//     refs, which the loop keeps from each Ready's records (trackRecords),
//     the only place records are made, changed and forgotten;
//   - the connections that uploaded it, or asked whether the tracker has
//     it (a client takes a blob-need that leaves it out as stored):
//     holds, from the request until the connection submits a workunit
//     that names it (the record holds it then, or the submission was
//     answered from a finished one), reports a result that names it (a
//     worker's result blob: its done record holds it then) or closes. A
//     hold is taken before the store is asked or written, so a blob a
//     connection was told of is not freed before it names it.
//
// A blob neither names is idle, and freed once it has been idle for the
// grace (a master that reads a result just after its record is
// forgotten). A client that takes a freed blob as stored (it uploaded it
// long ago) has its submission refused with wire.CodeUnknownBlob, and
// uploads it again. blobBound.mu guards all of it; the loop's map of what
// each record names (recBlobs) is the loop's own.
type blobFree struct {
	del   blobDeleter // nil: nothing is freed
	grace time.Duration
	refs  map[blob.Hash]int32
	// holds counts, per blob, the connections that hold it; conns are
	// each connection's holds, by connection id.
	holds map[blob.Hash]int32
	conns map[uint64]map[blob.Hash]struct{}
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

// hold makes connection conn hold blob h (see blobFree) until releaseHolds or
// unholdConn.
func (b *blobBound) hold(conn uint64, h blob.Hash) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	hs := f.conns[conn]
	if _, ok := hs[h]; ok {
		return false
	}
	if hs == nil {
		hs = make(map[blob.Hash]struct{})
		f.conns[conn] = hs
	}
	hs[h] = struct{}{}
	f.holds[h]++
	delete(f.idleSince, h)
	return true
}

// releaseHolds ends connection conn's holds of the blobs of hs, at now: it
// named them in a submission or a result, whose record holds them now.
func (b *blobBound) releaseHolds(conn uint64, hs []blob.Hash, now time.Time) {
	if len(hs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	held := f.conns[conn]
	if len(held) == 0 {
		return
	}
	for _, h := range hs {
		if _, ok := held[h]; ok {
			delete(held, h)
			f.unholdLocked(h, now)
		}
	}
	if len(held) == 0 {
		delete(f.conns, conn)
	}
}

// unholdConn ends the holds of connection conn, which closes, at now.
func (b *blobBound) unholdConn(conn uint64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := &b.free
	for h := range f.conns[conn] {
		f.unholdLocked(h, now)
	}
	delete(f.conns, conn)
}

// unholdLocked ends one connection's hold of h, at now.
func (f *blobFree) unholdLocked(h blob.Hash, now time.Time) {
	if f.holds[h]--; f.holds[h] <= 0 {
		delete(f.holds, h)
		if f.refs[h] == 0 {
			f.idleLocked(h, now)
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
// how many it freed. Each is checked again, under the lock that hold and
// changeRefs take, before the store drops it.
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

// holdsAny reports whether connection conn holds a blob.
func (b *blobBound) holdsAny(conn uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.free.conns[conn]) > 0
}

// freedCount returns how many blobs were freed since the start.
func (b *blobBound) freedCount() uint64 {
	if !b.frees() {
		return 0
	}
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
func recordBlobs(r *table.Record, had recNamed, known bool) []blob.Hash {
	switch r.Status {
	case workunit.StatusWaiting, workunit.StatusRunning:
		if r.Spec == nil {
			return had.blobs
		}
		if known && had.spec && r.Status == workunit.StatusRunning {
			// The spec's, counted while it was waiting. Not a done or
			// failed record's result blobs: one run again (NoCache, an
			// error retried) may be running in the Ready that reopened it.
			return had.blobs
		}
		_, bl, err := workunit.BlobsOf(r.Spec)
		if err != nil {
			return had.blobs // checked when submitted; keep what was named
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
				l.s.blobs.changeRefs(nil, had.blobs, now)
			}
			continue
		}
		now2 := recordBlobs(r, had, known)
		spec := r.Status == workunit.StatusWaiting || r.Status == workunit.StatusRunning
		if known && had.spec == spec && slicesEqual(had.blobs, now2) {
			continue
		}
		if len(now2) == 0 {
			delete(l.recBlobs, r.ID)
		} else {
			l.recBlobs[r.ID] = recNamed{blobs: now2, spec: spec}
		}
		// Add before remove: a blob named before and after never idles.
		l.s.blobs.changeRefs(now2, had.blobs, now)
	}
}

// recNamed is what a record names (loop.recBlobs): blobs, its spec's
// (spec: it was waiting or running) or its result's or error's.
type recNamed struct {
	blobs []blob.Hash
	spec  bool
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

// named ends c's holds of blobs, which a submission of c names: from the
// Ready this round makes, its record holds them (trackRecords), or the
// key's result answers and nothing needs them. Both run on the loop, with
// no sweep between.
func (l *loop) named(c *conn, blobs []blob.Hash) {
	if len(blobs) > 0 && l.s.blobs.frees() {
		l.s.blobs.releaseHolds(c.id, blobs, time.Now())
	}
}

// namedIn ends c's holds of the blobs value document doc refers to: a
// worker's result (or error value) sent as a blob, which its record holds
// from this round's Ready.
func (l *loop) namedIn(c *conn, doc []byte) {
	if len(doc) == 0 || !l.s.blobs.frees() || !l.s.blobs.holdsAny(c.id) {
		return
	}
	l.s.blobs.releaseHolds(c.id, docBlobs(nil, doc), time.Now())
}

// missingBlob returns the refusal of a submission (op: submit, child) of
// request req from c, of key, whose spec names blobs, when the tracker
// frees blobs and does not hold one of them; nil when it holds them all,
// or when a submission's key is done in c's scope (the result answers it:
// no spec is needed). Without it a worker would fail on the missing blob;
// the client forgets what it believed stored, uploads the blob again and
// submits again.
func (l *loop) missingBlob(c *conn, req uint64, op string, key workunit.Key, blobs []blob.Hash) *wire.Error {
	if !l.s.blobs.frees() {
		return nil
	}
	for _, h := range blobs {
		ok, err := l.s.st.HasBlob(l.s.baseCtx, h)
		if err == nil && ok {
			continue
		}
		if op == "submit" {
			if r, ok := l.tab.LookupIn(c.scope, key); ok && r.Status == workunit.StatusDone {
				return nil
			}
		}
		return &wire.Error{Req: req, Code: wire.CodeUnknownBlob, Message: fmt.Sprintf(
			"tracker: %s: the spec names blob %s, which the tracker does not hold: it was never uploaded, or the tracker freed it "+
				"(riotd --memory frees a blob --blob-grace after no workunit and no connection names it), or lost it when riotd --memory restarted. "+
				"Upload the blob again (EnsureBlobs) and submit again; riot's clients do this by themselves when they have its bytes", op, h.Short())}
	}
	return nil
}
