package value

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/riot-go/riot/cbor"
)

// MaxDepth is the default limit on nesting: an object (anything that takes
// an index: an array, plain object, Map, Set, Date, RegExp, ArrayBuffer,
// typed array, view, Error or function) inside more than MaxDepth-1 others
// is an error for both Marshal and Unmarshal. Primitives, back references
// and blob references do not count.
const MaxDepth = 10000

// maxDateMillis is the largest time value a JavaScript Date holds, in
// milliseconds either side of the epoch.
const maxDateMillis = 8.64e15

// Encoder marshals Go values with options that Marshal does not take. The
// zero Encoder is Marshal's. An Encoder holds no state between calls and is
// safe for concurrent use.
type Encoder struct {
	// Root names the value in the paths of errors: with Root "args", a
	// function at index 1's onDone field is "args[1].onDone". Empty means
	// "value".
	Root string
	// MaxDepth bounds nesting (see the MaxDepth constant); 0 means MaxDepth.
	MaxDepth int
}

// Marshal returns the value document of v (docs/values.md). See the package
// documentation for how Go values map to JavaScript ones. A value that
// cannot be sent gives a *PathError.
func Marshal(v any) ([]byte, error) { return Encoder{}.AppendEncode(nil, v) }

// AppendMarshal appends the value document of v to dst and returns the
// extended slice, as Marshal does. On error it returns dst unchanged in
// length (bytes past it may have been written).
func AppendMarshal(dst []byte, v any) ([]byte, error) { return Encoder{}.AppendEncode(dst, v) }

// Encode returns the value document of v.
func (enc Encoder) Encode(v any) ([]byte, error) { return enc.AppendEncode(nil, v) }

// AppendEncode appends the value document of v to dst, as AppendMarshal.
func (enc Encoder) AppendEncode(dst []byte, v any) ([]byte, error) {
	return enc.appendEncode(dst, v, nil)
}

// AppendEncodeArray appends the value document of the array items to dst:
// the same bytes as AppendEncode(dst, items), without making items an
// interface value (which allocates its slice header) for a caller that
// builds its argument list in a reused slice.
func (enc Encoder) AppendEncodeArray(dst []byte, items []any) ([]byte, error) {
	return enc.appendEncode(dst, nil, items)
}

// appendEncode writes the document of items when it is not nil, else of v.
func (enc Encoder) appendEncode(dst []byte, v any, items []any) ([]byte, error) {
	e := encodeState{w: *cbor.AppendWriter(dst), maxDepth: enc.MaxDepth}
	if e.maxDepth <= 0 {
		e.maxDepth = MaxDepth
	}
	var err error
	if items != nil {
		err = e.array(items, 1)
	} else {
		err = e.encodeAny(v, 1)
	}
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			root := enc.Root
			if root == "" {
				root = "value"
			}
			pe.Path = renderPath(root, e.steps)
		}
		return dst, err
	}
	return e.w.Bytes(), nil
}

// encodeState is one Marshal call.
type encodeState struct {
	w        cbor.Writer
	maxDepth int
	// next is the index the next object written takes.
	next int
	// seen maps the identity of each map, slice and pointer already written
	// to its object index. The first few are in few (most values hold a
	// handful of objects, and a map per call was most of what encoding
	// one allocated); seen is made when those are full.
	seen   map[refKey]int
	few    [fewRefs]refKey
	fewIdx [fewRefs]int
	nfew   int
	// steps is the path of an error, innermost step first.
	steps []pathStep
	// structs caches the fields of struct types; errorTypes caches which
	// types with methods implement error.
	structs    map[reflect.Type][]structField
	errorTypes map[reflect.Type]bool
	// keys, kvs and vals are scratch stacks for the keys of maps, the
	// entries of reflected maps and the fields of structs; each call uses
	// the part past what its callers use.
	keys []string
	kvs  []keyValue
	vals []namedValue
}

// refKey is the identity of a Go value that refers to memory: a map or
// pointer (n is 0) or a non-empty slice (n is its length). The type keeps
// apart values of different types at one address.
type refKey struct {
	p unsafe.Pointer
	n int
	t reflect.Type
}

type keyValue struct {
	key string
	rv  reflect.Value
}

type namedValue struct {
	name string
	rv   reflect.Value
}

