package table

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/riot-go/riot/workunit"
)

// record flags.
const (
	flagNoCache  = 1 << iota // Options.NoCache of the submission that made it run
	flagPending              // listed in t.pending: to persist in the next Ready
	flagInflight             // in the outstanding Ready's Persist, not yet durable
	flagCanceled             // in error because it was canceled (stop with a Canceled error)
	flagCrowded              // watched by crowdedWatches masters or more: its watches are in t.wbyKey
	flagStored               // done, its result in the store and not in data (Config.ResultsInStore)
)

// record is one workunit. Kept small: a million waiting ones must fit in
// well under 300 MB together with the index and the queue.
type record struct {
	key workunit.Key
	// data is the spec while waiting or running and the result once done
	// (nil once errored, and once done with flagStored): the two are never
	// needed at the same time.
	data       []byte
	ext        *extra // rare state; nil for most records
	id         uint64 // Record.ID
	seq        int64  // queue order
	changed    int64  // last status change, unix nanoseconds (0: zero time)
	queued     int64  // when it last became waiting, unix nanoseconds (0: unknown)
	assigned   int64  // when its last lease was given, unix nanoseconds (0: none)
	owner      uint32 // name index
	scope      uint32 // name index of its memo scope (Record.Scope)
	worker     uint32 // name index of the holder or finisher (0: none)
	timeout    uint32 // ms
	deliveries uint32
	watch      uint32 // first watch node + 1 (0: none)
	gpus       uint8
	status     workunit.Status
	flags      uint8
}

// extra holds what few records need.
type extra struct {
	err  *workunit.Error
	lost []uint32 // name indices
	// retries and retryOn are the record's Options.Retries and RetryOn;
	// attempts its failed attempts so far, retried (Record.Attempts).
	retries  int
	retryOn  []string
	attempts []workunit.Attempt
	// children are the workunits this record's current run submitted
	// (Submit.Parent), parents those that submitted this one.
	children, parents []recRef
	// via are the connections that submitted this record as a child
	// (Submit.Master of a Submit with Parent): their watches are their
	// parents' waits.
	via []MasterID
}

// recRef names a record by index and ID: a forgotten record's index may
// be reused by another, whose ID differs.
type recRef struct {
	idx uint32
	id  uint64
}

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
)

// slab stores records in fixed chunks: growing never copies a record, and
// a record's index never changes.
type slab struct {
	chunks [][]record
	n      uint32
}

func (s *slab) at(i uint32) *record { return &s.chunks[i>>chunkBits][i&(chunkSize-1)] }

func (s *slab) add() uint32 {
	if s.n&(chunkSize-1) == 0 {
		s.chunks = append(s.chunks, make([]record, chunkSize))
	}
	i := s.n
	s.n++
	return i
}

// lease is one delivery held by a worker.
type lease struct {
	token    Token
	idx      uint32
	printed  uint32 // bytes of console lines streamed (PrintWatchers)
	gpus     uint8
	expired  bool  // given up on; still counts in the worker's window
	canceled bool  // expired because its workunit was canceled
	waiting  bool  // waits for its children: not in the window, no deadline (Wait)
	deadline int64 // unix nanoseconds; 0: none
	// dur is the lease's length (0: none): its deadline is dur after it
	// was given, or after its worker last made progress towards it (see
	// progress), whichever is later.
	dur int64
}

type worker struct {
	id       WorkerID
	name     uint32
	slots    int // how many of its leases it runs at once (WorkerJoin.Slots)
	window   int
	credit   int
	gpus     int
	gpusUsed int
	leases   []lease // in the order given (their tokens ascending)
	waiting  int     // leases that wait for their children (Wait)
	inReady  bool
	// The worker's last progress (see progress), kept rather than written
	// into each lease it restarted: at refreshAt it restarted the clocks
	// of its leases of tokens from refreshFrom on (refreshed: since it
	// joined). deadlineOf reads it.
	refreshed   bool
	refreshFrom Token
	refreshAt   int64
}

// deadlineOf returns lease l's deadline (0: none): its own, or, when its
// worker's last progress restarted its clock (progress), that time plus
// its length, whichever is later.
func (w *worker) deadlineOf(l *lease) int64 {
	if w.refreshed && l.token >= w.refreshFrom && refreshable(l) {
		return max(l.deadline, w.refreshAt+l.dur)
	}
	return l.deadline
}

// refreshable reports whether progress restarts lease l's clock: it has a
// length, is not given up on, and does not wait for its children (a
// waiting lease has no deadline until it runs again).
func refreshable(l *lease) bool { return !l.expired && !l.waiting && l.dur > 0 }

func (w *worker) canTake() bool { return w.credit > 0 && len(w.leases)-w.waiting < w.window }

// MaxPack is the most workunits the dispatch gives one worker in a row
// (Config.PackBudget).
const MaxPack = 16

// runTime is a moving mean of an owner's workunits' run times: each run
// moves it an eighth of the way to its own time.
type runTime struct {
	mean int64 // nanoseconds
	seen bool  // a run was measured
}

// ran adds a run of d by owner's workunit to its mean.
func (t *Table) ran(owner uint32, d time.Duration) {
	if t.cfg.PackBudget <= 0 {
		return
	}
	if int(owner) >= len(t.runs) {
		t.runs = append(t.runs, make([]runTime, int(owner)+1-len(t.runs))...)
	}
	rt := &t.runs[owner]
	if !rt.seen {
		rt.mean, rt.seen = int64(d), true
		return
	}
	rt.mean += (int64(d) - rt.mean) / 8
}

// pack is how many of owner's workunits the dispatch gives a worker in a
// row: Config.PackBudget over their mean run time (a microsecond at
// least), from 1 to MaxPack; 1 until one has run.
func (t *Table) pack(owner uint32) int {
	if t.cfg.PackBudget <= 0 || int(owner) >= len(t.runs) || !t.runs[owner].seen {
		return 1
	}
	n := int64(t.cfg.PackBudget) / max(t.runs[owner].mean, int64(time.Microsecond))
	return int(min(max(n, 1), MaxPack))
}

// finished is a record that finished at changed, in Table.fin. It is
// stale once the record has changed since (run again, or forgotten).
type finished struct {
	changed int64
	idx     uint32
}

// watchNode is one watch, in two lists: its record's (newest first) and
// its master's. Nodes live in one slice with a free list: watching
// allocates nothing once the slice has grown. A master has at most one
// node per record: watching a key again updates that node, so dropping a
// master's watches costs one step per record it watches, however often it
// watched each. A record's node of a master is found by walking the
// record's list, which is short (most records have one watch, their
// submitter's); a record that crowdedWatches masters watch at once is
// flagged crowded, and its nodes are found in Table.wbyKey instead, until
// its list is empty again.
type watchNode struct {
	master MasterID
	req    uint64
	rec    uint32 // record index + 1; 0: a free node
	next   uint32 // next node + 1 in the record's list, or in the free list
	prev   uint32 // previous node + 1 in the record's list (0: the first)
	// mnext and mprev link the master's nodes (node + 1; 0: none).
	mnext, mprev uint32
	// limit is the time limit of the master that joined the record with
	// a shorter one than the record's (ms; 0: none), and that master's
	// owner (a name index), by which its limit outlives a reconnect: see
	// Submit and Watch. since is when the limit started counting: the
	// first Tick that found the record running after the join (0: none
	// yet), for the run that started at run (the record's changed then).
	// Counting from a Tick, never from the join's stale time, the limit
	// passes up to a Tick late, never early.
	limit      uint32
	owner      uint32
	since, run int64
}

// masterWatches is the list of a master's watch nodes, and the slot that
// names the master in Table.wbyKey while it has some.
type masterWatches struct {
	head uint32 // first node + 1
	n    int
	slot uint32
}

// crowdedWatches is the length of a record's list of watches past which
// its nodes are found in Table.wbyKey rather than by walking the list.
const crowdedWatches = 8

// watchKey names the one watch of a record (its index) by the master of
// slot.
func watchKey(slot, rec uint32) uint64 { return uint64(slot)<<32 | uint64(rec) }

// watchOf returns the node (+1) of m's watch of record idx, and whether
// m has one.
func (t *Table) watchOf(m MasterID, idx uint32) (uint32, bool) {
	r := t.recs.at(idx)
	if r.flags&flagCrowded != 0 {
		ml, ok := t.mwatches[m]
		if !ok {
			return 0, false
		}
		n, ok := t.wbyKey[watchKey(ml.slot, idx)]
		return n, ok
	}
	for n := r.watch; n != 0; n = t.wnodes[n-1].next {
		if t.wnodes[n-1].master == m {
			return n, true
		}
	}
	return 0, false
}

// linkRec puts node n (+1), whose master's slot is slot, at the head of
// its record's list; the record turns crowded when the list reaches
// crowdedWatches nodes.
func (t *Table) linkRec(n, slot uint32) {
	wn := &t.wnodes[n-1]
	idx := wn.rec - 1
	r := t.recs.at(idx)
	wn.next, wn.prev = r.watch, 0
	if r.watch != 0 {
		t.wnodes[r.watch-1].prev = n
	}
	r.watch = n
	if r.flags&flagCrowded != 0 {
		t.wbyKey[watchKey(slot, idx)] = n
		return
	}
	length := 0
	for m := r.watch; m != 0 && length < crowdedWatches; m = t.wnodes[m-1].next {
		length++
	}
	if length < crowdedWatches {
		return
	}
	r.flags |= flagCrowded
	for m := r.watch; m != 0; m = t.wnodes[m-1].next {
		s := slot
		if m != n {
			s = t.mwatches[t.wnodes[m-1].master].slot
		}
		t.wbyKey[watchKey(s, idx)] = m
	}
}

// heldLimit is a watch's limit (see watchNode). Table.held keeps, by
// record index, those of limited watches whose master was lost, for the
// watch their owner makes again (a reconnect), until the record finishes.
type heldLimit struct {
	owner, limit uint32
	since, run   int64
}

