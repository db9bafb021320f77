package tracker

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/riot-go/riot/tracker/store"
	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// After a failed write of the store, the loop waits before it writes
// again: minRetry at first, doubling up to maxRetry while writes fail.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 5 * time.Second
)

// maxBatch bounds how many inbounds the loop takes in one round before it
// makes a Ready: enough to batch a busy moment, few enough to keep the
// round trip short.
const maxBatch = 64

// loop owns the workunit table. One goroutine (run) does everything here:
// it steps the table with what the readers hand it, has each Ready
// persisted (by the persister goroutine, so that it keeps stepping events
// during a commit), then sends its messages and advances the table.
type loop struct {
	s   *Server
	tab *table.Table
	// recBlobs are the blobs each record of the table names, by ID, when
	// the tracker frees blobs (trackRecords).
	recBlobs map[uint64]recNamed

	conns   map[uint64]*conn // accepted connections by id
	names   map[string]*conn // by name
	masters int              // accepted connections of role master
	touched []*conn          // connections with messages pushed this round
	waiters []*waiter        // WaitStats callers
	leases  []table.LeaseRef // reused by Return
	printTo []table.MasterID // reused by print
	rate    rateMeter        // finished workunits per second
	act     *activity        // jobs, recent runs, failures: for the status pages
	// cancels are the dashboard's cancellations waiting for the store,
	// by request (table.Cancel's Req from apiMaster).
	cancels    map[uint64]chan cancelResult
	nextCancel uint64
	// jobsDone reports the write of the jobs (saveJobs), one at a time:
	// savingJobs while one is under way.
	jobsDone   chan jobsWrite
	savingJobs bool

	// Persistence: at most one Ready is outstanding, with the persister;
	// its assignments went out as it was handed over (sendAssigns).
	persistReq  chan []table.Record
	persistDone chan error
	outstanding bool
	rd          table.Ready
	// held are the assignments that waited for a write that failed (a
	// retry, a lease given again: sentEarly): they go out once the table
	// has written its records again, before the next Ready's messages.
	held []table.Assign
	// After a failed write, the next waits until retryAt, backing off.
	retryAt time.Time
	backoff time.Duration
	// fenced: a write failed with store.ErrFenced (another tracker writes
	// the store now): the loop takes no more Readies, and the Server stops.
	fenced bool

	submitted, completed, failed, canceled uint64
	storeErrors, commits, records          uint64
	// refusedMemory counts submissions refused for MaxMemory.
	refusedMemory uint64
}

type waiter struct {
	cond func(Stats) bool
	ch   chan Stats // buffered 1
}

func newLoop(s *Server, tab *table.Table) *loop {
	act := newActivity()
	_, act.keepsJobs = s.st.(store.JobStore)
	return &loop{
		s:           s,
		tab:         tab,
		conns:       make(map[uint64]*conn),
		names:       make(map[string]*conn),
		persistReq:  make(chan []table.Record, 1),
		persistDone: make(chan error, 1),
		act:         act,
		cancels:     make(map[uint64]chan cancelResult),
		recBlobs:    make(map[uint64]recNamed),
		jobsDone:    make(chan jobsWrite, 1),
	}
}

// run is the loop's goroutine.
func (l *loop) run() {
	defer close(l.s.loopDone)
	persisterDone := make(chan struct{})
	go l.persister(persisterDone)
	defer func() {
		close(l.persistReq)
		<-persisterDone
	}()
	ticker := time.NewTicker(l.s.opts.TickInterval)
	defer ticker.Stop()
	now := time.Now()
	_ = l.tab.Step(table.Tick{Now: now})
	l.rate.sample(now, 0)
	for {
		select {
		case ib := <-l.s.in:
			l.handle(ib)
		more:
			for range maxBatch - 1 {
				select {
				case ib := <-l.s.in:
					l.handle(ib)
				default:
					break more
				}
			}
		case err := <-l.persistDone:
			l.persisted(err)
		case w := <-l.jobsDone:
			l.jobsSaved(w)
		case now := <-ticker.C:
			l.saveJobs()
			_ = l.tab.Step(table.Tick{Now: now})
			l.rate.sample(now, l.completed+l.failed)
			l.act.sample(now, l.completed, l.failed, l.tab.CountsOf)
			l.s.connLog.flush(now)
			l.s.blobs.sweep(now)
		case f := <-l.s.calls:
			f(l)
		case <-l.s.quit:
			l.drain()
			return
		}
		l.pump()
		if l.s.blobs.counts() {
			// Before flush: an upload that follows an answer sent now
			// sees what the table holds with it.
			l.s.blobs.setTable(l.tab.HeldBytes())
		}
		l.flush()
		l.checkWaiters()
	}
}

