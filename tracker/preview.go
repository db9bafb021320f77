package tracker

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/riot-go/riot/value"
	"github.com/riot-go/riot/workunit"
)

// Previews of values for the HTTP API: the tracker decodes value documents
// in Go (it never runs JavaScript) and renders them as text in the style
// of Node's util.inspect, bounded in depth, in items per container and in
// bytes, whatever the document holds (shared references, cycles).
const (
	// previewBytes bounds a preview's text.
	previewBytes = 4 << 10
	// previewDocBytes is the largest value document the tracker decodes
	// for a preview; a larger one is described by its size only.
	previewDocBytes = 1 << 20
	// previewDepth and previewItems bound the walk: nested containers
	// past the depth show as [Object], [Array], and containers show their
	// first previewItems items.
	previewDepth = 4
	previewItems = 50
	// sourceLines and sourceBytes bound a workunit's source as the API
	// shows it.
	sourceLines = 40
	sourceBytes = 8 << 10
)

// Preview is a value as the HTTP API shows it.
type Preview struct {
	// Text is the value rendered; Truncated says it was cut.
	Text      string `json:"preview"`
	Truncated bool   `json:"truncated,omitempty"`
	// Bytes is the size of the value document.
	Bytes int `json:"bytes,omitempty"`
}

// previewDoc renders the value document doc.
func previewDoc(ctx context.Context, doc []byte) Preview {
	p := Preview{Bytes: len(doc)}
	if len(doc) > previewDocBytes {
		p.Text = fmt.Sprintf("(a value of %d bytes: too large to preview)", len(doc))
		return p
	}
	v, err := value.Decoder{}.Decode(ctx, doc)
	if err != nil {
		p.Text = "(a value that does not decode: " + err.Error() + ")"
		return p
	}
	return previewValue(v, len(doc))
}

// previewValue renders a decoded value.
func previewValue(v any, size int) Preview {
	pr := &printer{seen: map[uintptr]bool{}}
	pr.value(v, 0)
	text, cut := pr.b.String(), pr.cut
	if len(text) > previewBytes {
		text, cut = truncateUTF8(text, previewBytes), true
	}
	if cut {
		text += "…"
	}
	return Preview{Text: text, Truncated: cut, Bytes: size}
}

// truncateUTF8 returns s cut to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

type printer struct {
	b    strings.Builder
	cut  bool
	seen map[uintptr]bool // containers on the path from the root
}

func (p *printer) full() bool {
	if p.b.Len() >= previewBytes {
		p.cut = true
		return true
	}
	return false
}

func (p *printer) str(s string) { p.b.WriteString(s) }

// enter marks the container at ptr as on the path; it reports false for
// one already there (a cycle), which is written as [Circular].
func (p *printer) enter(ptr uintptr) bool {
	if ptr == 0 {
		return true
	}
	if p.seen[ptr] {
		p.str("[Circular]")
		return false
	}
	p.seen[ptr] = true
	return true
}

func (p *printer) leave(ptr uintptr) { delete(p.seen, ptr) }

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + "'"
}

