package table

import (
	"math"
	"strings"
	"time"

	"github.com/riot-go/riot/workunit"
)

// This file holds the table's queries for status pages: counts by owner,
// lists of records with filters, a running record's spec. Each costs in
// proportion to what it returns or scans, never to more than its bound,
// so that a page of the dashboard never stalls the loop that owns the
// table.

// countRec adds d to the count of record r's owner in r's status, and,
// for a record in error because it was canceled, to its canceled count
// (kept where StatusUnknown's would be: no record is counted there).
func (t *Table) countRec(r *record, d int32) {
	for int(r.owner) >= len(t.byOwner) {
		t.byOwner = append(t.byOwner, [workunit.StatusError + 1]int32{})
	}
	c := &t.byOwner[r.owner]
	c[r.status] += d
	if r.status == workunit.StatusError && r.flags&flagCanceled != 0 {
		c[workunit.StatusUnknown] += d
	}
}

// OwnerCounts counts an owner's records by status: those it submitted
// first, or ran again (Record.Owner). Canceled counts those of Error that
// were canceled.
type OwnerCounts struct {
	Waiting, Running, Done, Error int
	Canceled                      int
}

// CountsOf returns owner's records by status (all zero for an owner the
// table does not know).
func (t *Table) CountsOf(owner string) OwnerCounts {
	i, ok := t.nameIdx[owner]
	if !ok || int(i) >= len(t.byOwner) {
		return OwnerCounts{}
	}
	c := &t.byOwner[i]
	return OwnerCounts{
		Waiting:  int(c[workunit.StatusWaiting]),
		Running:  int(c[workunit.StatusRunning]),
		Done:     int(c[workunit.StatusDone]),
		Error:    int(c[workunit.StatusError]),
		Canceled: int(c[workunit.StatusUnknown]),
	}
}

// Query selects records for List. Zero fields select everything.
type Query struct {
	// Statuses, when not empty, selects records of these statuses.
	Statuses []workunit.Status
	// Owner selects the records of this owner (Record.Owner).
	Owner string
	// Worker selects the records that this worker holds or finished.
	Worker string
	// InScope, when set, selects the records of memo scope Scope only.
	InScope bool
	Scope   string
	// ErrorText selects records in error whose error's name or message
	// contains it.
	ErrorText string
	// Before, when not 0, starts the scan below this cursor (a List's
	// Next); 0 starts from the newest record.
	Before uint32
	// Limit is the most records to return; at most MaxListLimit (and
	// DefaultListLimit when 0).
	Limit int
	// MaxScan bounds the records looked at; at most MaxListScan (and
	// MaxListScan when 0).
	MaxScan int
}

// Bounds of a List.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
	MaxListScan      = 100_000
)

// Summary is a record as a list shows it.
type Summary struct {
	Key workunit.Key
	// Scope is the record's memo scope (Record.Scope): with Key, what
	// names it (LookupIn).
	Scope      string
	ID         uint64
	Status     workunit.Status
	Owner      string
	Worker     string
	LastChange time.Time
	Deliveries int
	// ErrName and ErrMessage are the error's, for a record in error.
	ErrName, ErrMessage string
}

// ListPage is a page of a List.
type ListPage struct {
	Records []Summary
	// Next is the cursor for the page after (Query.Before); 0 when the
	// scan reached the oldest record.
	Next uint32
	// Partial reports that the scan stopped at Query.MaxScan before the
	// page was full: there may be more at Next.
	Partial bool
}

// List returns the records that q selects, newest first (by the order in
// which the table first held them; a forgotten record's place may be
// taken by a newer one). It looks at no more than q.MaxScan records.
func (t *Table) List(q Query) ListPage {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	scan := q.MaxScan
	if scan <= 0 || scan > MaxListScan {
		scan = MaxListScan
	}
	var owner, worker, scope uint32
	if q.InScope {
		i, ok := t.nameIdx[q.Scope]
		if !ok {
			return ListPage{}
		}
		scope = i
	}
	if q.Owner != "" {
		i, ok := t.nameIdx[q.Owner]
		if !ok {
			return ListPage{}
		}
		owner = i
	}
	if q.Worker != "" {
		i, ok := t.nameIdx[q.Worker]
		if !ok {
			return ListPage{}
		}
		worker = i
	}
	var statuses [workunit.StatusError + 1]bool
	for _, s := range q.Statuses {
		if int(s) < len(statuses) {
			statuses[s] = true
		}
	}
	wantErr := strings.ToLower(q.ErrorText)
	i := t.recs.n // the scan looks at the indices below i
	if q.Before != 0 && q.Before < i {
		i = q.Before
	}
	var page ListPage
	for ; i > 0 && scan > 0; scan-- {
		i--
		r := t.recs.at(i)
		if r.status == workunit.StatusUnknown {
			continue // a free slot
		}
		if len(q.Statuses) > 0 && !statuses[r.status] {
			continue
		}
		if q.Owner != "" && r.owner != owner {
			continue
		}
		if q.Worker != "" && r.worker != worker {
			continue
		}
		if q.InScope && r.scope != scope {
			continue
		}
		if q.ErrorText != "" {
			if r.status != workunit.StatusError || r.ext == nil || r.ext.err == nil ||
				!(strings.Contains(strings.ToLower(r.ext.err.Message), wantErr) || strings.Contains(strings.ToLower(r.ext.err.Name), wantErr)) {
				continue
			}
		}
		page.Records = append(page.Records, t.summary(r))
		if len(page.Records) == limit {
			if i > 0 {
				page.Next = i
			}
			return page
		}
	}
	if i > 0 {
		page.Next, page.Partial = i, true
	}
	return page
}