// persister writes each Ready's records, one at a time, and reports.
func (l *loop) persister(done chan<- struct{}) {
	defer close(done)
	for recs := range l.persistReq {
		l.persistDone <- l.s.st.Apply(l.s.baseCtx, recs)
	}
}

// drain finishes the table's work at shutdown: the outstanding Ready and
// whatever was stepped before, then closes every connection.
func (l *loop) drain() {
	for {
		l.retryAt = time.Time{} // one last try, whatever the backoff
		if l.outstanding {
			err := <-l.persistDone
			l.persisted(err)
			if err != nil {
				break // do not retry a failing store forever
			}
			continue
		}
		if l.fenced || !l.tab.HasReady() {
			break
		}
		l.pump()
	}
	now := time.Now()
	for _, c := range l.conns {
		l.act.connGone(c, now) // its job ends with the tracker
	}
	l.drainJobs()
	for _, c := range l.conns {
		c.closeAfter(wire.CloseGoingAway, "tracker shutting down")
		l.s.log.Debug("disconnected", "conn", c.name, "role", string(c.role), "remote", c.remote,
			"reason", "tracker shutting down", "connected", time.Since(c.since).Round(time.Millisecond))
	}
	l.flush()
}

func (l *loop) handle(ib *inbound) {
	c := ib.c
	switch ib.kind {
	case inHello:
		l.hello(c, ib.hello)
		c.ack <- struct{}{}
	case inFrame:
		l.frame(ib)
		c.ack <- struct{}{}
	case inGone:
		l.gone(c, ib.reason)
	}
}

// push queues m for c, to be woken at the end of the round.
func (l *loop) push(c *conn, m wire.Msg) {
	if c.push(m) && !c.touched {
		c.touched = true
		l.touched = append(l.touched, c)
	}
}

// flush wakes the writers of the connections that got messages.
func (l *loop) flush() {
	for i, c := range l.touched {
		c.touched = false
		c.wakeup()
		l.touched[i] = nil
	}
	l.touched = l.touched[:0]
}

func (l *loop) hello(c *conn, h *wire.Hello) {
	refuse := func(code wire.Code, msg string) {
		c.push(&wire.Refused{Code: code, Message: msg, Version: wire.ProtocolVersion})
		c.closeAfter(wire.CloseRefused+int(code), msg)
		l.s.connLog.logAt(time.Now(), slog.LevelInfo, "refused", "remote", c.remote, "code", code.String(), "why", msg)
	}
	if n := l.s.opts.MaxConns; n > 0 && len(l.conns) >= n {
		l.s.counters.refusedFull.Add(1)
		refuse(wire.CodeFull, fmt.Sprintf("tracker: full (%d connections)", n))
		return
	}
	name := l.uniqueName(h.Name, h.Role)
	if c.slots+c.prefetch > 0 {
		err := l.tab.Step(table.WorkerJoin{Worker: table.WorkerID(c.id), Name: name,
			Slots: c.slots, Prefetch: c.prefetch, GPUs: c.gpus, Credit: 0})
		if most := l.s.opts.MaxWorkerWindow; err == nil && most > 0 && c.slots+c.prefetch > most {
			// A worker that sizes its prefetch itself asks for up to 64
			// per slot: being cut is routine then, worth a warning only
			// when its slots alone pass the bound.
			level := slog.LevelDebug
			if c.slots > most {
				level = slog.LevelWarn
			}
			l.s.connLog.logAt(time.Now(), level, "worker window cut to --max-worker-window", "conn", name, "remote", c.remote,
				"slots", c.slots, "prefetch", c.prefetch, "holds", most)
		}
		if err != nil {
			code := wire.CodeInvalid
			if errors.Is(err, table.ErrLimit) {
				code = wire.CodeLimit
			}
			refuse(code, err.Error())
			return
		}
	}
	c.setName(name)
	c.realm = realmOf(c.principal, c.session, l.s.nonce[:], c.id)
	c.quota = quotaOf(c.principal, h.Name)
	c.accepted = true
	l.conns[c.id] = c
	l.names[name] = c
	if c.role == wire.RoleMaster {
		l.masters++
		l.act.connJob(c, time.Now())
	}
	l.act.changes++
	l.push(c, &wire.Welcome{
		Version:      wire.ProtocolVersion,
		Name:         name,
		Tracker:      l.s.name,
		PingInterval: l.s.opts.PingInterval,
		Limits:       l.s.opts.Limits,
	})
	l.s.connLog.logAt(time.Now(), slog.LevelInfo, "connected", "conn", name, "role", string(c.role), "remote", c.remote, "agent", c.agent,
		"slots", c.slots, "prefetch", c.prefetch, "gpus", c.gpus)
}

