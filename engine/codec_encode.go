package engine

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/value"
)

// maxNesting bounds how deep the codec follows nested values, on both
// sides, so that neither recursion can exhaust the Go stack.
const maxNesting = 10000

// CapturedFunc is a function that a master can send: its source, the names
// and current values of its free variables, and where it starts in its file.
// The master's capture hook produces it (see EncodeOptions.Capture).
type CapturedFunc struct {
	Source       string
	Names        []string
	Values       []goja.Value
	File         string
	Line, Column int
}

// encodeOptions says how the codec encodes one value document.
type encodeOptions struct {
	// root names the value in error paths: "result", "args".
	root string
	// dest ends the message for a value that cannot be sent: "to a
	// worker", "back to the master".
	dest string
	// capture, when set, gives the source and free variables of a
	// function so that it can be sent; otherwise functions cannot be.
	capture func(*goja.Object) (*CapturedFunc, error)
	// limit bounds the encoding's size in bytes; 0 means no bound.
	limit int
	// blob, when set, may store an argument or a captured variable's
	// value as a blob of its own: it returns the blob's hash and true, or
	// false to encode the value in place (master.go).
	blob func(*goja.Object) (blob.Hash, bool, error)
}

// errTooLarge is returned (wrapped) when an encoding passes its limit.
var errTooLarge = errors.New("engine: value too large")

// unsendableError is a value that cannot be encoded, with the path to it.
type unsendableError struct {
	steps []string // innermost first
	msg   string
}

func (e *unsendableError) Error() string { return e.msg }

func (e *unsendableError) path(root string) string {
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.steps) - 1; i >= 0; i-- {
		b.WriteString(e.steps[i])
	}
	return b.String()
}

func withStep(err error, step string) error {
	if u, ok := err.(*unsendableError); ok {
		u.steps = append(u.steps, step)
	}
	return err
}