func number(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (p *printer) value(v any, depth int) {
	if p.full() {
		return
	}
	switch v := v.(type) {
	case nil:
		p.str("null")
	case value.Undefined:
		p.str("undefined")
	case bool:
		p.str(strconv.FormatBool(v))
	case float64:
		p.str(number(v))
	case *big.Int:
		p.str(truncateUTF8(v.String(), previewBytes) + "n")
	case string:
		p.str(quote(truncateUTF8(v, previewBytes)))
	case time.Time:
		p.str(v.UTC().Format("2006-01-02T15:04:05.000Z"))
	case value.InvalidDate:
		p.str("Invalid Date")
	case value.RegExp:
		p.str(v.String())
	case value.BlobRef:
		p.str("[" + v.String() + "]")
	case *value.Wrapper:
		p.str("[")
		switch v.Value.(type) {
		case string:
			p.str("String: ")
		case bool:
			p.str("Boolean: ")
		case *big.Int:
			p.str("BigInt: ")
		default:
			p.str("Number: ")
		}
		p.value(v.Value, depth)
		p.str("]")
	case *value.Error:
		p.str(v.Error())
	case *value.Function:
		first, _, _ := strings.Cut(v.Source, "\n")
		p.str("[Function: " + truncateUTF8(first, 80) + "]")
	case []any:
		p.list(reflect.ValueOf(v).Pointer(), "", "[", "]", len(v), depth, func(i int) { p.value(v[i], depth+1) })
	case *value.Array:
		idx := make([]uint32, 0, len(v.Elements))
		for i := range v.Elements {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		p.list(reflect.ValueOf(v).Pointer(), fmt.Sprintf("Array(%d) ", v.Length), "[", "]", len(idx), depth, func(i int) {
			p.str(strconv.FormatUint(uint64(idx[i]), 10) + ": ")
			p.value(v.Elements[idx[i]], depth+1)
		})
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		p.list(reflect.ValueOf(v).Pointer(), "", "{", "}", len(keys), depth, func(i int) {
			p.str(propName(keys[i]) + ": ")
			p.value(v[keys[i]], depth+1)
		})
	case *value.Map:
		p.list(reflect.ValueOf(v).Pointer(), fmt.Sprintf("Map(%d) ", len(v.Entries)), "{", "}", len(v.Entries), depth, func(i int) {
			p.value(v.Entries[i].Key, depth+1)
			p.str(" => ")
			p.value(v.Entries[i].Value, depth+1)
		})
	case *value.Set:
		p.list(reflect.ValueOf(v).Pointer(), fmt.Sprintf("Set(%d) ", len(v.Values)), "{", "}", len(v.Values), depth, func(i int) { p.value(v.Values[i], depth+1) })
	default:
		p.typed(v)
	}
}

// list writes a container of n items, each by item(i).
func (p *printer) list(ptr uintptr, prefix, open, end string, n, depth int, item func(i int)) {
	p.str(prefix)
	if n == 0 {
		p.str(open + end)
		return
	}
	if depth >= previewDepth {
		if open == "[" {
			p.str("[Array]")
		} else {
			p.str("[Object]")
		}
		return
	}
	if !p.enter(ptr) {
		return
	}
	defer p.leave(ptr)
	p.str(open + " ")
	for i := range min(n, previewItems) {
		if i > 0 {
			p.str(", ")
		}
		if p.full() {
			return
		}
		item(i)
	}
	if n > previewItems {
		p.str(fmt.Sprintf(", ... %d more items", n-previewItems))
	}
	p.str(" " + end)
}

// typed writes a typed array, ArrayBuffer or DataView.
func (p *printer) typed(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		p.str(fmt.Sprintf("[%T]", v))
		return
	}
	name := map[string]string{
		"[]uint8": "Uint8Array", "[]int8": "Int8Array", "[]uint16": "Uint16Array", "[]int16": "Int16Array",
		"[]uint32": "Uint32Array", "[]int32": "Int32Array", "[]float32": "Float32Array", "[]float64": "Float64Array",
		"[]int64": "BigInt64Array", "[]uint64": "BigUint64Array", "value.Uint8ClampedArray": "Uint8ClampedArray",
		"value.ArrayBuffer": "ArrayBuffer", "value.DataView": "DataView",
	}[rv.Type().String()]
	if name == "" {
		name = rv.Type().String()
	}
	n := rv.Len()
	p.str(fmt.Sprintf("%s(%d) [", name, n))
	for i := range min(n, previewItems) {
		if i > 0 {
			p.str(",")
		}
		p.str(" ")
		e := rv.Index(i)
		switch {
		case e.CanInt():
			p.str(strconv.FormatInt(e.Int(), 10))
		case e.CanUint():
			p.str(strconv.FormatUint(e.Uint(), 10))
		case e.CanFloat():
			p.str(number(e.Float()))
		}
	}
	if n > previewItems {
		p.str(fmt.Sprintf(", ... %d more items", n-previewItems))
	}
	p.str(" ]")
}

// propName writes an object's key as Node does: bare when it is an
// identifier, quoted otherwise.
func propName(k string) string {
	if k == "" {
		return "''"
	}
	for i, r := range k {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return quote(k)
		}
	}
	return k
}

// specPreview is what the API shows of a workunit's spec.
type specPreview struct {
	Kind   string    `json:"kind"`
	Name   string    `json:"name,omitempty"`
	Source string    `json:"source,omitempty"`
	Export string    `json:"export,omitempty"`
	Module string    `json:"module,omitempty"`
	Args   []Preview `json:"args,omitempty"`
	// SourceTruncated says that Source holds the first lines only.
	SourceTruncated bool `json:"source_truncated,omitempty"`
}

// previewSpec decodes an encoded workunit spec for the API.
func previewSpec(ctx context.Context, data []byte) (specPreview, error) {
	var sp workunit.Spec
	if err := sp.UnmarshalBinary(data); err != nil {
		return specPreview{}, err
	}
	out := specPreview{Kind: sp.Kind.String(), Name: sp.Name, Export: sp.Export}
	if sp.Module != ([32]byte{}) {
		out.Module = sp.Module.String()
	}
	source := sp.Source
	var args []any
	if len(sp.Payload) > 0 && len(sp.Payload) <= previewDocBytes {
		v, err := value.Decoder{}.Decode(ctx, sp.Payload)
		if err == nil {
			args, _ = v.([]any)
		}
	}
	if sp.Kind == workunit.Fn && len(args) > 0 {
		if f, ok := args[0].(*value.Function); ok {
			source = f.Source
		}
		args = args[1:]
	}
	out.Source, out.SourceTruncated = firstLines(source, sourceLines, sourceBytes)
	for _, a := range args {
		if len(out.Args) == previewItems {
			break
		}
		out.Args = append(out.Args, previewValue(a, 0))
	}
	return out, nil
}

// firstLines returns the first n lines of s, at most max bytes, and
// whether it cut anything.
func firstLines(s string, n, max int) (string, bool) {
	cut := false
	if len(s) > max {
		s, cut = truncateUTF8(s, max), true
	}
	end := 0
	for range n {
		i := strings.IndexByte(s[end:], '\n')
		if i < 0 {
			return s, cut
		}
		end += i + 1
	}
	if end < len(s) {
		return s[:end], true
	}
	return s, cut
}