func (t *Table) summary(r *record) Summary {
	s := Summary{Key: r.key, Scope: t.names[r.scope], ID: r.id, Status: r.status, Owner: t.names[r.owner], Worker: t.names[r.worker],
		LastChange: fromUnixNano(r.changed), Deliveries: int(r.deliveries)}
	if r.status == workunit.StatusError && r.ext != nil && r.ext.err != nil {
		s.ErrName, s.ErrMessage = r.ext.err.Name, r.ext.err.Message
	}
	return s
}

// SpecOf returns the spec of a waiting or running workunit and its owner;
// ok is false for a key the table does not have or has finished (the
// table keeps no spec for finished work). It looks in every memo scope
// (see findAny), and prefers an open workunit to a finished one of the
// same key.
func (t *Table) SpecOf(key workunit.Key) (spec []byte, owner string, ok bool) {
	idx, found := t.findAny(&key)
	if !found {
		return nil, "", false
	}
	if r := t.recs.at(idx); !isOpen(r.status) {
		for _, sc := range t.scopes {
			if i, ok := t.index.get(&key, sc, &t.recs); ok && isOpen(t.recs.at(i).status) {
				idx = i
				break
			}
		}
	}
	r := t.recs.at(idx)
	if !isOpen(r.status) {
		return nil, t.names[r.owner], false
	}
	return r.data, t.names[r.owner], true
}

// LeaseInfo is what the table knows of a lease's workunit, for status
// pages and metrics (Leased).
type LeaseInfo struct {
	Spec                []byte
	Owner               string
	Submitted, Assigned time.Time
}

// Leased returns what the table knows of worker w's lease tok, while w
// holds it (before its Complete or Fail), and whether w holds it. It
// looks through w's leases in the order given: the oldest, the one a
// worker answers first, costs one look.
func (t *Table) Leased(w WorkerID, tok Token) (LeaseInfo, bool) {
	wk, ok := t.workers[w]
	if !ok {
		return LeaseInfo{}, false
	}
	for i := range wk.leases {
		if l := &wk.leases[i]; l.token == tok {
			if l.expired {
				return LeaseInfo{}, false
			}
			r := t.recs.at(l.idx)
			return LeaseInfo{Spec: r.data, Owner: t.names[r.owner], Submitted: fromUnixNano(r.queued), Assigned: fromUnixNano(r.assigned)}, true
		}
	}
	return LeaseInfo{}, false
}

// PrintWatchers is for a worker's console lines of a running workunit
// (wire.Print): when worker w holds lease tok of key, it counts n more
// bytes printed by the lease and appends to dst the masters that watch
// the key, in no particular order. It reports false, appending none, when
// w does not hold that lease (it ended, expired, or never was), and when
// the lease has printed more than most bytes in all (most <= 0: no
// bound): what a lease prints past that is not passed on. It looks
// through w's leases as Leased does, and through the key's watches.
func (t *Table) PrintWatchers(w WorkerID, key workunit.Key, tok Token, n, most int, dst []MasterID) ([]MasterID, bool) {
	wk, ok := t.workers[w]
	if !ok {
		return dst, false
	}
	for i := range wk.leases {
		l := &wk.leases[i]
		if l.token != tok {
			continue
		}
		r := t.recs.at(l.idx)
		if l.expired || r.key != key {
			return dst, false
		}
		total := uint64(l.printed) + uint64(max(n, 0))
		if most > 0 && total > uint64(most) {
			l.printed = uint32(min(total, math.MaxUint32))
			return dst, false
		}
		l.printed = uint32(min(total, math.MaxUint32))
		for nd := r.watch; nd != 0; nd = t.wnodes[nd-1].next {
			dst = append(dst, t.wnodes[nd-1].master)
		}
		return dst, true
	}
	return dst, false
}

// OpenKeysOf returns the keys of owner's waiting and running workunits,
// at most max of them (all when max <= 0). It scans the whole table: for
// rare requests (a job's cancellation), not for pages.
func (t *Table) OpenKeysOf(owner string, max int) []workunit.Key {
	o, ok := t.nameIdx[owner]
	if !ok || int(o) >= len(t.byOwner) {
		return nil
	}
	c := &t.byOwner[o]
	n := int(c[workunit.StatusWaiting] + c[workunit.StatusRunning])
	if n == 0 {
		return nil
	}
	if max > 0 {
		n = min(n, max)
	}
	keys := make([]workunit.Key, 0, n)
	for i := range t.recs.n {
		r := t.recs.at(i)
		if r.owner == o && isOpen(r.status) {
			keys = append(keys, r.key)
			if len(keys) == n {
				break
			}
		}
	}
	return keys
}