// uniqueName returns asked, or asked-2, asked-3, ... whichever is free.
func (l *loop) uniqueName(asked string, role wire.Role) string {
	base := clip(asked, 200)
	if base == "" {
		base = string(role)
	}
	if _, taken := l.names[base]; !taken {
		return base
	}
	for i := 2; ; i++ {
		n := base + "-" + strconv.Itoa(i)
		if _, taken := l.names[n]; !taken {
			return n
		}
	}
}

func (l *loop) gone(c *conn, reason string) {
	if l.conns[c.id] != c {
		return
	}
	delete(l.conns, c.id)
	delete(l.names, c.name)
	if c.role == wire.RoleMaster {
		l.masters--
	}
	l.act.connGone(c, time.Now())
	l.act.changes++
	held := 0
	if c.slots+c.prefetch > 0 {
		if wi, ok := l.tab.Worker(table.WorkerID(c.id)); ok {
			held = wi.Leases
		}
		_ = l.tab.Step(table.WorkerLost{Worker: table.WorkerID(c.id)})
	}
	_ = l.tab.Step(table.MasterLost{Master: table.MasterID(c.id)})
	attrs := []any{"conn", c.name, "role", string(c.role), "remote", c.remote, "reason", reason,
		"connected", time.Since(c.since).Round(time.Millisecond)}
	if held > 0 {
		l.s.log.Warn("worker lost: its workunits go back to the queue", append(attrs, "leases", held)...)
		return
	}
	// One info line per connection at most, "connected": a flood of
	// hellos costs one line each (bounded, see connLog), not two. A peer
	// that went silent is worth a warning (a network or a stuck process),
	// bounded too.
	if strings.HasPrefix(reason, reasonSilent) {
		l.s.connLog.logAt(time.Now(), slog.LevelWarn, "disconnected", attrs...)
		return
	}
	l.s.log.Debug("disconnected", attrs...)
}

