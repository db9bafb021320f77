package value

import (
	"math/big"
	"reflect"

	"github.com/riot-go/riot/blob"
)

// Undefined is JavaScript's undefined. (nil is null.)
type Undefined struct{}

// InvalidDate is a Date whose time value is NaN (new Date("nope")).
type InvalidDate struct{}

// ArrayBuffer is a JavaScript ArrayBuffer: raw bytes with no element type.
// (A []byte is a Uint8Array.)
type ArrayBuffer []byte

// Uint8ClampedArray is a JavaScript Uint8ClampedArray.
type Uint8ClampedArray []byte

// DataView is a JavaScript DataView over its bytes.
type DataView []byte

// RegExp is a JavaScript regular expression. Its syntax is ECMAScript's, not
// Go's regexp package's.
type RegExp struct {
	Source string
	Flags  string
}

// String returns the regular expression as a literal, /source/flags.
func (r RegExp) String() string { return "/" + r.Source + "/" + r.Flags }

// MapEntry is one key and value of a Map.
type MapEntry struct {
	Key   any
	Value any
}

// Map is a JavaScript Map: entries in insertion order, with keys of any kind.
// Keys are compared as JavaScript does only for the primitive kinds (string,
// float64, bool, nil, Undefined, *big.Int by value); Get and Set are linear.
type Map struct {
	Entries []MapEntry
}

// Len returns the number of entries.
func (m *Map) Len() int { return len(m.Entries) }

// Get returns the value stored under key.
func (m *Map) Get(key any) (any, bool) {
	for _, e := range m.Entries {
		if sameKey(e.Key, key) {
			return e.Value, true
		}
	}
	return nil, false
}

// Set stores value under key, replacing an entry with the same key.
func (m *Map) Set(key, value any) {
	for i, e := range m.Entries {
		if sameKey(e.Key, key) {
			m.Entries[i].Value = value
			return
		}
	}
	m.Entries = append(m.Entries, MapEntry{key, value})
}

// Set is a JavaScript Set: values in insertion order.
type Set struct {
	Values []any
}

// Len returns the number of values.
func (s *Set) Len() int { return len(s.Values) }

// Has reports whether v is in the set (compared as Map keys are).
func (s *Set) Has(v any) bool {
	for _, x := range s.Values {
		if sameKey(x, v) {
			return true
		}
	}
	return false
}

// Add adds v unless it is already present.
func (s *Set) Add(v any) {
	if !s.Has(v) {
		s.Values = append(s.Values, v)
	}
}

// Error is a JavaScript Error object: its name (Error, TypeError, RangeError,
// or a user subclass's name), message and stack. Cause is the error's cause
// when it has one (HasCause). NoMessage is set for an error that has no own
// message property (new Error()), which Message "" cannot tell apart.
type Error struct {
	Name      string
	Message   string
	Stack     string
	Cause     any
	HasCause  bool
	NoMessage bool
}

// Wrapper is a JavaScript wrapper object: new Number(3), new String("x"),
// new Boolean(false), Object(1n). Value is the primitive inside it: a
// float64, string, bool or *big.Int (Marshal also takes the other Go
// number kinds).
type Wrapper struct {
	Value any
}

// Array is a JavaScript array that a []any cannot hold: one with holes
// (new Array(3), [1, , 3]) or with properties that are not indexes
// (a.name = "x"). Length is its length; Elements holds the elements that
// are present, by index (each below Length), and an index that is not there
// is a hole; Props holds the other properties.
type Array struct {
	Length   uint32
	Elements map[uint32]any
	Props    map[string]any
}

// Error returns "Name: message", as JavaScript's Error.prototype.toString.
func (e *Error) Error() string {
	switch {
	case e.Name == "":
		return e.Message
	case e.Message == "":
		return e.Name
	}
	return e.Name + ": " + e.Message
}

