package wire

import (
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// Msg is one protocol message. Its concrete type is a pointer to one of the
// message structs of this package (*Hello, *Assign, ...); Decode returns
// those, and Encode takes them. Callers branch with a type switch:
//
//	switch m := m.(type) {
//	case *wire.Assign:
//	case *wire.Done:
//	}
//
// Byte-slice fields of a decoded message alias the frame it came from.
type Msg interface {
	// Type returns the message's type number.
	Type() Type
	// fields lists the message's fields in wire order, after its type
	// (see codec); Type.items counts them.
	fields(c codec)
	// encodeFields and decodeFields are fields for an encoder and for a
	// decoder, generated from it (fields_gen.go).
	encodeFields(c *encoder)
	decodeFields(c *decoder)
}

// ReqOf returns the request id m carries (a request, or the answer to
// one), 0 if none.
func ReqOf(m Msg) uint64 {
	switch m := m.(type) {
	case *Submit:
		return m.Req
	case *Watch:
		return m.Req
	case *Info:
		return m.Req
	case *BlobHave:
		return m.Req
	case *BlobPut:
		return m.Req
	case *BlobGet:
		return m.Req
	case *Error:
		return m.Req
	case *Accepted:
		return m.Req
	case *Finished:
		return m.Req
	case *InfoReply:
		return m.Req
	case *BlobNeed:
		return m.Req
	case *BlobStored:
		return m.Req
	case *BlobData:
		return m.Req
	case *Cancel:
		return m.Req
	case *Canceled:
		return m.Req
	case *BlobWrite:
		return m.Req
	case *BlobWritten:
		return m.Req
	case *BlobRead:
		return m.Req
	case *BlobPart:
		return m.Req
	case *Child:
		return m.Req
	}
	return 0
}

// GPU describes one GPU device a worker offers.
type GPU struct {
	// Name is the device's name, e.g. "NVIDIA H200".
	Name string
	// Memory is its total memory in bytes.
	Memory uint64
}

// Lease names one delivery of a workunit: its key and the lease token the
// tracker gave with it (Assign.Token).
type Lease struct {
	Key   workunit.Key
	Token uint64
}

// Hello opens a connection (client → tracker). It must be the only message
// of the client's first frame.
type Hello struct {
	// Version is the client's ProtocolVersion.
	Version uint32
	Role    Role
	// Name is the name the client asks for (its host name by default); the
	// tracker makes it unique and says the name given in Welcome.
	Name string
	// Session is a client-chosen id (random, at least 16 bytes of entropy
	// in hex) that stays the same across reconnects, so that the tracker
	// can give a reconnecting master its watches back and recognize a
	// reconnecting worker's late results.
	Session string
	// Slots is how many workunits a worker runs at once; Prefetch how many
	// more it may hold queued. 0 for a master that takes no work.
	Slots, Prefetch int
	// GPUs lists the worker's GPU devices.
	GPUs []GPU
	// Token is the client's credentials ("" when the tracker needs none).
	Token string
	// Agent names the client software and its version, e.g.
	// "riot-worker/0.1.0 go1.26".
	Agent string
	// Job names what a master runs (a job script's file name, "-e", a Go
	// program's choice); "" when it says none. The tracker counts a
	// master's workunits by job: one session is one job.
	Job string
	// MemoryLimit is the heap limit a worker enforces, in bytes; 0 when
	// it has none or does not say.
	MemoryLimit uint64
}

func (m *Hello) fields(c codec) {
	// A Hello of another version is its version alone (see Decode).
	if !c.version(&m.Version) {
		return
	}
	c.role("role", &m.Role, m.Version == ProtocolVersion)
	c.text("name", &m.Name)
	c.text("session", &m.Session)
	c.count("slots", &m.Slots)
	c.count("prefetch", &m.Prefetch)
	c.gpus("gpus", &m.GPUs)
	c.text("token", &m.Token)
	c.text("agent", &m.Agent)
	c.text("job", &m.Job)
	c.uint("memory-limit", &m.MemoryLimit)
}

// Welcome accepts a Hello (tracker → client).
type Welcome struct {
	// Version is the tracker's ProtocolVersion (equal to the client's).
	Version uint32
	// Name is the unique name the tracker gave the client, e.g.
	// "alfred-2". It is the client's answer to Riot's client-who-am-i.
	Name string
	// Tracker names the tracker (its host name and port, or its
	// configured id).
	Tracker string
	// PingInterval is how often the tracker pings; whole milliseconds. A
	// side that reads nothing for ReadTimeout(PingInterval) drops the
	// connection.
	PingInterval time.Duration
	// Resumed reports that the tracker knew the Hello's Session from an
	// earlier connection and kept its watches and leases. When false, a
	// master sends its watches again.
	Resumed bool
	// Limits are what the tracker enforces; encode with them.
	Limits Limits
}

func (m *Welcome) fields(c codec) {
	c.uint32("version", &m.Version)
	c.text("name", &m.Name)
	c.text("tracker", &m.Tracker)
	c.millis("ping-interval", &m.PingInterval)
	c.bool("resumed", &m.Resumed)
	c.limits("limits", &m.Limits)
}

// Refused refuses a Hello (tracker → client); the tracker closes the
// connection after it with close code CloseRefused+Code. Its layout is the
// same in every protocol version, so a client can read it from any tracker.
type Refused struct {
	Code Code
	// Message says why, for people. For CodeVersion it names both
	// versions: "protocol version 3 is not this tracker's version 2".
	Message string
	// Version is the tracker's ProtocolVersion.
	Version uint32
}

func (m *Refused) fields(c codec) {
	c.code("code", &m.Code)
	c.text("message", &m.Message)
	c.uint32("version", &m.Version)
}

// Error refuses one request (tracker → client): Req is the request's, or 0
// for a problem with the connection as a whole. *Error is a Go error too.
type Error struct {
	Req     uint64
	Code    Code
	Message string
}

func (m *Error) fields(c codec) {
	c.req(&m.Req)
	c.code("code", &m.Code)
	c.text("message", &m.Message)
}

// Submit asks the tracker to run a workunit (master → tracker). The
// tracker computes the key from the spec, makes the submission durable,
// then answers with Accepted.
type Submit struct {
	Req uint64
	// Spec is the workunit, encoded by workunit.Spec.MarshalBinary (or
	// Encode). wire does not decode it.
	Spec []byte
	// Options are the submission's: NoCache, GPUs, Timeout in whole
	// milliseconds, at most 2^32-1, Retries and RetryOn.
	Options workunit.Options
	// Watch also watches the key: the tracker sends a Finished (with this
	// Submit's Req) when it is finished, as a Watch would.
	Watch bool
}

func (m *Submit) fields(c codec) {
	c.req(&m.Req)
	c.bytes("spec", &m.Spec, specLimit)
	c.bool("no-cache", &m.Options.NoCache)
	c.count("gpus", &m.Options.GPUs)
	c.millis("timeout", &m.Options.Timeout)
	c.bool("watch", &m.Watch)
	c.count("retries", &m.Options.Retries)
	c.texts("retry-on", &m.Options.RetryOn)
}

// Accepted answers a Submit once it is durable (tracker → master). A key
// already done is answered from memory: Status done and the result inline.
type Accepted struct {
	Req uint64
	// Outcome holds the key (Outcome.Key) and what the tracker knows of
	// it. LastChange travels in whole milliseconds, Elapsed in whole
	// microseconds; Console is passed on as the worker sent it.
	workunit.Outcome
}

func (m *Accepted) fields(c codec) {
	c.req(&m.Req)
	outcomeFields(c, &m.Outcome)
}

// Watch asks for a Finished for each key once it is finished (master →
// tracker): at once for keys already done or in error, and with status
// unknown for keys the tracker has never seen.
type Watch struct {
	Req  uint64
	Keys []workunit.Key
}

func (m *Watch) fields(c codec) {
	c.req(&m.Req)
	c.keys("keys", &m.Keys)
}

// Unwatch drops this connection's pending watches of the keys (master →
// tracker). No answer; a Finished already on its way may still arrive.
type Unwatch struct {
	Keys []workunit.Key
}

func (m *Unwatch) fields(c codec) {
	c.keys("keys", &m.Keys)
}

// Finished says a watched workunit is finished (tracker → master): Status
// is done or error, or unknown when the watched key is not known. Req is
// the Watch's or Submit's.
type Finished struct {
	Req uint64
	// Outcome holds the key (Outcome.Key) and what the tracker knows of
	// it. LastChange travels in whole milliseconds, Elapsed in whole
	// microseconds; Console is passed on as the worker sent it.
	workunit.Outcome
}

func (m *Finished) fields(c codec) {
	c.req(&m.Req)
	outcomeFields(c, &m.Outcome)
}

// Info asks for a workunit's info (master → tracker): Riot's
// client-workunit-info.
type Info struct {
	Req uint64
	Key workunit.Key
}

func (m *Info) fields(c codec) {
	c.req(&m.Req)
	c.key("key", &m.Key)
}

// InfoReply answers an Info (tracker → master). Status unknown means the
// tracker does not know the key.
type InfoReply struct {
	Req uint64
	// Outcome holds the key (Outcome.Key) and what the tracker knows of
	// it. LastChange travels in whole milliseconds, Elapsed in whole
	// microseconds; Console is passed on as the worker sent it.
	workunit.Outcome
}

func (m *InfoReply) fields(c codec) {
	c.req(&m.Req)
	outcomeFields(c, &m.Outcome)
}

// Cancel asks the tracker to cancel workunits (master → tracker). Each
// key that is waiting or running, and whose current run was submitted
// with this connection's credentials, fails with kind canceled: its
// watchers get a Finished with that error, and a worker running it gets a
// Revoke. Keys done, in error, unknown or submitted by others are left
// as they are. Answered with Canceled. Submitting a canceled key again
// runs it again, as for any error.
type Cancel struct {
	Req  uint64
	Keys []workunit.Key
}

func (m *Cancel) fields(c codec) {
	c.req(&m.Req)
	c.keys("keys", &m.Keys)
}

// Canceled answers a Cancel once the cancellations are durable (tracker →
// master): Keys lists the keys it canceled, in the order asked.
type Canceled struct {
	Req  uint64
	Keys []workunit.Key
}

func (m *Canceled) fields(c codec) {
	c.req(&m.Req)
	c.keys("keys", &m.Keys)
}

// Revoke tells a worker that the workunit of its lease was canceled
// (tracker → worker): it should stop running it, or not start it, and
// answer the lease at once (with a Failed, kind canceled), which frees its
// place in the worker's window; the tracker discards that answer.
type Revoke struct {
	Key   workunit.Key
	Token uint64
}

func (m *Revoke) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
}