// Types the encoder treats specially when it meets them through reflection.
var (
	bigIntType      = reflect.TypeFor[big.Int]()
	bigIntPtrType   = reflect.TypeFor[*big.Int]()
	timeType        = reflect.TypeFor[time.Time]()
	undefinedType   = reflect.TypeFor[Undefined]()
	invalidDateType = reflect.TypeFor[InvalidDate]()
	regExpType      = reflect.TypeFor[RegExp]()
	mapType         = reflect.TypeFor[Map]()
	mapPtrType      = reflect.TypeFor[*Map]()
	setType         = reflect.TypeFor[Set]()
	setPtrType      = reflect.TypeFor[*Set]()
	errorValueType  = reflect.TypeFor[Error]()
	errorPtrType    = reflect.TypeFor[*Error]()
	functionType    = reflect.TypeFor[Function]()
	functionPtrType = reflect.TypeFor[*Function]()
	wrapperType     = reflect.TypeFor[Wrapper]()
	wrapperPtrType  = reflect.TypeFor[*Wrapper]()
	arrayType       = reflect.TypeFor[Array]()
	arrayPtrType    = reflect.TypeFor[*Array]()
	blobRefType     = reflect.TypeFor[BlobRef]()
	arrayBufferType = reflect.TypeFor[ArrayBuffer]()
	clampedType     = reflect.TypeFor[Uint8ClampedArray]()
	dataViewType    = reflect.TypeFor[DataView]()
	errorType       = reflect.TypeFor[error]()
	anySliceType    = reflect.TypeFor[[]any]()
	objectType      = reflect.TypeFor[map[string]any]()
)

func (e *encodeState) at(err error, s pathStep) error {
	e.steps = append(e.steps, s)
	return err
}

func unsendable(format string, args ...any) error {
	return &PathError{Msg: fmt.Sprintf(format, args...)}
}

// enter checks that an object may be written at depth d.
func (e *encodeState) enter(d int) error {
	if d > e.maxDepth {
		return unsendable("nested deeper than %d levels", e.maxDepth)
	}
	return nil
}

// shared writes a back reference and reports true when the object k names
// was written before. Otherwise it records k as the object about to be
// written, whose index is e.next.
func (e *encodeState) shared(k refKey) bool {
	i, ok := e.seenIndex(k)
	if ok {
		e.w.Tag(TagRef)
		e.w.Head(cbor.MajorUint, uint64(i))
		return true
	}
	if e.seen == nil && e.nfew < fewRefs {
		e.few[e.nfew] = k
		e.fewIdx[e.nfew] = e.next
		e.nfew++
		return false
	}
	if e.seen == nil {
		e.seen = make(map[refKey]int, 2*fewRefs)
		for j, f := range e.few {
			e.seen[f] = e.fewIdx[j]
		}
	}
	e.seen[k] = e.next
	return false
}

// fewRefs is how many objects an encoding tracks without a map.
const fewRefs = 8

// seenIndex returns the object index of k when it was written before.
func (e *encodeState) seenIndex(k refKey) (int, bool) {
	if e.seen != nil {
		i, ok := e.seen[k]
		return i, ok
	}
	for j := range e.nfew {
		if e.few[j] == k {
			return e.fewIdx[j], true
		}
	}
	return 0, false
}