// Function is a function captured on a master: its source text and the values
// of its free variables (which may be other *Function values, including
// itself). Only the engine can turn one into a callable; Go code can build one
// to send a function to a worker.
type Function struct {
	// Source is a JavaScript function expression: an arrow function, a
	// function expression or a class expression.
	Source string
	// Env holds the free variables the source refers to, by name.
	Env map[string]any
	// File, Line and Column say where Source starts in its file, for stack
	// traces; Line and Column count from 1, and 0 means unknown.
	File         string
	Line, Column int
	// Strict says that the function is strict code where it was written
	// (a 'use strict' directive around it, or a class body): the worker
	// makes it strict, as it was on the master.
	Strict bool
}

// BlobRef stands for a value that is stored, encoded on its own, as a
// content-addressed blob. Marshal writes it as a reference; Unmarshal gives it
// back as is unless Decoder.Blobs resolves it.
type BlobRef blob.Hash

// String returns the blob's short hash.
func (b BlobRef) String() string { return "blob:" + blob.Hash(b).Short() }

func sameKey(a, b any) bool {
	switch x := a.(type) {
	case float64:
		// SameValueZero: NaN is the same as NaN, and 0 as -0.
		y, ok := b.(float64)
		return ok && (x == y || x != x && y != y)
	case nil, bool, string, Undefined:
		return a == b
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x != nil && y != nil && x.Cmp(y) == 0
	}
	pa, oka := identity(a)
	pb, okb := identity(b)
	return oka && okb && pa == pb
}

// identity returns the address that makes a reference-like Go value (a map,
// a pointer, a non-empty slice) the same value as another, for Map keys and
// for keeping shared references.
func identity(v any) (uintptr, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Pointer:
		if rv.IsNil() {
			return 0, false
		}
		return rv.Pointer(), true
	case reflect.Slice:
		if rv.Len() == 0 {
			return 0, false
		}
		return rv.Pointer(), true
	}
	return 0, false
}

// keySet holds Map keys (or Set values) by SameValueZero, to find repeats in
// linear time: primitives by value, objects by identity.
type keySet map[any]struct{}

type nanKey struct{}

type bigKey string

// add adds k and reports false when an equal key is already there.
func (s keySet) add(k any) bool {
	hk, ok := hashKey(k)
	if !ok {
		return true // an object with no identity: a new one each time
	}
	if _, dup := s[hk]; dup {
		return false
	}
	s[hk] = struct{}{}
	return true
}

// hashKey returns a comparable stand-in for k that is equal for keys that
// JavaScript's SameValueZero takes as equal, and false for a value that is
// a distinct object whatever it holds (a struct, a time.Time, ...).
func hashKey(k any) (any, bool) {
	switch x := k.(type) {
	case nil, bool, string, Undefined, BlobRef:
		return x, true
	case float64:
		return floatKey(x), true
	case *big.Int:
		if x == nil {
			return nil, true
		}
		return bigKeyOf(x), true
	case big.Int:
		return bigKeyOf(&x), true
	}
	rv := reflect.ValueOf(k)
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool(), true
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return floatKey(float64(rv.Int())), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return floatKey(float64(rv.Uint())), true
	case reflect.Float32, reflect.Float64:
		return floatKey(rv.Float()), true
	case reflect.Map, reflect.Pointer:
		if rv.IsNil() {
			return nil, true
		}
		return refKey{rv.UnsafePointer(), 0, rv.Type()}, true
	case reflect.Slice:
		if rv.IsNil() {
			return nil, true
		}
		if rv.Len() == 0 {
			return nil, false
		}
		return refKey{rv.UnsafePointer(), rv.Len(), rv.Type()}, true
	}
	return nil, false
}

// bigKeyOf returns n's sign and magnitude; unlike n.String(), it costs
// linear time however large n is.
func bigKeyOf(n *big.Int) bigKey {
	return bigKey(append([]byte{byte(n.Sign() + 1)}, n.Bytes()...))
}

func floatKey(f float64) any {
	switch {
	case f != f:
		return nanKey{}
	case f == 0:
		return float64(0)
	}
	return f
}