// Table is the workunit table: a deterministic state machine with no I/O.
// Feed it events with Step, collect its output with Ready, confirm with
// Advance. See the package documentation for the caller's duties.
//
// A Table is not safe for concurrent use: one goroutine owns it.
type Table struct {
	cfg Config
	// runs is the recent run time of each owner's workunits (by name
	// index), for Config.PackBudget.
	runs []runTime
	// batching: Steps do not dispatch (BeginBatch).
	batching bool
	// dataBytes is the sum of dataBytes over the records: the specs,
	// results and errors the table holds (Stats.Bytes adds RecordBytes a
	// record).
	dataBytes int64
	now       int64
	ticked    bool
	recs      slab
	index     index
	queues    []gpuQueue // by gpus, ascending
	queued    int
	backSeq   int64 // last seq given at the back
	frontSq   int64 // last seq given at the front (≤ 0)

	names   []string // interned names; names[0] == ""
	nameIdx map[string]uint32
	scopes  []uint32 // the memo scopes of records but "", as name indices (see findAny)

	workers     map[WorkerID]*worker
	liveNames   map[uint32]WorkerID
	ready       []*worker // workers that can take work, round-robin
	rr          int
	mayDispatch bool
	nextToken   Token
	nextID      uint64
	leases      int

	wnodes   []watchNode
	wfree    uint32                     // first free node + 1
	mwatches map[MasterID]masterWatches // each master's nodes
	wbyKey   map[uint64]uint32          // node + 1 of each (master slot, record): see watchKey
	mslots   []uint32                   // free master slots
	nwatches int
	limited  map[uint32]struct{}    // nodes + 1 of the watches with a limit
	held     map[uint32][]heldLimit // by record index

	counts    [workunit.StatusError + 1]int
	discarded uint64
	// cascaded are the children that the Cancel being stepped canceled
	// with their parents (cancelChildren), for its reply.
	cascaded []uint32

	// Forgetting (Config.KeepFinished): finished records in the order
	// they finished (from finHead on), record indices free for reuse,
	// tombstones for the next Ready, and the time of the first Tick.
	fin       []finished
	finHead   int
	free      []uint32
	tombs     []Record
	forgotten uint64
	firstTick int64
	// open counts the workunits waiting or running by owner (an index
	// into names); quotaOpen sums them by quota (Submit.Quota, a name
	// index), for Config.MaxOpenPerOwner; quotas maps an owner to its
	// quota, where that is not the owner itself. So quotaOpen[q] is the
	// sum of open[o] over the owners o whose quota is q.
	open      []int32
	quotaOpen []int32
	quotas    map[uint32]uint32
	// byOwner counts the records of each owner (an index into names) by
	// status, for status pages (OwnerCounts).
	byOwner [][workunit.StatusError + 1]int32

	// Output under construction, the outstanding Ready's generation, and
	// buffers to reuse.
	pending     []uint32
	out         Ready
	outstanding uint64                // generation of the outstanding Ready; 0: none
	lostDuring  map[MasterID]struct{} // masters lost while it is outstanding
	gen         uint64
	spare       Ready
}

// New returns an empty table. To restart from stored records, call Restore
// before the first Step.
func New(cfg Config) *Table {
	t := &Table{
		cfg:       cfg.withDefaults(),
		names:     []string{""},
		nameIdx:   map[string]uint32{"": 0},
		workers:   make(map[WorkerID]*worker),
		liveNames: make(map[uint32]WorkerID),
		mwatches:  make(map[MasterID]masterWatches),
		wbyKey:    make(map[uint64]uint32),
		limited:   make(map[uint32]struct{}),
		held:      make(map[uint32][]heldLimit),
	}
	t.index = newIndex(t.cfg.HashSeed)
	t.nextToken = t.cfg.FirstToken
	t.nextID = 1
	return t
}

// find returns the record of key k in memo scope scope, without interning
// the scope: a scope the table has never seen holds nothing.
func (t *Table) find(scope string, k *workunit.Key) (uint32, bool) {
	sc, ok := t.nameIdx[scope]
	if !ok {
		return 0, false
	}
	return t.index.get(k, sc, &t.recs)
}

// findAny returns the record of key k in any memo scope: the scope ""
// first, then the others in the order the table first saw them. For
// inspection, which names records by key alone; it costs one probe per
// scope (a tracker has one per master credential).
func (t *Table) findAny(k *workunit.Key) (uint32, bool) {
	if idx, ok := t.index.get(k, 0, &t.recs); ok {
		return idx, true
	}
	for _, sc := range t.scopes {
		if idx, ok := t.index.get(k, sc, &t.recs); ok {
			return idx, true
		}
	}
	return 0, false
}

// internScope interns a memo scope, and lists it for findAny.
func (t *Table) internScope(s string) uint32 {
	sc := t.intern(s)
	if sc != 0 && !slices.Contains(t.scopes, sc) {
		t.scopes = append(t.scopes, sc)
	}
	return sc
}

func (t *Table) intern(s string) uint32 {
	if i, ok := t.nameIdx[s]; ok {
		return i
	}
	i := uint32(len(t.names))
	t.names = append(t.names, s)
	t.nameIdx[s] = i
	return i
}