// BlobHave lists blobs a master is about to refer to (master → tracker);
// the tracker answers with BlobNeed.
type BlobHave struct {
	Req    uint64
	Hashes []blob.Hash
}

func (m *BlobHave) fields(c codec) {
	c.req(&m.Req)
	c.hashes("hashes", &m.Hashes)
}

// BlobNeed answers a BlobHave (tracker → master): the hashes the tracker
// does not hold, which the master must upload with BlobPut before it
// submits workunits that refer to them.
type BlobNeed struct {
	Req     uint64
	Missing []blob.Hash
}

func (m *BlobNeed) fields(c codec) {
	c.req(&m.Req)
	c.hashes("missing", &m.Missing)
}

// BlobPut uploads a blob (master → tracker); the tracker answers with
// BlobStored once the blob is durable, or an Error (CodeInvalid when
// blob.Sum(Data) is not Hash).
type BlobPut struct {
	Req  uint64
	Hash blob.Hash
	Data []byte
}

func (m *BlobPut) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.bytes("data", &m.Data, blobLimit)
}

// BlobStored answers a BlobPut once the blob is durable (tracker → master).
type BlobStored struct {
	Req  uint64
	Hash blob.Hash
}

func (m *BlobStored) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
}

// Credit lets the tracker assign N more workunits (worker → tracker). A
// worker holds at most Slots+Prefetch leases; it sends credit for the room
// it has, typically one per Done or Failed.
type Credit struct {
	N int
}

