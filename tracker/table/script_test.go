package table_test

// Scenario scripts: testdata/*.txt, driven by a small interpreter in the
// manner of etcd raft's datadriven interaction tests.
//
// A script is a list of blocks separated by blank lines. A block is one or
// more command lines, a line "----", and the expected output: what the
// table's Ready held after the commands, one line per item, then any
// errors Step returned. Lines starting with '#' outside blocks are
// comments. Run with -rewrite to regenerate the expected output.
//
// Commands (names stand for IDs and keys; k1 is a key, m1 a master, w1 a
// worker):
//
//	config [maxlost=N] [leasetimeout=D] [leasegrace=D] [keep=D] [maxwatches=N] [maxopen=N] [maxwindow=N]   a fresh table
//	submit M K [req=N] [owner=S] [quota=S] [scope=S] [gpus=N] [timeout=MS] [nocache] [watch] [spec=S] [retries=N] [retryon=NAME,...]
//	watch M K [req=N] [owner=S] [scope=S]
//	unwatch M K [scope=S]
//	info M K [req=N] [scope=S]
//	cancel M K... [req=N] [owner=S] [scope=S]        (the error says "canceled by M")
//	masterlost M
//	join W [slots=N] [prefetch=N] [gpus=N] [credit=N]  (credit defaults to slots+prefetch)
//	credit W [n=N]
//	lost W
//	complete W K [token=N] [result=S] [console=S]     (token defaults to W's lease of K)
//	fail W K [token=N] [msg=S] [name=S] [timelimit]  (name defaults to Error; timelimit: a TimeoutError of kind time-limit)
//	return W K[:TOKEN]... [token=N]                   (tokens default to W's leases of the keys)
//	child W P K [req=N] [token=N] [watch]               W's lease of P submits child K, from the master named W
//	wait W K [off]                                    W's lease of K waits for its children (off: runs again)
//	tick D                                            advance the clock by D
//	restart [config keys]                             a new table restored from what was persisted
//	hold                                              take the Ready but do not Advance it
//	release [fail]                                    Advance (or PersistFailed) the held Ready
//	lookup K [scope=S] | stats

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata scripts")

func TestTable_Scripts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			runScript(t, file)
		})
	}
}

type block struct {
	comments []string // lines before the commands
	cmds     []string
	want     []string
	line     int
}