func unixNano(tm time.Time) int64 {
	if tm.IsZero() {
		return 0
	}
	return tm.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Step feeds one event to the table. Its output accumulates for the next
// Ready. Step may be called between Ready and Advance; what it produces goes
// into the Ready after.
//
// Step returns an error for an event it rejects (see the Err variables);
// the table is then unchanged but for a Discard. It never panics.
func (t *Table) Step(ev Event) error {
	var err error
	switch e := ev.(type) {
	case Submit:
		err = t.submit(&e)
	case Watch:
		err = t.stepWatch(e)
	case Unwatch:
		t.unwatch(e)
	case GetInfo:
		err = t.getInfo(e)
	case Cancel:
		t.cancel(&e)
	case MasterLost:
		t.masterLost(e.Master)
	case WorkerJoin:
		err = t.workerJoin(&e)
	case WorkerCredit:
		err = t.workerCredit(e)
	case WorkerLost:
		t.workerLost(e.Worker)
	case Complete:
		err = t.finish(e.Worker, e.Key, e.Token, e.Result, nil, e.Console, e.Elapsed)
	case Fail:
		err = t.finish(e.Worker, e.Key, e.Token, nil, e.Err, e.Console, e.Elapsed)
	case Return:
		err = t.stepReturn(&e)
	case Tick:
		t.tick(e.Now)
	case Wait:
		t.stepWait(e)
	case nil:
		err = fmt.Errorf("%w: nil event", ErrInvalid)
	default:
		// Not %T: passing ev to fmt would make every event escape to the
		// heap at every call site.
		err = fmt.Errorf("%w: unknown event", ErrInvalid)
	}
	if !t.batching {
		t.dispatch()
	}
	return err
}

// BeginBatch starts a batch of Steps, such as the messages of one frame:
// until EndBatch, the table hands out no work, so that what the batch
// submits, and the room its workers give, are handed out together (a
// worker may then get several workunits at once: Config.PackBudget).
// Everything else about the Steps is as without a batch.
func (t *Table) BeginBatch() { t.batching = true }

// EndBatch ends the batch BeginBatch began, and hands out the work it
// made possible.
func (t *Table) EndBatch() {
	t.batching = false
	t.dispatch()
}

// markDirty lists record idx for the next Ready's Persist.
func (t *Table) markDirty(idx uint32) {
	r := t.recs.at(idx)
	if r.flags&flagPending == 0 {
		r.flags |= flagPending
		t.pending = append(t.pending, idx)
	}
}

// needDurable makes sure that record idx is durable once the next Ready's
// Persist is: if its last write is still in flight (and might fail), it is
// written again.
func (t *Table) needDurable(idx uint32) {
	r := t.recs.at(idx)
	if r.flags&flagInflight != 0 {
		t.markDirty(idx)
	}
}

// setStatus moves record idx to status s, now.
func (t *Table) setStatus(idx uint32, s workunit.Status) {
	r := t.recs.at(idx)
	t.counts[r.status]--
	t.counts[s]++
	t.countRec(r, -1)
	defer t.countRec(r, 1) // as of status s
	if was, is := isOpen(r.status), isOpen(s); was != is {
		if is {
			t.addOpen(r.owner, 1)
		} else {
			t.addOpen(r.owner, -1)
		}
	}
	r.status = s
	r.changed = t.now
	r.flags &^= flagStored // a new status, new data
	if s.Finished() && len(t.held) > 0 {
		delete(t.held, idx) // nobody is to watch this run again
	}
	if s.Finished() && t.cfg.KeepFinished > 0 {
		t.fin = append(t.fin, finished{changed: r.changed, idx: idx})
	}
}

// isOpen reports whether a workunit of status s counts against its
// owner's Config.MaxOpenPerOwner.
func isOpen(s workunit.Status) bool {
	return s == workunit.StatusWaiting || s == workunit.StatusRunning
}

// addOpen adds d to the open workunits of owner, and of its quota.
func (t *Table) addOpen(owner uint32, d int32) {
	t.open = growTo(t.open, owner)
	t.open[owner] += d
	q := t.quotaOf(owner)
	t.quotaOpen = growTo(t.quotaOpen, q)
	t.quotaOpen[q] += d
}

// growTo returns s grown with zeros to hold index i.
func growTo(s []int32, i uint32) []int32 {
	for int(i) >= len(s) {
		s = append(s, 0)
	}
	return s
}

// at returns s[i], 0 past its end.
func at(s []int32, i uint32) int {
	if int(i) < len(s) {
		return int(s[i])
	}
	return 0
}

// quotaOf returns the quota that owner's open workunits count for: the
// Quota of its latest Submit, or the owner itself.
func (t *Table) quotaOf(owner uint32) uint32 {
	if q, ok := t.quotas[owner]; ok {
		return q
	}
	return owner
}

// ownerOf interns e's Owner and returns it, after making its quota e's
// (Quota, or the Owner itself when Quota is ""): its open workunits,
// restored ones too, move to that quota.
func (t *Table) ownerOf(e *Submit) uint32 {
	owner := t.intern(e.Owner)
	q := owner
	if e.Quota != "" {
		q = t.intern(e.Quota)
	}
	if was := t.quotaOf(owner); was != q {
		if n := int32(at(t.open, owner)); n != 0 {
			t.quotaOpen = growTo(growTo(t.quotaOpen, was), q)
			t.quotaOpen[was] -= n
			t.quotaOpen[q] += n
		}
		if q == owner {
			delete(t.quotas, owner)
		} else {
			if t.quotas == nil {
				t.quotas = make(map[uint32]uint32)
			}
			t.quotas[owner] = q
		}
	}
	return owner
}

// openFor returns how many workunits are waiting or running for e's quota
// (Quota, or Owner when Quota is ""), counting those of e's Owner as its
// quota's even before ownerOf moved them there. It interns nothing: a
// refused submission leaves no name behind.
func (t *Table) openFor(e *Submit) int {
	quota := e.Quota
	if quota == "" {
		quota = e.Owner
	}
	n := 0
	q, qKnown := t.nameIdx[quota]
	if qKnown {
		n = at(t.quotaOpen, q)
	}
	if owner, known := t.nameIdx[e.Owner]; known && (!qKnown || t.quotaOf(owner) != q) {
		n += at(t.open, owner)
	}
	return n
}

// checkOpen refuses a submission that would give its quota (its
// submitter's credential; its owner when it names none) more open
// workunits than Config.MaxOpenPerOwner.
func (t *Table) checkOpen(e *Submit) error {
	limit := t.cfg.MaxOpenPerOwner
	if limit <= 0 {
		return nil
	}
	if n := t.openFor(e); n >= limit {
		return fmt.Errorf("%w: submit %s: %d workunits of this master are waiting or running, the most it may have (wait for some to finish)",
			ErrLimit, e.Key.Short(), n)
	}
	return nil
}

// dataBytes returns the bytes record r holds besides itself: its spec or
// result, and its error's name, message, stack and thrown value.
func dataBytes(r *record) int64 {
	n := int64(len(r.data))
	if r.ext != nil && r.ext.err != nil {
		n += errBytes(r.ext.err)
	}
	return n
}

// errBytes returns the bytes of e's name, message, stack and thrown value.
func errBytes(e *workunit.Error) int64 {
	return int64(len(e.Name) + len(e.Message) + len(e.Stack) + len(e.Value))
}

// HeldBytes returns what Stats.Bytes counts, without the rest of Stats:
// cheap enough to call after every round of events.
func (t *Table) HeldBytes() int64 { return t.heldBytes() }

// heldBytes returns what Stats.Bytes counts.
func (t *Table) heldBytes() int64 {
	return t.dataBytes + RecordBytes*int64(t.records())
}

// records returns the number of records the table holds.
func (t *Table) records() int {
	n := 0
	for _, c := range t.counts {
		n += c
	}
	return n
}

// checkBytes refuses a submission that would make the table hold more
// than Config.MaxBytes: its spec, and a record when it makes one (fresh),
// with what the tracker holds elsewhere (e.HeldElsewhere).
func (t *Table) checkBytes(e *Submit, fresh bool) error {
	limit := t.cfg.MaxBytes
	if limit <= 0 {
		return nil
	}
	need := int64(len(e.Spec))
	if fresh {
		need += RecordBytes
	}
	if held := t.heldBytes(); held+max(e.HeldElsewhere, 0)+need > limit {
		return &FullError{Key: e.Key, Held: held, Need: need, Limit: limit, Elsewhere: max(e.HeldElsewhere, 0), Records: t.records()}
	}
	return nil
}

// outcome returns what the table says of record r.
func (t *Table) outcome(r *record) workunit.Outcome {
	o := workunit.Outcome{Key: r.key, Status: r.status, Worker: t.names[r.worker], LastChange: fromUnixNano(r.changed)}
	switch r.status {
	case workunit.StatusDone:
		o.Result = r.data // nil with flagStored: see storedID
	case workunit.StatusError:
		o.Err = r.ext.err
	}
	return o
}

// storedID returns the ID of record r when its result is in the store
// rather than in the table (its outcome's Result is nil), else 0.
func storedID(r *record) uint64 {
	if r.flags&flagStored != 0 {
		return r.id
	}
	return 0
}

func (t *Table) queueFor(gpus uint8) *ring {
	for i := range t.queues {
		if t.queues[i].gpus == gpus {
			return &t.queues[i].q
		}
	}
	i, _ := slices.BinarySearchFunc(t.queues, gpus, func(q gpuQueue, g uint8) int { return int(q.gpus) - int(g) })
	t.queues = slices.Insert(t.queues, i, gpuQueue{gpus: gpus})
	return &t.queues[i].q
}

func (t *Table) enqueueBack(idx uint32) {
	r := t.recs.at(idx)
	t.backSeq++
	r.seq = t.backSeq
	t.queueFor(r.gpus).pushBack(idx)
	t.queued++
	t.mayDispatch = true
}

func (t *Table) enqueueFront(idx uint32) {
	r := t.recs.at(idx)
	t.frontSq--
	r.seq = t.frontSq
	t.queueFor(r.gpus).pushFront(idx)
	t.queued++
	t.mayDispatch = true
}

func validOptions(o workunit.Options, what string, k workunit.Key) error {
	if o.GPUs < 0 || o.GPUs > MaxGPUs {
		return fmt.Errorf("%w: %s %s: %d GPUs (0 to %d)", ErrInvalid, what, k.Short(), o.GPUs, MaxGPUs)
	}
	if o.Timeout < 0 || o.Timeout > workunit.MaxTimeout {
		return fmt.Errorf("%w: %s %s: time limit %v (0 to %v)", ErrInvalid, what, k.Short(), o.Timeout, workunit.MaxTimeout)
	}
	if o.Retries < 0 || o.Retries > workunit.MaxRetries {
		return fmt.Errorf("%w: %s %s: %d retries (0 to %d)", ErrInvalid, what, k.Short(), o.Retries, workunit.MaxRetries)
	}
	if len(o.RetryOn) > workunit.MaxRetryOn {
		return fmt.Errorf("%w: %s %s: %d error names to retry on (at most %d)", ErrInvalid, what, k.Short(), len(o.RetryOn), workunit.MaxRetryOn)
	}
	return nil
}

func (t *Table) submit(e *Submit) error {
	if e.Key == (workunit.Key{}) {
		return fmt.Errorf("%w: submit: zero key", ErrInvalid)
	}
	if len(e.Spec) == 0 {
		return fmt.Errorf("%w: submit %s: empty spec", ErrInvalid, e.Key.Short())
	}
	if err := validOptions(e.Options, "submit", e.Key); err != nil {
		return err
	}
	var parent recRef
	if e.Parent != nil {
		p, err := t.parentOf(e)
		if err != nil {
			return err
		}
		parent = p
	}
	scope := t.internScope(e.Scope)
	idx, ok, slot, tag := t.index.find(&e.Key, scope, &t.recs)
	joined := ok && isOpen(t.recs.at(idx).status)
	becomesOpen := !ok || t.recs.at(idx).status == workunit.StatusError || (t.recs.at(idx).status == workunit.StatusDone && e.Options.NoCache)
	if becomesOpen {
		// It becomes waiting: one more for its owner.
		if err := t.checkOpen(e); err != nil {
			return err
		}
	}
	if becomesOpen {
		if err := t.checkBytes(e, !ok); err != nil {
			return err
		}
	}
	if e.Watch && (becomesOpen || joined) {
		if err := t.checkWatchOpen(e.Master, idx, ok, e.Key); err != nil {
			return err
		}
	}
	if !ok {
		idx = t.newRecord()
		r := t.recs.at(idx)
		r.key = e.Key
		r.scope = scope
		r.id = t.nextID
		t.nextID++
		r.owner = t.ownerOf(e)
		t.counts[workunit.StatusWaiting]++
		r.status = workunit.StatusWaiting
		t.countRec(r, 1)
		t.addOpen(r.owner, 1)
		t.index.insert(slot, tag, idx)
		t.reset(idx, e)
	} else {
		r := t.recs.at(idx)
		switch r.status {
		case workunit.StatusDone:
			if e.Options.NoCache {
				t.reset(idx, e)
			}
		case workunit.StatusError:
			t.reset(idx, e)
		}
	}
	t.needDurable(idx)
	if e.Parent != nil {
		t.link(parent, idx, e.Master)
	}
	r := t.recs.at(idx)
	t.out.acks = grow(t.out.acks)
	m := &t.out.acks[len(t.out.acks)-1]
	*m = Ack{Master: e.Master, Req: e.Req, Outcome: t.outcome(r), Stored: storedID(r)}
	t.out.Send = append(t.out.Send, m)
	if e.Watch {
		var owner uint32
		limit := joinLimit(joined, r.timeout, e.Options.Timeout)
		if limit > 0 {
			owner = t.intern(e.Owner)
		}
		t.watchFor(e.Master, e.Req, idx, heldLimit{owner: owner, limit: limit})
	}
	return nil
}

// joinLimit is the limit, in ms, of the watch of a submission with time
// limit timeout: when it joined a record whose own limit (ms; 0: none) is
// longer, the submitter's limit holds for its watch; else 0, the record's
// holds (its worker enforces it).
func joinLimit(joined bool, recTimeout uint32, timeout time.Duration) uint32 {
	if !joined || timeout <= 0 {
		return 0
	}
	ms := uint32(max(timeout/time.Millisecond, 1))
	if recTimeout != 0 && recTimeout <= ms {
		return 0
	}
	return ms
}

// reset makes record idx waiting, to run the spec and options of e, at the
// back of the queue. Its owner becomes e's: the run is e's submitter's,
// and runs in its realm.
func (t *Table) reset(idx uint32, e *Submit) {
	r := t.recs.at(idx)
	if owner := t.ownerOf(e); owner != r.owner {
		if isOpen(r.status) {
			t.addOpen(r.owner, -1)
			t.addOpen(owner, 1)
		}
		t.countRec(r, -1)
		r.owner = owner
		t.countRec(r, 1)
	}
	r.queued = t.now
	was := dataBytes(r)
	defer func() { t.dataBytes += dataBytes(r) - was }()
	r.data = e.Spec
	r.gpus = uint8(e.Options.GPUs)
	r.timeout = uint32(e.Options.Timeout / time.Millisecond)
	r.flags &^= flagNoCache
	if e.Options.NoCache {
		r.flags |= flagNoCache
	}
	r.ext = nil
	if e.Options.Retries > 0 {
		r.ext = &extra{retries: e.Options.Retries, retryOn: e.Options.RetryOn}
	}
	r.worker = 0
	t.setStatus(idx, workunit.StatusWaiting)
	r.flags &^= flagCanceled // after setStatus: it counted the record as it was
	t.enqueueBack(idx)
	t.markDirty(idx)
}

func (t *Table) stepWatch(e Watch) error {
	idx, ok := t.find(e.Scope, &e.Key)
	if !ok {
		t.out.Notify = append(t.out.Notify, Notification{Master: e.Master, Req: e.Req, Outcome: workunit.Outcome{Key: e.Key}})
		return nil
	}
	if err := t.checkWatch(e.Master, idx, e.Key); err != nil {
		return err
	}
	var lim heldLimit
	if o, known := t.nameIdx[e.Owner]; known && len(t.held) > 0 {
		hs := t.held[idx]
		for i, h := range hs {
			if h.owner == o {
				lim = h
				if hs = slices.Delete(hs, i, i+1); len(hs) == 0 {
					delete(t.held, idx)
				} else {
					t.held[idx] = hs
				}
				break
			}
		}
	}
	t.watchFor(e.Master, e.Req, idx, lim)
	return nil
}

// checkWatch refuses a watch of record idx by m that would give m more
// pending watches than Config.MaxWatchesPerMaster. A watch of a finished
// record (answered at once) or of one m watches already (the same watch,
// with a new req) is never refused.
func (t *Table) checkWatch(m MasterID, idx uint32, key workunit.Key) error {
	if t.recs.at(idx).status.Finished() {
		return nil
	}
	return t.checkWatchOpen(m, idx, true, key)
}

// checkWatchOpen is checkWatch for a record that is (or is about to be)
// waiting or running: record idx when known, else a new one.
func (t *Table) checkWatchOpen(m MasterID, idx uint32, known bool, key workunit.Key) error {
	limit := t.cfg.MaxWatchesPerMaster
	if limit <= 0 {
		return nil
	}
	if known {
		if _, dup := t.watchOf(m, idx); dup {
			return nil
		}
	}
	if n := t.mwatches[m].n; n >= limit {
		return fmt.Errorf("%w: watch %s: this master has %d pending watches, the most it may have (max-watches): "+
			"wait for some of its workunits to finish, or unwatch some", ErrLimit, key.Short(), n)
	}
	return nil
}

// watchFor makes m watch record idx with req, and with lim's time limit
// (ms; 0: none), of lim's owner, counting since lim.since for the run
// lim.run: see Submit. A finished record is answered at once. When m
// watches idx already, its watch takes req and lim: a master's watches of
// a key are one, answered once, with the latest req (the caller checked
// the bound: checkWatch).
func (t *Table) watchFor(m MasterID, req uint64, idx uint32, lim heldLimit) {
	r := t.recs.at(idx)
	if r.status.Finished() {
		t.out.Notify = append(t.out.Notify, Notification{Master: m, Req: req, Outcome: t.outcome(r), Stored: storedID(r), rec: idx + 1, scope: r.scope})
		return
	}
	n, dup := t.watchOf(m, idx)
	if !dup {
		ml, has := t.mwatches[m]
		if !has {
			ml.slot = t.newSlot()
		}
		n = t.wfree
		if n != 0 {
			t.wfree = t.wnodes[n-1].next
		} else {
			t.wnodes = append(t.wnodes, watchNode{})
			n = uint32(len(t.wnodes))
		}
		t.wnodes[n-1] = watchNode{master: m, rec: idx + 1, mnext: ml.head}
		if ml.head != 0 {
			t.wnodes[ml.head-1].mprev = n
		}
		ml.head = n
		ml.n++
		t.mwatches[m] = ml
		t.linkRec(n, ml.slot)
		t.nwatches++
	}
	wn := &t.wnodes[n-1]
	wn.req = req
	if wn.limit != 0 && lim.limit == 0 {
		delete(t.limited, n)
	}
	wn.limit, wn.owner, wn.since, wn.run = lim.limit, lim.owner, lim.since, lim.run
	if lim.limit > 0 {
		t.limited[n] = struct{}{}
	}
}

// freeWatch unlinks node n (+1) from its record's and its master's lists,
// returns it to the free list and uncounts it.
func (t *Table) freeWatch(n uint32) {
	wn := &t.wnodes[n-1]
	if wn.limit != 0 {
		delete(t.limited, n)
	}
	ml := t.mwatches[wn.master]
	t.unlinkRec(wn, ml.slot)
	if wn.mprev != 0 {
		t.wnodes[wn.mprev-1].mnext = wn.mnext
	} else {
		ml.head = wn.mnext
	}
	if wn.mnext != 0 {
		t.wnodes[wn.mnext-1].mprev = wn.mprev
	}
	if ml.n--; ml.n > 0 {
		t.mwatches[wn.master] = ml
	} else {
		delete(t.mwatches, wn.master)
		t.mslots = append(t.mslots, ml.slot)
	}
	*wn = watchNode{next: t.wfree}
	t.wfree = n
	t.nwatches--
}

// unlinkRec takes wn, whose master's slot is slot, out of its record's
// list; a crowded record whose list is then empty is crowded no more.
func (t *Table) unlinkRec(wn *watchNode, slot uint32) {
	r := t.recs.at(wn.rec - 1)
	if wn.prev != 0 {
		t.wnodes[wn.prev-1].next = wn.next
	} else {
		r.watch = wn.next
	}
	if wn.next != 0 {
		t.wnodes[wn.next-1].prev = wn.prev
	}
	if r.flags&flagCrowded != 0 {
		delete(t.wbyKey, watchKey(slot, wn.rec-1))
		if r.watch == 0 {
			r.flags &^= flagCrowded
		}
	}
}

// notify answers every watch of record idx, which has just finished, in
// the order they were made.
func (t *Table) notify(idx uint32, console workunit.Console, elapsed time.Duration) {
	r := t.recs.at(idx)
	if r.watch == 0 {
		return
	}
	o := t.outcome(r)
	o.Console, o.Elapsed = console, elapsed
	first := len(t.out.Notify)
	for r.watch != 0 {
		n := r.watch
		wn := &t.wnodes[n-1]
		t.out.Notify = append(t.out.Notify, Notification{Master: wn.master, Req: wn.req, Outcome: o, Stored: storedID(r), rec: idx + 1, scope: r.scope})
		t.freeWatch(n)
	}
	slices.Reverse(t.out.Notify[first:]) // the list is newest first
}

// unwatch drops e.Master's pending watch of e.Key.
func (t *Table) unwatch(e Unwatch) {
	idx, ok := t.find(e.Scope, &e.Key)
	if !ok {
		return
	}
	t.dropWatch(e.Master, idx)
}

// dropWatch drops m's watch of record idx, unanswered.
func (t *Table) dropWatch(m MasterID, idx uint32) {
	if n, ok := t.watchOf(m, idx); ok {
		t.freeWatch(n)
	}
}

// expireWatches ends the watches whose master's time limit has passed
// (see Submit): each master gets a TimeoutError notification, and a
// record that no master waits for any more is stopped with that error.
// In the order of the deadlines, then of the nodes: the same every time.
func (t *Table) expireWatches() {
	if len(t.limited) == 0 {
		return
	}
	type due struct {
		at int64
		n  uint32
	}
	var dues []due
	for n := range t.limited {
		wn := &t.wnodes[n-1]
		r := t.recs.at(wn.rec - 1)
		if r.status != workunit.StatusRunning {
			continue // the limit counts from when it runs
		}
		if wn.since == 0 || wn.run != r.changed {
			wn.since, wn.run = t.now, r.changed // it runs (again): count from now
			continue
		}
		at := wn.since + int64(time.Duration(wn.limit)*time.Millisecond)
		if at <= t.now {
			dues = append(dues, due{at, n})
		}
	}
	slices.SortFunc(dues, func(a, b due) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.n, b.n)) })
	for _, d := range dues {
		wn := t.wnodes[d.n-1]
		idx := wn.rec - 1
		r := t.recs.at(idx)
		limit := time.Duration(wn.limit) * time.Millisecond
		own := "no time limit"
		if r.timeout != 0 {
			own = "a time limit of " + (time.Duration(r.timeout) * time.Millisecond).String()
		}
		werr := &workunit.Error{
			Kind: workunit.TimeLimit,
			Name: "TimeoutError",
			Message: fmt.Sprintf("the workunit ran past this master's time limit of %v: it joined the workunit, "+
				"which another master submitted with %s", limit, own),
			Key: r.key,
		}
		o := t.outcome(r)
		o.Status, o.Err = workunit.StatusError, werr
		t.out.Notify = append(t.out.Notify, Notification{Master: wn.master, Req: wn.req, Outcome: o})
		t.freeWatch(d.n)
		if r.watch == 0 {
			stopped := *werr
			stopped.Message = fmt.Sprintf("stopped: it ran past the time limit of %v of the last master waiting for it "+
				"(it was submitted with %s)", limit, own)
			t.stop(idx, &stopped, nil)
		}
	}
}