func (m *Credit) fields(c codec) {
	c.count("n", &m.N)
}

// Assign leases a workunit to a worker (tracker → worker). Each uses one
// credit.
type Assign struct {
	Key workunit.Key
	// Token identifies this lease; the Done, Failed or Return for it must
	// carry it.
	Token uint64
	// Spec is the workunit as the master submitted it.
	Spec []byte
	// Realm groups workunits that may share a JavaScript realm on the
	// worker; workunits of different realms never share one.
	Realm string
	// Timeout is the time limit the worker enforces (0: the worker's
	// default); whole milliseconds.
	Timeout time.Duration
	// GPUs is how many of the worker's GPU devices the workunit gets.
	GPUs int
}

func (m *Assign) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
	c.bytes("spec", &m.Spec, specLimit)
	c.shared("realm", &m.Realm)
	c.millis("timeout", &m.Timeout)
	c.count("gpus", &m.GPUs)
}

// Done reports a workunit's result (worker → tracker).
type Done struct {
	Key   workunit.Key
	Token uint64
	// Result is the value-encoded result (docs/values.md).
	Result []byte
	// Console is the run's console output, as the worker encoded it; the
	// tracker checks its form and passes it on as it is.
	Console workunit.Console
	// Elapsed is how long the evaluation took; whole microseconds.
	Elapsed time.Duration
}