// frame steps the table with a frame's messages.
func (l *loop) frame(ib *inbound) {
	c := ib.c
	if l.conns[c.id] != c {
		return
	}
	wid, mid := table.WorkerID(c.id), table.MasterID(c.id)
	// The frame's submissions, and the room its worker gives, are handed
	// out together: a worker may get several short workunits in a frame.
	l.tab.BeginBatch()
	defer l.tab.EndBatch()
	for i, m := range ib.msgs {
		a := &ib.aux[i]
		switch m := m.(type) {
		case *wire.Submit:
			if e := l.missingBlob(c, m.Req, "submit", a.key, a.blobs); e != nil {
				l.push(c, e)
				continue
			}
			// The record holds them now (or the key's result answers).
			l.named(c, a.blobs)
			err := l.tab.Step(table.Submit{
				Master:  mid,
				Req:     m.Req,
				Owner:   c.realm,
				Quota:   c.quota,
				Scope:   c.scope,
				Key:     a.key,
				Spec:    m.Spec,
				Options: m.Options,
				Watch:   m.Watch,

				HeldElsewhere: l.s.blobs.elsewhere(),
			})
			if err != nil {
				l.push(c, &wire.Error{Req: m.Req, Code: codeFor(err), Message: l.refusal(err, err.Error())})
				continue
			}
			l.submitted++
			if !c.inJob {
				l.act.connJob(c, time.Now())
			}
			l.act.jobs[c.realm].submitted++
		case *wire.Child:
			if e := l.missingBlob(c, m.Req, "child", a.key, a.blobs); e != nil {
				l.push(c, e)
				continue
			}
			l.named(c, a.blobs)
			l.child(c, a.key, m)
		case *wire.Wait:
			_ = l.tab.Step(table.Wait{Worker: wid, Key: m.Key, Token: table.Token(m.Token), Waiting: m.Waiting})
		case *wire.Watch:
			for i, k := range m.Keys {
				if err := l.tab.Step(table.Watch{Master: mid, Req: m.Req, Owner: c.realm, Scope: c.scope, Key: k}); err != nil {
					// Over --max-watches: this key and the rest of the
					// message are not watched (the client fails them all).
					l.push(c, &wire.Error{Req: m.Req, Code: codeFor(err), Message: fmt.Sprintf(
						"tracker: %v; %d of the watch's %d keys not watched", err, len(m.Keys)-i, len(m.Keys))})
					break
				}
			}
		case *wire.Unwatch:
			for _, k := range m.Keys {
				_ = l.tab.Step(table.Unwatch{Master: mid, Scope: c.scope, Key: k})
			}
		case *wire.Info:
			_ = l.tab.Step(table.GetInfo{Master: mid, Req: m.Req, Scope: c.scope, Key: m.Key})
		case *wire.Cancel:
			_ = l.tab.Step(table.Cancel{Master: mid, Req: m.Req, Owner: c.realm, By: c.name, Scope: c.scope, Keys: m.Keys})
		case *wire.Credit:
			if c.slots+c.prefetch == 0 {
				l.push(c, &wire.Error{Code: wire.CodeInvalid,
					Message: "tracker: credit from a connection without slots: a worker says its slots in its hello"})
				continue
			}
			if m.N > 0 {
				_ = l.tab.Step(table.WorkerCredit{Worker: wid, N: m.N})
			}
		case *wire.Done:
			l.namedIn(c, m.Result) // a result blob: its done record holds it now
			li, _ := l.tab.Leased(wid, table.Token(m.Token))
			if l.tab.Step(table.Complete{Worker: wid, Key: m.Key, Token: table.Token(m.Token), Result: m.Result, Console: m.Console, Elapsed: m.Elapsed}) == nil {
				l.completed++
				c.nDone++
				l.finishedRun(c, m.Key, li, workunit.StatusDone, c.runConsole(m.Token, m.Console), m.Elapsed)
			} else if c.printed != nil {
				delete(c.printed, m.Token)
			}
		case *wire.Failed:
			if m.Error != nil {
				l.namedIn(c, m.Error.Value)
			}
			li, _ := l.tab.Leased(wid, table.Token(m.Token))
			if l.tab.Step(table.Fail{Worker: wid, Key: m.Key, Token: table.Token(m.Token), Err: m.Error, Console: m.Console, Elapsed: m.Elapsed}) == nil {
				l.failed++
				c.nFailed++
				l.finishedRun(c, m.Key, li, workunit.StatusError, c.runConsole(m.Token, m.Console), m.Elapsed)
			} else if c.printed != nil {
				delete(c.printed, m.Token)
			}
		case *wire.Stats:
			c.heap, c.statsSeen = m.Heap, true
		case *wire.Print:
			l.print(c, wid, m)
		case *wire.Return:
			l.leases = l.leases[:0]
			for _, ls := range m.Leases {
				l.leases = append(l.leases, table.LeaseRef{Key: ls.Key, Token: table.Token(ls.Token)})
				delete(c.printed, ls.Token) // its streamed lines: the run is over
			}
			_ = l.tab.Step(table.Return{Worker: wid, Leases: l.leases})
			l.s.log.Info("worker returned workunits", "conn", c.name, "leases", len(m.Leases))
		}
	}
}

// child steps the table with a child's submission: a workunit that a
// running one submits, from the worker that holds its lease. The table
// checks the lease, and makes it a submission of the parent's submitter.
func (l *loop) child(c *conn, key workunit.Key, m *wire.Child) {
	// The child counts in the parent's job: its owner is the parent's.
	li, _ := l.tab.Leased(table.WorkerID(c.id), table.Token(m.Token))
	err := l.tab.Step(table.Submit{
		Master:  table.MasterID(c.id),
		Req:     m.Req,
		Key:     key,
		Spec:    m.Spec,
		Options: m.Options,
		Watch:   m.Watch,
		Parent:  &table.ParentLease{Worker: table.WorkerID(c.id), Token: table.Token(m.Token), Key: m.Parent},

		HeldElsewhere: l.s.blobs.elsewhere(),
	})
	if err != nil {
		if errors.Is(err, table.ErrNotHeld) {
			l.s.log.Warn("child refused: the connection does not hold the parent's lease", "conn", c.name, "parent", m.Parent.Short(), "err", err)
		}
		l.push(c, &wire.Error{Req: m.Req, Code: codeFor(err), Message: l.refusal(err, "tracker: "+err.Error())})
		return
	}
	l.submitted++
	if js := l.act.jobs[li.Owner]; js != nil {
		js.submitted++
	}
}