func (t *Table) getInfo(e GetInfo) error {
	o := workunit.Outcome{Key: e.Key}
	var stored uint64
	if idx, ok := t.find(e.Scope, &e.Key); ok {
		r := t.recs.at(idx)
		o, stored = t.outcome(r), storedID(r)
	}
	t.out.infos = grow(t.out.infos)
	m := &t.out.infos[len(t.out.infos)-1]
	*m = InfoReply{Master: e.Master, Req: e.Req, Outcome: o, Stored: stored}
	t.out.Send = append(t.out.Send, m)
	return nil
}

// cancel fails the waiting and running workunits of e.Owner that e lists,
// and, of the others that e.Master waits for, those that no other master
// waits for.
func (t *Table) cancel(e *Cancel) {
	reply := &CancelReply{Master: e.Master, Req: e.Req}
	owner, known := t.nameIdx[e.Owner]
	unqueue := map[uint32]bool{}
	t.cascaded = t.cascaded[:0]
	for _, k := range e.Keys {
		idx, ok := t.find(e.Scope, &k)
		if !ok {
			continue
		}
		r := t.recs.at(idx)
		if !isOpen(r.status) {
			if slices.Contains(t.cascaded, idx) {
				// Canceled with its parent, earlier in this Cancel.
				reply.Keys = append(reply.Keys, k)
			}
			continue
		}
		msg := "canceled by " + e.By
		if !known || r.owner != owner {
			// Another's: e.Master stops waiting for it (its watch is
			// answered with the cancel), and it stops when nobody else
			// waits.
			n, ok := t.watchOf(e.Master, idx)
			if !ok {
				continue
			}
			o := t.outcome(r)
			o.Status = workunit.StatusError
			o.Err = &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Key: r.key,
				Message: msg + ": this master stopped waiting for it (another master's workunit, which it had joined)"}
			// Not the record's outcome (rec 0): this master's own end of
			// its wait, true whatever the store has.
			t.out.Notify = append(t.out.Notify, Notification{Master: e.Master, Req: t.wnodes[n-1].req, Outcome: o})
			t.freeWatch(n)
			if r.watch != 0 {
				continue
			}
			msg += ", the last master waiting for it"
		}
		t.stop(idx, &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Message: msg, Key: r.key}, unqueue)
		reply.Keys = append(reply.Keys, k)
	}
	if len(unqueue) > 0 {
		for i := range t.queues {
			t.queued -= t.queues[i].q.removeIf(func(idx uint32) bool { return unqueue[idx] })
		}
	}
	t.out.Send = append(t.out.Send, reply)
}

// stop fails waiting or running record idx with werr: a running one's
// lease is revoked, and a waiting one is added to unqueue, for the caller
// to take out of the queue (or, with unqueue nil, taken out now).
func (t *Table) stop(idx uint32, werr *workunit.Error, unqueue map[uint32]bool) {
	r := t.recs.at(idx)
	if r.status == workunit.StatusWaiting {
		if unqueue != nil {
			unqueue[idx] = true
		} else {
			t.queued -= t.queueFor(r.gpus).removeIf(func(i uint32) bool { return i == idx })
		}
	} else {
		t.revoke(idx, r.worker)
	}
	was := dataBytes(r)
	if r.ext == nil {
		r.ext = &extra{}
	}
	r.ext.err = werr
	r.data = nil
	t.dataBytes += dataBytes(r) - was
	r.worker = 0
	if werr.Kind == workunit.Canceled {
		r.flags |= flagCanceled // before setStatus: it counts the record as it becomes
	}
	t.setStatus(idx, workunit.StatusError)
	t.markDirty(idx)
	t.notify(idx, nil, 0)
	if werr.Kind == workunit.Canceled {
		t.cancelChildren(idx, unqueue)
	}
}

// revoke takes back the lease of running record idx held by the worker
// named name, and tells the worker. The lease stays in the worker's window
// until the worker answers it.
func (t *Table) revoke(idx uint32, name uint32) {
	id, ok := t.liveNames[name]
	if !ok {
		return
	}
	w := t.workers[id]
	for i := range w.leases {
		l := &w.leases[i]
		if l.idx == idx && !l.expired {
			l.expired, l.canceled = true, true
			t.out.Send = append(t.out.Send, &Revoke{Worker: id, Key: t.recs.at(idx).key, Token: l.token})
			return
		}
	}
}