func parseScript(t *testing.T, file string) []block {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var blocks []block
	var cur block
	state := 0 // 0: before commands, 1: commands, 2: expected output
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch state {
		case 0:
			switch {
			case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
				cur.comments = append(cur.comments, line)
			default:
				cur.cmds = append(cur.cmds, line)
				cur.line = n
				state = 1
			}
		case 1:
			if line == "----" {
				state = 2
			} else {
				cur.cmds = append(cur.cmds, line)
			}
		case 2:
			if strings.TrimSpace(line) == "" {
				blocks = append(blocks, cur)
				cur = block{}
				state = 0
			} else {
				cur.want = append(cur.want, line)
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEqual(t, 1, state, "%s: commands without ---- at the end", file)
	if state == 2 {
		blocks = append(blocks, cur)
	} else if len(cur.comments) > 0 {
		blocks = append(blocks, cur) // trailing comments
	}
	return blocks
}

func runScript(t *testing.T, file string) {
	blocks := parseScript(t, file)
	env := newEnv(t)
	var out strings.Builder
	for i, b := range blocks {
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		if len(b.cmds) == 0 {
			continue
		}
		got := env.run(b.cmds)
		for _, c := range b.cmds {
			out.WriteString(c + "\n")
		}
		out.WriteString("----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if i < len(blocks)-1 {
			out.WriteString("\n")
		}
		if !*rewrite {
			require.Equal(t, strings.Join(b.want, "\n"), strings.Join(got, "\n"),
				"%s:%d: %s", file, b.line, strings.Join(b.cmds, "; "))
		}
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(file, []byte(out.String()), 0o644))
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	t       *testing.T
	cfg     table.Config
	tab     *table.Table
	now     time.Time
	disk    map[uint64]table.Record // by ID
	keys    map[workunit.Key]string
	masters map[string]table.MasterID
	mnames  map[table.MasterID]string
	workers map[string]table.WorkerID // current connection of a name
	wnames  map[table.WorkerID]string
	nextW   table.WorkerID
	tokens  map[[2]string]table.Token // (worker, key) -> last token assigned
	held    *table.Ready
	out     []string // lines in order
	errs    []string // Step errors, printed last
}

func newEnv(t *testing.T) *env {
	e := &env{
		t:       t,
		keys:    map[workunit.Key]string{},
		masters: map[string]table.MasterID{},
		mnames:  map[table.MasterID]string{},
		workers: map[string]table.WorkerID{},
		wnames:  map[table.WorkerID]string{},
		tokens:  map[[2]string]table.Token{},
	}
	e.reset(table.Config{})
	return e
}

func (e *env) reset(cfg table.Config) {
	e.cfg = cfg
	e.tab = table.New(cfg)
	e.now = epoch
	e.disk = map[uint64]table.Record{}
	e.held = nil
	require.NoError(e.t, e.tab.Step(table.Tick{Now: e.now}))
}

func (e *env) key(name string) workunit.Key {
	var k workunit.Key
	copy(k[:], name)
	e.keys[k] = name
	return k
}

func (e *env) keyName(k workunit.Key) string {
	if n, ok := e.keys[k]; ok {
		return n
	}
	return k.Short()
}

func (e *env) master(name string) table.MasterID {
	if id, ok := e.masters[name]; ok {
		return id
	}
	id := table.MasterID(len(e.masters) + 1)
	e.masters[name] = id
	e.mnames[id] = name
	return id
}

func (e *env) worker(name string) table.WorkerID {
	if id, ok := e.workers[name]; ok {
		return id
	}
	return table.WorkerID(1000 + len(name)) // never joined: an unknown id
}

func (e *env) wname(id table.WorkerID) string {
	if n, ok := e.wnames[id]; ok {
		return n
	}
	return fmt.Sprintf("worker#%d", id)
}

type args struct {
	pos  []string
	kv   map[string]string
	flag map[string]bool
}

func parseArgs(fields []string) args {
	a := args{kv: map[string]string{}, flag: map[string]bool{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else if f == "nocache" || f == "watch" || f == "fail" || f == "timelimit" {
			a.flag[f] = true
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a args) int(t *testing.T, k string, def int) int {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, k)
	return n
}

func (a args) dur(t *testing.T, k string) time.Duration {
	v, ok := a.kv[k]
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, k)
	return d
}

func (a args) arg(t *testing.T, i int) string {
	require.Greater(t, len(a.pos), i, "missing argument %d", i+1)
	return a.pos[i]
}

func (e *env) config(a args) table.Config {
	return table.Config{
		MaxLost:             a.int(e.t, "maxlost", 0),
		LeaseTimeout:        a.dur(e.t, "leasetimeout"),
		LeaseGrace:          a.dur(e.t, "leasegrace"),
		FirstToken:          table.Token(a.int(e.t, "firsttoken", 0)),
		KeepFinished:        a.dur(e.t, "keep"),
		MaxWatchesPerMaster: a.int(e.t, "maxwatches", 0),
		MaxOpenPerOwner:     a.int(e.t, "maxopen", 0),
		MaxWorkerWindow:     a.int(e.t, "maxwindow", 0),
	}
}

func (e *env) step(ev table.Event) {
	if err := e.tab.Step(ev); err != nil {
		e.errs = append(e.errs, "error: "+err.Error())
	}
}

func (e *env) run(cmds []string) []string {
	e.out, e.errs = nil, nil
	for _, c := range cmds {
		fields := strings.Fields(c)
		e.exec(fields[0], parseArgs(fields[1:]))
	}
	if e.held == nil {
		rd := e.tab.Ready()
		e.print(&rd)
		e.apply(&rd)
		e.tab.Advance(rd)
	}
	// Step errors go after the Ready's lines.
	return append(e.out, e.errs...)
}

func (e *env) exec(cmd string, a args) {
	t := e.t
	switch cmd {
	case "config":
		e.reset(e.config(a))
	case "submit":
		m, k := e.master(a.arg(t, 0)), e.key(a.arg(t, 1))
		spec := a.kv["spec"]
		if spec == "" {
			spec = "spec-" + a.arg(t, 1)
		}
		e.step(table.Submit{
			Master: m, Req: uint64(a.int(t, "req", 0)), Owner: a.kv["owner"], Quota: a.kv["quota"], Scope: a.kv["scope"], Key: k, Spec: []byte(spec),
			Options: workunit.Options{NoCache: a.flag["nocache"], GPUs: a.int(t, "gpus", 0), Timeout: time.Duration(a.int(t, "timeout", 0)) * time.Millisecond,
				Retries: a.int(t, "retries", 0), RetryOn: retryOn(a.kv["retryon"])},
			Watch: a.flag["watch"],
		})
	case "watch":
		e.step(table.Watch{Master: e.master(a.arg(t, 0)), Req: uint64(a.int(t, "req", 0)), Owner: a.kv["owner"], Scope: a.kv["scope"], Key: e.key(a.arg(t, 1))})
	case "unwatch":
		e.step(table.Unwatch{Master: e.master(a.arg(t, 0)), Scope: a.kv["scope"], Key: e.key(a.arg(t, 1))})
	case "return":
		wn := a.arg(t, 0)
		var leases []table.LeaseRef
		for _, kn := range a.pos[1:] {
			kn, ts, explicit := strings.Cut(kn, ":")
			tok := e.tokens[[2]string{wn, kn}]
			if _, ok := a.kv["token"]; ok {
				tok = table.Token(a.int(t, "token", 0))
			}
			if explicit {
				n, err := strconv.Atoi(ts)
				require.NoError(t, err, "token of %s", kn)
				tok = table.Token(n)
			}
			leases = append(leases, table.LeaseRef{Key: e.key(kn), Token: tok})
		}
		e.step(table.Return{Worker: e.worker(wn), Leases: leases})
	case "info":
		e.step(table.GetInfo{Master: e.master(a.arg(t, 0)), Req: uint64(a.int(t, "req", 0)), Scope: a.kv["scope"], Key: e.key(a.arg(t, 1))})
	case "cancel":
		var keys []workunit.Key
		for _, kn := range a.pos[1:] {
			keys = append(keys, e.key(kn))
		}
		mn := a.arg(t, 0)
		e.step(table.Cancel{Master: e.master(mn), Req: uint64(a.int(t, "req", 0)), Owner: a.kv["owner"], By: mn, Scope: a.kv["scope"], Keys: keys})
	case "masterlost":
		e.step(table.MasterLost{Master: e.master(a.arg(t, 0))})
	case "join":
		name := a.arg(t, 0)
		e.nextW++
		id := e.nextW
		slots, prefetch := a.int(t, "slots", 1), a.int(t, "prefetch", 0)
		err := e.tab.Step(table.WorkerJoin{Worker: id, Name: name, Slots: slots, Prefetch: prefetch,
			GPUs: a.int(t, "gpus", 0), Credit: a.int(t, "credit", slots+prefetch)})
		if err != nil {
			e.errs = append(e.errs, "error: "+err.Error())
			return
		}
		e.workers[name] = id
		e.wnames[id] = name
	case "child":
		// child W P K: worker W's lease of P submits child K; W's
		// connection is the master named W.
		w, p, k := a.arg(t, 0), e.key(a.arg(t, 1)), e.key(a.arg(t, 2))
		tok := table.Token(a.int(t, "token", int(e.tokens[[2]string{w, a.arg(t, 1)}])))
		e.step(table.Submit{
			Master: e.master(w), Req: uint64(a.int(t, "req", 0)), Owner: "ignored", Scope: "ignored", Key: k, Spec: []byte("spec-" + a.arg(t, 2)),
			Watch:  a.flag["watch"],
			Parent: &table.ParentLease{Worker: e.worker(w), Token: tok, Key: p},
		})
	case "wait":
		// wait W K [off]: worker W's lease of K waits for its children
		// (off: runs again).
		w, k := a.arg(t, 0), a.arg(t, 1)
		e.step(table.Wait{Worker: e.worker(w), Key: e.key(k), Token: e.tokens[[2]string{w, k}], Waiting: len(a.pos) < 3 || a.pos[2] != "off"})
	case "credit":
		e.step(table.WorkerCredit{Worker: e.worker(a.arg(t, 0)), N: a.int(t, "n", 1)})
	case "lost":
		// The name keeps standing for the lost connection until it joins
		// again: events from it are late ones.
		e.step(table.WorkerLost{Worker: e.worker(a.arg(t, 0))})
	case "complete", "fail":
		wn, kn := a.arg(t, 0), a.arg(t, 1)
		tok := e.tokens[[2]string{wn, kn}]
		if _, ok := a.kv["token"]; ok {
			tok = table.Token(a.int(t, "token", 0))
		}
		w, k := e.worker(wn), e.key(kn)
		if cmd == "complete" {
			res := a.kv["result"]
			if res == "" {
				res = "r-" + kn
			}
			var console []byte
			if c, ok := a.kv["console"]; ok {
				console = []byte(c)
			}
			e.step(table.Complete{Worker: w, Key: k, Token: tok, Result: []byte(res), Console: console})
		} else {
			msg := a.kv["msg"]
			if msg == "" {
				msg = "boom"
			}
			werr := &workunit.Error{Kind: workunit.Thrown, Name: "Error", Message: msg}
			if n, ok := a.kv["name"]; ok {
				werr.Name = n
			}
			if a.flag["timelimit"] {
				werr.Kind, werr.Name = workunit.TimeLimit, "TimeoutError"
			}
			e.step(table.Fail{Worker: w, Key: k, Token: tok, Err: werr})
		}
	case "tick":
		d, err := time.ParseDuration(a.arg(t, 0))
		require.NoError(t, err)
		e.now = e.now.Add(d)
		e.step(table.Tick{Now: e.now})
	case "restart":
		recs := make([]table.Record, 0, len(e.disk))
		for _, r := range e.disk {
			recs = append(recs, r)
		}
		slices.SortFunc(recs, func(a, b table.Record) int {
			if c := strings.Compare(e.keyName(a.Key), e.keyName(b.Key)); c != 0 {
				return c
			}
			return strings.Compare(a.Scope, b.Scope)
		})
		e.tab = table.New(e.config(a))
		e.held = nil
		e.workers = map[string]table.WorkerID{}
		if err := e.tab.Restore(recs); err != nil {
			e.errs = append(e.errs, "error: "+err.Error())
		}
		require.NoError(t, e.tab.Step(table.Tick{Now: e.now}))
		e.out = append(e.out, fmt.Sprintf("restored %d records", len(recs)))
	case "hold":
		require.Nil(t, e.held, "hold while holding")
		rd := e.tab.Ready()
		e.print(&rd)
		e.held = &rd
		e.out = append(e.out, "(held)")
	case "release":
		require.NotNil(t, e.held, "release without hold")
		rd := *e.held
		e.held = nil
		if a.flag["fail"] {
			for _, m := range rd.Send {
				switch m := m.(type) {
				case *table.Ack:
					e.out = append(e.out, fmt.Sprintf("refuse %s %s", e.mnames[m.Master], e.keyName(m.Key)))
				case *table.CancelReply:
					e.out = append(e.out, fmt.Sprintf("refuse %s cancel%s", e.mnames[m.Master], req(m.Req)))
				}
			}
			e.tab.PersistFailed(rd)
			e.out = append(e.out, "(persist failed)")
		} else {
			e.apply(&rd)
			e.tab.Advance(rd)
			e.out = append(e.out, "(released)")
		}
	case "lookup":
		k := e.key(a.arg(t, 0))
		r, ok := e.tab.LookupIn(a.kv["scope"], k)
		if !ok {
			e.out = append(e.out, "lookup "+a.arg(t, 0)+": unknown")
			return
		}
		e.out = append(e.out, "lookup "+e.record(&r))
	case "stats":
		s := e.tab.Stats()
		line := fmt.Sprintf("stats waiting=%d running=%d done=%d error=%d workers=%d leases=%d watches=%d discarded=%d",
			s.Waiting, s.Running, s.Done, s.Error, s.Workers, s.Leases, s.Watches, s.Discarded)
		if s.Forgotten > 0 {
			line += fmt.Sprintf(" forgotten=%d", s.Forgotten)
		}
		e.out = append(e.out, line)
	default:
		t.Fatalf("unknown command %q", cmd)
	}
}

// apply writes a Ready's records to the fake disk.
func (e *env) apply(rd *table.Ready) {
	for _, r := range rd.Persist {
		if r.Status == workunit.StatusUnknown {
			delete(e.disk, r.ID)
			continue
		}
		r.LostFrom = slices.Clone(r.LostFrom)
		r.Attempts = slices.Clone(r.Attempts)
		e.disk[r.ID] = r
	}
}

func (e *env) rel(tm time.Time) string {
	if tm.IsZero() {
		return "zero"
	}
	return tm.Sub(epoch).String()
}

func (e *env) errString(err *workunit.Error) string {
	s := fmt.Sprintf("err=%s(%s: %s)", err.Kind, err.Name, err.Message)
	if err.Worker != "" {
		s += " by " + err.Worker
	}
	return s + attempts(err.Attempts)
}

// attempts prints failed attempts as attempts=[w1 Error: boom; ...].
func attempts(as []workunit.Attempt) string {
	if len(as) == 0 {
		return ""
	}
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.Worker + " " + a.Name + ": " + a.Message
	}
	return " attempts=[" + strings.Join(parts, "; ") + "]"
}

func retryOn(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (e *env) info(in *workunit.Outcome) string {
	s := in.Status.String()
	if in.Worker != "" {
		s += " worker=" + in.Worker
	}
	if in.Result != nil {
		s += " result=" + string(in.Result)
	}
	if in.Err != nil {
		s += " " + e.errString(in.Err)
	}
	if !in.LastChange.IsZero() && !in.LastChange.Equal(epoch) {
		s += " t=" + e.rel(in.LastChange)
	}
	return s
}

func (e *env) record(r *table.Record) string {
	s := e.keyName(r.Key) + " " + r.Status.String()
	s += fmt.Sprintf(" id=%d seq=%d", r.ID, r.Seq)
	if r.Scope != "" {
		s += " scope=" + r.Scope
	}
	if r.Owner != "" {
		s += " owner=" + r.Owner
	}
	if r.Worker != "" {
		s += " worker=" + r.Worker
	}
	if r.Deliveries != 0 {
		s += fmt.Sprintf(" deliveries=%d", r.Deliveries)
	}
	if len(r.LostFrom) > 0 {
		s += " lost=" + strings.Join(r.LostFrom, ",")
	}
	s += e.options(r.Options)
	s += attempts(r.Attempts)
	if r.Spec != nil {
		s += " spec=" + string(r.Spec)
	}
	if r.Result != nil {
		s += " result=" + string(r.Result)
	}
	if r.Err != nil {
		s += " " + e.errString(r.Err)
	}
	if !r.LastChange.Equal(epoch) {
		s += " t=" + e.rel(r.LastChange)
	}
	return s
}

func (e *env) options(o workunit.Options) string {
	s := ""
	if o.NoCache {
		s += " nocache"
	}
	if o.GPUs != 0 {
		s += fmt.Sprintf(" gpus=%d", o.GPUs)
	}
	if o.Timeout != 0 {
		s += fmt.Sprintf(" timeout=%d", o.Timeout.Milliseconds())
	}
	if o.Retries != 0 {
		s += fmt.Sprintf(" retries=%d", o.Retries)
	}
	if len(o.RetryOn) != 0 {
		s += " retryon=" + strings.Join(o.RetryOn, ",")
	}
	return s
}

func req(r uint64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf(" req=%d", r)
}

func (e *env) print(rd *table.Ready) {
	for i := range rd.Persist {
		if r := &rd.Persist[i]; r.Status == workunit.StatusUnknown {
			e.out = append(e.out, fmt.Sprintf("forget %s id=%d", e.keyName(r.Key), r.ID))
			continue
		}
		e.out = append(e.out, "persist "+e.record(&rd.Persist[i]))
	}
	for _, m := range rd.Send {
		switch m := m.(type) {
		case *table.Assign:
			wn, kn := e.wname(m.Worker), e.keyName(m.Key)
			e.tokens[[2]string{wn, kn}] = m.Token
			owner := ""
			if m.Owner != "" {
				owner = " owner=" + m.Owner
			}
			e.out = append(e.out, fmt.Sprintf("assign %s %s token=%d delivery=%d%s%s", wn, kn, m.Token, m.Delivery, e.options(m.Options), owner))
		case *table.Ack:
			e.out = append(e.out, fmt.Sprintf("ack %s %s%s %s", e.mnames[m.Master], e.keyName(m.Key), req(m.Req), e.info(&m.Outcome)))
		case *table.InfoReply:
			e.out = append(e.out, fmt.Sprintf("reply %s %s%s %s", e.mnames[m.Master], e.keyName(m.Key), req(m.Req), e.info(&m.Outcome)))
		case *table.CancelReply:
			names := make([]string, len(m.Keys))
			for i, k := range m.Keys {
				names[i] = e.keyName(k)
			}
			e.out = append(e.out, fmt.Sprintf("canceled %s%s [%s]", e.mnames[m.Master], req(m.Req), strings.Join(names, " ")))
		case *table.Revoke:
			e.out = append(e.out, fmt.Sprintf("revoke %s %s token=%d", e.wname(m.Worker), e.keyName(m.Key), m.Token))
		default:
			e.t.Fatalf("unknown message %T", m)
		}
	}
	for _, n := range rd.Notify {
		s := fmt.Sprintf("notify %s %s%s %s", e.mnames[n.Master], e.keyName(n.Key), req(n.Req), e.info(&n.Outcome))
		if n.Console != nil {
			s += fmt.Sprintf(" console=%q", n.Console)
		}
		e.out = append(e.out, s)
	}
	for _, r := range rd.Retried {
		e.out = append(e.out, fmt.Sprintf("retry %s after %s %s: %s attempt=%d/%d", e.keyName(r.Key), r.Attempt.Worker, r.Attempt.Name, r.Attempt.Message, r.Attempts, r.Retries+1))
	}
	for _, d := range rd.Discarded {
		e.out = append(e.out, fmt.Sprintf("discard %s %s token=%d: %s", e.wname(d.Worker), e.keyName(d.Key), d.Token, d.Reason))
	}
}