func (m *Done) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
	c.bytes("result", &m.Result, resultLimit)
	c.console("console", &m.Console)
	c.micros("elapsed", &m.Elapsed)
}

// Failed reports a workunit's error (worker → tracker).
type Failed struct {
	Key   workunit.Key
	Token uint64
	// Error must not be nil. Its Worker and Key may be left empty: the
	// tracker fills them in.
	Error   *workunit.Error
	Console workunit.Console
	Elapsed time.Duration
}

func (m *Failed) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
	c.workError("error", &m.Error, true)
	c.console("console", &m.Console)
	c.micros("elapsed", &m.Elapsed)
}

// Return hands leases back unfinished (worker → tracker), as a worker
// shutting down gracefully does; the tracker queues them again without
// counting a lost delivery.
type Return struct {
	Leases []Lease
}

func (m *Return) fields(c codec) {
	c.leases("leases", &m.Leases)
}

// BlobGet asks for a blob (worker → tracker); answered by BlobData.
type BlobGet struct {
	Req  uint64
	Hash blob.Hash
}

func (m *BlobGet) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
}

// BlobData answers a BlobGet (tracker → worker): the blob's Data, or
// Missing when the tracker does not hold it.
type BlobData struct {
	Req  uint64
	Hash blob.Hash
	// Data is the blob; nil when Missing. An empty blob has empty Data
	// and Missing false.
	Data    []byte
	Missing bool
}

func (m *BlobData) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.bytesOrNull("data", &m.Data, &m.Missing, blobLimit)
}

// Stats tells the tracker how a worker is doing (worker → tracker), every
// few seconds, for status pages: its heap in use and how many workunits
// it is running. The tracker keeps the last one; nothing depends on it.
type Stats struct {
	// Heap is the worker's heap in use, in bytes.
	Heap uint64
	// Running is how many workunits it is running now (at most its slots;
	// the rest it holds are queued).
	Running int
}

func (m *Stats) fields(c codec) {
	c.uint("heap", &m.Heap)
	c.count("running", &m.Running)
}

// Line is one console line that streams while its workunit runs (Print,
// Printed): the console method's level, the text as the workunit's console
// formatted it, and when it was printed, to the millisecond.
type Line struct {
	// Level is the console method: log, info, debug (a master prints them
	// on its standard output), warn or error (on its standard error).
	Level workunit.Level
	Text  string
	Time  time.Time
}

