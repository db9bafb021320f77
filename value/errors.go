package value

import (
	"strconv"
	"strings"
)

// PathError reports a Go value that Marshal cannot send, and where it sits in
// the value being marshalled: "args[1].onDone: a function cannot be sent to
// a worker". Path starts with the encoder's Root ("value" by default) and
// uses the steps of docs/values.md: .name or ["key"] for object keys, [i] for
// array elements, <Map key #i>, <Map value #i> and <Set value #i> inside Maps
// and Sets, .cause for an Error's cause and (free variable name) inside a
// captured function. Decoding errors are *cbor.SyntaxError instead.
type PathError struct {
	Path string
	Msg  string
}

// Error returns "path: message".
func (e *PathError) Error() string { return e.Path + ": " + e.Msg }

// stepKind says how a pathStep is written.
type stepKind uint8

const (
	stepKey          stepKind = iota // .name or ["key"]
	stepIndex                        // [i]
	stepMapKey                       // <Map key #i>
	stepMapValue                     // <Map value #i>
	stepSetValue                     // <Set value #i>
	stepFreeVariable                 // (free variable name)
)

// pathStep is one step from a value to one of its parts. Encoders collect
// them only while an error unwinds, so a successful Marshal builds no paths.
type pathStep struct {
	kind stepKind
	key  string
	i    int
}

// renderPath writes root followed by steps, which are innermost first.
func renderPath(root string, steps []pathStep) string {
	var b strings.Builder
	b.WriteString(root)
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		switch s.kind {
		case stepKey:
			if isIdentifier(s.key) {
				b.WriteByte('.')
				b.WriteString(s.key)
			} else {
				b.WriteByte('[')
				b.WriteString(strconv.Quote(s.key))
				b.WriteByte(']')
			}
		case stepIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.i))
			b.WriteByte(']')
		case stepMapKey:
			b.WriteString("<Map key #" + strconv.Itoa(s.i) + ">")
		case stepMapValue:
			b.WriteString("<Map value #" + strconv.Itoa(s.i) + ">")
		case stepSetValue:
			b.WriteString("<Set value #" + strconv.Itoa(s.i) + ">")
		case stepFreeVariable:
			b.WriteString("(free variable " + s.key + ")")
		}
	}
	return b.String()
}

// isIdentifier reports whether a path writes s after a dot: an ASCII
// letter, $ or _, then those or digits. (Other keys are quoted, as the
// engine's codec quotes them, even where JavaScript would allow a dot.)
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '$' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