func keyStep(k string) string {
	if isIdentifier(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// encoder writes goja values as value documents (docs/values.md). It is used
// by one goroutine, on the runtime's goroutine, and may run user code
// (getters), so callers run it inside Runtime.Try.
type encoder struct {
	rt    *goja.Runtime
	in    *intrinsics
	opts  encodeOptions
	w     cbor.Writer
	seen  map[*goja.Object]uint64
	next  uint64
	depth int
	// log lists the objects registered since logging began, so that
	// rollback can forget them (see mark).
	log     []*goja.Object
	logging bool
	// blobs lists the blobs the document refers to, in order.
	blobs []blob.Hash
}

// encMark is a point in an encoding to return to.
type encMark struct {
	len  int
	next uint64
	log  int
	blob int
}

// mark returns the current point of the encoding. Encoding more and then
// calling rollback(mark) undoes it: a master encodes a function once and
// each forWork item after it.
func (e *encoder) mark() encMark {
	e.logging = true
	return encMark{len: e.w.Len(), next: e.next, log: len(e.log), blob: len(e.blobs)}
}

func (e *encoder) rollback(m encMark) {
	e.w.Truncate(m.len)
	for _, o := range e.log[m.log:] {
		delete(e.seen, o)
	}
	e.log = e.log[:m.log]
	e.next = m.next
	e.blobs = e.blobs[:m.blob]
}

// begin starts a new document.
func (e *encoder) begin() {
	e.w.Reset()
	e.seen = nil
	e.next = 0
	e.log = e.log[:0]
	e.logging = false
	e.blobs = e.blobs[:0]
}

// beginArgs starts a document that is an array of n items made in Go (an
// argument list): the array takes object index 0, as decoders count it.
func (e *encoder) beginArgs(n int) {
	e.begin()
	e.w.ArrayHeader(n)
	e.next++
}

// valueOrBlob encodes an argument or a captured variable's value, as a
// blob reference when the blob hook takes it.
func (e *encoder) valueOrBlob(v goja.Value) error {
	if o, ok := v.(*goja.Object); ok && e.opts.blob != nil {
		if _, seen := e.seen[o]; !seen {
			if _, fn := goja.AssertFunction(o); !fn {
				h, ok, err := e.opts.blob(o)
				if err != nil {
					return err
				}
				if ok {
					e.w.Tag(value.TagBlob)
					e.w.ByteString(h[:])
					e.blobs = append(e.blobs, h)
					return nil
				}
			}
		}
	}
	return e.encode(v)
}

func newEncoder(rt *goja.Runtime, in *intrinsics, opts encodeOptions) *encoder {
	return &encoder{rt: rt, in: in, opts: opts}
}

// encodeValue encodes v as one document and returns its bytes (owned by
// the caller). A value that cannot be sent is a *unsendableError; one too
// large wraps errTooLarge.
func (e *encoder) encodeValue(v goja.Value) ([]byte, error) {
	e.begin()
	if err := e.encode(v); err != nil {
		return nil, err
	}
	return e.w.Bytes(), nil
}

func (e *encoder) unsendable(what string) error {
	dest := e.opts.dest
	if dest == "" {
		dest = "to a worker"
	}
	return &unsendableError{msg: what + " cannot be sent " + dest}
}

func (e *encoder) checkLimit() error {
	if e.opts.limit > 0 && e.w.Len() > e.opts.limit {
		return errTooLarge
	}
	return nil
}

func (e *encoder) register(o *goja.Object) {
	if e.seen == nil {
		e.seen = make(map[*goja.Object]uint64)
	}
	e.seen[o] = e.next
	e.next++
	if e.logging {
		e.log = append(e.log, o)
	}
}

func (e *encoder) encode(v goja.Value) error {
	switch {
	case v == nil || goja.IsUndefined(v):
		e.w.Simple(cbor.SimpleUndefined)
		return nil
	case goja.IsNull(v):
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if o, ok := v.(*goja.Object); ok {
		return e.object(o)
	}
	if _, ok := v.(*goja.Symbol); ok {
		return e.unsendable("a symbol")
	}
	switch v.ExportType().Kind() {
	case reflect.Int64:
		e.w.Int(v.ToInteger())
	case reflect.Float64:
		e.w.Number(v.ToFloat())
	case reflect.Bool:
		e.w.Bool(v.ToBoolean())
	case reflect.String:
		e.string(v)
		return e.checkLimit()
	case reflect.Pointer:
		if n, ok := v.Export().(*big.Int); ok {
			e.w.BigInt(n)
			return nil
		}
		return e.unsendable("a " + v.ExportType().String())
	default:
		return e.unsendable("a " + v.ExportType().String())
	}
	return nil
}

// string writes a JavaScript string, keeping lone surrogates, which Go's
// conversion would turn into U+FFFD.
func (e *encoder) string(v goja.Value) {
	s := v.String()
	if strings.IndexRune(s, utf8.RuneError) < 0 {
		e.w.Text(s)
		return
	}
	gs, ok := v.(goja.String)
	if !ok {
		e.w.Text(s)
		return
	}
	units := make([]uint16, gs.Length())
	for i := range units {
		units[i] = gs.CharAt(i)
	}
	value.WriteUTF16(&e.w, units)
}

func (e *encoder) ref(o *goja.Object) bool {
	if idx, ok := e.seen[o]; ok {
		e.w.Tag(value.TagRef)
		e.w.Head(cbor.MajorUint, idx)
		return true
	}
	return false
}

// objectKind is what kind of object a value is, as structured clone sees it.
type objectKind uint8

const (
	kindPlain objectKind = iota
	kindFunction
	kindArray
	kindDate
	kindRegExp
	kindError
	kindBoxed // new String(...), new Number(...), new Boolean(...)
	kindMap
	kindSet
	kindArrayBuffer
	kindTyped
	kindDataView
	kindPromise
	kindProxy
	kindWeakMap
	kindWeakSet
)

// classify tells an object's kind from its internal class and export type,
// which scripts cannot change, and for DataViews and weak collections from
// the prototype they were made with.
func (in *intrinsics) classify(o *goja.Object) objectKind {
	if _, ok := goja.AssertFunction(o); ok {
		return kindFunction
	}
	switch o.ClassName() {
	case "Array":
		return kindArray
	case "Date":
		return kindDate
	case "RegExp":
		return kindRegExp
	case "Error":
		return kindError
	case "String", "Number", "Boolean":
		return kindBoxed
	}
	switch t := o.ExportType(); t {
	case typeMapExport:
		return kindMap
	case typeSetExport:
		return kindSet
	case typeArrayBuffer:
		return kindArrayBuffer
	case typePromiseExport:
		return kindPromise
	case typeProxyExport:
		return kindProxy
	case typeBigIntExport:
		return kindBoxed
	default:
		if t != nil && t.Kind() == reflect.Slice {
			if _, ok := in.typedName(o); ok {
				return kindTyped
			}
		}
	}
	switch o.Prototype() {
	case in.dataViewProto:
		if _, err := in.viewBuffer(o); err == nil {
			return kindDataView
		}
	case in.weakMapProto:
		return kindWeakMap
	case in.weakSetProto:
		return kindWeakSet
	}
	return kindPlain
}

// unbox returns the primitive inside a boxed primitive.
func (in *intrinsics) unbox(rt *goja.Runtime, o *goja.Object) goja.Value {
	if o.ClassName() == "String" {
		if v, err := in.stringValueOf(o); err == nil {
			return v
		}
	}
	return rt.ToValue(o.Export())
}

func (in *intrinsics) typedName(o *goja.Object) (string, bool) {
	v, err := in.typedArrayTag(o)
	if err != nil || v == nil || goja.IsUndefined(v) {
		return "", false
	}
	return v.String(), true
}

func (e *encoder) object(o *goja.Object) error {
	if e.ref(o) {
		return nil
	}
	if e.depth >= maxNesting {
		return &unsendableError{msg: "a value nested more than " + strconv.Itoa(maxNesting) + " levels deep cannot be sent"}
	}
	e.depth++
	defer func() { e.depth-- }()
	if err := e.checkLimit(); err != nil {
		return err
	}
	switch e.in.classify(o) {
	case kindFunction:
		return e.function(o)
	case kindArray:
		return e.array(o)
	case kindDate:
		e.register(o)
		ms, err := e.in.dateGetTime(o)
		if err != nil {
			return err
		}
		e.date(ms.ToFloat())
		return nil
	case kindRegExp:
		e.register(o)
		src, err := e.in.regexpSource(o)
		if err != nil {
			return err
		}
		flags, err := e.in.regexpFlags(o)
		if err != nil {
			return err
		}
		e.w.Tag(value.TagRegExp)
		e.w.ArrayHeader(2)
		e.string(src)
		e.string(flags)
		return nil
	case kindError:
		return e.error(o)
	case kindBoxed:
		// Boxed primitives travel as their primitive.
		return e.encode(e.in.unbox(e.rt, o))
	case kindMap:
		return e.mapObject(o)
	case kindSet:
		return e.setObject(o)
	case kindArrayBuffer:
		e.register(o)
		e.w.ByteString(o.Export().(goja.ArrayBuffer).Bytes())
		return e.checkLimit()
	case kindTyped:
		name, _ := e.in.typedName(o)
		return e.typed(o, name)
	case kindDataView:
		return e.dataView(o)
	case kindPromise:
		return e.unsendable("a Promise")
	case kindProxy:
		return e.unsendable("a Proxy")
	case kindWeakMap:
		return e.unsendable("a WeakMap")
	case kindWeakSet:
		return e.unsendable("a WeakSet")
	}
	return e.plainObject(o)
}

func (e *encoder) array(o *goja.Object) error {
	e.register(o)
	n := int(o.Get("length").ToInteger())
	e.w.ArrayHeader(n)
	for i := 0; i < n; i++ {
		v := o.Get(itoa(i))
		if err := e.encode(v); err != nil {
			return withStep(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return nil
}

func (e *encoder) plainObject(o *goja.Object) error {
	e.register(o)
	keys := o.Keys()
	e.w.MapHeader(len(keys))
	for _, k := range keys {
		e.w.String(k)
		if err := e.encode(o.Get(k)); err != nil {
			return withStep(err, keyStep(k))
		}
	}
	return nil
}

func (e *encoder) date(ms float64) {
	e.w.Tag(value.TagEpochTime)
	if !math.IsNaN(ms) && math.Mod(ms, 1000) == 0 {
		e.w.Int(int64(ms / 1000))
		return
	}
	e.w.Float64(ms / 1000)
}

func (e *encoder) error(o *goja.Object) error {
	e.register(o)
	name, msg, stack := o.Get("name"), o.Get("message"), o.Get("stack")
	cause, hasCause := ownProperty(o, "cause")
	n := 3
	if hasCause {
		n++
	}
	e.w.Tag(value.TagError)
	e.w.MapHeader(n)
	for _, kv := range [...]struct {
		k string
		v goja.Value
	}{{"name", name}, {"message", msg}, {"stack", stack}} {
		e.w.Text(kv.k)
		if kv.v == nil || goja.IsUndefined(kv.v) {
			e.w.Text("")
			continue
		}
		e.w.String(kv.v.String())
	}
	if hasCause {
		e.w.Text("cause")
		if err := e.encode(cause); err != nil {
			return withStep(err, ".cause")
		}
	}
	return nil
}

func ownProperty(o *goja.Object, name string) (goja.Value, bool) {
	for _, k := range o.GetOwnPropertyNames() {
		if k == name {
			return o.Get(name), true
		}
	}
	return nil, false
}

func (e *encoder) entries(forEach goja.Callable, o *goja.Object) ([]goja.Value, error) {
	var kv []goja.Value
	cb := e.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		kv = append(kv, c.Argument(1), c.Argument(0))
		return goja.Undefined()
	})
	if _, err := forEach(o, cb); err != nil {
		return nil, err
	}
	return kv, nil
}

func (e *encoder) mapObject(o *goja.Object) error {
	e.register(o)
	kv, err := e.entries(e.in.mapForEach, o)
	if err != nil {
		return err
	}
	e.w.Tag(value.TagMap)
	e.w.MapHeader(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		if err := e.encode(kv[i]); err != nil {
			return withStep(err, "<Map key #"+strconv.Itoa(i/2)+">")
		}
		if err := e.encode(kv[i+1]); err != nil {
			return withStep(err, "<Map value #"+strconv.Itoa(i/2)+">")
		}
	}
	return nil
}

func (e *encoder) setObject(o *goja.Object) error {
	e.register(o)
	kv, err := e.entries(e.in.setForEach, o)
	if err != nil {
		return err
	}
	e.w.Tag(value.TagSet)
	e.w.ArrayHeader(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		if err := e.encode(kv[i]); err != nil {
			return withStep(err, "<Set value #"+strconv.Itoa(i/2)+">")
		}
	}
	return nil
}

func (e *encoder) typed(o *goja.Object, name string) error {
	kind, ok := value.TypedKindByName(name)
	if !ok {
		return e.unsendable("a " + name)
	}
	bufv, err := e.in.typedBuffer(o)
	if err != nil {
		return err
	}
	offv, err := e.in.typedOffset(o)
	if err != nil {
		return err
	}
	lenv, err := e.in.typedLength(o)
	if err != nil {
		return err
	}
	return e.view(o, kind, bufv.(*goja.Object), int(offv.ToInteger()), int(lenv.ToInteger()))
}

func (e *encoder) dataView(o *goja.Object) error {
	bufv, err := e.in.viewBuffer(o)
	if err != nil {
		return err
	}
	offv, err := e.in.viewOffset(o)
	if err != nil {
		return err
	}
	lenv, err := e.in.viewLength(o)
	if err != nil {
		return err
	}
	return e.view(o, value.KindDataView, bufv.(*goja.Object), int(offv.ToInteger()), int(lenv.ToInteger()))
}

// view writes a typed array or DataView: with its RFC 8746 tag when it
// covers a buffer not yet in the document, otherwise as a TagView.
func (e *encoder) view(o *goja.Object, kind value.TypedKind, buf *goja.Object, off, n int) error {
	data := buf.Export().(goja.ArrayBuffer).Bytes()
	size := kind.Size()
	_, bufSeen := e.seen[buf]
	e.register(o)
	if kind != value.KindDataView && !bufSeen && off == 0 && n*size == len(data) {
		e.register(buf)
		value.WriteTyped(&e.w, kind, data)
		return e.checkLimit()
	}
	e.w.Tag(value.TagView)
	e.w.ArrayHeader(4)
	e.w.Int(int64(kind))
	if !e.ref(buf) {
		e.register(buf)
		e.w.ByteString(data)
	}
	e.w.Int(int64(off))
	e.w.Int(int64(n))
	return e.checkLimit()
}

func (e *encoder) function(o *goja.Object) error {
	if e.opts.capture == nil {
		return e.unsendable("a function")
	}
	cf, err := e.opts.capture(o)
	if err != nil {
		return &unsendableError{msg: err.Error()}
	}
	e.register(o)
	e.w.Tag(value.TagFunction)
	e.w.ArrayHeader(5)
	e.w.String(cf.Source)
	e.w.MapHeader(len(cf.Names))
	for i, name := range cf.Names {
		e.w.String(name)
		if err := e.valueOrBlob(cf.Values[i]); err != nil {
			return withStep(err, "(free variable "+name+")")
		}
	}
	e.w.String(cf.File)
	e.w.Int(int64(cf.Line))
	e.w.Int(int64(cf.Column))
	return nil
}
