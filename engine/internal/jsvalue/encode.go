package jsvalue

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/value"
)

// MaxNesting bounds how deep the codec follows nested values, on both
// sides, so that neither recursion can exhaust the Go stack.
const MaxNesting = 10000

// CapturedFunc is a function that a master can send: its source, the names
// and current values of its free variables, and where it starts in its file.
// The master's capture hook produces it (see EncodeOptions.Capture).
type CapturedFunc struct {
	Source       string
	Names        []string
	Values       []goja.Value
	File         string
	Line, Column int
	// Strict says that the function is strict code where it was written;
	// the worker makes it strict.
	Strict bool
}

// EncodeOptions says how the codec encodes one value document.
type EncodeOptions struct {
	// Root names the value in error paths: "result", "args".
	Root string
	// Dest ends the message for a value that cannot be sent: "to a
	// worker", "back to the master".
	Dest string
	// Capture, when set, gives the source and free variables of a
	// function so that it can be sent; otherwise functions cannot be.
	Capture func(*goja.Object) (*CapturedFunc, error)
	// Limit bounds the encoding's size in bytes; 0 means no bound.
	Limit int
	// Blob, when set, may store an argument or a captured variable's
	// value as a blob of its own: it returns the blob's hash and true, or
	// false to encode the value in place (the master's blob hook).
	Blob func(*goja.Object) (blob.Hash, bool, error)
}

// ErrTooLarge is returned (wrapped) when an encoding passes its limit.
var ErrTooLarge = errors.New("engine: value too large")

// UnsendableError is a value that cannot be encoded, with the path to it.
type UnsendableError struct {
	steps []string // innermost first
	// Msg says what cannot be sent: "a symbol cannot be sent to a worker".
	Msg string
}

func (e *UnsendableError) Error() string { return e.Msg }

// Path returns the path from the value named root to the value that
// cannot be sent: "result.a[1]", "args[0]<Map value #2>".
func (e *UnsendableError) Path(root string) string {
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.steps) - 1; i >= 0; i-- {
		b.WriteString(e.steps[i])
	}
	return b.String()
}

func withStep(err error, step string) error {
	if u, ok := err.(*UnsendableError); ok {
		u.steps = append(u.steps, step)
	}
	return err
}