// masterLost drops the master's watches: one step per watch, along the
// master's list.
func (t *Table) masterLost(m MasterID) {
	t.dropNotifications(m)
	if t.outstanding != 0 {
		// Its notifications in the outstanding Ready are not to be held
		// back for it, should the write fail (see PersistFailed).
		if t.lostDuring == nil {
			t.lostDuring = make(map[MasterID]struct{})
		}
		t.lostDuring[m] = struct{}{}
	}
	ml, ok := t.mwatches[m]
	if !ok {
		return
	}
	for n := ml.head; n != 0; {
		wn := &t.wnodes[n-1]
		if wn.limit != 0 {
			// Kept for the watch its owner makes again (a reconnect).
			t.held[wn.rec-1] = append(t.held[wn.rec-1], heldLimit{owner: wn.owner, limit: wn.limit, since: wn.since, run: wn.run})
			delete(t.limited, n)
		}
		t.unlinkRec(wn, ml.slot)
		next := wn.mnext
		*wn = watchNode{next: t.wfree}
		t.wfree = n
		t.nwatches--
		n = next
	}
	delete(t.mwatches, m)
	t.mslots = append(t.mslots, ml.slot)
}

// newSlot returns a master slot that no master with watches has.
func (t *Table) newSlot() uint32 {
	if n := len(t.mslots); n > 0 {
		s := t.mslots[n-1]
		t.mslots = t.mslots[:n-1]
		return s
	}
	return uint32(len(t.mwatches))
}

func (t *Table) workerJoin(e *WorkerJoin) error {
	switch {
	case e.Name == "":
		return fmt.Errorf("%w: worker %d joins without a name", ErrInvalid, e.Worker)
	case e.Slots < 0 || e.Prefetch < 0 || e.Slots+e.Prefetch < 1:
		return fmt.Errorf("%w: worker %q: slots %d and prefetch %d leave no window", ErrInvalid, e.Name, e.Slots, e.Prefetch)
	case e.GPUs < 0 || e.GPUs > MaxGPUs:
		return fmt.Errorf("%w: worker %q: %d GPUs (0 to %d)", ErrInvalid, e.Name, e.GPUs, MaxGPUs)
	case e.Credit < 0:
		return fmt.Errorf("%w: worker %q: credit %d", ErrInvalid, e.Name, e.Credit)
	}
	if _, ok := t.workers[e.Worker]; ok {
		return fmt.Errorf("%w: worker id %d has joined already", ErrDuplicateWorker, e.Worker)
	}
	name := t.intern(e.Name)
	if _, ok := t.liveNames[name]; ok {
		return fmt.Errorf("%w: a worker named %q is connected", ErrDuplicateWorker, e.Name)
	}
	w := &worker{id: e.Worker, name: name, slots: e.Slots, window: e.Slots + e.Prefetch, gpus: e.GPUs}
	if most := t.cfg.MaxWorkerWindow; most > 0 && w.window > most {
		w.window, w.slots = most, min(w.slots, most)
	}
	w.credit = min(e.Credit, w.window)
	t.workers[e.Worker] = w
	t.liveNames[name] = e.Worker
	t.addReady(w)
	return nil
}

func (t *Table) workerCredit(e WorkerCredit) error {
	w, ok := t.workers[e.Worker]
	if !ok {
		return fmt.Errorf("%w: credit from worker %d", ErrUnknownWorker, e.Worker)
	}
	if e.N < 1 {
		return fmt.Errorf("%w: worker %q grants credit %d", ErrInvalid, t.names[w.name], e.N)
	}
	w.credit = min(w.credit+e.N, w.window)
	t.addReady(w)
	return nil
}

func (t *Table) addReady(w *worker) {
	if !w.inReady && w.canTake() {
		w.inReady = true
		t.ready = append(t.ready, w)
		t.mayDispatch = true
	}
}

func (t *Table) removeReady(i int) {
	t.ready[i].inReady = false
	copy(t.ready[i:], t.ready[i+1:])
	t.ready[len(t.ready)-1] = nil
	t.ready = t.ready[:len(t.ready)-1]
}

func (t *Table) workerLost(id WorkerID) {
	w, ok := t.workers[id]
	if !ok {
		return
	}
	delete(t.workers, id)
	delete(t.liveNames, w.name)
	if w.inReady {
		i := slices.Index(t.ready, w)
		t.removeReady(i)
		if t.rr > i {
			t.rr--
		}
	}
	t.leases -= len(w.leases)
	// A worker runs its leases in the order given, Slots at a time: only
	// its first Slots leases can have been running when it was lost. The
	// others were waiting in its queue (prefetched) and go back without a
	// loss: MaxLost fails a workunit that kills its workers, never one
	// that only waited on workers that died.
	running := w.slots
	if running <= 0 {
		running = w.window
	}
	// A lease that waits for its children gave its slot to another.
	running += w.waiting
	// Back to the front in the order given: the first given ends first.
	for i := len(w.leases) - 1; i >= 0; i-- {
		l := w.leases[i]
		switch {
		case l.expired:
		case i < running:
			t.lose(l.idx, w.name)
		default:
			t.putBack(l.idx, w.name)
		}
	}
	w.leases = nil
}

// putBack puts running record idx back at the front of the queue, taken
// from the worker named name, without counting a loss.
func (t *Table) putBack(idx uint32, name uint32) {
	r := t.recs.at(idx)
	r.worker = 0
	t.markDirty(idx)
	t.setStatus(idx, workunit.StatusWaiting)
	t.enqueueFront(idx)
	losses := 0
	if r.ext != nil {
		losses = len(r.ext.lost)
	}
	t.out.Requeued = append(t.out.Requeued, Requeue{Key: r.key, LostFrom: t.names[name], Losses: losses})
}

// lose takes a delivery of running record idx back from the worker named
// by name: the record goes to the front of the queue, or fails once it has
// been lost MaxLost times.
func (t *Table) lose(idx uint32, name uint32) {
	r := t.recs.at(idx)
	if r.ext == nil {
		r.ext = &extra{}
	}
	r.ext.lost = append(r.ext.lost, name)
	r.worker = 0
	t.markDirty(idx)
	if len(r.ext.lost) >= t.cfg.MaxLost {
		was := dataBytes(r)
		names := make([]string, len(r.ext.lost))
		for i, n := range r.ext.lost {
			names[i] = t.names[n]
		}
		r.ext.err = &workunit.Error{
			Kind:     workunit.WorkersLost,
			Name:     "WorkersLostError",
			Message:  fmt.Sprintf("lost by %d workers: %s", len(names), strings.Join(names, ", ")),
			Key:      r.key,
			Attempts: slices.Clone(r.ext.attempts),
		}
		r.data = nil
		t.dataBytes += dataBytes(r) - was
		t.setStatus(idx, workunit.StatusError)
		t.notify(idx, nil, 0)
		return
	}
	t.setStatus(idx, workunit.StatusWaiting)
	t.enqueueFront(idx)
	t.out.Requeued = append(t.out.Requeued, Requeue{Key: r.key, LostFrom: t.names[name], Losses: len(r.ext.lost)})
}

func (t *Table) discard(w WorkerID, key workunit.Key, tok Token, reason string) error {
	t.discarded++
	t.out.Discarded = append(t.out.Discarded, Discard{Worker: w, Key: key, Token: tok, Reason: reason})
	return fmt.Errorf("%w: worker %d, workunit %s, token %d: %s", ErrStale, w, key.Short(), tok, reason)
}

// finish handles a Complete (err == nil) or a Fail.
func (t *Table) finish(id WorkerID, key workunit.Key, tok Token, result []byte, err *workunit.Error, console workunit.Console, elapsed time.Duration) error {
	w, ok := t.workers[id]
	if !ok {
		return t.discard(id, key, tok, "unknown worker")
	}
	li := -1
	for i := range w.leases {
		if w.leases[i].token == tok {
			li = i
			break
		}
	}
	if li < 0 {
		return t.discard(id, key, tok, "no such lease")
	}
	l := w.leases[li]
	r := t.recs.at(l.idx)
	// An expired lease's record may have been forgotten since, and its
	// index reused: the lease ends whatever the key.
	if r.key != key && !l.expired {
		return t.discard(id, key, tok, "lease is for another workunit")
	}
	if li < len(w.leases)/2 {
		// The usual answer, to one of the oldest (those running): the
		// leases before it move up one, not the queue behind it.
		copy(w.leases[1:li+1], w.leases[:li])
		w.leases = w.leases[1:]
	} else {
		w.leases = slices.Delete(w.leases, li, li+1)
	}
	t.leases--
	if l.waiting {
		w.waiting--
	}
	w.gpusUsed -= int(l.gpus)
	t.mayDispatch = true // GPUs freed
	t.addReady(w)
	t.progress(w, li)
	if l.canceled {
		return t.discard(id, key, tok, "workunit canceled")
	}
	if l.expired {
		return t.discard(id, key, tok, "lease expired")
	}
	r.worker = w.name
	t.ran(r.owner, elapsed)
	if err == nil {
		was := dataBytes(r)
		r.data = result
		if r.ext != nil {
			r.ext.err = nil
		}
		t.dataBytes += dataBytes(r) - was
		t.setStatus(l.idx, workunit.StatusDone)
	} else {
		e := *err
		e.Worker = t.names[w.name]
		e.Key = key
		e.Attempts = nil
		if r.ext == nil {
			r.ext = &extra{}
		}
		if r.ext.retries > 0 {
			attempts := append(slices.Clip(r.ext.attempts), workunit.AttemptOf(&e))
			if t.options(r).Retryable(&e, len(attempts)) {
				t.retry(l.idx, attempts)
				return nil
			}
			e.Attempts = attempts
		}
		was := dataBytes(r)
		r.ext.err = &e
		r.data = nil
		t.dataBytes += dataBytes(r) - was
		t.setStatus(l.idx, workunit.StatusError)
	}
	t.markDirty(l.idx)
	t.notify(l.idx, console, elapsed)
	return nil
}

// retry puts running record idx, whose attempt just failed, back at the
// front of the queue to run again, with attempts, the failed ones so far.
// A retry is no loss: its worker answered.
func (t *Table) retry(idx uint32, attempts []workunit.Attempt) {
	r := t.recs.at(idx)
	r.ext.attempts = attempts
	r.worker = 0
	t.setStatus(idx, workunit.StatusWaiting)
	t.enqueueFront(idx)
	t.markDirty(idx)
	t.out.Retried = append(t.out.Retried, Retry{Key: r.key, Attempt: attempts[len(attempts)-1], Attempts: len(attempts), Retries: r.ext.retries})
}

// progress restarts the lease clocks of the leases that worker w holds
// queued behind an answer: the lease it answered was at index li of its
// leases (now gone from them). A worker runs its leases in the order
// given, Slots at a time, so those that were past its first Slots could
// not have started: each gets its whole length again from now, as it
// moves up w's queue. So a lease expires after its length without
// progress: without an answer from its worker to it or to one given
// before it. A worker that answers nothing loses each lease its length
// after it was given; one that keeps answering its oldest leases keeps
// the rest.
//
// It costs no walk of the queue: the worker keeps the time and the first
// token restarted (deadlineOf), and only when a later progress starts at a
// later lease are the leases between the two given the earlier one's
// time (usually one: the lease that began to run).
func (t *Table) progress(w *worker, li int) {
	running := w.slots
	if running <= 0 {
		running = w.window
	}
	// A lease that waits for its children gave its slot to another.
	running += w.waiting
	start := max(li, running-1)
	if start >= len(w.leases) {
		return
	}
	from := w.leases[start].token
	if w.refreshed && from > w.refreshFrom {
		// The leases from refreshFrom up to start keep the last progress.
		for j := start - 1; j >= 0 && w.leases[j].token >= w.refreshFrom; j-- {
			if l := &w.leases[j]; refreshable(l) {
				l.deadline = max(l.deadline, w.refreshAt+l.dur)
			}
		}
	}
	w.refreshed, w.refreshFrom, w.refreshAt = true, from, t.now
}

