package value

import "github.com/riot-go/riot/cbor"

// CBOR tags used by the codec. The standard ones are registered with IANA;
// the riot ones sit in the first-come-first-served range under a common
// prefix ("rio" in ASCII) and are documented in docs/values.md.
const (
	TagEpochTime    = 1                 // Date: seconds since the epoch, integer or float; NaN is an invalid Date
	TagPosBignum    = cbor.TagPosBignum // BigInt ≥ 0: big-endian magnitude
	TagNegBignum    = cbor.TagNegBignum // BigInt < 0: big-endian magnitude of -1-n
	TagSet          = 258               // Set: array of values
	TagMap          = 259               // Map: CBOR map with keys of any kind
	TagRegExp       = 21066             // RegExp: [source, flags]
	tagRiot         = 0x72696f00
	TagRef          = tagRiot + 1 // back reference: index of an object already decoded
	TagView         = tagRiot + 2 // typed array or DataView on part of (or a shared) buffer: [kind, buffer, byteOffset, length]
	TagError        = tagRiot + 3 // Error: map of name, message, stack and optionally cause
	TagFunction     = tagRiot + 4 // captured function: [source, env map, file, line, column]
	TagBlob         = tagRiot + 5 // value stored as a content-addressed blob: 32-byte SHA-256
	TagUTF16        = tagRiot + 6 // string that is not valid Unicode (lone surrogates): UTF-16LE code units
	TagWrapper      = tagRiot + 7 // wrapper object (new Number(3), new String("x"), new Boolean(false), Object(1n)): the primitive
	TagArray        = tagRiot + 8 // array with holes or non-index properties: [length, map of index or name to value]
	tagTypedFirst   = 64
	tagTypedLast    = 87
	tagSelfDescribe = 55799
)

// TypedKind is the element type of a typed array. Its value is the RFC 8746
// tag of its little-endian form, which is how riot sends it.
type TypedKind uint8

// Typed array kinds, as RFC 8746 little-endian tags.
const (
	Uint8        TypedKind = 64
	Uint8Clamped TypedKind = 68
	Uint16       TypedKind = 69
	Uint32       TypedKind = 70
	BigUint64    TypedKind = 71
	Int8         TypedKind = 72
	Int16        TypedKind = 77
	Int32        TypedKind = 78
	BigInt64     TypedKind = 79
	Float32      TypedKind = 85
	Float64      TypedKind = 86
	// KindDataView is not an RFC 8746 tag: it marks a DataView inside TagView.
	KindDataView TypedKind = 0
)

var typedKinds = [...]struct {
	kind TypedKind
	size int
	name string
}{
	{Uint8, 1, "Uint8Array"},
	{Uint8Clamped, 1, "Uint8ClampedArray"},
	{Uint16, 2, "Uint16Array"},
	{Uint32, 4, "Uint32Array"},
	{BigUint64, 8, "BigUint64Array"},
	{Int8, 1, "Int8Array"},
	{Int16, 2, "Int16Array"},
	{Int32, 4, "Int32Array"},
	{BigInt64, 8, "BigInt64Array"},
	{Float32, 4, "Float32Array"},
	{Float64, 8, "Float64Array"},
	{KindDataView, 1, "DataView"},
}

// Size returns the size of one element in bytes, or 0 for an unknown kind.
func (k TypedKind) Size() int {
	for _, t := range typedKinds {
		if t.kind == k {
			return t.size
		}
	}
	return 0
}

// String returns the JavaScript constructor name, such as "Float64Array".
func (k TypedKind) String() string {
	for _, t := range typedKinds {
		if t.kind == k {
			return t.name
		}
	}
	return "TypedKind(" + itoa(int(k)) + ")"
}

// TypedKindByName returns the kind whose JavaScript constructor is name.
func TypedKindByName(name string) (TypedKind, bool) {
	for _, t := range typedKinds {
		if t.name == name {
			return t.kind, true
		}
	}
	return 0, false
}

// TypedKindOfTag maps an RFC 8746 tag (either byte order) to a kind and
// whether its elements are big-endian. Float16 and Float128 are not
// supported and report ok == false.
func TypedKindOfTag(tag uint64) (k TypedKind, bigEndian bool, ok bool) {
	switch tag {
	case 64:
		return Uint8, false, true
	case 68:
		return Uint8Clamped, false, true
	case 72:
		return Int8, false, true
	case 65:
		return Uint16, true, true
	case 66:
		return Uint32, true, true
	case 67:
		return BigUint64, true, true
	case 73:
		return Int16, true, true
	case 74:
		return Int32, true, true
	case 75:
		return BigInt64, true, true
	case 81:
		return Float32, true, true
	case 82:
		return Float64, true, true
	case 69, 70, 71, 77, 78, 79, 85, 86:
		return TypedKind(tag), false, true
	}
	return 0, false, false
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