// refusal returns the message of the Error that answers a submission
// Step refused with err: for a full table, what is full, how full, and
// what to do; else other.
func (l *loop) refusal(err error, other string) string {
	var full *table.FullError
	if !errors.As(err, &full) {
		return other
	}
	l.refusedMemory++
	what := "specs of waiting and running work, results not yet in the store, errors"
	todo := "wait for running work to finish and be written to the store, let results be forgotten (--keep-results), cancel work that is waiting, or raise --max-memory"
	if !l.s.durable {
		what = "specs of waiting and running work, results and errors"
		todo = "let results be forgotten (--keep-results), cancel work that is waiting, raise --max-memory, " +
			"or run riotd with --data (results then stay on disk, not in memory)"
	}
	noun := "workunits"
	if full.Records == 1 {
		noun = "workunit"
	}
	blobs := ""
	if full.Elsewhere > 0 {
		blobs = fmt.Sprintf(" and %s for blobs (large arguments, large results, modules: they stay until riotd restarts)", units.FormatBytes(full.Elsewhere))
	}
	return fmt.Sprintf("tracker: memory full: workunit %s refused: the tracker holds %s for %d %s (records, %s)%s, "+
		"and this one needs %s more, past its --max-memory of %s. Nothing already accepted is dropped; to submit more, %s",
		full.Key.Short(), units.FormatBytes(full.Held), full.Records, noun, what, blobs, units.FormatBytes(full.Need), units.FormatBytes(full.Limit), todo)
}

// codeFor returns the wire code of an error Step returned.
func codeFor(err error) wire.Code {
	if errors.Is(err, table.ErrFull) {
		return wire.CodeMemoryFull
	}
	if errors.Is(err, table.ErrNotHeld) {
		return wire.CodeForbidden
	}
	if errors.Is(err, table.ErrInvalid) {
		return wire.CodeInvalid
	}
	if errors.Is(err, table.ErrLimit) {
		return wire.CodeLimit
	}
	return wire.CodeInternal
}

// pump takes the table's Ready while none is outstanding: one with
// records to write goes to the persister, one without is done at once.
func (l *loop) pump() {
	if l.fenced {
		return // nothing more is sent: the Server stops
	}
	if l.tab.HasReady() && l.s.fencedNow() {
		l.fenced = true
		l.s.log.Warn("store fenced: another tracker writes the store now; sending nothing more")
		return
	}
	if !l.retryAt.IsZero() {
		if time.Now().Before(l.retryAt) {
			return // the ticker brings the loop back
		}
		l.retryAt = time.Time{}
	}
	for !l.outstanding && l.tab.HasReady() {
		rd := l.tab.Ready()
		l.trackRecords(rd.Persist, time.Now())
		if l.s.durable && len(rd.Persist) > 0 {
			l.rd = rd
			l.outstanding = true
			l.persistReq <- rd.Persist // never blocks: one at a time
			l.sendAssigns(&rd)
			return
		}
		l.deliver(&rd, nil, false)
		l.tab.Advance(rd)
	}
}

// persisted finishes the outstanding Ready once its records are written
// (err nil) or could not be (err).
func (l *loop) persisted(err error) {
	rd := l.rd
	l.rd = table.Ready{}
	l.outstanding = false
	if err != nil && l.s.fencedBy(err) {
		l.fenced = true
		l.s.log.Warn("store write fenced: another tracker writes the store now; refusing the submissions that waited for it, to be sent to that tracker",
			"records", len(rd.Persist), "held_results", len(rd.Notify), "err", err)
	} else if err != nil {
		l.storeErrors++
		l.backoff = min(max(2*l.backoff, minRetry), maxRetry)
		l.retryAt = time.Now().Add(l.backoff)
		l.s.log.Error("store write failed: refusing the submissions that waited for it",
			"records", len(rd.Persist), "held_results", len(rd.Notify), "retry_in", l.backoff, "err", err)
	} else {
		l.backoff = 0
		l.commits++
		l.records += uint64(len(rd.Persist))
		l.cacheResults(rd.Persist)
		// The records written again after a failed write are in this
		// one (Table.PersistFailed): the assignments that waited go, but
		// those this Ready revokes (canceled, or lost, meanwhile).
		l.sendHeld(&rd)
	}
	if l.fenced {
		l.held = nil // another tracker hands the work out
	}
	l.deliver(&rd, err, true)
	if l.fenced {
		l.revokeAssigns(&rd)
	}
	if err != nil {
		l.tab.PersistFailed(rd)
	} else {
		l.tab.Advance(rd)
	}
}

