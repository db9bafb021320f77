// Package value is riot's value codec: structured-clone values over CBOR.
//
// Everything a workunit takes or gives back (arguments, captured variables,
// results, thrown errors) crosses the network as one encoded value, a value
// document. The semantics are those of the structured clone algorithm that
// postMessage uses; the encoding is CBOR (RFC 8949) with standard tags where
// one exists (RFC 8746 for typed arrays, 258 for sets, 259 for maps, 21066
// for regular expressions) and a few riot tags beside them. docs/values.md
// is the full table and the contract both codecs keep.
//
// This package holds two things:
//
//   - the Go model of those values (Undefined, Map, Set, RegExp, Error,
//     Function, ...) that Go programs send and receive;
//   - Marshal and Unmarshal (and Encoder and Decoder, for options), between
//     Go values and bytes, with the helpers (the tags, WriteUTF16,
//     WriteTyped, DateMillis) that the engine's JavaScript codec shares so
//     that both sides speak one format.
//
// The CBOR items themselves (heads, strings, arrays) are package cbor's.
//
// # Usage
//
//	b, err := value.Marshal([]any{42, "x", []float64{1, 2}})
//	v, err := value.Unmarshal(b) // []any{42.0, "x", []float64{1, 2}}
//
//	// Name the root in errors, and resolve blob references on decoding:
//	b, err = value.Encoder{Root: "args"}.Encode(args)
//	v, err = value.Decoder{Blobs: source}.Decode(ctx, b)
//
// # Go values
//
// Unmarshal gives plain Go values:
//
//	undefined            Undefined{}
//	null                 nil
//	boolean              bool
//	number               float64 (NaN, ±Inf and -0 kept; integers too)
//	BigInt               *big.Int
//	string               string (lone surrogates in WTF-8 form, see below)
//	Array                []any; *Array when it has holes or non-index properties
//	plain object         map[string]any
//	wrapper object       *Wrapper (new Number(3), new String("x"), Object(1n))
//	Map                  *Map (ordered entries, keys of any kind)
//	Set                  *Set (ordered values)
//	Date                 time.Time (UTC, whole milliseconds); an invalid Date is InvalidDate{}
//	RegExp               RegExp
//	ArrayBuffer          ArrayBuffer
//	Uint8Array           []byte
//	Uint8ClampedArray    Uint8ClampedArray
//	Int8Array ...        []int8, []int16, []uint16, []int32, []uint32
//	Float32Array         []float32
//	Float64Array         []float64
//	BigInt64Array        []int64
//	BigUint64Array       []uint64
//	DataView             DataView
//	Error                *Error (NoMessage when it has no own message)
//	function (captured)  *Function
//	blob reference       BlobRef (or the blob's value, with Decoder.Blobs)
//
// An object referred to twice in the document is one Go value: the same map,
// slice or pointer (an array that holds itself is a []any whose element is
// itself). A typed array given as a view (TagView) aliases its buffer's
// memory, as in JavaScript; typed arrays are decoded into memory aligned for
// any element type, so views on them alias too. The result never aliases the
// input bytes.
//
// Marshal takes those and more:
//
//   - every Go integer and float kind; an integer outside ±2^53 is an error,
//     since a JavaScript number cannot hold it exactly (send a *big.Int);
//   - strings; valid UTF-8 is a text string, and a surrogate in its
//     three-byte form (WTF-8, as Unmarshal gives it) is written back as that
//     code unit, so strings with lone surrogates round-trip; other invalid
//     bytes become U+FFFD;
//   - slices: one whose element kind is uint8, int8, uint16, int16, uint32,
//     int32, uint64, int64, float32 or float64 is that typed array, written
//     from the slice's memory with one copy; any other is an Array, as is a
//     Go array;
//   - maps with string keys, written sorted by key so that equal values give
//     equal bytes (JavaScript keeps insertion order; Go has none);
//   - structs, as plain objects of their exported fields named as
//     encoding/json names them: the json tag's name, "-" to skip, omitempty
//     and omitzero, and the fields of embedded structs;
//   - pointers, followed (a nil pointer, map or slice is null);
//   - time.Time, rounded to the millisecond (out of a Date's range it is an
//     error), and big.Int;
//   - error values: a *Error as it is, any other error as an Error named
//     "Error" whose message is err.Error().
//
// Shared and cyclic references are kept: a map, a non-empty slice (the same
// address, length and type) or a pointer to a struct, array, Map, Set, Error
// or Function met a second time is written as a back reference. Slices that
// overlap without being the same are written apart.
//
// A value that cannot be sent (a channel, a Go func, a complex number, an
// unsafe.Pointer, a map with non-string keys) is a *PathError naming where it
// was: "args[1].onDone: a function cannot be sent to a worker".
//
// # Caller's duties
//
//  1. Keep a value unchanged while Marshal reads it; Marshal does not copy
//     it first, and nothing in this package locks.
//  2. Treat what Unmarshal returns as yours: it shares no memory with the
//     input, but views in it share memory with each other as their
//     JavaScript counterparts did.
//  3. Give Decoder.Blobs a blob.Source that returns the bytes of the hash it
//     is asked for; the Decoder does not check the hash.
//
// Marshal, Unmarshal, Encoder and Decoder are safe for concurrent use.
//
// # Safety
//
// Unmarshal never panics and never allocates more than a small multiple of
// its input, whatever bytes it is given: lengths are checked against the
// bytes left before anything is allocated, nesting is bounded by MaxDepth,
// and back references must point at values already started. The worst case,
// a document of empty objects, costs under 100 bytes of Go memory per input
// byte. FuzzUnmarshal checks this, and that what decodes encodes stably.
package value