func (l *Line) fields(c codec) {
	c.level("lines.level", &l.Level)
	c.text("lines.text", &l.Text)
	c.time("lines.time", &l.Time)
}

// Print streams console lines of a workunit while it runs (worker →
// tracker): the lines its lease printed since the last Print, in order.
// The tracker passes them on at once to the masters that watch the key
// (Printed); a line in a Print is not sent again in the lease's Done or
// Failed, whose console holds only the lines not streamed. A worker sends
// none for a workunit that prints nothing, nor for one that ends before
// its first batch is due.
type Print struct {
	Key   workunit.Key
	Token uint64
	Lines []Line
}

func (m *Print) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
	c.lines("lines", &m.Lines)
}

// Printed passes a running workunit's console lines on to a master that
// watches its key (tracker → master): the Lines of a Print of the worker
// named Worker. Missed counts the lines the tracker did not pass on to
// this master since its last Printed, because the master did not read
// fast enough; 0 mostly.
type Printed struct {
	Key    workunit.Key
	Worker string
	Lines  []Line
	Missed int
}

func (m *Printed) fields(c codec) {
	c.key("key", &m.Key)
	c.shared("worker", &m.Worker)
	c.lines("lines", &m.Lines)
	c.count("missed", &m.Missed)
}

// BlobWrite uploads one piece of a blob (client → tracker): the Data at
// Offset of the blob Hash, which is Size bytes in all. The pieces of one
// blob go on one connection, in order, from offset 0, without gaps or
// overlaps; each is answered by BlobWritten. Size is at most MaxBlobBytes;
// once the last piece is written, the tracker checks the whole against
// Hash and makes it durable. Any client may send it: masters for captured
// values and arguments, workers for large results.
type BlobWrite struct {
	Req    uint64
	Hash   blob.Hash
	Size   uint64
	Offset uint64
	Data   []byte
}

func (m *BlobWrite) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.uint("size", &m.Size)
	c.uint("offset", &m.Offset)
	c.bytes("data", &m.Data, blobLimit)
}

// BlobWritten answers a BlobWrite (tracker → client): the tracker holds
// Written bytes of the blob Hash. When Written is the blob's size, the
// blob is whole, matches its hash, and is durable.
type BlobWritten struct {
	Req     uint64
	Hash    blob.Hash
	Written uint64
}

func (m *BlobWritten) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.uint("written", &m.Written)
}

// BlobRead asks for up to Length bytes of the blob Hash from Offset
// (client → tracker); answered by BlobPart.
type BlobRead struct {
	Req    uint64
	Hash   blob.Hash
	Offset uint64
	Length uint64
}

func (m *BlobRead) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.uint("offset", &m.Offset)
	c.uint("length", &m.Length)
}

// BlobPart answers a BlobRead (tracker → client): Size is the whole
// blob's size, Data its bytes from Offset (at most the Length asked for,
// fewer at the end of the blob), or Missing when the tracker does not hold
// the blob.
type BlobPart struct {
	Req     uint64
	Hash    blob.Hash
	Size    uint64
	Offset  uint64
	Data    []byte
	Missing bool
}

func (m *BlobPart) fields(c codec) {
	c.req(&m.Req)
	c.hash("hash", &m.Hash)
	c.uint("size", &m.Size)
	c.uint("offset", &m.Offset)
	c.bytesOrNull("data", &m.Data, &m.Missing, blobLimit)
}

// Type implements Msg.
func (*Hello) Type() Type { return TypeHello }

// Type implements Msg.
func (*Welcome) Type() Type { return TypeWelcome }

// Type implements Msg.
func (*Refused) Type() Type { return TypeRefused }

// Type implements Msg.
func (*Error) Type() Type { return TypeError }

// Type implements Msg.
func (*Submit) Type() Type { return TypeSubmit }

// Type implements Msg.
func (*Accepted) Type() Type { return TypeAccepted }

// Type implements Msg.
func (*Watch) Type() Type { return TypeWatch }

// Type implements Msg.
func (*Unwatch) Type() Type { return TypeUnwatch }