// sendAssigns sends a Ready's assignments, as its records go to the store
// rather than once they are written: a worker runs the workunit while the
// submission is made durable, which spares a durable round trip one
// write's wait (with three replicas, one Raft commit). Nothing is
// acknowledged by it: the master's Accepted, and the result's Finished,
// still wait for their writes. Should the write fail, the records are
// written again (Table.PersistFailed) and the worker's result is taken as
// ever; should the tracker stop first, the master, never answered,
// submits again and the workunit runs again, its first result
// discarded, as for a worker's result that a crash loses.
//
// Only first deliveries go early (sentEarly): a retry, or a lease given
// again after a worker was lost, follows a record of the attempt it
// replaces, and waits for that record's write. Sent early, a worker (or a
// test, or an operator) could see the retry running while the failure was
// not yet on disk, and a tracker stopped then would count that attempt
// again after its restart: a spent attempt must stay spent. Should that
// write fail, they wait for the table's next write of the records (held).
// Delivery counts every lease of the record, so a workunit that errored
// and is submitted again, or one a worker handed back, waits for its
// write too: latency, not a lost or doubled run.
func (l *loop) sendAssigns(rd *table.Ready) {
	for _, m := range rd.Send {
		if m, ok := m.(*table.Assign); ok && sentEarly(m) {
			l.assign(m)
		}
	}
}

// sendHeld sends the assignments held since a failed write (l.held),
// once the records are written again, in rd, but those that rd revokes:
// a worker need not start what it is told at once to stop. They reach a
// worker after first leases that went out early meanwhile, out of token
// order (as a retry and a first lease of one Ready do); their lease
// clocks started when the table gave them, so a write that fails for
// longer than a lease's time counts the lease lost.
func (l *loop) sendHeld(rd *table.Ready) {
	if len(l.held) == 0 {
		return
	}
	type lease struct {
		w table.WorkerID
		t table.Token
	}
	var revoked map[lease]bool
	for _, m := range rd.Send {
		if r, ok := m.(*table.Revoke); ok {
			if revoked == nil {
				revoked = make(map[lease]bool)
			}
			revoked[lease{r.Worker, r.Token}] = true
		}
	}
	for i := range l.held {
		if m := &l.held[i]; !revoked[lease{m.Worker, m.Token}] {
			l.assign(m)
		}
	}
	l.held = nil
}

// sentEarly reports whether sendAssigns sends m before its Ready's
// records are written: a workunit's first lease only.
func sentEarly(m *table.Assign) bool { return m.Delivery <= 1 }

// revokeAssigns takes back the assignments sendAssigns sent for a Ready
// whose write was fenced: the tracker that writes the store now hands the
// work out, and a worker of this one stops running what nothing will take
// the result of, rather than hold a slot for it until its connection
// closes.
func (l *loop) revokeAssigns(rd *table.Ready) {
	for _, m := range rd.Send {
		if m, ok := m.(*table.Assign); ok && sentEarly(m) {
			if c := l.conns[uint64(m.Worker)]; c != nil {
				l.push(c, &wire.Revoke{Key: m.Key, Token: uint64(m.Token)})
			}
		}
	}
}

// assign sends assignment m to its worker.
func (l *loop) assign(m *table.Assign) {
	if c := l.conns[uint64(m.Worker)]; c != nil {
		l.push(c, &wire.Assign{
			Key:     m.Key,
			Token:   uint64(m.Token),
			Spec:    m.Spec,
			Realm:   m.Owner,
			Timeout: m.Options.Timeout,
			GPUs:    m.Options.GPUs,
		})
	}
}

