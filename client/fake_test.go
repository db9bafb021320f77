package client

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// fakeTracker is a test double of the tracker: a small, in-memory
// implementation of the protocol's tracker side over a real websocket, for
// the client's unit tests of what the real tracker cannot be made to do
// (refuse versions, drop connections on cue, send answers out of order).
// It is not riotd.
type fakeTracker struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	version  uint32
	refuse   *wire.Refused
	conns    map[*fakeConn]bool
	names    map[string]bool
	units    map[workunit.Key]*fakeUnit
	queue    []workunit.Key
	blobs    map[blob.Hash][]byte
	token    uint64
	hellos   []wire.Hello
	submits  int
	frames   int
	maxFrame int                                     // the largest frame read, in bytes
	onSubmit func(fc *fakeConn, m *wire.Submit) bool // true: handled (no answer)
	limits   wire.Limits                             // in the welcome; zero: the defaults
	parts    map[fakePart][]byte                     // blobs being written in pieces, by connection
	writes   int                                     // blob-write messages taken
	dropAt   int                                     // the blob-write (counted in writes) whose connection drops instead of its answer
	reads    int                                     // blob-read messages taken
	readGate chan struct{}                           // when set, blob-parts wait until it is closed
	// onWrite, when set, sees each blob-write before the tracker takes
	// it (under mu).
	onWrite func(m *wire.BlobWrite)
}

// fakePart names an upload in pieces: they live on one connection.
type fakePart struct {
	fc *fakeConn
	h  blob.Hash
}

type fakeUnit struct {
	spec    []byte
	status  workunit.Status
	worker  string
	result  []byte
	err     *workunit.Error
	token   uint64
	holder  *fakeConn
	changed time.Time
}

type fakeConn struct {
	ft      *fakeTracker
	ws      *websocket.Conn
	name    string
	out     chan []wire.Msg
	credit  int
	watches map[workunit.Key][]uint64
	closed  chan struct{}
	once    sync.Once
}

func newFakeTracker(t *testing.T) *fakeTracker {
	ft := &fakeTracker{
		t:       t,
		version: wire.ProtocolVersion,
		conns:   map[*fakeConn]bool{},
		names:   map[string]bool{},
		units:   map[workunit.Key]*fakeUnit{},
		blobs:   map[blob.Hash][]byte{},
	}
	up := websocket.Upgrader{Subprotocols: []string{wire.Subprotocol}}
	ft.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ft.serve(ws)
	}))
	t.Cleanup(func() {
		ft.dropAll()
		ft.srv.Close()
	})
	return ft
}

// addr returns "127.0.0.1:PORT".
func (ft *fakeTracker) addr() string { return strings.TrimPrefix(ft.srv.URL, "http://") }

// dropAll closes every connection abruptly, as a network failure would.
func (ft *fakeTracker) dropAll() {
	ft.mu.Lock()
	var cs []*fakeConn
	for fc := range ft.conns {
		cs = append(cs, fc)
	}
	ft.mu.Unlock()
	for _, fc := range cs {
		fc.close()
	}
}

func (fc *fakeConn) close() {
	fc.once.Do(func() {
		close(fc.closed)
		_ = fc.ws.Close()
	})
}

func (fc *fakeConn) send(msgs ...wire.Msg) {
	select {
	case fc.out <- msgs:
	case <-fc.closed:
	}
}