// encodeAny writes x at depth d. The common types are handled here without
// reflection; the rest go to encodeValue.
func (e *encodeState) encodeAny(x any, d int) error {
	switch v := x.(type) {
	case nil:
		e.w.Simple(cbor.SimpleNull)
	case bool:
		e.w.Bool(v)
	case float64:
		e.w.Number(v)
	case string:
		e.str(v)
	case int:
		return e.integer(int64(v))
	case map[string]any:
		return e.object(v, d)
	case []any:
		return e.array(v, d)
	case Undefined:
		e.w.Simple(cbor.SimpleUndefined)
	case float32:
		e.w.Number(float64(v))
	case int8:
		e.w.Int(int64(v))
	case int16:
		e.w.Int(int64(v))
	case int32:
		e.w.Int(int64(v))
	case int64:
		return e.integer(v)
	case uint8:
		e.w.Int(int64(v))
	case uint16:
		e.w.Int(int64(v))
	case uint32:
		e.w.Int(int64(v))
	case uint:
		return e.unsigned(uint64(v))
	case uint64:
		return e.unsigned(v)
	case uintptr:
		return e.unsigned(uint64(v))
	case *big.Int:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		e.w.BigInt(v)
	case big.Int:
		e.w.BigInt(&v)
	case []byte:
		return e.typed(Uint8, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]byte](), d)
	case Uint8ClampedArray:
		return e.typed(Uint8Clamped, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, clampedType, d)
	case []int8:
		return e.typed(Int8, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]int8](), d)
	case []uint16:
		return e.typed(Uint16, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]uint16](), d)
	case []int16:
		return e.typed(Int16, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]int16](), d)
	case []uint32:
		return e.typed(Uint32, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]uint32](), d)
	case []int32:
		return e.typed(Int32, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]int32](), d)
	case []uint64:
		return e.typed(BigUint64, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]uint64](), d)
	case []int64:
		return e.typed(BigInt64, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]int64](), d)
	case []float32:
		return e.typed(Float32, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]float32](), d)
	case []float64:
		return e.typed(Float64, unsafe.Pointer(unsafe.SliceData(v)), len(v), v == nil, reflect.TypeFor[[]float64](), d)
	case ArrayBuffer:
		return e.arrayBuffer(v, d)
	case DataView:
		return e.dataView(v, d)
	case time.Time:
		return e.date(v, d)
	case InvalidDate:
		if err := e.enter(d); err != nil {
			return err
		}
		e.next++
		e.w.Tag(TagEpochTime)
		e.w.HalfNaN()
	case RegExp:
		return e.regExp(v, d)
	case *Map:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.jsMap(v, refKey{unsafe.Pointer(v), 0, mapPtrType}, d)
	case Map:
		return e.jsMap(&v, refKey{}, d)
	case *Set:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.jsSet(v, refKey{unsafe.Pointer(v), 0, setPtrType}, d)
	case Set:
		return e.jsSet(&v, refKey{}, d)
	case *Error:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.jsError(v, refKey{unsafe.Pointer(v), 0, errorPtrType}, d)
	case Error:
		return e.jsError(&v, refKey{}, d)
	case *Function:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.function(v, refKey{unsafe.Pointer(v), 0, functionPtrType}, d)
	case Function:
		return e.function(&v, refKey{}, d)
	case *Wrapper:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.wrapper(v, refKey{unsafe.Pointer(v), 0, wrapperPtrType}, d)
	case Wrapper:
		return e.wrapper(&v, refKey{}, d)
	case *Array:
		if v == nil {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		return e.sparseArray(v, refKey{unsafe.Pointer(v), 0, arrayPtrType}, d)
	case Array:
		return e.sparseArray(&v, refKey{}, d)
	case BlobRef:
		e.w.Tag(TagBlob)
		e.w.ByteString(v[:])
	case error:
		return e.goError(v, d)
	default:
		return e.encodeValue(reflect.ValueOf(x), d)
	}
	return nil
}

// encodeValue writes a value met through reflection: a struct field, an
// element of a typed slice, a map value or a pointer's target.
func (e *encodeState) encodeValue(rv reflect.Value, d int) error {
	// Pointers and interfaces are followed here, in a loop, so that a
	// cycle of them that writes nothing is caught instead of recursing.
	for hops := 0; ; hops++ {
		if hops > e.maxDepth {
			return unsendable("pointers nested deeper than %d (a pointer cycle?)", e.maxDepth)
		}
		switch rv.Kind() {
		case reflect.Invalid:
			e.w.Simple(cbor.SimpleNull)
			return nil
		case reflect.Interface:
			if rv.IsNil() {
				e.w.Simple(cbor.SimpleNull)
				return nil
			}
			rv = rv.Elem()
			continue
		case reflect.Pointer:
			if rv.IsNil() {
				e.w.Simple(cbor.SimpleNull)
				return nil
			}
		}
		t := rv.Type()
		if rv.CanInterface() && e.viaAny(t) {
			return e.encodeAny(rv.Interface(), d)
		}
		if rv.Kind() != reflect.Pointer {
			return e.encodeReflect(rv, t, d)
		}
		if hasIdentity(t.Elem()) {
			// The target is written as an object right after this; a
			// pointer met again refers back to it.
			if e.shared(refKey{rv.UnsafePointer(), 0, t}) {
				return nil
			}
		}
		rv = rv.Elem()
	}
}

// viaAny reports whether values of type t are written by encodeAny's
// switch: the package's own types, time.Time, big.Int and errors.
func (e *encodeState) viaAny(t reflect.Type) bool {
	switch t {
	case bigIntType, bigIntPtrType, timeType, undefinedType, invalidDateType, regExpType,
		mapType, mapPtrType, setType, setPtrType, errorValueType, errorPtrType,
		functionType, functionPtrType, blobRefType, arrayBufferType, clampedType, dataViewType,
		wrapperType, wrapperPtrType, arrayType, arrayPtrType:
		return true
	}
	if t.NumMethod() == 0 {
		return false
	}
	is, ok := e.errorTypes[t]
	if !ok {
		if e.errorTypes == nil {
			e.errorTypes = make(map[reflect.Type]bool)
		}
		is = t.Implements(errorType)
		e.errorTypes[t] = is
	}
	return is
}