// stepReturn ends the current leases e lists and puts their workunits back
// at the front of the queue, without counting a loss.
func (t *Table) stepReturn(e *Return) error {
	var first error
	stale := func(lr LeaseRef, reason string) {
		if err := t.discard(e.Worker, lr.Key, lr.Token, reason); first == nil {
			first = err
		}
	}
	w, ok := t.workers[e.Worker]
	if !ok {
		for _, lr := range e.Leases {
			stale(lr, "unknown worker")
		}
		return first
	}
	var back []uint32
	for _, lr := range e.Leases {
		li := -1
		for i := range w.leases {
			if w.leases[i].token == lr.Token {
				li = i
				break
			}
		}
		if li < 0 {
			stale(lr, "no such lease")
			continue
		}
		l := w.leases[li]
		if t.recs.at(l.idx).key != lr.Key && !l.expired {
			stale(lr, "lease is for another workunit")
			continue
		}
		w.leases = slices.Delete(w.leases, li, li+1)
		t.leases--
		if l.waiting {
			w.waiting--
		}
		w.gpusUsed -= int(l.gpus)
		t.mayDispatch = true // GPUs freed
		if l.canceled {
			stale(lr, "workunit canceled")
			continue
		}
		if l.expired {
			stale(lr, "lease expired")
			continue
		}
		back = append(back, l.idx)
	}
	// A worker that hands work back is leaving: it gets none of it back,
	// and no more work until it sends credit again.
	w.credit = 0
	if w.inReady {
		i := slices.Index(t.ready, w)
		t.removeReady(i)
		if t.rr > i {
			t.rr--
		}
	}
	// Last listed to the front first, so that the first listed goes first.
	for i := len(back) - 1; i >= 0; i-- {
		idx := back[i]
		r := t.recs.at(idx)
		r.worker = 0
		t.setStatus(idx, workunit.StatusWaiting)
		t.enqueueFront(idx)
		t.markDirty(idx)
	}
	return first
}

func (t *Table) tick(now time.Time) {
	n := unixNano(now)
	if n <= t.now {
		return
	}
	if !t.ticked {
		// Leases given before the first tick count from it.
		t.ticked = true
		t.firstTick = n
		for _, w := range t.workers {
			for i := range w.leases {
				if w.leases[i].deadline != 0 {
					w.leases[i].deadline += n
				}
			}
			if w.refreshed {
				w.refreshAt += n
			}
		}
	}
	t.now = n
	type expiry struct {
		token  Token
		idx    uint32
		name   uint32
		worker WorkerID
	}
	var exp []expiry
	for id, w := range t.workers {
		for i := range w.leases {
			l := &w.leases[i]
			if d := w.deadlineOf(l); !l.expired && d != 0 && d <= n {
				l.expired = true
				exp = append(exp, expiry{l.token, l.idx, w.name, id})
			}
		}
	}
	// Newest first to the front, so that the oldest ends first.
	slices.SortFunc(exp, func(a, b expiry) int { return cmpToken(b.token, a.token) })
	for _, x := range exp {
		// The worker is told to stop it: a workunit stuck past its lease
		// must not hold its slot while it runs again, maybe on the same
		// worker. Its answer frees the lease's room in the window.
		t.out.Send = append(t.out.Send, &Revoke{Worker: x.worker, Key: t.recs.at(x.idx).key, Token: x.token})
		t.lose(x.idx, x.name)
	}
	t.expireWatches()
	t.forgetOld()
}

// newRecord returns the index of a new, zero record: one that a forgotten
// record left, or a new one.
func (t *Table) newRecord() uint32 {
	if n := len(t.free); n > 0 {
		idx := t.free[n-1]
		t.free = t.free[:n-1]
		return idx
	}
	return t.recs.add()
}

// forgetOld forgets the records that finished Config.KeepFinished or more
// before now (a record that finished before the first Tick counts from
// it). One whose last write is not yet durable waits for the next Tick.
func (t *Table) forgetOld() {
	keep := int64(t.cfg.KeepFinished)
	if keep <= 0 {
		return
	}
	for t.finHead < len(t.fin) {
		f := t.fin[t.finHead]
		base := f.changed
		if base == 0 {
			base = t.firstTick
		}
		if base+keep > t.now {
			break
		}
		r := t.recs.at(f.idx)
		if r.status.Finished() && r.changed == f.changed {
			if r.flags&(flagPending|flagInflight) != 0 {
				break
			}
			t.forget(f.idx)
		}
		t.fin[t.finHead] = finished{}
		t.finHead++
	}
	// Drop the consumed front once it is half the slice.
	if t.finHead > 1024 && t.finHead*2 >= len(t.fin) {
		t.fin = t.fin[:copy(t.fin, t.fin[t.finHead:])]
		t.finHead = 0
	}
}

// forget removes finished record idx: from the index and the counts, into
// a tombstone for the next Ready, and its index onto the free list.
func (t *Table) forget(idx uint32) {
	r := t.recs.at(idx)
	t.tombs = append(t.tombs, Record{Key: r.key, ID: r.id, Scope: t.names[r.scope]})
	t.index.remove(&r.key, r.scope, &t.recs)
	t.counts[r.status]--
	t.countRec(r, -1)
	t.dataBytes -= dataBytes(r)
	*r = record{}
	t.free = append(t.free, idx)
	t.forgotten++
}

func cmpToken(a, b Token) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dispatch gives waiting workunits to workers with credit, round-robin,
// oldest workunit first.
func (t *Table) dispatch() {
	if !t.mayDispatch {
		return
	}
	t.mayDispatch = false
	misses := 0
	for t.queued > 0 && len(t.ready) > 0 && misses < len(t.ready) {
		if t.rr >= len(t.ready) {
			t.rr = 0
		}
		w := t.ready[t.rr]
		if t.assignPack(w) {
			misses = 0
		} else {
			misses++
		}
		if w.canTake() {
			t.rr++
		} else {
			t.removeReady(t.rr)
		}
	}
}

// assignPack leases w the oldest waiting workunit it can run, and more
// after it while they are short (pack) and w can take them. It reports
// whether it leased any.
func (t *Table) assignPack(w *worker) bool {
	owner, ok := t.assign(w)
	if !ok {
		return false
	}
	for n := t.pack(owner); n > 1 && t.queued > 0 && w.canTake(); n-- {
		next, ok := t.assign(w)
		if !ok {
			break
		}
		if next != owner {
			// Another owner's: its own pack from here.
			owner, n = next, t.pack(next)+1
		}
	}
	return true
}

// assign leases the oldest waiting workunit that w can run to w, and
// returns its owner.
func (t *Table) assign(w *worker) (owner uint32, ok bool) {
	free := uint8(w.gpus - w.gpusUsed)
	var best *ring
	var bestSeq int64
	for i := range t.queues {
		gq := &t.queues[i]
		if gq.gpus > free {
			break
		}
		if gq.q.len() == 0 {
			continue
		}
		if s := t.recs.at(gq.q.front()).seq; best == nil || s < bestSeq {
			best, bestSeq = &gq.q, s
		}
	}
	if best == nil {
		return 0, false
	}
	if t.retriedOn(w, best.front()) {
		return 0, false // another worker takes it (see retriedOn)
	}
	idx := best.popFront()
	t.queued--
	r := t.recs.at(idx)
	tok := t.nextToken
	t.nextToken++
	var dur, deadline int64
	switch {
	case r.timeout > 0:
		dur = int64(time.Duration(r.timeout)*time.Millisecond + t.cfg.LeaseGrace)
	case t.cfg.LeaseTimeout > 0:
		dur = int64(t.cfg.LeaseTimeout)
	}
	if dur > 0 {
		deadline = t.now + dur
	}
	w.leases = append(w.leases, lease{token: tok, idx: idx, gpus: r.gpus, deadline: deadline, dur: dur})
	t.leases++
	w.credit--
	w.gpusUsed += int(r.gpus)
	r.worker = w.name
	r.deliveries++
	r.assigned = t.now
	t.setStatus(idx, workunit.StatusRunning)
	// Running is not written: a restart brings running workunits back as
	// waiting anyway, so the write would buy nothing but disk traffic (a
	// third of it). The record's next write (its result, or its loss)
	// carries the delivery count.
	t.out.assigns = grow(t.out.assigns)
	m := &t.out.assigns[len(t.out.assigns)-1]
	t.out.Send = append(t.out.Send, m)
	*m = Assign{
		Worker:   w.id,
		Key:      r.key,
		Token:    tok,
		Spec:     r.data,
		Options:  t.options(r),
		Owner:    t.names[r.owner],
		Delivery: int(r.deliveries),
	}
	return r.owner, true
}

// retriedOn reports whether record idx is a retry whose last attempt
// failed on worker w while another worker that can run it has a free
// place: the retry goes to that worker, as the same worker may fail the
// same way again (its memory, its devices, what its realm holds). A retry
// goes back to the worker it failed on only when no other one can take it
// now.
func (t *Table) retriedOn(w *worker, idx uint32) bool {
	r := t.recs.at(idx)
	if r.ext == nil || len(r.ext.attempts) == 0 || r.ext.attempts[len(r.ext.attempts)-1].Worker != t.names[w.name] {
		return false
	}
	for _, o := range t.ready {
		if o != w && o.canTake() && o.gpus-o.gpusUsed >= int(r.gpus) {
			return true
		}
	}
	return false
}

// grow returns s with one more (zero) element. When s is full it moves to
// a new array without copying: messages already listed keep pointing into
// the old one, which stays valid.
func grow[T any](s []T) []T {
	if len(s) == cap(s) {
		s = make([]T, 0, max(64, 2*cap(s)))
	}
	return s[:len(s)+1]
}

func (t *Table) options(r *record) workunit.Options {
	o := workunit.Options{NoCache: r.flags&flagNoCache != 0, GPUs: int(r.gpus), Timeout: time.Duration(r.timeout) * time.Millisecond}
	if r.ext != nil {
		o.Retries, o.RetryOn = r.ext.retries, r.ext.retryOn
	}
	return o
}