func (ft *fakeTracker) serve(ws *websocket.Conn) {
	_, frame, err := ws.ReadMessage()
	if err != nil {
		_ = ws.Close()
		return
	}
	msgs, err := wire.Decode(frame)
	if err != nil || len(msgs) == 0 {
		_ = ws.Close()
		return
	}
	hello, ok := msgs[0].(*wire.Hello)
	if !ok {
		_ = ws.Close()
		return
	}
	ft.mu.Lock()
	ft.hellos = append(ft.hellos, *hello)
	refuse, version := ft.refuse, ft.version
	ft.mu.Unlock()
	if hello.Version != version {
		refuse = &wire.Refused{Code: wire.CodeVersion, Version: version,
			Message: "protocol version " + strconv.Itoa(int(hello.Version)) + " is not this tracker's version " + strconv.Itoa(int(version))}
	}
	if refuse != nil {
		f, _ := wire.Encode(refuse)
		_ = ws.WriteMessage(websocket.BinaryMessage, f)
		_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(wire.CloseRefused+int(refuse.Code), ""))
		_ = ws.Close()
		return
	}
	fc := &fakeConn{ft: ft, ws: ws, out: make(chan []wire.Msg, 1024), watches: map[workunit.Key][]uint64{}, closed: make(chan struct{})}
	ft.mu.Lock()
	name := hello.Name
	for i := 2; ft.names[name]; i++ {
		name = hello.Name + "-" + strconv.Itoa(i)
	}
	ft.names[name] = true
	fc.name = name
	ft.conns[fc] = true
	ft.mu.Unlock()
	ft.mu.Lock()
	lim := ft.limits
	ft.mu.Unlock()
	f, _ := wire.Encode(&wire.Welcome{Version: version, Name: name, Tracker: "fake", PingInterval: time.Second, Limits: lim})
	if err := ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
		fc.close()
	}
	go func() { // the writer
		for {
			select {
			case msgs := <-fc.out:
				f, err := wire.Encode(msgs...)
				if err != nil {
					ft.t.Errorf("fake tracker: encode: %v", err)
					fc.close()
					return
				}
				if err := ws.WriteMessage(websocket.BinaryMessage, f); err != nil {
					fc.close()
					return
				}
			case <-fc.closed:
				return
			}
		}
	}()
	defer ft.lost(fc)
	for {
		_, frame, err := ws.ReadMessage()
		if err != nil {
			fc.close()
			return
		}
		msgs, err := wire.Decode(frame)
		if err != nil {
			ft.t.Errorf("fake tracker: decode: %v", err)
			fc.close()
			return
		}
		ft.mu.Lock()
		ft.frames++
		ft.maxFrame = max(ft.maxFrame, len(frame))
		for _, m := range msgs {
			ft.handleLocked(fc, m)
		}
		ft.mu.Unlock()
	}
}

func (ft *fakeTracker) lost(fc *fakeConn) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	delete(ft.conns, fc)
	delete(ft.names, fc.name)
	for k, u := range ft.units {
		if u.holder == fc && u.status == workunit.StatusRunning {
			u.status, u.holder, u.worker = workunit.StatusWaiting, nil, ""
			ft.queue = append([]workunit.Key{k}, ft.queue...)
		}
	}
	ft.dispatchLocked()
}

// keyed returns o for key k.
func keyed(k workunit.Key, o workunit.Outcome) workunit.Outcome {
	o.Key = k
	return o
}

func (ft *fakeTracker) outcome(u *fakeUnit) workunit.Outcome {
	if u == nil {
		return workunit.Outcome{}
	}
	return workunit.Outcome{Status: u.status, Worker: u.worker, Result: u.result, Err: u.err, LastChange: u.changed}
}

