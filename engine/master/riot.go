package master

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/engine"
	"github.com/riot-go/riot/engine/capture"
	"github.com/riot-go/riot/engine/internal/inspect"
	"github.com/riot-go/riot/engine/internal/jsvalue"
	"github.com/riot-go/riot/units"
	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// masterPrelude defines what is easier to write in JavaScript: the
// WorkunitError class.
const masterPrelude = `(function (riot) {
	class WorkunitError extends Error {
		constructor(message, props) {
			super(message, props && props.cause !== undefined ? { cause: props.cause } : undefined);
			Object.defineProperty(this, 'name', { value: 'WorkunitError', writable: true, configurable: true });
			if (props) {
				this.workunit = props.workunit;
				this.worker = props.worker;
				this.kind = props.kind;
				if (props.attempts !== undefined) this.attempts = props.attempts;
			}
		}
	}
	Object.defineProperty(riot, 'WorkunitError', { value: WorkunitError, enumerable: true });
})`

// install installs the master's riot object (docs/reference.md), require
// and the capture hook that the instrumented script calls.
func (m *master) install(sb *engine.Sandbox) error {
	m.sb, m.rt, m.in = sb, sb.Runtime(), sb.Intrinsics()
	rt := m.rt
	if err := rt.Set(capture.DefaultHook, m.hook(0)); err != nil {
		return err
	}
	if err := sb.SetFuncs(rt.GlobalObject(), []engine.Func{{Name: "require", Fn: m.requireFrom(filepath.Dir(m.opts.Path))}}); err != nil {
		return err
	}
	riot := rt.NewObject()
	args := make([]any, len(m.opts.Args))
	for i, a := range m.opts.Args {
		args[i] = a
	}
	argv := rt.NewArray(args...)
	if _, err := m.in.ObjectFreeze(goja.Undefined(), argv); err != nil {
		return err
	}
	if err := riot.Set("args", argv); err != nil {
		return err
	}
	if err := sb.SetFuncs(riot, []engine.Func{
		{Name: "connect", Fn: m.connect},
		{Name: "connectToTracker", Fn: m.connectToTracker},
		{Name: "currentClient", Fn: m.currentClient},
		{Name: "readFile", Fn: m.readFile},
		{Name: "readLines", Fn: m.readLines},
		{Name: "writeFile", Fn: m.writeFile},
		{Name: "waitUntilDone", Fn: m.waitUntilDone},
		{Name: "callWhenDone", Fn: m.callWhenDone},
		{Name: "cancel", Fn: m.cancel},
		{Name: "with", Fn: m.with},
	}); err != nil {
		return err
	}
	if err := m.setSubmitters(riot, workunit.Options{}); err != nil {
		return err
	}
	pre, err := rt.RunScript(jsvalue.InternalFile, masterPrelude)
	if err != nil {
		return err
	}
	define, _ := goja.AssertFunction(pre)
	if _, err := define(goja.Undefined(), riot); err != nil {
		return err
	}
	return rt.Set("riot", riot)
}

// setSubmitters puts doWork, forWork, doWorkCall and doWorkEval on obj,
// submitting with opts, and their await-able forms, run, map, runCall and
// runEval, with result (promise.go).
func (m *master) setSubmitters(obj *goja.Object, opts workunit.Options) error {
	return m.sb.SetFuncs(obj, []engine.Func{
		{Name: "doWork", Fn: func(c goja.FunctionCall) goja.Value { return m.doWork(c, opts) }},
		{Name: "forWork", Fn: func(c goja.FunctionCall) goja.Value { return m.forWork(c, opts) }},
		{Name: "doWorkCall", Fn: func(c goja.FunctionCall) goja.Value { return m.doWorkCall(c, opts) }},
		{Name: "doWorkEval", Fn: func(c goja.FunctionCall) goja.Value { return m.doWorkEval(c, opts) }},
		{Name: "run", Fn: func(c goja.FunctionCall) goja.Value { return m.run1("riot.run", c, opts, m.submitFn) }},
		{Name: "runCall", Fn: func(c goja.FunctionCall) goja.Value { return m.run1("riot.runCall", c, opts, m.submitCall) }},
		{Name: "runEval", Fn: func(c goja.FunctionCall) goja.Value { return m.run1("riot.runEval", c, opts, m.submitEval) }},
		{Name: "map", Fn: func(c goja.FunctionCall) goja.Value { return m.mapWork(c, opts) }},
		{Name: "result", Fn: m.resultPromise},
	})
}

// hook returns the capture hook of script k (capture.DefaultHook for the
// job script): it records, on each function the script creates, the
// script, the function's id and the getter of its free variables, under a
// private symbol.
func (m *master) hook(k int) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value { return m.register(k, call) }
}