// snapshot returns record idx as a Record.
func (t *Table) snapshot(idx uint32) Record {
	r := t.recs.at(idx)
	rec := Record{
		Key:        r.key,
		ID:         r.id,
		Scope:      t.names[r.scope],
		Seq:        r.seq,
		Options:    t.options(r),
		Owner:      t.names[r.owner],
		Status:     r.status,
		Worker:     t.names[r.worker],
		LastChange: fromUnixNano(r.changed),
		Submitted:  fromUnixNano(r.queued),
		Assigned:   fromUnixNano(r.assigned),
		Deliveries: int(r.deliveries),
	}
	switch r.status {
	case workunit.StatusWaiting, workunit.StatusRunning:
		rec.Spec = r.data
	case workunit.StatusDone:
		rec.Result = r.data
		rec.Stored = r.flags&flagStored != 0
	case workunit.StatusError:
		rec.Err = r.ext.err
	}
	if r.ext != nil && len(r.ext.lost) > 0 {
		rec.LostFrom = make([]string, len(r.ext.lost))
		for i, n := range r.ext.lost {
			rec.LostFrom[i] = t.names[n]
		}
	}
	if r.ext != nil && isOpen(r.status) {
		rec.Attempts = r.ext.attempts
	}
	return rec
}

// Lookup returns the record of key as it stands, and whether the table
// has it, in any memo scope: the scope "" first (see findAny). For
// inspection (admin pages, tests); masters ask with GetInfo, in their
// scope.
func (t *Table) Lookup(key workunit.Key) (Record, bool) {
	idx, ok := t.findAny(&key)
	if !ok {
		return Record{}, false
	}
	return t.snapshot(idx), true
}

// LookupIn is Lookup in the memo scope scope (see Submit.Scope) alone.
func (t *Table) LookupIn(scope string, key workunit.Key) (Record, bool) {
	idx, ok := t.find(scope, &key)
	if !ok {
		return Record{}, false
	}
	return t.snapshot(idx), true
}

// Stats returns counts of what the table holds.
func (t *Table) Stats() Stats {
	return Stats{
		Waiting:   t.counts[workunit.StatusWaiting],
		Running:   t.counts[workunit.StatusRunning],
		Done:      t.counts[workunit.StatusDone],
		Error:     t.counts[workunit.StatusError],
		Workers:   len(t.workers),
		Leases:    t.leases,
		Watches:   t.nwatches,
		Discarded: t.discarded,
		Forgotten: t.forgotten,
		Bytes:     t.heldBytes(),
	}
}

// Worker returns what the table knows of joined worker id, and whether it
// has joined (and not been lost). For status pages.
func (t *Table) Worker(id WorkerID) (WorkerInfo, bool) {
	w, ok := t.workers[id]
	if !ok {
		return WorkerInfo{}, false
	}
	return WorkerInfo{
		Name:     t.names[w.name],
		Window:   w.window,
		Credit:   w.credit,
		Leases:   len(w.leases),
		GPUs:     w.gpus,
		GPUsUsed: w.gpusUsed,
		Waiting:  w.waiting,
	}, true
}

// HasReady reports whether Ready would return something to do. It is false
// while a Ready is outstanding (returned and not yet Advanced).
func (t *Table) HasReady() bool {
	return t.outstanding == 0 && (len(t.pending) > 0 || len(t.tombs) > 0 || !t.out.Empty())
}

// Ready returns what the shell must do now (see Ready) and hands it over:
// the next Ready holds only what comes after. Each notification in it of a
// record's finished outcome says what the record is now, which the Ready
// writes, or wrote before: one whose workunit was made waiting again since
// it finished (a resubmission, before its result was written) is a watch
// again instead, answered when it finishes. The shell must call Advance
// (or PersistFailed) with it before it calls Ready again; until then Ready
// returns an empty Ready. An empty Ready needs no Advance.
func (t *Table) Ready() Ready {
	if t.outstanding != 0 || !t.HasReady() {
		return Ready{}
	}
	t.reconcile()
	if !t.HasReady() {
		return Ready{} // only notifications, all watches again
	}
	rd := t.out
	rd.Persist = append(t.spare.Persist[:0], t.tombs...)
	rd.tombs = len(t.tombs)
	clear(t.tombs)
	t.tombs = t.tombs[:0]
	rd.inflight = t.spare.inflight[:0]
	for _, idx := range t.pending {
		r := t.recs.at(idx)
		r.flags = r.flags&^flagPending | flagInflight
		rd.Persist = append(rd.Persist, t.snapshot(idx))
		rd.inflight = append(rd.inflight, idx)
	}
	t.pending = t.pending[:0]
	t.out = Ready{Send: t.spare.Send[:0], Notify: t.spare.Notify[:0], Discarded: t.spare.Discarded[:0], Requeued: t.spare.Requeued[:0],
		Retried: t.spare.Retried[:0], acks: t.spare.acks[:0], assigns: t.spare.assigns[:0], infos: t.spare.infos[:0]}
	t.spare = Ready{}
	t.gen++
	t.outstanding = t.gen
	rd.gen = t.gen
	return rd
}

// Advance tells the table that the shell has done all that rd asked, in
// order: its records are durable, its messages sent, its notifications
// delivered. rd's slices are reused afterwards. An rd that is not the
// outstanding Ready (advanced already, or empty) is ignored.
func (t *Table) Advance(rd Ready) {
	if rd.gen == 0 || rd.gen != t.outstanding {
		return
	}
	for _, idx := range rd.inflight {
		r := t.recs.at(idx)
		r.flags &^= flagInflight
		// Its result is durable now: the store keeps it, unless the record
		// changed since (pending: its next write decides).
		if t.cfg.ResultsInStore && r.status == workunit.StatusDone && r.flags&flagPending == 0 {
			t.dataBytes -= int64(len(r.data))
			r.data = nil
			r.flags |= flagStored
		}
	}
	t.recycle(rd)
}

// PersistFailed tells the table that rd.Persist could not be written. Call
// it instead of Advance, after sending rd's messages with each Ack and
// CancelReply replaced by a refusal (they must never go out for a record
// that is not durable), and without delivering its notifications: a
// Finished must never report a result that is not durable either. The
// table writes the records again in the next Ready, and every Ack it makes
// from now on waits for a Ready that writes them. rd's notifications come
// again at the front of the next Ready's Notify, behind that write, as the
// records stand then (see Ready).
func (t *Table) PersistFailed(rd Ready) {
	if rd.gen == 0 || rd.gen != t.outstanding {
		return
	}
	for _, idx := range rd.inflight {
		t.recs.at(idx).flags &^= flagInflight
		t.markDirty(idx)
	}
	// Its tombstones go first again, before any made since.
	t.tombs = append(slices.Clone(rd.Persist[:rd.tombs]), t.tombs...)
	t.holdBack(rd.Notify)
	t.recycle(rd)
}

// holdBack puts the notifications of a Ready whose write failed back in
// front of those made since (see PersistFailed), but for those of masters
// lost since.
func (t *Table) holdBack(ns []Notification) {
	if len(ns) == 0 {
		return
	}
	held := make([]Notification, 0, len(ns)+len(t.out.Notify))
	for _, n := range ns {
		if _, gone := t.lostDuring[n.Master]; !gone {
			held = append(held, n)
		}
	}
	t.out.Notify = append(held, t.out.Notify...)
}

// reconcile makes each notification of a record's finished outcome in
// t.out.Notify say what the record is now, before Ready takes them with
// the record's write: one whose workunit was made waiting again since (a
// resubmission) becomes a watch again, answered when it finishes; one
// whose workunit finished again since reports that run; one whose
// workunit was forgotten since reports the key unknown. So a Finished
// never reports a result that the store will not have.
func (t *Table) reconcile() {
	ns := t.out.Notify
	kept := ns[:0]
	for _, n := range ns {
		if n.rec == 0 {
			kept = append(kept, n) // not a record's outcome (unknown key, a master's time limit)
			continue
		}
		idx := n.rec - 1
		r := t.recs.at(idx)
		if r.key != n.Key || r.scope != n.scope {
			i, ok := t.index.get(&n.Key, n.scope, &t.recs)
			if !ok {
				kept = append(kept, Notification{Master: n.Master, Req: n.Req, Outcome: workunit.Outcome{Key: n.Key}})
				continue
			}
			idx, r = i, t.recs.at(i)
		} else if sameRun(r, &n.Outcome) {
			kept = append(kept, n)
			continue
		}
		if r.status.Finished() {
			kept = append(kept, Notification{Master: n.Master, Req: n.Req, Outcome: t.outcome(r), Stored: storedID(r), rec: idx + 1, scope: r.scope})
			continue
		}
		// Waiting or running again: watched again, unless the master
		// watches it already (with a later req). Past
		// Config.MaxWatchesPerMaster too: it was watching it, and there is
		// nothing true to tell it instead.
		if _, dup := t.watchOf(n.Master, idx); !dup {
			t.watchFor(n.Master, n.Req, idx, heldLimit{})
		}
	}
	clear(ns[len(kept):])
	t.out.Notify = kept
}

// dropNotifications drops the notifications to master m not yet taken by
// Ready: m is lost, and nothing made for it is to become a watch again.
func (t *Table) dropNotifications(m MasterID) {
	ns := t.out.Notify
	kept := ns[:0]
	for _, n := range ns {
		if n.Master != m {
			kept = append(kept, n)
		}
	}
	clear(ns[len(kept):])
	t.out.Notify = kept
}

// sameRun reports whether o, a finished outcome that the table reported of
// r, is still r's: the same status, time and result or error.
func sameRun(r *record, o *workunit.Outcome) bool {
	if r.status != o.Status || r.changed != unixNano(o.LastChange) {
		return false
	}
	switch r.status {
	case workunit.StatusDone:
		return len(r.data) == len(o.Result) && (len(r.data) == 0 || &r.data[0] == &o.Result[0])
	case workunit.StatusError:
		return r.ext != nil && r.ext.err == o.Err
	}
	return false
}

func (t *Table) recycle(rd Ready) {
	clear(rd.Persist)
	clear(rd.Send)
	clear(rd.Notify)
	clear(rd.Discarded)
	clear(rd.Requeued)
	clear(rd.Retried)
	clear(rd.acks)
	clear(rd.assigns)
	clear(rd.infos)
	t.spare = Ready{
		Persist:   rd.Persist[:0],
		Send:      rd.Send[:0],
		Notify:    rd.Notify[:0],
		Discarded: rd.Discarded[:0],
		Requeued:  rd.Requeued[:0],
		Retried:   rd.Retried[:0],
		inflight:  rd.inflight[:0],
		acks:      rd.acks[:0],
		assigns:   rd.assigns[:0],
		infos:     rd.infos[:0],
	}
	t.outstanding = 0
	clear(t.lostDuring)
}

// Restore loads records, as a store gives them back after a restart, into
// an empty table. Call it once, before the first Step. Finished records
// come back as they were (Done with their result, Error with their error);
// Waiting and Running ones come back Waiting, in Seq order, with their
// Deliveries and LostFrom kept (a Running one's lease is gone). Restored
// records are durable: they are not persisted again until they change.
//
// Restore checks every record first and loads none if one is malformed.
func (t *Table) Restore(recs []Record) error {
	rs, err := t.BeginRestore()
	if err != nil {
		return err
	}
	if err := rs.Add(recs); err != nil {
		return err
	}
	rs.End()
	return nil
}