func (ft *fakeTracker) handleLocked(fc *fakeConn, m wire.Msg) {
	switch m := m.(type) {
	case *wire.Submit:
		ft.submits++
		if ft.onSubmit != nil && ft.onSubmit(fc, m) {
			return
		}
		var spec workunit.Spec
		if err := spec.UnmarshalBinary(m.Spec); err != nil {
			fc.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: err.Error()})
			return
		}
		key := spec.Key()
		u := ft.units[key]
		if u == nil || u.status == workunit.StatusError || m.Options.NoCache && u.status == workunit.StatusDone {
			u = &fakeUnit{spec: append([]byte(nil), m.Spec...), status: workunit.StatusWaiting, changed: time.Now()}
			ft.units[key] = u
			ft.queue = append(ft.queue, key)
		}
		fc.send(&wire.Accepted{Req: m.Req, Outcome: keyed(key, ft.outcome(u))})
		if m.Watch {
			ft.watchLocked(fc, m.Req, key)
		}
		ft.dispatchLocked()
	case *wire.Watch:
		for _, k := range m.Keys {
			ft.watchLocked(fc, m.Req, k)
		}
	case *wire.Unwatch:
		for _, k := range m.Keys {
			delete(fc.watches, k)
		}
	case *wire.Info:
		fc.send(&wire.InfoReply{Req: m.Req, Outcome: keyed(m.Key, ft.outcome(ft.units[m.Key]))})
	case *wire.BlobHave:
		var missing []blob.Hash
		for _, h := range m.Hashes {
			if _, ok := ft.blobs[h]; !ok {
				missing = append(missing, h)
			}
		}
		fc.send(&wire.BlobNeed{Req: m.Req, Missing: missing})
	case *wire.BlobPut:
		if blob.Sum(m.Data) != m.Hash {
			fc.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "bad hash"})
			return
		}
		ft.blobs[m.Hash] = append([]byte(nil), m.Data...)
		fc.send(&wire.BlobStored{Req: m.Req, Hash: m.Hash})
	case *wire.BlobGet:
		data, ok := ft.blobs[m.Hash]
		fc.send(&wire.BlobData{Req: m.Req, Hash: m.Hash, Data: data, Missing: !ok})
	case *wire.BlobWrite:
		ft.writes++
		if ft.onWrite != nil {
			ft.onWrite(m)
		}
		if ft.parts == nil {
			ft.parts = map[fakePart][]byte{}
		}
		pk := fakePart{fc, m.Hash}
		if ft.writes == ft.dropAt {
			go fc.close()
			return
		}
		part := ft.parts[pk]
		if m.Offset == 0 {
			part = nil // the upload starts again
		}
		if m.Offset != uint64(len(part)) {
			fc.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "out of order"})
			return
		}
		part = append(part, m.Data...)
		ft.parts[pk] = part
		if uint64(len(part)) == m.Size {
			delete(ft.parts, pk)
			if blob.Sum(part) != m.Hash {
				fc.send(&wire.Error{Req: m.Req, Code: wire.CodeInvalid, Message: "bad hash"})
				return
			}
			ft.blobs[m.Hash] = part
		}
		fc.send(&wire.BlobWritten{Req: m.Req, Hash: m.Hash, Written: uint64(len(part))})
	case *wire.BlobRead:
		ft.reads++
		data, ok := ft.blobs[m.Hash]
		if !ok {
			fc.send(&wire.BlobPart{Req: m.Req, Hash: m.Hash, Missing: true})
			return
		}
		end := min(m.Offset+m.Length, uint64(len(data)))
		part := &wire.BlobPart{Req: m.Req, Hash: m.Hash, Size: uint64(len(data)), Offset: m.Offset, Data: append([]byte{}, data[m.Offset:end]...)}
		if gate := ft.readGate; gate != nil {
			go func() {
				<-gate
				fc.send(part)
			}()
			return
		}
		fc.send(part)
	case *wire.Credit:
		fc.credit += m.N
		ft.dispatchLocked()
	case *wire.Done:
		u := ft.units[m.Key]
		if u == nil || u.holder != fc || u.token != m.Token || u.status != workunit.StatusRunning {
			return
		}
		u.status, u.result, u.holder, u.changed = workunit.StatusDone, append([]byte(nil), m.Result...), nil, time.Now()
		ft.notifyLocked(m.Key, u, m.Console)
	case *wire.Failed:
		u := ft.units[m.Key]
		if u == nil || u.holder != fc || u.token != m.Token || u.status != workunit.StatusRunning {
			return
		}
		e := *m.Error
		e.Worker, e.Key = fc.name, m.Key
		u.status, u.err, u.holder, u.changed = workunit.StatusError, &e, nil, time.Now()
		ft.notifyLocked(m.Key, u, m.Console)
	case *wire.Return:
		for _, l := range m.Leases {
			if u := ft.units[l.Key]; u != nil && u.holder == fc && u.token == l.Token {
				u.status, u.holder, u.worker = workunit.StatusWaiting, nil, ""
				ft.queue = append([]workunit.Key{l.Key}, ft.queue...)
			}
		}
		ft.dispatchLocked()
	default:
		ft.t.Errorf("fake tracker: unexpected %s", m.Type())
	}
}

func (ft *fakeTracker) watchLocked(fc *fakeConn, req uint64, key workunit.Key) {
	u := ft.units[key]
	if u == nil || u.status == workunit.StatusDone || u.status == workunit.StatusError {
		fc.send(&wire.Finished{Req: req, Outcome: keyed(key, ft.outcome(u))})
		return
	}
	fc.watches[key] = append(fc.watches[key], req)
}

func (ft *fakeTracker) notifyLocked(key workunit.Key, u *fakeUnit, console workunit.Console) {
	for fc := range ft.conns {
		for _, req := range fc.watches[key] {
			o := ft.outcome(u)
			o.Console = append(workunit.Console(nil), console...)
			fc.send(&wire.Finished{Req: req, Outcome: keyed(key, o)})
		}
		delete(fc.watches, key)
	}
}

func (ft *fakeTracker) dispatchLocked() {
	for len(ft.queue) > 0 {
		var to *fakeConn
		for fc := range ft.conns {
			if fc.credit > 0 {
				to = fc
				break
			}
		}
		if to == nil {
			return
		}
		key := ft.queue[0]
		ft.queue = ft.queue[1:]
		u := ft.units[key]
		if u == nil || u.status != workunit.StatusWaiting {
			continue
		}
		ft.token++
		u.status, u.holder, u.token, u.worker, u.changed = workunit.StatusRunning, to, ft.token, to.name, time.Now()
		to.credit--
		to.send(&wire.Assign{Key: key, Token: u.token, Spec: u.spec, Realm: "r"})
	}
}