func keyStep(k string) string {
	if IsIdentifier(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// IsIdentifier reports whether s can be written as a JavaScript
// identifier: letters, digits, _ and $, not starting with a digit.
func IsIdentifier(s string) bool {
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

// Encoder writes goja values as value documents (docs/values.md). It is used
// by one goroutine, on the runtime's goroutine, and may run user code
// (getters), so callers run it inside Runtime.Try.
type Encoder struct {
	rt    *goja.Runtime
	in    *Intrinsics
	opts  EncodeOptions
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

// Mark is a point in an encoding to return to.
type Mark struct {
	len  int
	next uint64
	log  int
	blob int
}

// Mark returns the current point of the encoding. Encoding more and then
// calling Rollback(mark) undoes it: a master encodes a function once and
// each forWork item after it.
func (e *Encoder) Mark() Mark {
	e.logging = true
	return Mark{len: e.w.Len(), next: e.next, log: len(e.log), blob: len(e.blobs)}
}

// Rollback returns the encoding to m.
func (e *Encoder) Rollback(m Mark) {
	e.w.Truncate(m.len)
	for _, o := range e.log[m.log:] {
		delete(e.seen, o)
	}
	e.log = e.log[:m.log]
	e.next = m.next
	e.blobs = e.blobs[:m.blob]
}

// begin starts a new document.
func (e *Encoder) begin() {
	e.w.Reset()
	e.seen = nil
	e.next = 0
	e.log = e.log[:0]
	e.logging = false
	e.blobs = e.blobs[:0]
}

// BeginArgs starts a document that is an array of n items made in Go (an
// argument list): the array takes object index 0, as decoders count it.
func (e *Encoder) BeginArgs(n int) {
	e.begin()
	e.w.ArrayHeader(n)
	e.next++
}

// ValueOrBlob encodes an argument or a captured variable's value, as a
// blob reference when the blob hook takes it.
func (e *Encoder) ValueOrBlob(v goja.Value) error {
	if o, ok := v.(*goja.Object); ok && e.opts.Blob != nil {
		if _, seen := e.seen[o]; !seen {
			if _, fn := goja.AssertFunction(o); !fn {
				h, ok, err := e.opts.Blob(o)
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
	return e.Encode(v)
}

// NewEncoder returns an encoder of values of rt, whose built-ins are in.
func NewEncoder(rt *goja.Runtime, in *Intrinsics, opts EncodeOptions) *Encoder {
	return &Encoder{rt: rt, in: in, opts: opts}
}

// EncodeValue encodes v as one document and returns its bytes, which are
// the encoder's until it is used again. A value that cannot be sent is an
// *UnsendableError; one too large wraps ErrTooLarge.
func (e *Encoder) EncodeValue(v goja.Value) ([]byte, error) {
	e.begin()
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return e.w.Bytes(), nil
}

// EncodeParts encodes v as one document, as EncodeValue does, and returns
// it as parts whose concatenation is that document, byte for byte (so its
// blob hash is the same). A typed array, a DataView or an ArrayBuffer is
// a few header bytes, the bytes of its ArrayBuffer themselves (not a
// copy: they change when the script writes to the buffer) and, for a
// view that does not cover its whole buffer, a few trailing bytes; any
// other value is the document in one part, the encoder's until it is used
// again (TakeBytes gives it away). When there are several parts, parts[1]
// is the buffer's bytes. Errors are EncodeValue's: a document over the
// encoder's limit wraps ErrTooLarge.
func (e *Encoder) EncodeParts(v goja.Value) (blob.Parts, error) {
	o, ok := v.(*goja.Object)
	if !ok {
		b, err := e.EncodeValue(v)
		return blob.Parts{b}, err
	}
	var kind value.TypedKind
	var bufv goja.Value
	var off, n int
	switch e.in.Classify(o) {
	case KindArrayBuffer:
		data := o.Export().(goja.ArrayBuffer).Bytes()
		var w cbor.Writer
		w.Head(cbor.MajorBytes, uint64(len(data)))
		return e.limitParts(blob.Parts{w.Bytes(), data})
	case KindTyped:
		name, _ := e.in.TypedName(o)
		if kind, ok = value.TypedKindByName(name); !ok {
			return nil, e.unsendable("a " + name)
		}
		var err error
		if bufv, err = e.in.TypedBuffer(o); err != nil {
			return nil, err
		}
		offv, err := e.in.TypedOffset(o)
		if err != nil {
			return nil, err
		}
		lenv, err := e.in.TypedLength(o)
		if err != nil {
			return nil, err
		}
		off, n = int(offv.ToInteger()), int(lenv.ToInteger())
	case KindDataView:
		kind = value.KindDataView
		var err error
		if bufv, err = e.in.ViewBuffer(o); err != nil {
			return nil, err
		}
		offv, err := e.in.ViewOffset(o)
		if err != nil {
			return nil, err
		}
		lenv, err := e.in.ViewLength(o)
		if err != nil {
			return nil, err
		}
		off, n = int(offv.ToInteger()), int(lenv.ToInteger())
	default:
		b, err := e.EncodeValue(v)
		return blob.Parts{b}, err
	}
	// As view writes them, with the buffer's bytes left out of the writer.
	data := bufv.(*goja.Object).Export().(goja.ArrayBuffer).Bytes()
	var head, tail cbor.Writer
	if kind != value.KindDataView && off == 0 && n*kind.Size() == len(data) {
		head.Tag(uint64(kind))
		head.Head(cbor.MajorBytes, uint64(len(data)))
		return e.limitParts(blob.Parts{head.Bytes(), data})
	}
	head.Tag(value.TagView)
	head.ArrayHeader(4)
	head.Int(int64(kind))
	head.Head(cbor.MajorBytes, uint64(len(data)))
	tail.Int(int64(off))
	tail.Int(int64(n))
	return e.limitParts(blob.Parts{head.Bytes(), data, tail.Bytes()})
}

// limitParts returns p, or ErrTooLarge when it is over the encoder's
// limit, as checkLimit judges a document written whole.
func (e *Encoder) limitParts(p blob.Parts) (blob.Parts, error) {
	if e.opts.Limit > 0 && p.Len() > e.opts.Limit {
		return nil, ErrTooLarge
	}
	return p, nil
}

func (e *Encoder) unsendable(what string) error {
	dest := e.opts.Dest
	if dest == "" {
		dest = "to a worker"
	}
	return &UnsendableError{Msg: what + " cannot be sent " + dest}
}

func (e *Encoder) checkLimit() error {
	if e.opts.Limit > 0 && e.w.Len() > e.opts.Limit {
		return ErrTooLarge
	}
	return nil
}

func (e *Encoder) register(o *goja.Object) {
	if e.seen == nil {
		e.seen = make(map[*goja.Object]uint64)
	}
	e.seen[o] = e.next
	e.next++
	if e.logging {
		e.log = append(e.log, o)
	}
}

// Bytes returns the document encoded so far: the encoder's until it is
// used again.
func (e *Encoder) Bytes() []byte { return e.w.Bytes() }

// TakeBytes returns the document encoded so far and gives it away: the
// encoder forgets its buffer and starts the next document in a new one. A
// large document is thus not copied, and not kept with the encoder.
func (e *Encoder) TakeBytes() []byte {
	b := e.w.Bytes()
	e.w = cbor.Writer{}
	return b
}

// Blobs returns the blobs the document refers to, in order: the encoder's
// until it is used again.
func (e *Encoder) Blobs() []blob.Hash { return e.blobs }

// Int appends an integer item, as a Go-made argument.
func (e *Encoder) Int(n int64) { e.w.Int(n) }

// Encode appends v to the document, as an item of an argument list begun
// with BeginArgs.
func (e *Encoder) Encode(v goja.Value) error {
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
func (e *Encoder) string(v goja.Value) {
	s := v.String()
	if !strings.Contains(s, "\uFFFD") {
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

func (e *Encoder) ref(o *goja.Object) bool {
	if idx, ok := e.seen[o]; ok {
		e.w.Tag(value.TagRef)
		e.w.Head(cbor.MajorUint, idx)
		return true
	}
	return false
}

func (e *Encoder) object(o *goja.Object) error {
	if e.ref(o) {
		return nil
	}
	if e.depth >= MaxNesting {
		return &UnsendableError{Msg: "a value nested more than " + strconv.Itoa(MaxNesting) + " levels deep cannot be sent"}
	}
	e.depth++
	defer func() { e.depth-- }()
	if err := e.checkLimit(); err != nil {
		return err
	}
	switch e.in.Classify(o) {
	case KindFunction:
		return e.function(o)
	case KindArray:
		return e.array(o)
	case KindDate:
		e.register(o)
		ms, err := e.in.DateGetTime(o)
		if err != nil {
			return err
		}
		e.date(ms.ToFloat())
		return nil
	case KindRegExp:
		e.register(o)
		src, err := e.in.RegExpSource(o)
		if err != nil {
			return err
		}
		flags, err := e.in.RegExpFlags(o)
		if err != nil {
			return err
		}
		e.w.Tag(value.TagRegExp)
		e.w.ArrayHeader(2)
		e.regExpSource(src)
		e.string(flags)
		return nil
	case KindError:
		return e.error(o)
	case KindBoxed:
		e.register(o)
		e.w.Tag(value.TagWrapper)
		return e.Encode(e.in.Unbox(e.rt, o))
	case KindMap:
		return e.mapObject(o)
	case KindSet:
		return e.setObject(o)
	case KindArrayBuffer:
		e.register(o)
		e.w.ByteString(o.Export().(goja.ArrayBuffer).Bytes())
		return e.checkLimit()
	case KindTyped:
		name, _ := e.in.TypedName(o)
		return e.typed(o, name)
	case KindDataView:
		return e.dataView(o)
	case KindPromise:
		return e.unsendable("a Promise")
	case KindProxy:
		return e.unsendable("a Proxy")
	case KindWeakMap:
		return e.unsendable("a WeakMap")
	case KindWeakSet:
		return e.unsendable("a WeakSet")
	}
	if what, ok := e.in.Unclonable(o); ok {
		return e.unsendable(what)
	}
	return e.plainObject(o)
}

func (e *Encoder) array(o *goja.Object) error {
	e.register(o)
	n, dense := e.in.DenseArray(o)
	if !dense {
		n = int(o.Get("length").ToInteger())
		keys := o.Keys()
		if len(keys) != n || n > 0 && keys[n-1] != Index(n-1) {
			return e.sparseArray(o, n, keys)
		}
	}
	e.w.ArrayHeader(n)
	for i := 0; i < n; i++ {
		v := o.Get(Index(i))
		if err := e.Encode(v); err != nil {
			return withStep(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return nil
}

// sparseArray writes an array with holes or non-index properties, whose
// own enumerable keys are keys: TagArray [length, map], the indexes present
// as unsigned integers, then the other properties by name, in the order
// the array holds them.
func (e *Encoder) sparseArray(o *goja.Object, n int, keys []string) error {
	names, jsKeys, err := e.ownKeys(o, keys)
	if err != nil {
		return err
	}
	e.w.Tag(value.TagArray)
	e.w.ArrayHeader(2)
	e.w.Int(int64(n))
	e.w.MapHeader(len(names))
	for i, k := range names {
		step := ""
		if idx, ok := ArrayIndex(k); ok {
			e.w.Int(int64(idx))
			step = "[" + k + "]"
		} else {
			e.key(k, jsKeys, i)
			step = keyStep(k)
		}
		v, err := e.property(o, k, jsKeys, i)
		if err != nil {
			return err
		}
		if err := e.Encode(v); err != nil {
			return withStep(err, step)
		}
	}
	return nil
}

// ArrayIndex reports whether k is an array index, as JavaScript writes it
// ("0" … "4294967294"), and which.
func ArrayIndex(k string) (uint32, bool) {
	if k == "" || len(k) > 10 || k[0] == '0' && len(k) > 1 {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 32)
	if err != nil || n == math.MaxUint32 {
		return 0, false
	}
	return uint32(n), true
}

// ownKeys returns the own enumerable string keys of o, given as names (the
// Go strings of o.Keys()). A name holding U+FFFD may stand for a key with
// a lone surrogate, which Go strings lose; then the keys are read again as
// JavaScript strings, returned in jsKeys (names[i] is jsKeys[i] as Go
// prints it), and properties are read and keys written through them.
func (e *Encoder) ownKeys(o *goja.Object, names []string) ([]string, []goja.Value, error) {
	lossy := false
	for _, k := range names {
		if strings.Contains(k, "\uFFFD") {
			lossy = true
			break
		}
	}
	if !lossy {
		return names, nil, nil
	}
	arr, err := e.in.ObjectKeys(nil, o)
	if err != nil {
		return nil, nil, err
	}
	ao := arr.(*goja.Object)
	m := int(ao.Get("length").ToInteger())
	names, jsKeys := make([]string, m), make([]goja.Value, m)
	for i := range m {
		jsKeys[i] = ao.Get(Index(i))
		names[i] = jsKeys[i].String()
	}
	return names, jsKeys, nil
}

// key writes property name k, the i-th of ownKeys.
func (e *Encoder) key(k string, jsKeys []goja.Value, i int) {
	if jsKeys != nil {
		e.string(jsKeys[i])
		return
	}
	e.w.String(k)
}

// property reads the property k of o, the i-th of ownKeys.
func (e *Encoder) property(o *goja.Object, k string, jsKeys []goja.Value, i int) (goja.Value, error) {
	if jsKeys != nil {
		return e.in.ReflectGet(nil, o, jsKeys[i])
	}
	return o.Get(k), nil
}

func (e *Encoder) plainObject(o *goja.Object) error {
	e.register(o)
	names, jsKeys, err := e.ownKeys(o, o.Keys())
	if err != nil {
		return err
	}
	e.w.MapHeader(len(names))
	for i, k := range names {
		e.key(k, jsKeys, i)
		v, err := e.property(o, k, jsKeys, i)
		if err != nil {
			return err
		}
		if err := e.Encode(v); err != nil {
			return withStep(err, keyStep(k))
		}
	}
	return nil
}

// regExpSource writes a RegExp's source as structured clone gives it,
// escaping "/" as "\/": goja writes it as "\u002f".
func (e *Encoder) regExpSource(src goja.Value) {
	gs, ok := src.(goja.String)
	if !ok || !strings.Contains(src.String(), `\u002f`) {
		e.string(src)
		return
	}
	units := make([]uint16, 0, gs.Length())
	n := gs.Length()
	for i := 0; i < n; i++ {
		u := gs.CharAt(i)
		if u != '\\' || i+1 >= n {
			units = append(units, u)
			continue
		}
		if i+5 < n && gs.CharAt(i+1) == 'u' && gs.CharAt(i+2) == '0' && gs.CharAt(i+3) == '0' && gs.CharAt(i+4) == '2' && gs.CharAt(i+5) == 'f' {
			units = append(units, '\\', '/')
			i += 5
			continue
		}
		// Another escape: keep it, and the character it escapes.
		units = append(units, u, gs.CharAt(i+1))
		i++
	}
	value.WriteUTF16(&e.w, units)
}

func (e *Encoder) date(ms float64) {
	e.w.Tag(value.TagEpochTime)
	if math.IsNaN(ms) {
		e.w.HalfNaN() // an invalid Date: one NaN, whatever its bits here
		return
	}
	if math.Mod(ms, 1000) == 0 {
		e.w.Int(int64(ms / 1000))
		return
	}
	e.w.Float64(ms / 1000)
}

// errorNames are the names an Error keeps through structured clone; it
// makes any other an Error. (AggregateError is riot's addition.)
var cloneErrorNames = map[string]bool{
	"Error": true, "EvalError": true, "RangeError": true, "ReferenceError": true,
	"SyntaxError": true, "TypeError": true, "URIError": true, "AggregateError": true,
}

// error writes an Error as structured clone takes it: its name if it is
// one of cloneErrorNames (else "Error"), its own message (a data property,
// as a string) if it has one, its stack if that is a string, and its own
// cause if it has one; nothing else.
func (e *Encoder) error(o *goja.Object) error {
	e.register(o)
	name := "Error"
	if nv := o.Get("name"); nv != nil && goja.IsString(nv) && cloneErrorNames[nv.String()] {
		name = nv.String()
	}
	var msg goja.Value
	if has, err := e.ownData(o, "message"); err != nil {
		return err
	} else if has {
		msg = o.Get("message").ToString()
	}
	stack := o.Get("stack")
	hasStack := stack != nil && goja.IsString(stack)
	hasCause, err := e.ownData(o, "cause")
	if err != nil {
		return err
	}
	n := 1
	for _, has := range [...]bool{msg != nil, hasStack, hasCause} {
		if has {
			n++
		}
	}
	e.w.Tag(value.TagError)
	e.w.MapHeader(n)
	e.w.Text("name")
	e.w.Text(name)
	if msg != nil {
		e.w.Text("message")
		e.string(msg)
	}
	if hasStack {
		e.w.Text("stack")
		e.string(stack)
	}
	if hasCause {
		e.w.Text("cause")
		if err := e.Encode(o.Get("cause")); err != nil {
			return withStep(err, ".cause")
		}
	}
	return nil
}

// ownData reports whether o has an own data property k (not a getter).
func (e *Encoder) ownData(o *goja.Object, k string) (bool, error) {
	v, err := e.in.OwnData(nil, o, e.rt.ToValue(k))
	if err != nil {
		return false, err
	}
	return v.ToBoolean(), nil
}

// Entries returns the entries of a Map (key, value, key, value, ...) or
// a Set (value, value, value, value, ...), as forEach, the built-in
// Map.prototype.forEach or Set.prototype.forEach, gives them.
func Entries(rt *goja.Runtime, forEach goja.Callable, o *goja.Object) ([]goja.Value, error) {
	var kv []goja.Value
	cb := rt.ToValue(func(c goja.FunctionCall) goja.Value {
		kv = append(kv, c.Argument(1), c.Argument(0))
		return goja.Undefined()
	})
	if _, err := forEach(o, cb); err != nil {
		return nil, err
	}
	return kv, nil
}

func (e *Encoder) mapObject(o *goja.Object) error {
	e.register(o)
	kv, err := Entries(e.rt, e.in.MapForEach, o)
	if err != nil {
		return err
	}
	e.w.Tag(value.TagMap)
	e.w.MapHeader(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		if err := e.Encode(kv[i]); err != nil {
			return withStep(err, "<Map key #"+strconv.Itoa(i/2)+">")
		}
		if err := e.Encode(kv[i+1]); err != nil {
			return withStep(err, "<Map value #"+strconv.Itoa(i/2)+">")
		}
	}
	return nil
}

func (e *Encoder) setObject(o *goja.Object) error {
	e.register(o)
	kv, err := Entries(e.rt, e.in.SetForEach, o)
	if err != nil {
		return err
	}
	e.w.Tag(value.TagSet)
	e.w.ArrayHeader(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		if err := e.Encode(kv[i]); err != nil {
			return withStep(err, "<Set value #"+strconv.Itoa(i/2)+">")
		}
	}
	return nil
}

func (e *Encoder) typed(o *goja.Object, name string) error {
	kind, ok := value.TypedKindByName(name)
	if !ok {
		return e.unsendable("a " + name)
	}
	bufv, err := e.in.TypedBuffer(o)
	if err != nil {
		return err
	}
	offv, err := e.in.TypedOffset(o)
	if err != nil {
		return err
	}
	lenv, err := e.in.TypedLength(o)
	if err != nil {
		return err
	}
	return e.view(o, kind, bufv.(*goja.Object), int(offv.ToInteger()), int(lenv.ToInteger()))
}

func (e *Encoder) dataView(o *goja.Object) error {
	bufv, err := e.in.ViewBuffer(o)
	if err != nil {
		return err
	}
	offv, err := e.in.ViewOffset(o)
	if err != nil {
		return err
	}
	lenv, err := e.in.ViewLength(o)
	if err != nil {
		return err
	}
	return e.view(o, value.KindDataView, bufv.(*goja.Object), int(offv.ToInteger()), int(lenv.ToInteger()))
}

// view writes a typed array or DataView: with its RFC 8746 tag when it
// covers a buffer not yet in the document, otherwise as a TagView.
func (e *Encoder) view(o *goja.Object, kind value.TypedKind, buf *goja.Object, off, n int) error {
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

func (e *Encoder) function(o *goja.Object) error {
	if e.opts.Capture == nil {
		return e.unsendable("a function")
	}
	cf, err := e.opts.Capture(o)
	if err != nil {
		return &UnsendableError{Msg: err.Error()}
	}
	e.register(o)
	e.w.Tag(value.TagFunction)
	if cf.Strict {
		e.w.ArrayHeader(6)
	} else {
		e.w.ArrayHeader(5)
	}
	e.w.String(cf.Source)
	e.w.MapHeader(len(cf.Names))
	for i, name := range cf.Names {
		e.w.String(name)
		if err := e.ValueOrBlob(cf.Values[i]); err != nil {
			return withStep(err, "(free variable "+name+")")
		}
	}
	e.w.String(cf.File)
	e.w.Int(int64(cf.Line))
	e.w.Int(int64(cf.Column))
	if cf.Strict {
		e.w.Bool(true)
	}
	return nil
}