// A Restorer restores a table from records given a chunk at a time, as
// Restore does from all of them at once: a store that reads a million
// records need not hold them all as Records (352 bytes each, most of a
// restart's memory and a tenth of its time) before the table takes them.
type Restorer struct {
	t       *Table
	waiting []uint32
	done    bool
}

// BeginRestore starts a restore of t, which must be empty (ErrNotEmpty):
// Add each chunk of records, then End, before the first Step.
func (t *Table) BeginRestore() (*Restorer, error) {
	if t.recs.n != 0 || len(t.workers) != 0 || t.queued != 0 {
		return nil, ErrNotEmpty
	}
	return &Restorer{t: t}, nil
}

// Add loads recs, which the table does not keep (it keeps what their
// slices and pointers refer to: a caller may reuse the slice). It checks
// every record of the chunk first; a malformed one, or a key loaded
// already, ends the restore with the table empty again, as if no record
// had been loaded.
func (rs *Restorer) Add(recs []Record) error {
	t := rs.t
	if rs.done {
		return fmt.Errorf("%w: Add after the restore ended", ErrInvalid)
	}
	for i := range recs {
		if err := checkRecord(&recs[i]); err != nil {
			rs.fail()
			return err
		}
	}
	for i := range recs {
		rec := &recs[i]
		scope := t.internScope(rec.Scope)
		_, dup, slot, tag := t.index.find(&rec.Key, scope, &t.recs)
		if dup {
			rs.fail()
			return fmt.Errorf("%w: record %s twice", ErrInvalid, rec.Key.Short())
		}
		idx := t.newRecord()
		t.index.insert(slot, tag, idx)
		r := t.recs.at(idx)
		r.key = rec.Key
		r.scope = scope
		r.id = rec.ID
		t.nextID = max(t.nextID, rec.ID+1)
		r.seq = rec.Seq
		r.changed = unixNano(rec.LastChange)
		r.owner = t.intern(rec.Owner)
		r.timeout = uint32(rec.Options.Timeout / time.Millisecond)
		r.gpus = uint8(rec.Options.GPUs)
		if rec.Options.NoCache {
			r.flags |= flagNoCache
		}
		r.deliveries = uint32(min(max(rec.Deliveries, 0), 1<<32-1))
		if len(rec.LostFrom) > 0 {
			r.ext = &extra{lost: make([]uint32, len(rec.LostFrom))}
			for j, n := range rec.LostFrom {
				r.ext.lost[j] = t.intern(n)
			}
		}
		if rec.Options.Retries > 0 {
			if r.ext == nil {
				r.ext = &extra{}
			}
			r.ext.retries, r.ext.retryOn = rec.Options.Retries, rec.Options.RetryOn
			if isOpen(rec.Status) {
				r.ext.attempts = rec.Attempts
			}
		}
		switch rec.Status {
		case workunit.StatusWaiting, workunit.StatusRunning:
			r.status = workunit.StatusWaiting
			r.data = rec.Spec
			rs.waiting = append(rs.waiting, idx)
		case workunit.StatusDone:
			r.status = workunit.StatusDone
			r.data = rec.Result
			if rec.Stored || t.cfg.ResultsInStore {
				r.data = nil // the store has it
				r.flags |= flagStored
			}
			r.worker = t.intern(rec.Worker)
		case workunit.StatusError:
			r.status = workunit.StatusError
			r.worker = t.intern(rec.Worker)
			if r.ext == nil {
				r.ext = &extra{}
			}
			r.ext.err = rec.Err
			if rec.Err != nil && rec.Err.Kind == workunit.Canceled && rec.Err.Worker == "" {
				r.flags |= flagCanceled
			}
		}
		t.counts[r.status]++
		t.countRec(r, 1)
		t.dataBytes += dataBytes(r)
		r.queued, r.assigned = unixNano(rec.Submitted), unixNano(rec.Assigned)
		if isOpen(r.status) {
			t.addOpen(r.owner, 1)
		}
		t.backSeq = max(t.backSeq, r.seq)
		t.frontSq = min(t.frontSq, r.seq)
	}
	return nil
}

// fail ends a restore that found a bad record: the table is empty again.
func (rs *Restorer) fail() {
	rs.t.clearRestore()
	rs.waiting, rs.done = nil, true
}

// End ends the restore: the waiting records are queued, in Seq order.
// After a failed Add it does nothing.
func (rs *Restorer) End() {
	if rs.done {
		return
	}
	rs.done = true
	t, waiting := rs.t, rs.waiting
	rs.waiting = nil
	slices.SortStableFunc(waiting, func(a, b uint32) int {
		sa, sb := t.recs.at(a).seq, t.recs.at(b).seq
		switch {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	for _, idx := range waiting {
		t.queueFor(t.recs.at(idx).gpus).pushBack(idx)
		t.queued++
	}
	if t.cfg.KeepFinished > 0 {
		for idx := range t.recs.n {
			if r := t.recs.at(idx); r.status.Finished() {
				t.fin = append(t.fin, finished{changed: r.changed, idx: idx})
			}
		}
		// A record without a time counts from the first Tick: after every
		// other, so that it holds up none of them.
		at := func(f finished) int64 {
			if f.changed == 0 {
				return math.MaxInt64
			}
			return f.changed
		}
		slices.SortStableFunc(t.fin, func(a, b finished) int { return cmp.Compare(at(a), at(b)) })
	}
	t.mayDispatch = true
}

// clearRestore undoes a Restore that failed halfway.
func (t *Table) clearRestore() {
	fresh := New(t.cfg)
	*t = *fresh
}

func checkRecord(rec *Record) error {
	if rec.Key == (workunit.Key{}) {
		return fmt.Errorf("%w: record with a zero key", ErrInvalid)
	}
	if rec.ID == 0 {
		return fmt.Errorf("%w: record %s has no ID", ErrInvalid, rec.Key.Short())
	}
	if err := validOptions(rec.Options, "record", rec.Key); err != nil {
		return err
	}
	switch rec.Status {
	case workunit.StatusWaiting, workunit.StatusRunning:
		if len(rec.Spec) == 0 {
			return fmt.Errorf("%w: record %s is %s without a spec", ErrInvalid, rec.Key.Short(), rec.Status)
		}
	case workunit.StatusDone:
		if rec.Stored && rec.Result != nil {
			return fmt.Errorf("%w: record %s is stored (Stored) and has a Result too", ErrInvalid, rec.Key.Short())
		}
	case workunit.StatusError:
		if rec.Err == nil {
			return fmt.Errorf("%w: record %s is error without an error", ErrInvalid, rec.Key.Short())
		}
	default:
		return fmt.Errorf("%w: record %s has status %s", ErrInvalid, rec.Key.Short(), rec.Status)
	}
	return nil
}

// parentOf checks that the worker of e.Parent holds the parent's lease,
// and makes e a submission of the parent's submitter: its Owner, Quota
// and Scope become the parent record's. It returns the parent record.
func (t *Table) parentOf(e *Submit) (recRef, error) {
	p := e.Parent
	refuse := func(why string) (recRef, error) {
		return recRef{}, fmt.Errorf("%w: child %s of %s: %s; a workunit submits children only while it runs, "+
			"from the worker that holds its lease", ErrNotHeld, e.Key.Short(), p.Key.Short(), why)
	}
	w, ok := t.workers[p.Worker]
	if !ok {
		return refuse("the connection holds no leases (it is not a joined worker)")
	}
	for i := range w.leases {
		l := &w.leases[i]
		if l.token != p.Token {
			continue
		}
		r := t.recs.at(l.idx)
		switch {
		case r.key != p.Key:
			return refuse("the lease is for another workunit")
		case l.canceled:
			return refuse("the parent was canceled")
		case l.expired:
			return refuse("the parent's lease expired")
		}
		e.Owner = t.names[r.owner]
		e.Quota = ""
		if q := t.quotaOf(r.owner); q != r.owner {
			e.Quota = t.names[q]
		}
		e.Scope = t.names[r.scope]
		return recRef{idx: l.idx, id: r.id}, nil
	}
	return refuse("the worker holds no such lease")
}

// link records child as a child of parent's current run.
func (t *Table) link(parent recRef, child uint32, via MasterID) {
	if parent.idx == child {
		return // a workunit that submits itself: it waits for itself, nothing to cancel
	}
	pr, cr := t.recs.at(parent.idx), t.recs.at(child)
	c := recRef{idx: child, id: cr.id}
	if pr.ext == nil {
		pr.ext = &extra{}
	}
	if !slices.Contains(pr.ext.children, c) {
		pr.ext.children = append(pr.ext.children, c)
	}
	if cr.ext == nil {
		cr.ext = &extra{}
	}
	if !slices.Contains(cr.ext.parents, parent) {
		cr.ext.parents = append(cr.ext.parents, parent)
	}
	if !slices.Contains(cr.ext.via, via) {
		cr.ext.via = append(cr.ext.via, via)
	}
}

// cancelChildren cancels the open children of canceled record idx that
// nothing else waits for: no master's watch but their parents' workers',
// no other parent that is still open.
func (t *Table) cancelChildren(idx uint32, unqueue map[uint32]bool) {
	r := t.recs.at(idx)
	if r.ext == nil || len(r.ext.children) == 0 {
		return
	}
	children := r.ext.children
	r.ext.children = nil
	for _, c := range children {
		if c.idx >= t.recs.n {
			continue
		}
		cr := t.recs.at(c.idx)
		if cr.id != c.id || !isOpen(cr.status) || t.waitedFor(c.idx, idx) {
			continue
		}
		t.cascaded = append(t.cascaded, c.idx)
		t.stop(c.idx, &workunit.Error{Kind: workunit.Canceled, Name: "AbortError", Key: cr.key,
			Message: "canceled: its parent workunit " + r.key.Short() + " was canceled"}, unqueue)
	}
}

// waitedFor reports whether something other than canceled parent p waits
// for child record idx: another parent still open, or the watch of a
// master that is not a parent's worker.
func (t *Table) waitedFor(idx, p uint32) bool {
	cr := t.recs.at(idx)
	for _, pr := range cr.ext.parents {
		if pr.idx == p || pr.idx >= t.recs.n {
			continue
		}
		if o := t.recs.at(pr.idx); o.id == pr.id && isOpen(o.status) {
			return true
		}
	}
	for nd := cr.watch; nd != 0; nd = t.wnodes[nd-1].next {
		if !slices.Contains(cr.ext.via, t.wnodes[nd-1].master) {
			return true
		}
	}
	return false
}

// stepWait marks a lease as waiting for its children, or running again.
func (t *Table) stepWait(e Wait) {
	w, ok := t.workers[e.Worker]
	if !ok {
		return
	}
	for i := range w.leases {
		l := &w.leases[i]
		if l.token != e.Token || l.waiting == e.Waiting || t.recs.at(l.idx).key != e.Key {
			continue
		}
		l.waiting = e.Waiting
		if e.Waiting {
			w.waiting++
			l.deadline = 0
			t.addReady(w)
		} else {
			w.waiting--
			if l.dur > 0 && !l.expired {
				l.deadline = t.now + l.dur
			}
		}
		return
	}
}