func (m *master) register(k int, call goja.FunctionCall) goja.Value {
	val := call.Argument(2)
	target, ok := val.(*goja.Object)
	if !ok {
		return val
	}
	for _, p := range call.Arguments[3:] {
		next, ok := target.Get(p.String()).(*goja.Object)
		if !ok {
			return val
		}
		target = next
	}
	reg := m.rt.NewArray(k, call.Argument(0), call.Argument(1))
	_ = target.DefineDataPropertySymbol(regSym, reg, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return val
}

// captureFunc gives the encoder a function's source and the current values
// of its free variables.
func (m *master) captureFunc(fn *goja.Object) (*jsvalue.CapturedFunc, error) {
	regv := fn.GetSymbol(regSym)
	reg, ok := regv.(*goja.Object)
	if !ok {
		name := inspect.SafeString(fn.Get("name"))
		if name == "" {
			name = "(anonymous)"
		}
		return nil, fmt.Errorf("function %s cannot be sent to a worker: only the job script's own functions can be, "+
			"and not all of them (not built-in, bound or eval-made functions, nor getters, setters, private methods "+
			"or methods with computed keys: pass a plain function or arrow function instead)", name)
	}
	k, id, ok := m.registration(reg)
	if !ok {
		return nil, fmt.Errorf("function registration %d/%d is out of range", k, id)
	}
	f := &m.scripts[k].Funcs[id]
	if !f.Shippable {
		return nil, fmt.Errorf("%s cannot be sent to a worker: %s", m.describeFunc(k, id), f.Reason)
	}
	var vals []goja.Value
	if g, ok := goja.AssertFunction(reg.Get("2")); ok {
		arr, err := g(goja.Undefined())
		if err != nil {
			var ex *goja.Exception
			if errors.As(err, &ex) {
				return nil, fmt.Errorf("%s uses a free variable before it is defined: %s", m.describeFunc(k, id), inspect.SafeString(ex.Value()))
			}
			return nil, err
		}
		ao := arr.(*goja.Object)
		vals = make([]goja.Value, len(f.Free))
		for i := range vals {
			vals[i] = ao.Get(jsvalue.Index(i))
		}
	}
	col := f.Column - f.HeaderLen
	if col < 1 {
		col = 1
	}
	return &jsvalue.CapturedFunc{Source: f.Source, Names: f.Free, Values: vals, File: m.scripts[k].File, Line: f.Line, Column: col, Strict: f.Strict}, nil
}

// registration reads a registration: the script's index and the
// function's id in it.
func (m *master) registration(reg *goja.Object) (k, id int, ok bool) {
	k, id = int(reg.Get("0").ToInteger()), int(reg.Get("1").ToInteger())
	ok = k >= 0 && k < len(m.scripts) && id >= 0 && id < len(m.scripts[k].Funcs)
	return k, id, ok
}

// MinBlobBytes is the smallest encoded value a master sends as a blob:
// one sent this many times or more over, counting every workunit that
// carries it, is cheaper uploaded once and fetched once per worker.
const MinBlobBytes = 1 << 10

// blobFor implements the encoder's blob hook: a value is sent as a blob,
// once, when its encoding reaches the threshold, or when it reaches
// MinBlobBytes and the bytes it would take inside every workunit that
// carries it (this forWork's items, earlier workunits of the script) reach
// the threshold. The same object sent again at the same size reuses its
// blob.
func (m *master) blobFor(o *goja.Object) (blob.Hash, bool, error) {
	size, ok := m.sizeOf(o)
	if !ok {
		return blob.Hash{}, false, nil
	}
	ent, seen := m.blobIDs[o]
	if seen && ent.size == size && !ent.hash.IsZero() {
		if ent.epoch == m.epoch || m.unchanged(o, ent) {
			ent.epoch = m.epoch
			m.blobIDs[o] = ent
			return ent.hash, true, nil
		}
		seen = false // changed in place: a new blob
	}
	var data blob.Parts
	if !seen || ent.size != size {
		var err error
		if data, err = m.encodeBlob(o); err != nil {
			return blob.Hash{}, false, err
		}
		ent = blobEntry{size: size, bytes: data.Len()}
	}
	ent.sends += m.copies
	if ent.bytes < MinBlobBytes || (ent.bytes < m.opts.BlobThreshold && ent.bytes*ent.sends < m.opts.BlobThreshold) {
		if len(m.blobIDs) >= maxBlobEntries {
			clear(m.blobIDs) // forget, rather than keep every object ever sent alive
		}
		m.blobIDs[o] = ent
		return blob.Hash{}, false, nil
	}
	if data == nil {
		var err error
		if data, err = m.encodeBlob(o); err != nil {
			return blob.Hash{}, false, err
		}
	}
	if lim := m.valueLimit(); lim > 0 && data.Len() > lim {
		// The encoder puts the path in front: "… → free variable big: …".
		return blob.Hash{}, false, &jsvalue.UnsendableError{Msg: fmt.Sprintf("%s, over the tracker's limit on a value of %s (riotd --max-blob-bytes)",
			units.FormatBytes(int64(data.Len())), units.FormatSize(uint64(lim)))}
	}
	// Hashed from the buffer's own bytes, and uploaded from them (submit),
	// with no script code in between but what runs while the rest of the
	// workunit is encoded, which submit checks for (pendingBlob.ref).
	ent.hash = data.Sum()
	ent.epoch, ent.print = m.epoch, m.bufferPrint(o)
	p := &pendingBlob{parts: data, obj: o}
	if len(data) > 1 {
		p.ref, p.print = data[1], ent.print
	}
	m.pending[ent.hash] = p
	m.blobIDs[o] = ent
	return ent.hash, true, nil
}

// VerifyBlobBytes is the largest encoding of a container (an array, an
// object, a Map or a Set) that a master encodes again, each time it is
// sent in a later submission, to see whether the script changed it in
// place. A larger container sent again at the same size (element count)
// is taken as unchanged (docs/values.md). Buffers (typed arrays,
// ArrayBuffers, DataViews) are checked at any size, by a fast hash of
// their bytes.
const VerifyBlobBytes = 256 << 10

// unchanged reports whether o, which became blob ent.hash in an earlier
// submission, still holds what it held then.
func (m *master) unchanged(o *goja.Object, ent blobEntry) bool {
	if b, ok := m.bufferBytes(o); ok {
		return maphash.Bytes(m.printSeed, b) == ent.print
	}
	if ent.bytes > VerifyBlobBytes {
		return true
	}
	data, err := m.encodeBlob(o)
	return err == nil && data.Sum() == ent.hash
}

// bufferPrint returns a fast hash of o's bytes when o is a buffer (0
// otherwise).
func (m *master) bufferPrint(o *goja.Object) uint64 {
	if b, ok := m.bufferBytes(o); ok {
		return maphash.Bytes(m.printSeed, b)
	}
	return 0
}

// bufferBytes returns the bytes of the ArrayBuffer under o, when o is a
// typed array, a DataView or an ArrayBuffer.
func (m *master) bufferBytes(o *goja.Object) ([]byte, bool) {
	var buf goja.Value
	switch m.in.Classify(o) {
	case jsvalue.KindArrayBuffer:
		buf = o
	case jsvalue.KindTyped:
		buf, _ = m.in.TypedBuffer(o)
	case jsvalue.KindDataView:
		buf, _ = m.in.ViewBuffer(o)
	default:
		return nil, false
	}
	bo, ok := buf.(*goja.Object)
	if !ok {
		return nil, false
	}
	ab, ok := bo.Export().(goja.ArrayBuffer)
	if !ok {
		return nil, false
	}
	return ab.Bytes(), true
}

// encodeBlob encodes o as a document of its own, a blob's bytes, in
// parts (jsvalue.Encoder.EncodeParts): for a typed array, a DataView or an
// ArrayBuffer, a few bytes of the master's around the bytes of the
// script's ArrayBuffer itself, which are not copied; for any other value
// the encoder's buffer, which is the caller's (the encoder is not used
// again).
func (m *master) encodeBlob(o *goja.Object) (blob.Parts, error) {
	enc := jsvalue.NewEncoder(m.rt, m.in, jsvalue.EncodeOptions{Root: "value", Dest: "to a worker", Capture: m.captureFunc})
	return enc.EncodeParts(o)
}

// KeepBlobBytes is the largest blob of a value whose bytes a master keeps
// once a tracker holds it. A larger one is encoded again from its value
// when another tracker (riot.connect) needs it, so that a large value is
// in the master's memory once, as the script's own, and not twice. A
// buffer's blob is kept at any size: its bytes are the buffer's own.
const KeepBlobBytes = 1 << 20

// describeValue names o's kind for an error: its class for a typed array,
// as jsvalue.Describe does otherwise.
func (m *master) describeValue(o *goja.Object) string {
	if name, ok := m.in.TypedName(o); ok {
		return "a " + name
	}
	return jsvalue.Describe(o)
}

// collectBytes is the size of encodings dropped at once (KeepBlobBytes)
// from which a master collects garbage at once, to use their memory again.
const collectBytes = 64 << 20

// pendingBlob is a blob a master made: its bytes, and the value they
// encode (nil for a module's blob, whose bytes are always kept). Bytes
// that are the master's own encoding are dropped once uploaded when larger
// than KeepBlobBytes (parts nil); bytes that are a buffer's, by
// reference (ref), are kept, as they cost nothing.
type pendingBlob struct {
	parts blob.Parts
	obj   *goja.Object
	// ref is the script's ArrayBuffer bytes among parts, nil when the
	// parts are all the master's own; print is their fast hash (as
	// bufferPrint) when they were hashed for the blob.
	ref   []byte
	print uint64
}

// blobBytes returns the bytes of blob h, encoding its value again when
// they were dropped. A value changed since it was sent (the same size, so
// the master took it for the same value: blobFor) no longer encodes to h,
// and is an error: the workunits that refer to h need h's bytes.
//
// Bytes that are the script's buffer, by reference, are checked (by their
// fast hash, a pass over memory much quicker than SHA-256) against what
// they were when hashed: script code that ran since, a getter of a later
// argument say, may have written to the buffer, and the blob must be the
// bytes its hash names. That is an error too: nothing kept the bytes as
// they were.
func (m *master) blobBytes(op string, h blob.Hash) blob.Parts {
	p, ok := m.pending[h]
	if !ok {
		m.sb.Throw("Error", "%s: blob %s is missing on the master", op, h.Short())
	}
	if p.parts != nil {
		if p.ref != nil && maphash.Bytes(m.printSeed, p.ref) != p.print {
			m.sb.Throw("Error", "%s: blob %s: its value (%s of %s) changed after it was encoded for this workunit and before it was uploaded (script code that ran while the workunit was being made, a getter say, wrote to it); a large buffer is sent from its own bytes, not a copy: change it before or after the call, or send a copy",
				op, h.Short(), m.describeValue(p.obj), units.FormatBytes(int64(len(p.ref))))
		}
		return p.parts
	}
	data, err := m.encodeBlob(p.obj)
	if err != nil {
		m.sb.Throw("Error", "%s: blob %s: encoding its value again for this tracker: %v", op, h.Short(), err)
	}
	if sum := data.Sum(); sum != h {
		m.sb.Throw("Error", "%s: blob %s: its value (%s) changed since it was first sent, and it is too large (%s) for the master to have kept its bytes; send the changed value as a new object (a copy), or send it to this tracker before changing it",
			op, h.Short(), m.describeValue(p.obj), units.FormatBytes(int64(data.Len())))
	}
	return data
}

// valueLimit returns the most bytes the tracker takes for one value sent
// as a blob (riotd --max-blob-bytes), when the connection tells it (a
// Conn with a MaxBlobBytes method); 0 when it does not.
func (m *master) valueLimit() int {
	if m.client == nil || m.client.conn == nil {
		return 0
	}
	if l, ok := m.client.conn.(interface{ MaxBlobBytes() int }); ok {
		return l.MaxBlobBytes()
	}
	return 0
}

// maxBlobEntries bounds what a master remembers of the objects it sent.
const maxBlobEntries = 1 << 16

// sizeOf returns a cheap measure of a value's size, which changes when
// the value grows or shrinks, and whether it may be large enough to be a
// blob: element counts of containers, byte counts of buffers.
func (m *master) sizeOf(o *goja.Object) (int64, bool) {
	in := m.in
	var n, bytes int64
	switch in.Classify(o) {
	case jsvalue.KindArray:
		n = o.Get("length").ToInteger()
		bytes = 2 * n
	case jsvalue.KindPlain:
		n = int64(len(o.Keys()))
		bytes = 4 * n
	case jsvalue.KindMap, jsvalue.KindSet:
		n = o.Get("size").ToInteger()
		bytes = 2 * n
	case jsvalue.KindTyped:
		v, _ := in.TypedLength(o)
		n = v.ToInteger()
		bytes = n
	case jsvalue.KindArrayBuffer:
		n = int64(len(o.Export().(goja.ArrayBuffer).Bytes()))
		bytes = n
	case jsvalue.KindDataView:
		v, _ := in.ViewLength(o)
		n = v.ToInteger()
		bytes = n
	default:
		return 0, false
	}
	return n, bytes >= MinBlobBytes/4
}

// encoder returns an encoder for workunit payloads: functions by capture,
// large values as blobs.
func (m *master) encoder() *jsvalue.Encoder {
	// Script code may have run since the last submission: the values it
	// sent may have changed (blobFor checks them again).
	m.epoch++
	return jsvalue.NewEncoder(m.rt, m.in, jsvalue.EncodeOptions{Root: "args", Dest: "to a worker", Capture: m.captureFunc, Blob: m.blobFor})
}

// encodeError makes an encoding error read well: where, then why.
func (m *master) encodeError(op, root string, err error) error {
	var u *jsvalue.UnsendableError
	if errors.As(err, &u) {
		path := u.Path(root)
		path = freeVariableStep.ReplaceAllString(path, " → free variable $1")
		if rest, ok := strings.CutPrefix(u.Msg, root+" "); ok && path == root {
			// The message names the root function already.
			return fmt.Errorf("%s: %s %s", op, root, rest)
		}
		return fmt.Errorf("%s: %s: %s", op, path, u.Msg)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// freeVariableStep matches the encoder's path step into a captured
// function's free variable.
var freeVariableStep = regexp.MustCompile(`\(free variable ([^)]*)\)`)

// fnSpec builds the spec of a fn workunit: the function, then the
// arguments, in one document.
func (m *master) fnSpec(op string, fn *goja.Object, args []goja.Value) (*workunit.Spec, error) {
	enc := m.encoder()
	enc.BeginArgs(1 + len(args))
	if err := enc.Encode(fn); err != nil {
		return nil, m.encodeError(op, m.fnName(fn), err)
	}
	for i, a := range args {
		if err := enc.ValueOrBlob(a); err != nil {
			return nil, m.encodeError(op, "args["+jsvalue.Index(i)+"]", err)
		}
	}
	return &workunit.Spec{Kind: workunit.Fn, Name: m.scripts[0].File, Payload: append([]byte(nil), enc.Bytes()...), Blobs: append([]blob.Hash(nil), enc.Blobs()...)}, nil
}

func (m *master) fnName(fn *goja.Object) string {
	if reg, ok := fn.GetSymbol(regSym).(*goja.Object); ok {
		if k, id, ok := m.registration(reg); ok {
			return m.describeFunc(k, id)
		}
	}
	return "the function"
}

func (m *master) argFunction(op string, v goja.Value) *goja.Object {
	o, ok := v.(*goja.Object)
	if ok {
		if _, ok := goja.AssertFunction(o); ok {
			return o
		}
	}
	m.sb.Throw("TypeError", "%s: the workunit must be a function; it is %s", op, jsvalue.Describe(v))
	return nil
}

func (m *master) conn(op string) Conn {
	if m.client == nil || m.client.conn == nil {
		m.sb.Throw("Error", "%s: not connected to a tracker (run the script with riot-worker eval, which starts one, or call riot.connect(host))", op)
	}
	return m.client.conn
}

// submit sends specs through c after uploading the blobs they need, waits
// for the tracker's acknowledgements and returns the submissions, which
// m.subs remembers by key so that waiting on one later asks the tracker
// nothing. Outcomes are reported to Events as they come.
func (m *master) submit(op string, c Conn, specs []*workunit.Spec, opts workunit.Options) []Submission {
	subs, _ := m.submitN(op, c, len(specs), func(i int) *workunit.Spec { return specs[i] }, opts, true)
	return subs
}

// submitN is submit of the n specs that spec returns, each called for as
// it is sent: a forWork's specs need not all exist at once. With byKey,
// m.subs remembers them and Events hears that n were submitted; without,
// their entries are returned instead, to a forWindow, which waits on each
// itself (the script never sees their keys; m.subs was a map entry per
// item) and told Events of all its items before the first window.
func (m *master) submitN(op string, c Conn, n int, spec func(i int) *workunit.Spec, opts workunit.Options, byKey bool) ([]Submission, []subEntry) {
	up := m.uploadFor(op, c, n, spec)
	uc, _ := c.(UploadingConn)
	var upload func(context.Context, []blob.Hash) error
	if uc != nil {
		upload = m.uploader(op, c)
	}
	subs := make([]Submission, n)
	for i := range subs {
		subs[i] = submitOne(c, uc, spec(i), opts, upload)
	}
	if byKey && m.opts.Events != nil {
		m.opts.Events.Submitted(n)
	}
	m.accept(op, c, up, subs, spec, opts, uc != nil)
	var entries []subEntry
	if !byKey {
		entries = make([]subEntry, n)
	}
	// One allocation for all, not one per workunit.
	reported := make([]sync.Once, n)
	for i, sub := range subs {
		r := &reported[i]
		e := subEntry{sub: sub, conn: c, reported: r}
		if byKey {
			m.subs[sub.Key()] = e
		} else {
			entries[i] = e
		}
		if m.opts.Events != nil {
			// Events need the status and console, not the value: a large
			// result is not fetched for them. The callback holds only its
			// Once (a forWork of a million items holds a million of them
			// until their workunits finish: 24 bytes each, not the 64 of
			// one that holds the whole entry). Only once accepted: a
			// submission refused and made again (accept) ended with an
			// error that is not the workunit's.
			sub.OnFinished(func(o *workunit.Outcome) { m.reportAt(r, o) })
		}
	}
	return subs, entries
}

// uploadFor makes sure that c's tracker holds the blobs the n specs
// spec(i) name, uploading those the master did not upload through c, and
// returns what it did upload through c.
func (m *master) uploadFor(op string, c Conn, n int, spec func(i int) *workunit.Spec) map[blob.Hash]bool {
	up := m.uploaded[c]
	if up == nil {
		up = make(map[blob.Hash]bool)
		m.uploaded[c] = up
	}
	need := make(map[blob.Hash]blob.Parts)
	for i := range n {
		for _, h := range spec(i).Blobs {
			if _, ok := need[h]; !ok && !up[h] {
				// Once a blob: for a value whose encoding was dropped,
				// blobBytes encodes it again.
				need[h] = m.blobBytes(op, h)
			}
		}
	}
	m.upload(op, c, up, need)
	return up
}

// submitOne submits spec through c; one that names blobs through uc,
// when c is one, to upload them again with upload should the tracker lack
// one.
func submitOne(c Conn, uc UploadingConn, spec *workunit.Spec, opts workunit.Options, upload func(context.Context, []blob.Hash) error) Submission {
	if uc != nil && len(spec.Blobs) > 0 {
		return uc.SubmitUploading(spec, opts, upload)
	}
	return c.Submit(spec, opts)
}

// upload makes sure that c's tracker holds the blobs need (by hash, with
// their bytes from blobBytes), uploading those it lacks, and notes them in
// up, what the master uploaded through c. It throws what the upload
// fails with.
func (m *master) upload(op string, c Conn, up map[blob.Hash]bool, need map[blob.Hash]blob.Parts) {
	if len(need) == 0 {
		return
	}
	// No script code runs until this returns: the buffers whose bytes
	// go by reference stay as they were hashed (blobBytes checked).
	if err := c.EnsureBlobParts(m.ctx, need); err != nil {
		name := "Error"
		if errors.Is(err, wire.ErrMemoryFull) {
			name = "TrackerMemoryFullError" // as for a refused submission: a script can tell it apart
		}
		m.sb.Throw(name, "%s: uploading %d blobs: %v", op, len(need), err)
	}
	dropped := 0
	for h, data := range need {
		up[h] = true
		if p := m.pending[h]; p.obj != nil && p.ref == nil && data.Len() > KeepBlobBytes {
			p.parts = nil // the value is the script's: encoded again if needed
			dropped += data.Len()
		}
	}
	clear(need)
	if dropped >= collectBytes {
		// The heap was the value and its encoding. Without a collection
		// now it would grow to twice that (GOGC) before the memory is
		// used again, for a result the size of the value, say; and
		// the memory collected goes back to the system, as small
		// allocations in it would keep a large one from using it.
		debug.FreeOSMemory()
	}
}

// maxReuploads bounds the rounds in which a submission's blobs are
// uploaded again because the tracker no longer held them (accept).
const maxReuploads = 3

// accept waits for the tracker's acknowledgement of each of subs, made
// through c from spec(i) with opts, and throws the first refusal. A
// refusal because the tracker does not hold a blob the spec names
// (unknown-blob: a riotd --memory frees a blob --blob-grace after nothing
// names it, and loses every blob when it restarts) is not the script's
// concern: the master forgets that it uploaded the spec's blobs, uploads
// them again (their bytes from blobBytes, which encodes a value again
// when it dropped its encoding, here, on the script's goroutine, as for
// another tracker) and submits again, replacing subs[i], at most
// maxReuploads times for one workunit. When uploading, c is an
// UploadingConn, which did that already (serveUploads made the bytes):
// a refusal is final.
func (m *master) accept(op string, c Conn, up map[blob.Hash]bool, subs []Submission, spec func(i int) *workunit.Spec, opts workunit.Options, uploading bool) {
	var refused []int
	var errs []error
	wait := func(i int) {
		var err error
		for {
			ctx := m.waitContext()
			if _, err = subs[i].Accepted(ctx); !m.interrupted(ctx, err) {
				break
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, wire.ErrUnknownBlob):
			refused = append(refused, i)
			errs = append(errs, err)
		default:
			name := "Error"
			if errors.Is(err, wire.ErrMemoryFull) {
				name = "TrackerMemoryFullError" // a script can tell it apart, and retry later
			}
			m.sb.Throw(name, "%s: the tracker refused workunit %s: %v", op, subs[i].Key().Short(), err)
		}
	}
	for i := range subs {
		wait(i)
	}
	for round := 1; len(refused) > 0; round++ {
		if uploading {
			// The connection uploaded again, maxReuploads times at most, or
			// could not (its error says why).
			i := refused[0]
			m.sb.Throw("Error", "%s: the tracker refused workunit %s because it does not hold a blob the workunit names (%s), and uploading its blobs again did not help: %v. "+
				"A riotd --memory frees a blob --blob-grace after no workunit and no connection names it, and loses every blob when it restarts: "+
				"check that riotd is not restarting over and over, or give it a longer --blob-grace",
				op, subs[i].Key().Short(), shortHashes(spec(i).Blobs), errs[0])
		}
		if round > maxReuploads {
			i := refused[0]
			m.sb.Throw("Error", "%s: the tracker refused workunit %s %d times because it does not hold a blob the workunit names (%s), though the master uploaded its blobs again each time: %v. "+
				"A riotd --memory frees a blob --blob-grace after no workunit and no connection names it, and loses every blob when it restarts: "+
				"check that riotd is not restarting over and over, or give it a longer --blob-grace",
				op, subs[i].Key().Short(), maxReuploads+1, shortHashes(spec(i).Blobs), errs[0])
		}
		again := refused
		refused, errs = nil, nil
		need := make(map[blob.Hash]blob.Parts)
		for _, i := range again {
			for _, h := range spec(i).Blobs {
				if _, ok := need[h]; !ok {
					delete(up, h)
					need[h] = m.blobBytes(op, h)
				}
			}
		}
		m.opts.Logger.Info("master: the tracker does not hold blobs that workunits name; uploading them again",
			"op", op, "workunits", len(again), "blobs", len(need), "round", round)
		m.upload(op, c, up, need)
		for _, i := range again {
			subs[i] = c.Submit(spec(i), opts) // c is no UploadingConn here
		}
		for _, i := range again {
			wait(i)
		}
	}
}

// shortHashes lists hashes, short, for a message.
func shortHashes(hs []blob.Hash) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = h.Short()
	}
	return strings.Join(s, ", ")
}

// subEntry is a workunit this script submitted, and the connection it went
// through.
type subEntry struct {
	sub  Submission
	conn Conn
	// reported gives its outcome to Events once: on the script's
	// goroutine when it takes the result, or on the connection's when
	// that comes first (a workunit nobody waits for). A second caller
	// waits until the first has done it.
	reported *sync.Once
}

// reportOnce gives Events a submission's outcome, once.
func (m *master) reportOnce(e subEntry, o *workunit.Outcome) { m.reportAt(e.reported, o) }

// reportAt gives Events a submission's outcome once, by its Once.
func (m *master) reportAt(once *sync.Once, o *workunit.Outcome) {
	if m.opts.Events != nil {
		once.Do(func() { m.report(o) })
	}
}

// wait returns the outcome of key: from the script's own submission when
// it made one through c, else from the tracker.
func (m *master) wait(c Conn, key workunit.Key) (*workunit.Outcome, error) {
	for {
		ctx := m.waitContext()
		var o *workunit.Outcome
		var err error
		if e, ok := m.subs[key]; ok && e.conn == c {
			o, err = e.sub.Wait(ctx)
		} else {
			o, err = c.Wait(ctx, key)
		}
		if !m.interrupted(ctx, err) {
			return o, err
		}
	}
}

// onFinished calls fn when key is finished, as wait finds it.
func (m *master) onFinished(c Conn, key workunit.Key, fn func(*workunit.Outcome)) {
	if e, ok := m.subs[key]; ok && e.conn == c {
		e.sub.OnDone(fn)
		return
	}
	c.OnFinished(key, fn)
}

// shownKeys remembers the keys whose console output was shown, so that a
// workunit submitted twice shows it once. report runs on connection
// goroutines, hence the lock.
type shownKeys struct {
	mu   sync.Mutex
	keys map[workunit.Key]bool
}

func (m *master) report(o *workunit.Outcome) {
	if len(o.Console) > 0 {
		m.shown.mu.Lock()
		if m.shown.keys == nil {
			m.shown.keys = make(map[workunit.Key]bool)
		}
		if m.shown.keys[o.Key] {
			c := *o
			c.Console = nil
			o = &c
		}
		m.shown.keys[o.Key] = true
		m.shown.mu.Unlock()
	}
	m.opts.Events.Finished(o)
}

// doWork implements riot.doWork(fn, ...args): it returns the workunit's id
// once the tracker has it.
func (m *master) doWork(call goja.FunctionCall, opts workunit.Options) goja.Value {
	_, key := m.submitFn("riot.doWork", call, opts)
	return m.rt.ToValue(key.String())
}

// submitFn submits the fn workunit of riot.doWork(fn, ...args) (and of
// riot.run), and returns the connection and its key once the tracker has
// it.
func (m *master) submitFn(op string, call goja.FunctionCall, opts workunit.Options) (Conn, workunit.Key) {
	fn := m.argFunction(op, call.Argument(0))
	var args []goja.Value
	if len(call.Arguments) > 1 {
		args = call.Arguments[1:]
	}
	spec, err := m.fnSpec(op, fn, args)
	if err != nil {
		m.sb.Throw("DataCloneError", "%v", err)
	}
	c := m.conn(op)
	subs := m.submit(op, c, []*workunit.Spec{spec}, opts)
	return c, subs[0].Key()
}

// forWork implements riot.forWork(iterable, fn[, options]): one workunit
// per item, fn(item, index), results in order. Its items are submitted in
// windows (forWindow), at most ScriptOptions.ForWorkWindow outstanding.
func (m *master) forWork(call goja.FunctionCall, opts workunit.Options) goja.Value {
	const op = "riot.forWork"
	fw := m.itemWindow(op, call, opts)
	defer fw.close()
	results := make([]any, fw.n)
	for i := range fw.n {
		fw.fill(i)
		e := fw.at(i)
		key := e.sub.Key()
		var o *workunit.Outcome
		var err error
		for {
			ctx := m.waitContext()
			if o, err = e.sub.Wait(ctx); !m.interrupted(ctx, err) {
				break
			}
		}
		if err != nil {
			m.sb.Throw("Error", "%s: workunit %s: %v", op, key.Short(), err)
		}
		// Before the script goes on: its workunits' console output shows
		// before what the script prints next.
		m.reportOnce(*e, o)
		var v goja.Value
		if ex := m.rt.Try(func() { v = m.outcomeValue(op, fw.c, key, o) }); ex != nil {
			fw.failed() // the others go on running, as when all were submitted at once
			panic(ex)
		}
		results[i] = v
		// The result is in results: the submission, and the outcome it
		// keeps, can go.
		*e = subEntry{}
	}
	return m.rt.NewArray(results...)
}

// itemWindow encodes the items of riot.forWork(iterable, fn[, options])
// (or riot.map's) and uploads their blobs, before any is submitted (an
// item that cannot be sent, or an upload the tracker refuses, fails the
// call with nothing submitted); Events hears of them all at once, for a
// progress bar's total. The window submits them.
func (m *master) itemWindow(op string, call goja.FunctionCall, opts workunit.Options) *forWindow {
	c, n, spec, opts := m.itemSpecs(op, call, opts)
	m.uploadFor(op, c, n, spec)
	if m.opts.Events != nil {
		m.opts.Events.Submitted(n)
	}
	fw := &forWindow{m: m, op: op, c: c, n: n, spec: spec, opts: opts,
		ring: make([]subEntry, min(n, m.opts.ForWorkWindow))}
	if m.windows == nil {
		m.windows = make(map[*forWindow]struct{})
	}
	m.windows[fw] = struct{}{}
	return fw
}

// forWindow submits a forWork's (or a map's) n items, spec(i) each, in
// windows: once the script waits on item i, items up to i+len(ring) are
// submitted, in chunks of half the ring so that the tracker's
// acknowledgements are waited for once a chunk. Item j's submission is
// at(j) from its submission until the script took its result. A million
// items held a Call, a watch and a submission each, in the client, the
// tracker and the master, until all were done: most of what a forWork
// over small items held (docs/benchmarks.md).
type forWindow struct {
	m    *master
	op   string
	c    Conn
	n    int
	spec func(int) *workunit.Spec
	opts workunit.Options
	ring []subEntry
	next int // items submitted
	// onSubmit, when set, hears of each item submitted, with its entry
	// (riot.map waits on each through it); not for those of rest.
	onSubmit func(i int, e subEntry)
}

// at returns item i's entry, which fill submitted.
func (fw *forWindow) at(i int) *subEntry { return &fw.ring[i%len(fw.ring)] }

// fill submits what the window holds while item i is waited on.
func (fw *forWindow) fill(i int) {
	w := len(fw.ring)
	if fw.next == fw.n || fw.next-i > w/2 {
		return
	}
	lo, hi := fw.next, min(fw.n, i+w)
	entries := fw.submit(lo, hi)
	fw.next = hi
	for j, e := range entries {
		fw.ring[(lo+j)%w] = e
		if fw.onSubmit != nil {
			fw.onSubmit(lo+j, e)
		}
	}
}

// failed is an item's failure (its WorkunitError, a result that does not
// decode): the items not yet submitted are, so that the others go on
// running as when all were submitted at once, before the failure goes to
// the script. Should they be refused (a tracker whose memory is full),
// the item's failure still goes to the script, and the refusal to the
// log.
func (fw *forWindow) failed() {
	if ex := fw.m.rt.Try(fw.rest); ex != nil {
		fw.m.opts.Logger.Warn("master: an item failed, and the items not yet submitted could not be",
			"op", fw.op, "items", fw.n, "submitted", fw.next, "err", ex.Value().String())
	}
}

// close takes back from Events the items that were never submitted (the
// call threw first: an interrupt, a lost connection, a refusal), which
// itemWindow announced: a progress bar's total, an interrupted job's
// count of unfinished workunits, are of the submitted ones.
func (fw *forWindow) close() {
	if fw.next < fw.n && fw.m.opts.Events != nil {
		fw.m.opts.Events.Submitted(fw.next - fw.n)
	}
	fw.n = fw.next
	delete(fw.m.windows, fw)
}

// rest submits the items not yet submitted, which nobody will wait on:
// their outcomes go to Events only.
func (fw *forWindow) rest() {
	if fw.next == fw.n {
		return
	}
	fw.submit(fw.next, fw.n)
	// Not before: refused (failed), they count as never submitted, which
	// close takes back (all of them, though the tracker may have taken
	// some before its refusal).
	fw.next = fw.n
}

// submit submits items lo to hi (not included) and returns their entries.
func (fw *forWindow) submit(lo, hi int) []subEntry {
	_, entries := fw.m.submitN(fw.op, fw.c, hi-lo, func(j int) *workunit.Spec { return fw.spec(lo + j) }, fw.opts, false)
	return entries
}

// itemSpecs encodes the items of riot.forWork(iterable, fn[, options])
// and returns the connection, how many specs, their maker and the
// options.
func (m *master) itemSpecs(op string, call goja.FunctionCall, opts workunit.Options) (Conn, int, func(int) *workunit.Spec, workunit.Options) {
	items := m.in.Items(m.rt, call.Argument(0))
	fn := m.argFunction(op, call.Argument(1))
	if o, ok := call.Argument(2).(*goja.Object); ok {
		opts = m.workOptions(op, o, opts)
	}
	c := m.conn(op)
	enc := m.encoder()
	enc.BeginArgs(3)
	// The function and what it captures go into every item's workunit.
	m.copies = max(len(items), 1)
	err := enc.Encode(fn)
	m.copies = 1
	if err != nil {
		m.sb.Throw("DataCloneError", "%v", m.encodeError(op, m.fnName(fn), err))
	}
	mark := enc.Mark()
	// Every item is encoded before any is submitted (an item that cannot
	// be sent fails the call, with nothing submitted), but into one
	// buffer: a Spec and a payload per item were most of what a forWork
	// over millions of small items held, and the client keeps each
	// spec's encoding anyway.
	all := itemSpecs{name: m.scripts[0].File, ends: make([]int, len(items))}
	for i, item := range items {
		enc.Rollback(mark)
		if err := enc.ValueOrBlob(item); err != nil {
			m.sb.Throw("DataCloneError", "%v", m.encodeError(op, "items["+jsvalue.Index(i)+"]", err))
		}
		enc.Int(int64(i))
		if i == 0 {
			// Items alike in size are the common case: room for all.
			all.buf = make([]byte, 0, min(len(items)*(len(enc.Bytes())+4), 1<<30))
		}
		all.buf = append(all.buf, enc.Bytes()...)
		all.ends[i] = len(all.buf)
		if b := enc.Blobs(); len(b) > 0 {
			if all.blobs == nil {
				all.blobs = make(map[int][]blob.Hash)
			}
			all.blobs[i] = append([]blob.Hash(nil), b...)
		}
	}
	return c, len(items), all.spec, opts
}

// itemSpecs are the specs of a forWork's items: their payloads one after
// another in buf, item i's ending at ends[i], and the blobs of those that
// refer to any.
type itemSpecs struct {
	name  string
	buf   []byte
	ends  []int
	blobs map[int][]blob.Hash
}

// spec returns item i's spec, made anew: the connection may keep it.
func (s *itemSpecs) spec(i int) *workunit.Spec {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return &workunit.Spec{Kind: workunit.Fn, Name: s.name, Payload: s.buf[start:s.ends[i]:s.ends[i]], Blobs: s.blobs[i]}
}

// doWorkEval implements riot.doWorkEval(source[, options]).
func (m *master) doWorkEval(call goja.FunctionCall, opts workunit.Options) goja.Value {
	_, key := m.submitEval("riot.doWorkEval", call, opts)
	return m.rt.ToValue(key.String())
}

// submitEval submits the workunit of riot.doWorkEval(source[, options])
// (and of riot.runEval).
func (m *master) submitEval(op string, call goja.FunctionCall, opts workunit.Options) (Conn, workunit.Key) {
	if !goja.IsString(call.Argument(0)) {
		m.sb.Throw("TypeError", "%s: the source must be a string; it is %s", op, jsvalue.Describe(call.Argument(0)))
	}
	if o, ok := call.Argument(1).(*goja.Object); ok {
		opts = m.workOptions(op, o, opts)
	}
	spec := &workunit.Spec{Kind: workunit.Eval, Source: call.Argument(0).String(), Name: "eval"}
	c := m.conn(op)
	return c, m.submit(op, c, []*workunit.Spec{spec}, opts)[0].Key()
}

// doWorkCall implements riot.doWorkCall(modulePath, exportName, ...args).
func (m *master) doWorkCall(call goja.FunctionCall, opts workunit.Options) goja.Value {
	_, key := m.submitCall("riot.doWorkCall", call, opts)
	return m.rt.ToValue(key.String())
}

// submitCall submits the workunit of riot.doWorkCall(modulePath,
// exportName, ...args) (and of riot.runCall).
func (m *master) submitCall(op string, call goja.FunctionCall, opts workunit.Options) (Conn, workunit.Key) {
	path := call.Argument(0)
	name := call.Argument(1)
	if !goja.IsString(path) || !goja.IsString(name) {
		m.sb.Throw("TypeError", "%s: give a module path and an export name, as strings", op)
	}
	mod, err := m.modules.Load(path.String())
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	for h, data := range mod.Blobs {
		if _, ok := m.pending[h]; !ok {
			m.pending[h] = &pendingBlob{parts: blob.Parts{data}}
		}
	}
	var args []goja.Value
	if len(call.Arguments) > 2 {
		args = call.Arguments[2:]
	}
	enc := m.encoder()
	enc.BeginArgs(len(args))
	for i, a := range args {
		if err := enc.ValueOrBlob(a); err != nil {
			m.sb.Throw("DataCloneError", "%v", m.encodeError(op, "args["+jsvalue.Index(i)+"]", err))
		}
	}
	blobs := append(append([]blob.Hash(nil), mod.All...), enc.Blobs()...)
	spec := &workunit.Spec{Kind: workunit.Call, Module: mod.Hash, Export: name.String(), Payload: append([]byte(nil), enc.Bytes()...), Blobs: blobs}
	c := m.conn(op)
	return c, m.submit(op, c, []*workunit.Spec{spec}, opts)[0].Key()
}

// with implements riot.with(options): the submitting functions with
// options such as {gpus: 1, noCache: true, timeout: '30s', retries: 3}.
func (m *master) with(call goja.FunctionCall) goja.Value {
	o, ok := call.Argument(0).(*goja.Object)
	if !ok {
		m.sb.Throw("TypeError", "riot.with: give an options object, such as {gpus: 1}")
	}
	opts := m.workOptions("riot.with", o, workunit.Options{})
	obj := m.rt.NewObject()
	if err := m.setSubmitters(obj, opts); err != nil {
		panic(err)
	}
	return obj
}

// workOptions reads {gpus, noCache, timeout, retries, retryOn} over base.
func (m *master) workOptions(op string, o *goja.Object, base workunit.Options) workunit.Options {
	for _, k := range o.Keys() {
		v := o.Get(k)
		switch k {
		case "gpus":
			n := v.ToInteger()
			if n < 0 || n > 64 {
				m.sb.Throw("RangeError", "%s: gpus must be between 0 and 64, not %s", op, v)
			}
			base.GPUs = int(n)
		case "noCache":
			base.NoCache = v.ToBoolean()
		case "timeout":
			base.Timeout = m.duration(op, v)
		case "retries":
			n := v.ToFloat()
			if n != math.Trunc(n) || n < 0 || n > workunit.MaxRetries {
				m.sb.Throw("RangeError", "%s: retries must be a whole number from 0 to %d (how many times to run a failed workunit again), not %s",
					op, workunit.MaxRetries, inspect.Inspect(m.rt, m.in, v, inspect.Options{}))
			}
			base.Retries = int(n)
		case "retryOn":
			base.RetryOn = m.retryOn(op, v)
		default:
			m.sb.Throw("TypeError", "%s: unknown option %q (options are gpus, noCache, timeout, retries and retryOn)", op, k)
		}
	}
	if len(base.RetryOn) > 0 && base.Retries == 0 {
		m.sb.Throw("TypeError", "%s: retryOn without retries: give retries too, such as {retries: 3, retryOn: [%q]}", op, base.RetryOn[0])
	}
	return base
}

// retryOn reads the retryOn option: an array of error names ('TypeError',
// 'TimeoutError') or error classes (TypeError, a class of the script's),
// which stand for their names.
func (m *master) retryOn(op string, v goja.Value) []string {
	o, ok := v.(*goja.Object)
	if !ok || m.in.Classify(o) != jsvalue.KindArray {
		m.sb.Throw("TypeError", "%s: retryOn must be an array of error names or classes, such as ['TypeError', 'TimeoutError']; it is %s", op, jsvalue.Describe(v))
	}
	n := o.Get("length").ToInteger()
	if n > workunit.MaxRetryOn {
		m.sb.Throw("RangeError", "%s: retryOn names %d errors; at most %d", op, n, workunit.MaxRetryOn)
	}
	names := make([]string, 0, n)
	for i := range n {
		e := o.Get(strconv.FormatInt(i, 10))
		var name string
		switch {
		case goja.IsString(e):
			name = e.String()
		default:
			if _, isFn := goja.AssertFunction(e); isFn {
				name = inspect.SafeString(e.(*goja.Object).Get("name"))
			}
		}
		if name == "" || len(name) > workunit.MaxRetryName {
			m.sb.Throw("TypeError", "%s: retryOn[%d] must be an error's name (a non-empty string of at most %d bytes) or an error class; it is %s",
				op, i, workunit.MaxRetryName, inspect.Inspect(m.rt, m.in, e, inspect.Options{}))
		}
		names = append(names, name)
	}
	return names
}

// duration reads a time limit: milliseconds as a number, or a Go duration
// string such as "30s"; 0 (the worker's default) to workunit.MaxTimeout.
func (m *master) duration(op string, v goja.Value) time.Duration {
	if goja.IsString(v) {
		d, err := time.ParseDuration(v.String())
		if err != nil {
			m.sb.Throw("TypeError", "%s: timeout %q: %v", op, v.String(), err)
		}
		if d < 0 || d > workunit.MaxTimeout {
			m.sb.Throw("RangeError", "%s: timeout %q is out of range (0 to %v)", op, v.String(), workunit.MaxTimeout)
		}
		return d
	}
	ms := v.ToFloat()
	if math.IsNaN(ms) || ms < 0 || ms > float64(workunit.MaxTimeout/time.Millisecond) {
		m.sb.Throw("RangeError", "%s: timeout %s ms is out of range (0 to %d ms, or a string such as \"30s\")",
			op, v.String(), workunit.MaxTimeout/time.Millisecond)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func (m *master) parseID(op string, v goja.Value) workunit.Key {
	k, err := workunit.ParseKey(v.String())
	if err != nil {
		m.sb.Throw("TypeError", "%s: %s is not a workunit id", op, inspect.Inspect(m.rt, m.in, v, inspect.Options{}))
	}
	return k
}

// waitUntilDone implements riot.waitUntilDone(id): the result, or a thrown
// WorkunitError that names the workunit and the worker.
func (m *master) waitUntilDone(call goja.FunctionCall) goja.Value {
	const op = "riot.waitUntilDone"
	return m.result(op, m.conn(op), m.parseID(op, call.Argument(0)))
}

func (m *master) result(op string, c Conn, key workunit.Key) goja.Value {
	o, err := m.wait(c, key)
	if err != nil {
		m.sb.Throw("Error", "%s: workunit %s: %v", op, key.Short(), err)
	}
	return m.outcome(op, c, key, o)
}

// outcome returns the result of a finished workunit, or throws its
// WorkunitError.
func (m *master) outcome(op string, c Conn, key workunit.Key, o *workunit.Outcome) goja.Value {
	if e, ok := m.subs[key]; ok && e.conn == c {
		// Before the script goes on: its workunits' console output shows
		// before what the script prints next.
		m.reportOnce(e, o)
	}
	return m.outcomeValue(op, c, key, o)
}

// outcomeValue is outcome once Events were told.
func (m *master) outcomeValue(op string, c Conn, key workunit.Key, o *workunit.Outcome) goja.Value {
	if o.Status == workunit.StatusError {
		panic(m.workunitError(key, o))
	}
	v, err := m.decodeResult(c, o)
	if err != nil {
		m.sb.Throw("Error", "%s: workunit %s: its result does not decode: %v", op, key.Short(), err)
	}
	return v
}

// decodeResult decodes a done workunit's result that came through c. One
// larger than c's limit on an inline result (a Conn with a MaxResultBytes
// method) came as a blob, fetched for this wait alone (client.Call.Wait):
// its typed arrays are made over the fetched bytes, not over copies, so
// that a large result is in the master's memory once.
func (m *master) decodeResult(c Conn, o *workunit.Outcome) (goja.Value, error) {
	if l, ok := c.(interface{ MaxResultBytes() int }); ok && l.MaxResultBytes() > 0 && len(o.Result) > l.MaxResultBytes() {
		return m.sb.DecodeOwned(o.Result)
	}
	return m.sb.Decode(o.Result)
}

// workunitError makes the WorkunitError thrown for a failed workunit: its
// message names the workunit and the worker, and its cause is the error the
// workunit threw, rebuilt with its name, message and stack.
func (m *master) workunitError(key workunit.Key, o *workunit.Outcome) *goja.Object {
	rt := m.rt
	werr := o.Err
	if werr == nil {
		werr = &workunit.Error{Kind: workunit.Internal, Name: "Error", Message: "the tracker gave no error"}
	}
	werr = m.mapError(werr)
	cause := m.rebuildError(werr)
	where := "workunit " + key.Short()
	worker := werr.Worker
	if worker == "" {
		worker = o.Worker
	}
	switch n := len(werr.Attempts); {
	case n > 1 && worker != "":
		where += fmt.Sprintf(" failed %d attempts, the last on worker %s", n, worker)
	case n > 1:
		where += fmt.Sprintf(" failed %d attempts", n)
	case worker != "":
		where += " failed on worker " + worker
	default:
		where += " failed"
	}
	msg := where + ": " + (&workunit.Error{Name: werr.Name, Message: werr.Message}).Error()
	props := rt.NewObject()
	if len(werr.Attempts) > 0 {
		as := make([]any, len(werr.Attempts))
		for i, a := range werr.Attempts {
			ao := rt.NewObject()
			_ = ao.Set("worker", a.Worker)
			_ = ao.Set("name", a.Name)
			_ = ao.Set("message", a.Message)
			as[i] = ao
		}
		_ = props.Set("attempts", rt.NewArray(as...))
	}
	_ = props.Set("cause", cause)
	_ = props.Set("workunit", key.String())
	_ = props.Set("worker", worker)
	_ = props.Set("kind", werr.Kind.String())
	ctor, _ := goja.AssertConstructor(rt.Get("riot").(*goja.Object).Get("WorkunitError"))
	e, err := ctor(nil, rt.ToValue(msg), props)
	if err != nil {
		panic(err)
	}
	w := *werr
	w.Key = key
	w.Worker = worker
	_ = e.DefineDataPropertySymbol(workErrSym, rt.ToValue(&w), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	return e
}

// rebuildError makes a JavaScript error from a workunit's: the same
// constructor when it is a built-in one, else an Error with that name.
func (m *master) rebuildError(werr *workunit.Error) goja.Value {
	if werr.Kind == workunit.Thrown && werr.Name == "" && werr.Value != nil {
		if v, err := m.sb.Decode(werr.Value); err == nil {
			return v
		}
	}
	ctor := m.in.ErrorCtors[werr.Name]
	if ctor == nil {
		ctor = m.in.ErrorCtors["Error"]
	}
	e, err := ctor(nil, m.rt.ToValue(werr.Message))
	if err != nil {
		panic(err)
	}
	if _, builtin := m.in.ErrorCtors[werr.Name]; !builtin && werr.Name != "" {
		_ = e.DefineDataProperty("name", m.rt.ToValue(werr.Name), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	if werr.Stack != "" {
		_ = e.DefineDataProperty("stack", m.rt.ToValue(werr.Stack), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return e
}

// cancel implements riot.cancel(id, ...) and riot.cancel([id, ...]): it
// cancels this master's workunits that are waiting or running and returns
// the ids it canceled. Their waiters get a WorkunitError of kind
// 'canceled'. Of another master's that it joined, this master stops
// waiting; the tracker cancels those nobody else waits for.
func (m *master) cancel(call goja.FunctionCall) goja.Value {
	const op = "riot.cancel"
	var keys []workunit.Key
	for _, a := range call.Arguments {
		if o, ok := a.(*goja.Object); ok && o.ClassName() == "Array" {
			n := o.Get("length").ToInteger()
			for i := range n {
				keys = append(keys, m.parseID(op, o.Get(strconv.FormatInt(i, 10))))
			}
			continue
		}
		keys = append(keys, m.parseID(op, a))
	}
	canceled, err := m.conn(op).Cancel(m.ctx, keys)
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	ids := make([]any, len(canceled))
	for i, k := range canceled {
		ids[i] = k.String()
	}
	return m.rt.NewArray(ids...)
}

// callWhenDone implements riot.callWhenDone(id, (isError, clientName,
// result) => ...): the callback runs on the script's event loop; for a
// failure, result is the error's message, as in Riot.
func (m *master) callWhenDone(call goja.FunctionCall) goja.Value {
	const op = "riot.callWhenDone"
	c := m.conn(op)
	key := m.parseID(op, call.Argument(0))
	fn, ok := goja.AssertFunction(call.Argument(1))
	if !ok {
		m.sb.Throw("TypeError", "%s: the callback must be a function", op)
	}
	m.waits++
	m.onFinished(c, key, func(o *workunit.Outcome) {
		m.post(func() {
			m.waits--
			if o.Status == workunit.StatusError {
				msg := ""
				if o.Err != nil {
					msg = o.Err.Message
				}
				m.callback(fn, true, o.Worker, m.rt.ToValue(msg))
				return
			}
			v, err := m.decodeResult(c, o)
			if err != nil {
				m.sb.Throw("Error", "%s: workunit %s: its result does not decode: %v", op, key.Short(), err)
			}
			m.callback(fn, false, o.Worker, v)
		})
	})
	return goja.Undefined()
}

func (m *master) callback(fn goja.Callable, isError bool, worker string, result goja.Value) {
	if _, err := fn(goja.Undefined(), m.rt.ToValue(isError), m.rt.ToValue(worker), result); err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex.Value())
		}
		panic(err)
	}
}

// connect implements riot.connect(host, port?, name?): it connects and
// makes the new connection the current client.
func (m *master) connect(call goja.FunctionCall) goja.Value {
	m.client = m.newClient(m.dial("riot.connect", call))
	return m.client.obj
}

// connectToTracker implements riot.connectToTracker(host, port?, name?):
// a client object for the low-level API, not made current.
func (m *master) connectToTracker(call goja.FunctionCall) goja.Value {
	return m.newClient(m.dial("riot.connectToTracker", call)).obj
}

func (m *master) dial(op string, call goja.FunctionCall) Conn {
	if m.opts.Connect == nil {
		m.sb.Throw("Error", "%s: this master cannot open connections", op)
	}
	host := "localhost"
	if a := call.Argument(0); !goja.IsUndefined(a) && !goja.IsNull(a) {
		host = a.String()
	}
	port := 0
	if p := call.Argument(1); !goja.IsUndefined(p) && !goja.IsNull(p) {
		port = int(p.ToInteger())
	}
	name := ""
	if n := call.Argument(2); !goja.IsUndefined(n) && !goja.IsNull(n) {
		name = n.String()
	}
	c, err := m.opts.Connect(m.ctx, host, port, name)
	if err != nil {
		m.sb.Throw("Error", "%s: %v", op, err)
	}
	m.conns = append(m.conns, c)
	return c
}

// currentClient implements riot.currentClient() and
// riot.currentClient(client), which makes client current.
func (m *master) currentClient(call goja.FunctionCall) goja.Value {
	if o, ok := call.Argument(0).(*goja.Object); ok {
		for _, c := range m.clients {
			if c.obj == o {
				m.client = c
				return goja.Undefined()
			}
		}
		m.sb.Throw("TypeError", "riot.currentClient: not a client object")
	}
	if m.client == nil || m.client.conn == nil {
		return goja.Null()
	}
	return m.client.obj
}

// readFile implements riot.readFile(path[, encoding]): a string, or a
// Uint8Array when encoding is null or 'binary'.
func (m *master) readFile(call goja.FunctionCall) goja.Value {
	path := call.Argument(0).String()
	b, err := os.ReadFile(path)
	if err != nil {
		m.sb.Throw("Error", "riot.readFile: %v", err)
	}
	if enc := call.Argument(1); goja.IsNull(enc) || (goja.IsString(enc) && enc.String() == "binary") {
		u8, err := m.in.TypedCtors["Uint8Array"](nil, m.rt.ToValue(m.rt.NewArrayBuffer(b)))
		if err != nil {
			panic(err)
		}
		return u8
	}
	return m.rt.ToValue(string(b))
}

// readLines implements riot.readLines(path): the file's lines, without
// their line ends.
func (m *master) readLines(call goja.FunctionCall) goja.Value {
	path := call.Argument(0).String()
	b, err := os.ReadFile(path)
	if err != nil {
		m.sb.Throw("Error", "riot.readLines: %v", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	var lines []any
	if s != "" {
		for _, l := range strings.Split(s, "\n") {
			lines = append(lines, strings.TrimSuffix(l, "\r"))
		}
	}
	return m.rt.NewArray(lines...)
}

// writeFile implements riot.writeFile(path, data): a string, or the bytes
// of a typed array or ArrayBuffer.
func (m *master) writeFile(call goja.FunctionCall) goja.Value {
	path := call.Argument(0).String()
	data := call.Argument(1)
	var b []byte
	if o, ok := data.(*goja.Object); ok {
		switch m.in.Classify(o) {
		case jsvalue.KindArrayBuffer:
			b = o.Export().(goja.ArrayBuffer).Bytes()
		case jsvalue.KindTyped:
			b = m.viewBytes(o, false)
		case jsvalue.KindDataView:
			b = m.viewBytes(o, true)
		}
	}
	if b == nil {
		b = []byte(data.String())
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		m.sb.Throw("Error", "riot.writeFile: %v", err)
	}
	return goja.Undefined()
}

// viewBytes returns the bytes a typed array or DataView covers.
func (m *master) viewBytes(o *goja.Object, dataView bool) []byte {
	in := m.in
	buf, off, n := in.TypedBuffer, in.TypedOffset, in.TypedLength
	size := 1
	if dataView {
		buf, off, n = in.ViewBuffer, in.ViewOffset, in.ViewLength
	} else if name, ok := in.TypedName(o); ok {
		if k, ok := value.TypedKindByName(name); ok {
			size = k.Size()
		}
	}
	bv, err1 := buf(o)
	ov, err2 := off(o)
	nv, err3 := n(o)
	if err := errors.Join(err1, err2, err3); err != nil {
		m.sb.Throw("TypeError", "%v", err)
	}
	data := bv.(*goja.Object).Export().(goja.ArrayBuffer).Bytes()
	start := int(ov.ToInteger())
	return data[start : start+int(nv.ToInteger())*size]
}