// deliver sends a Ready's messages, in order, but the assignments
// sendAssigns sent when assigned, then its notifications; with perr
// set, each Ack is a refusal with wire.CodeStore instead, and the
// notifications wait (Table.PersistFailed gives them back).
func (l *loop) deliver(rd *table.Ready, perr error, assigned bool) {
	for _, m := range rd.Send {
		if l.fenced {
			// Another tracker writes the store now: it hands out the
			// work and answers; this one only refuses what waited.
			switch m.(type) {
			case *table.Ack, *table.CancelReply:
			default:
				continue
			}
		}
		switch m := m.(type) {
		case *table.Assign:
			switch {
			case assigned && sentEarly(m):
			case perr != nil:
				// Not sent early, and its write failed: it waits for the
				// write again (held), as the failure it follows is on no
				// disk yet.
				l.held = append(l.held, *m)
			default:
				l.assign(m)
			}
		case *table.Ack:
			c := l.conns[uint64(m.Master)]
			switch {
			case c == nil:
			case perr != nil:
				l.push(c, storeRefusal(m.Req, "the submission", perr))
			case !l.fillResult(c, m.Req, &m.Outcome, m.Stored):
			default:
				if m.Outcome.Status == workunit.StatusDone {
					if j := l.act.jobs[c.realm]; j != nil {
						j.fromMemory++
					}
				}
				l.push(c, &wire.Accepted{Req: m.Req, Outcome: m.Outcome})
			}
		case *table.InfoReply:
			c := l.conns[uint64(m.Master)]
			switch {
			case c == nil:
			case perr != nil && m.Outcome.Status.Finished():
				// The outcome may be one this write was to store: not on
				// disk, and perhaps never (a restart runs it again), so
				// it is not reported; a Finished reports it once it is.
				l.push(c, &wire.Error{Req: m.Req, Code: wire.CodeStore, Message: "tracker: info: the workunit finished, " +
					"but its outcome is not on disk yet: the store's write failed (" + perr.Error() + "); ask again later"})
			case l.fillResult(c, m.Req, &m.Outcome, m.Stored):
				l.push(c, &wire.InfoReply{Req: m.Req, Outcome: m.Outcome})
			}
		case *table.CancelReply:
			if m.Master == apiMaster {
				l.apiCanceled(m, perr)
				continue
			}
			c := l.conns[uint64(m.Master)]
			switch {
			case c == nil:
			case perr != nil:
				l.push(c, storeRefusal(m.Req, "the cancellation", perr))
			default:
				l.canceled += uint64(len(m.Keys))
				l.push(c, &wire.Canceled{Req: m.Req, Keys: m.Keys})
			}
		case *table.Revoke:
			if c := l.conns[uint64(m.Worker)]; c != nil {
				l.push(c, &wire.Revoke{Key: m.Key, Token: uint64(m.Token)})
			}
		}
	}
	// A Finished reports a result only once it is on disk: after a failed
	// write the table holds the notifications back, for the next Ready.
	for i := range rd.Notify {
		if perr != nil {
			break
		}
		n := &rd.Notify[i]
		if c := l.conns[uint64(n.Master)]; c != nil && l.fillResult(c, n.Req, &n.Outcome, n.Stored) {
			l.push(c, &wire.Finished{Req: n.Req, Outcome: n.Outcome})
		}
	}
	for _, q := range rd.Requeued {
		l.s.log.Info("workunit reassigned", "key", q.Key.Short(), "lost_from", q.LostFrom, "losses", q.Losses)
	}
	for _, q := range rd.Retried {
		l.s.log.Info("workunit failed, retried", "key", q.Key.Short(), "worker", q.Attempt.Worker, "error", q.Attempt.Name+": "+q.Attempt.Message,
			"attempt", q.Attempts, "retries", q.Retries)
	}
	for _, d := range rd.Discarded {
		l.s.log.Info("stale result discarded", "worker", l.workerName(d.Worker), "key", d.Key.Short(),
			"token", uint64(d.Token), "reason", d.Reason)
	}
	if perr != nil {
		return
	}
	for i := range rd.Persist {
		r := &rd.Persist[i]
		if r.Status == workunit.StatusError {
			l.act.failed(r)
		}
		switch {
		case r.Status == workunit.StatusError && r.Err != nil && r.Err.Kind == workunit.Canceled && r.Err.Worker == "":
			l.s.log.Info("workunit canceled", "key", r.Key.Short(), "message", r.Err.Message)
		case r.Status == workunit.StatusError && r.Err != nil:
			l.s.log.Info("workunit failed", "key", r.Key.Short(), "worker", r.Err.Worker, "kind", r.Err.Kind.String(),
				"name", r.Err.Name, "message", r.Err.Message)
		}
	}
}