// hasIdentity reports whether a pointer to t is written as an object that
// a second pointer to it refers back to.
func hasIdentity(t reflect.Type) bool {
	switch t {
	case undefinedType, blobRefType, bigIntType:
		return false
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Array
}

// encodeReflect writes a value that is not a pointer, an interface or one of
// the types that encodeAny handles.
func (e *encodeState) encodeReflect(rv reflect.Value, t reflect.Type, d int) error {
	switch rv.Kind() {
	case reflect.Bool:
		e.w.Bool(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return e.integer(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return e.unsigned(rv.Uint())
	case reflect.Float32, reflect.Float64:
		e.w.Number(rv.Float())
	case reflect.String:
		e.str(rv.String())
	case reflect.Slice:
		if rv.IsNil() {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		if k, ok := typedKindOfElem(t.Elem().Kind()); ok {
			return e.typed(k, rv.UnsafePointer(), rv.Len(), false, t, d)
		}
		if rv.Len() > 0 {
			if e.shared(refKey{rv.UnsafePointer(), rv.Len(), t}) {
				return nil
			}
		}
		if err := e.enter(d); err != nil {
			return err
		}
		return e.list(rv, d)
	case reflect.Array:
		if err := e.enter(d); err != nil {
			return err
		}
		return e.list(rv, d)
	case reflect.Map:
		if rv.IsNil() {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		if t.Key().Kind() != reflect.String {
			return unsendable("a map with %s keys cannot be sent to a worker (use *value.Map)", t.Key())
		}
		if e.shared(refKey{rv.UnsafePointer(), 0, t}) {
			return nil
		}
		if err := e.enter(d); err != nil {
			return err
		}
		return e.reflectObject(rv, d)
	case reflect.Struct:
		if err := e.enter(d); err != nil {
			return err
		}
		return e.structObject(rv, t, d)
	case reflect.Func:
		return unsendable("a function cannot be sent to a worker")
	case reflect.Chan:
		return unsendable("a channel cannot be sent to a worker")
	case reflect.Complex64, reflect.Complex128:
		return unsendable("a complex number cannot be sent to a worker")
	case reflect.UnsafePointer:
		return unsendable("an unsafe.Pointer cannot be sent to a worker")
	default:
		return unsendable("a %s cannot be sent to a worker", t)
	}
	return nil
}

// typedKindOfElem gives the typed array kind of a slice by its element kind.
func typedKindOfElem(k reflect.Kind) (TypedKind, bool) {
	switch k {
	case reflect.Uint8:
		return Uint8, true
	case reflect.Int8:
		return Int8, true
	case reflect.Uint16:
		return Uint16, true
	case reflect.Int16:
		return Int16, true
	case reflect.Uint32:
		return Uint32, true
	case reflect.Int32:
		return Int32, true
	case reflect.Uint64:
		return BigUint64, true
	case reflect.Int64:
		return BigInt64, true
	case reflect.Float32:
		return Float32, true
	case reflect.Float64:
		return Float64, true
	}
	return 0, false
}

func (e *encodeState) integer(n int64) error {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return unsendable("integer %d is outside ±2^53, where JavaScript numbers are exact (send a *big.Int)", n)
	}
	e.w.Int(n)
	return nil
}

func (e *encodeState) unsigned(n uint64) error {
	if n > maxSafeInteger {
		return unsendable("integer %d is outside ±2^53, where JavaScript numbers are exact (send a *big.Int)", n)
	}
	e.w.Head(cbor.MajorUint, n)
	return nil
}

// str writes a Go string. Valid UTF-8 is a text string. Otherwise the
// string is read as WTF-8, which is how Unmarshal gives strings holding lone
// surrogates: the three-byte form of a surrogate is that surrogate, and any
// other invalid byte is U+FFFD.
func (e *encodeState) str(s string) {
	if utf8.ValidString(s) {
		e.w.Text(s)
		return
	}
	WriteUTF16(&e.w, utf16OfWTF8(s))
}

func (e *encodeState) array(v []any, d int) error {
	if v == nil {
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if len(v) > 0 {
		if e.shared(refKey{unsafe.Pointer(unsafe.SliceData(v)), len(v), anySliceType}) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	e.next++
	e.w.ArrayHeader(len(v))
	for i, x := range v {
		if err := e.encodeAny(x, d+1); err != nil {
			return e.at(err, pathStep{kind: stepIndex, i: i})
		}
	}
	return nil
}

// list writes a slice or Go array as an Array; the caller has checked the
// depth and the identity.
func (e *encodeState) list(rv reflect.Value, d int) error {
	e.next++
	n := rv.Len()
	e.w.ArrayHeader(n)
	for i := range n {
		if err := e.encodeValue(rv.Index(i), d+1); err != nil {
			return e.at(err, pathStep{kind: stepIndex, i: i})
		}
	}
	return nil
}

func (e *encodeState) object(m map[string]any, d int) error {
	if m == nil {
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if e.shared(refKey{reflect.ValueOf(m).UnsafePointer(), 0, objectType}) {
		return nil
	}
	if err := e.enter(d); err != nil {
		return err
	}
	e.next++
	return e.stringMap(m, stepKey, d)
}

// stringMap writes m, the contents of an object at depth d, as a map sorted
// by key so that equal maps give equal bytes. It takes no index: callers
// count the object it is part of. step says how errors name its keys.
func (e *encodeState) stringMap(m map[string]any, step stepKind, d int) error {
	e.w.MapHeader(len(m))
	return e.stringMapItems(m, step, d)
}

// stringMapItems writes the keys and values of m, sorted by key, after a
// map head its caller wrote.
func (e *encodeState) stringMapItems(m map[string]any, step stepKind, d int) error {
	if len(m) == 0 {
		// Most functions capture nothing: no keys to gather and sort.
		return nil
	}
	base := len(e.keys)
	e.keys = slices.Grow(e.keys, len(m))
	for k := range m {
		e.keys = append(e.keys, k)
	}
	defer func() { e.keys = e.keys[:base] }()
	keys := e.keys[base:]
	slices.Sort(keys)
	if err := checkKeys(keys); err != nil {
		return err
	}
	for i := range len(keys) {
		// Nested calls may grow e.keys, so it is read afresh each time.
		k := e.keys[base+i]
		e.str(k)
		if err := e.encodeAny(m[k], d+1); err != nil {
			return e.at(err, pathStep{kind: step, key: k})
		}
	}
	return nil
}

// reflectObject writes a map with string keys of another type than
// map[string]any, sorted by key.
func (e *encodeState) reflectObject(rv reflect.Value, d int) error {
	e.next++
	base := len(e.kvs)
	e.kvs = slices.Grow(e.kvs, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		e.kvs = append(e.kvs, keyValue{key: it.Key().String(), rv: it.Value()})
	}
	defer func() { e.kvs = e.kvs[:base] }()
	kvs := e.kvs[base:]
	slices.SortFunc(kvs, func(a, b keyValue) int { return strings.Compare(a.key, b.key) })
	base2 := len(e.keys)
	for _, kv := range kvs {
		e.keys = append(e.keys, kv.key)
	}
	err := checkKeys(e.keys[base2:])
	e.keys = e.keys[:base2]
	if err != nil {
		return err
	}
	n := len(kvs)
	e.w.MapHeader(n)
	for i := range n {
		kv := e.kvs[base+i]
		e.str(kv.key)
		if err := e.encodeValue(kv.rv, d+1); err != nil {
			return e.at(err, pathStep{kind: stepKey, key: kv.key})
		}
	}
	return nil
}

// checkKeys reports keys that differ in Go but are one JavaScript string:
// invalid UTF-8 that turns into the same replacement characters.
func checkKeys(keys []string) error {
	clean := true
	for _, k := range keys {
		clean = clean && utf8.ValidString(k)
	}
	if clean {
		return nil
	}
	seen := make(map[string]string, len(keys))
	for _, k := range keys {
		js := string(unitsBytes(utf16OfWTF8(k)))
		if other, dup := seen[js]; dup {
			return unsendable("keys %q and %q are the same JavaScript string", other, k)
		}
		seen[js] = k
	}
	return nil
}

// unitsBytes returns UTF-16 code units as bytes, to compare strings as
// JavaScript does.
func unitsBytes(units []uint16) []byte {
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

// structField is a struct field that Marshal writes.
type structField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

func (e *encodeState) structObject(rv reflect.Value, t reflect.Type, d int) error {
	fields, ok := e.structs[t]
	if !ok {
		if e.structs == nil {
			e.structs = make(map[reflect.Type][]structField)
		}
		fields = typeFields(t)
		e.structs[t] = fields
	}
	e.next++
	base := len(e.vals)
	defer func() { e.vals = e.vals[:base] }()
	for _, f := range fields {
		fv, ok := fieldByIndex(rv, f.index)
		if !ok || f.omitEmpty && isEmpty(fv) || f.omitZero && isZero(fv) {
			continue
		}
		e.vals = append(e.vals, namedValue{f.name, fv})
	}
	n := len(e.vals) - base
	e.w.MapHeader(n)
	for i := range n {
		nv := e.vals[base+i]
		e.str(nv.name)
		if err := e.encodeValue(nv.rv, d+1); err != nil {
			return e.at(err, pathStep{kind: stepKey, key: nv.name})
		}
	}
	return nil
}

// fieldByIndex follows a field index through embedded structs; it reports
// false when an embedded pointer on the way is nil.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmpty is encoding/json's test for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isZero is the test for omitzero: an IsZero method when the type has one,
// otherwise the zero value.
func isZero(v reflect.Value) bool {
	if v.CanInterface() {
		if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
			if v.Kind() == reflect.Pointer && v.IsNil() {
				return true
			}
			return z.IsZero()
		}
	}
	return v.IsZero()
}

// typeFields lists the fields of a struct type that Marshal writes, as
// encoding/json chooses them: exported fields named by their json tag,
// fields of embedded structs promoted unless a shallower field or a tagged
// one of the same depth has the name, and "-" skipped.
func typeFields(t reflect.Type) []structField {
	type candidate struct {
		structField
		depth  int
		tagged bool
	}
	type level struct {
		t     reflect.Type
		index []int
	}
	var all []candidate
	visited := map[reflect.Type]int{}
	current := []level{{t, nil}}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, c := range current {
			if at, ok := visited[c.t]; ok && at < depth {
				continue
			}
			visited[c.t] = depth
			for i := range c.t.NumField() {
				sf := c.t.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(slices.Clone(c.index), i)
				if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					continue
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				var omitEmpty, omitZero bool
				for o := range strings.SplitSeq(opts, ",") {
					omitEmpty = omitEmpty || o == "omitempty"
					omitZero = omitZero || o == "omitzero"
				}
				all = append(all, candidate{structField{name, index, omitEmpty, omitZero}, depth, tagged})
			}
		}
		current = next
	}
	// For each name keep the shallowest field; among several at that
	// depth, the one tagged field, or none.
	slices.SortStableFunc(all, func(a, b candidate) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return 0
	})
	var fields []structField
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		group := all[i:j]
		first := group[0]
		if len(group) == 1 || group[1].depth > first.depth || first.tagged && !group[1].tagged {
			fields = append(fields, first.structField)
		}
		i = j
	}
	slices.SortFunc(fields, func(a, b structField) int { return slices.Compare(a.index, b.index) })
	return fields
}

// typed writes a typed array of n elements of kind k starting at p, as its
// RFC 8746 tag over a byte string. On little-endian hosts the elements'
// memory is that byte string, copied once into the output.
func (e *encodeState) typed(k TypedKind, p unsafe.Pointer, n int, isNil bool, t reflect.Type, d int) error {
	if isNil {
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if n > 0 {
		if e.shared(refKey{p, n, t}) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	e.next += 2 // the typed array and its buffer
	size := k.Size()
	e.w.Grow(18 + n*size)
	e.w.Tag(uint64(k))
	e.w.Head(cbor.MajorBytes, uint64(n*size))
	putElements(e.w.Extend(n*size), p, n, size, hostLittleEndian())
	return nil
}

// appendElements appends n elements of size bytes at p in little-endian
// order, as putElements writes them.
func appendElements(dst []byte, p unsafe.Pointer, n, size int, native bool) []byte {
	dst = slices.Grow(dst, n*size)
	putElements(dst[len(dst):len(dst)+n*size], p, n, size, native)
	return dst[:len(dst)+n*size]
}

// putElements writes n elements of size bytes at p into dst in
// little-endian order: a copy of their memory when native is true (a
// little-endian host), otherwise element by element.
func putElements(dst []byte, p unsafe.Pointer, n, size int, native bool) {
	if n == 0 {
		return
	}
	if native || size == 1 {
		copy(dst, unsafe.Slice((*byte)(p), n*size))
		return
	}
	for i := range n {
		q := unsafe.Add(p, i*size)
		switch size {
		case 2:
			binary.LittleEndian.PutUint16(dst[2*i:], *(*uint16)(q))
		case 4:
			binary.LittleEndian.PutUint32(dst[4*i:], *(*uint32)(q))
		default:
			binary.LittleEndian.PutUint64(dst[8*i:], *(*uint64)(q))
		}
	}
}

// hostLittleEndian reports whether this machine stores integers least
// significant byte first, as typed arrays are sent.
func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func (e *encodeState) arrayBuffer(b ArrayBuffer, d int) error {
	if b == nil {
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if len(b) > 0 {
		if e.shared(refKey{unsafe.Pointer(unsafe.SliceData(b)), len(b), arrayBufferType}) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	e.next++
	e.w.ByteString(b)
	return nil
}

// dataView writes a DataView over its own buffer: TagView [0, bytes, 0, n].
func (e *encodeState) dataView(b DataView, d int) error {
	if b == nil {
		e.w.Simple(cbor.SimpleNull)
		return nil
	}
	if len(b) > 0 {
		if e.shared(refKey{unsafe.Pointer(unsafe.SliceData(b)), len(b), dataViewType}) {
			return nil
		}
	}
	if err := e.enter(d + 1); err != nil {
		return err
	}
	e.next += 2 // the view and its buffer
	e.w.Tag(TagView)
	e.w.ArrayHeader(4)
	e.w.Head(cbor.MajorUint, uint64(KindDataView))
	e.w.ByteString(b)
	e.w.Head(cbor.MajorUint, 0)
	e.w.Head(cbor.MajorUint, uint64(len(b)))
	return nil
}

// date writes t, rounded to the millisecond, as tag 1 over seconds.
func (e *encodeState) date(t time.Time, d int) error {
	if err := e.enter(d); err != nil {
		return err
	}
	const outside = "a date more than 8.64e15 ms from 1970 is outside the range of a JavaScript Date"
	if s := t.Unix(); s > maxDateMillis/1000+1 || s < -maxDateMillis/1000-1 {
		return unsendable(outside)
	}
	ms := t.Round(time.Millisecond).UnixMilli()
	if ms > maxDateMillis || ms < -maxDateMillis {
		return unsendable(outside)
	}
	e.next++
	e.w.Tag(TagEpochTime)
	e.w.Number(float64(ms) / 1000)
	return nil
}

func (e *encodeState) regExp(r RegExp, d int) error {
	if err := e.enter(d); err != nil {
		return err
	}
	e.next++
	e.w.Tag(TagRegExp)
	e.w.ArrayHeader(2)
	e.str(r.Source)
	e.str(r.Flags)
	return nil
}

// jsMap writes a Map; k is its identity, or the zero refKey for none.
func (e *encodeState) jsMap(m *Map, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	if err := checkUnique(len(m.Entries), func(i int) any { return m.Entries[i].Key }, "Map key"); err != nil {
		return err
	}
	e.next++
	e.w.Tag(TagMap)
	e.w.MapHeader(len(m.Entries))
	for i := range m.Entries {
		if err := e.encodeAny(m.Entries[i].Key, d+1); err != nil {
			return e.at(err, pathStep{kind: stepMapKey, i: i})
		}
		if err := e.encodeAny(m.Entries[i].Value, d+1); err != nil {
			return e.at(err, pathStep{kind: stepMapValue, i: i})
		}
	}
	return nil
}

func (e *encodeState) jsSet(s *Set, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	if err := checkUnique(len(s.Values), func(i int) any { return s.Values[i] }, "Set value"); err != nil {
		return err
	}
	e.next++
	e.w.Tag(TagSet)
	e.w.ArrayHeader(len(s.Values))
	for i, v := range s.Values {
		if err := e.encodeAny(v, d+1); err != nil {
			return e.at(err, pathStep{kind: stepSetValue, i: i})
		}
	}
	return nil
}

// checkUnique reports a key of a Map (or a value of a Set) that repeats an
// earlier one, as JavaScript compares them (SameValueZero): the document
// would hold a duplicate that decoders reject.
func checkUnique(n int, key func(int) any, what string) error {
	if n < 2 {
		return nil
	}
	seen := make(keySet, n)
	for i := range n {
		if !seen.add(key(i)) {
			return unsendable("%s #%d repeats an earlier one", what, i)
		}
	}
	return nil
}

func (e *encodeState) jsError(v *Error, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	return e.errorObject(v.Name, v.Message, v.Stack, v.Cause, v.HasCause, v.NoMessage, d)
}

// goError writes a Go error that is not a *Error as an Error named "Error".
func (e *encodeState) goError(err error, d int) error {
	rv := reflect.ValueOf(err)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			e.w.Simple(cbor.SimpleNull)
			return nil
		}
		if e.shared(refKey{rv.UnsafePointer(), 0, rv.Type()}) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	return e.errorObject("Error", err.Error(), "", nil, false, false, d)
}

func (e *encodeState) errorObject(name, message, stack string, cause any, hasCause, noMessage bool, d int) error {
	e.next++
	e.w.Tag(TagError)
	n := 3
	if hasCause {
		n++
	}
	if noMessage {
		n--
	}
	e.w.MapHeader(n)
	for _, f := range [...][2]string{{"name", name}, {"message", message}, {"stack", stack}} {
		if noMessage && f[0] == "message" {
			continue
		}
		e.w.Text(f[0])
		e.str(f[1])
	}
	if hasCause {
		e.w.Text("cause")
		if err := e.encodeAny(cause, d+1); err != nil {
			return e.at(err, pathStep{kind: stepKey, key: "cause"})
		}
	}
	return nil
}

// wrapper writes a wrapper object: TagWrapper over its primitive.
func (e *encodeState) wrapper(v *Wrapper, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	switch p := v.Value.(type) {
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, string, bool:
	case *big.Int:
		if p == nil {
			return unsendable("a value.Wrapper holds a nil *big.Int")
		}
	case big.Int:
	default:
		return unsendable("a value.Wrapper holds a %T; it holds a number, string, boolean or *big.Int", v.Value)
	}
	e.next++
	e.w.Tag(TagWrapper)
	return e.encodeAny(v.Value, d+1)
}

// sparseArray writes an Array: TagArray [length, map], the map's keys the
// indexes present, ascending, as unsigned integers, then the other
// properties, sorted, as strings.
func (e *encodeState) sparseArray(a *Array, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	idx := make([]uint32, 0, len(a.Elements))
	for i := range a.Elements {
		if i >= a.Length {
			return unsendable("a value.Array of length %d holds an element at index %d", a.Length, i)
		}
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for name := range a.Props {
		if _, isIndex := arrayIndex(name); isIndex {
			return unsendable("a value.Array's property %q is an index; put it in Elements", name)
		}
		if name == "length" {
			return unsendable(`a value.Array's property "length" is its Length`)
		}
	}
	e.next++
	e.w.Tag(TagArray)
	e.w.ArrayHeader(2)
	e.w.Head(cbor.MajorUint, uint64(a.Length))
	e.w.MapHeader(len(idx) + len(a.Props))
	for _, i := range idx {
		e.w.Head(cbor.MajorUint, uint64(i))
		if err := e.encodeAny(a.Elements[i], d+1); err != nil {
			return e.at(err, pathStep{kind: stepIndex, i: int(i)})
		}
	}
	return e.stringMapItems(a.Props, stepKey, d)
}

// ArrayIndex reports whether name is an array index ("0" … "4294967294",
// written as JavaScript writes numbers) and which: a TagArray's property
// with such a name is refused (indexes are integers there).
func ArrayIndex(name string) (uint32, bool) { return arrayIndex(name) }

// arrayIndex reports whether name is an array index ("0" … "4294967294",
// written as JavaScript writes numbers) and which.
func arrayIndex(name string) (uint32, bool) {
	if name == "" || len(name) > 10 || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n >= math.MaxUint32 {
		return 0, false
	}
	return uint32(n), true
}

// function writes a captured function: TagFunction [source, env, file,
// line, column], and true after them for a strict function. Its env is
// part of it and takes no index.
func (e *encodeState) function(f *Function, k refKey, d int) error {
	if k.p != nil {
		if e.shared(k) {
			return nil
		}
	}
	if err := e.enter(d); err != nil {
		return err
	}
	if f.Line < 0 || f.Column < 0 || f.Line > math.MaxInt32 || f.Column > math.MaxInt32 {
		return unsendable("a function's line and column must be in [0, 2^31), have %d:%d", f.Line, f.Column)
	}
	e.next++
	e.w.Tag(TagFunction)
	if f.Strict {
		e.w.ArrayHeader(6)
	} else {
		e.w.ArrayHeader(5)
	}
	e.str(f.Source)
	if err := e.stringMap(f.Env, stepFreeVariable, d); err != nil {
		return err
	}
	e.str(f.File)
	e.w.Head(cbor.MajorUint, uint64(f.Line))
	e.w.Head(cbor.MajorUint, uint64(f.Column))
	if f.Strict {
		e.w.Bool(true)
	}
	return nil
}

// utf16OfWTF8 returns the UTF-16 code units of s, reading the three-byte
// form of a surrogate (WTF-8) as that surrogate and any other invalid byte
// as U+FFFD.
func utf16OfWTF8(s string) []uint16 {
	units := make([]uint16, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 && i+2 < len(s) &&
			s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2] >= 0x80 && s[i+2] <= 0xbf {
			units = append(units, 0xd000|uint16(s[i+1]&0x3f)<<6|uint16(s[i+2]&0x3f))
			i += 3
			continue
		}
		units = utf16.AppendRune(units, r)
		i += size
	}
	return units
}