// Type implements Msg.
func (*Finished) Type() Type { return TypeFinished }

// Type implements Msg.
func (*Info) Type() Type { return TypeInfo }

// Type implements Msg.
func (*InfoReply) Type() Type { return TypeInfoReply }

// Type implements Msg.
func (*BlobHave) Type() Type { return TypeBlobHave }

// Type implements Msg.
func (*BlobNeed) Type() Type { return TypeBlobNeed }

// Type implements Msg.
func (*BlobPut) Type() Type { return TypeBlobPut }

// Type implements Msg.
func (*BlobStored) Type() Type { return TypeBlobStored }

// Type implements Msg.
func (*Credit) Type() Type { return TypeCredit }

// Type implements Msg.
func (*Assign) Type() Type { return TypeAssign }

// Type implements Msg.
func (*Done) Type() Type { return TypeDone }

// Type implements Msg.
func (*Failed) Type() Type { return TypeFailed }

// Type implements Msg.
func (*Return) Type() Type { return TypeReturn }

// Type implements Msg.
func (*BlobGet) Type() Type { return TypeBlobGet }

// Type implements Msg.
func (*BlobData) Type() Type { return TypeBlobData }

// Type implements Msg.
func (*Cancel) Type() Type { return TypeCancel }

// Type implements Msg.
func (*Canceled) Type() Type { return TypeCanceled }

// Type implements Msg.
func (*Revoke) Type() Type { return TypeRevoke }

// Type implements Msg.
func (*BlobWrite) Type() Type { return TypeBlobWrite }

// Type implements Msg.
func (*BlobWritten) Type() Type { return TypeBlobWritten }

// Type implements Msg.
func (*BlobRead) Type() Type { return TypeBlobRead }

// Type implements Msg.
func (*BlobPart) Type() Type { return TypeBlobPart }

// Type implements Msg.
func (*Stats) Type() Type { return TypeStats }

// Type implements Msg.
func (*Print) Type() Type { return TypePrint }

// Type implements Msg.
func (*Printed) Type() Type { return TypePrinted }

// Child submits a workunit on behalf of a running one (worker → tracker):
// a child of the workunit Parent, whose lease Token the sending
// connection holds. The tracker checks the lease, then handles it as a
// Submit of the master whose submission made the parent run: the same
// memo scope, realm and quota. It answers with Accepted (Req), and with
// Finished (Req) when Watch is set, as for a Submit; a connection that
// does not hold the lease gets an Error (code forbidden).
type Child struct {
	Req uint64
	// Parent is the running workunit's key, Token its lease's token.
	Parent workunit.Key
	Token  uint64
	// Spec, Options and Watch are as in Submit.
	Spec    []byte
	Options workunit.Options
	Watch   bool
}

func (m *Child) fields(c codec) {
	c.req(&m.Req)
	c.key("parent", &m.Parent)
	c.uint("token", &m.Token)
	c.bytes("spec", &m.Spec, specLimit)
	c.bool("no-cache", &m.Options.NoCache)
	c.count("gpus", &m.Options.GPUs)
	c.millis("timeout", &m.Options.Timeout)
	c.bool("watch", &m.Watch)
	c.count("retries", &m.Options.Retries)
	c.texts("retry-on", &m.Options.RetryOn)
}

// Wait says that a running workunit waits for its children, or runs
// again (worker → tracker): while Waiting, its lease Token does not count
// in the worker's window, so that the tracker may give the worker other
// work in its place (a child among them), and its lease has no deadline.
// Not answered; a Wait for a lease the connection does not hold is
// ignored.
type Wait struct {
	Key     workunit.Key
	Token   uint64
	Waiting bool
}

func (m *Wait) fields(c codec) {
	c.key("key", &m.Key)
	c.uint("token", &m.Token)
	c.bool("waiting", &m.Waiting)
}

// Type implements Msg.
func (*Child) Type() Type { return TypeChild }

// Type implements Msg.
func (*Wait) Type() Type { return TypeWait }