// storeRefusal answers request req, about what, whose write failed with
// err: wire.CodeStore, or, when another tracker writes the store now
// (store.ErrFenced), wire.CodeShutdown, which a client keeps the request
// for, to send again on its next connection (to that tracker): the write
// may be in the store there, and the client's request finds it.
func storeRefusal(req uint64, what string, err error) *wire.Error {
	if errors.Is(err, store.ErrFenced) {
		return &wire.Error{Req: req, Code: wire.CodeShutdown,
			Message: "tracker: " + what + " was not acknowledged: another tracker writes the store now; send it again there (" + err.Error() + ")"}
	}
	return &wire.Error{Req: req, Code: wire.CodeStore, Message: "tracker: " + what + " could not be stored: " + err.Error()}
}

// cacheResults keeps the results that a durable write just stored in the
// value cache (the table let go of them), and drops forgotten ones.
func (l *loop) cacheResults(recs []table.Record) {
	if l.s.values == nil {
		return
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Status == workunit.StatusDone && !r.Stored:
			l.s.values.put(r.ID, r.Result)
		case r.Status == workunit.StatusUnknown:
			l.s.values.drop(r.ID)
		}
	}
}

// fillResult sets o.Result, when the table left it in the store (stored
// is its record ID), from the value cache or the store. When the store
// cannot give it, it tells c so (a wire.Error of req) and returns false:
// the answer is not sent, never one without its result.
func (l *loop) fillResult(c *conn, req uint64, o *workunit.Outcome, stored uint64) bool {
	if stored == 0 {
		return true
	}
	res, err := l.s.storedResult(l.s.baseCtx, stored)
	if err != nil {
		l.s.log.Error("stored result unreadable", "key", o.Key.Short(), "record", stored, "err", err)
		l.push(c, &wire.Error{Req: req, Code: wire.CodeStore,
			Message: fmt.Sprintf("tracker: the result of %s could not be read from the store: %v", o.Key.Short(), err)})
		return false
	}
	o.Result = res
	return true
}

func (l *loop) workerName(id table.WorkerID) string {
	if c := l.conns[uint64(id)]; c != nil {
		return c.name
	}
	return "gone#" + strconv.FormatUint(uint64(id), 10)
}

func (l *loop) stats() Stats {
	st := Stats{
		Stats:       l.tab.Stats(),
		Connections: len(l.conns),
		Masters:     l.masters,
		Submitted:   l.submitted,
		Completed:   l.completed,
		Failed:      l.failed,
		Canceled:    l.canceled,
		StoreErrors: l.storeErrors,
		Commits:     l.commits,
		Records:     l.records,

		RefusedMemory: l.refusedMemory,
	}
	st.BlobBytes, st.Blobs = l.s.blobs.blobs()
	st.RefusedBlobs = l.s.blobs.refused.Load()
	st.FreedBlobs = l.s.blobs.freedCount()
	return st
}

func (l *loop) addWaiter(w *waiter) { l.waiters = append(l.waiters, w) }

func (l *loop) removeWaiter(w *waiter) {
	for i, x := range l.waiters {
		if x == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return
		}
	}
}

// checkWaiters answers the waiters whose condition holds, when the
// tracker is idle: no Ready outstanding and none to take.
func (l *loop) checkWaiters() {
	if len(l.waiters) == 0 || l.outstanding || l.tab.HasReady() {
		return
	}
	st := l.stats()
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.cond(st) {
			w.ch <- st
		} else {
			kept = append(kept, w)
		}
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

// rateMeter measures finished workunits per second over the last ten
// seconds, from samples taken at most once a second.
type rateMeter struct {
	t [11]time.Time
	n [11]uint64
	i int // next slot
	k int // samples held
}

func (r *rateMeter) sample(now time.Time, n uint64) {
	if r.k > 0 {
		last := (r.i + len(r.t) - 1) % len(r.t)
		if now.Sub(r.t[last]) < time.Second {
			return
		}
	}
	r.t[r.i], r.n[r.i] = now, n
	r.i = (r.i + 1) % len(r.t)
	r.k = min(r.k+1, len(r.t))
}

func (r *rateMeter) perSecond() float64 {
	if r.k < 2 {
		return 0
	}
	last := (r.i + len(r.t) - 1) % len(r.t)
	first := (r.i + len(r.t) - r.k) % len(r.t)
	d := r.t[last].Sub(r.t[first]).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(r.n[last]-r.n[first]) / d
}
