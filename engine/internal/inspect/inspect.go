package inspect

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ftoa"
	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// Options tunes Inspect. Zero values mean Node's defaults.
type Options struct {
	// Depth is how many levels of nesting are shown before [Object];
	// 0 means 2, as console.log does; negative means no limit.
	Depth int
	// MaxItems is how many array, Map or Set items are shown; 0 means 100.
	MaxItems int
	// BreakLength is the width past which an object is broken over lines;
	// 0 means 80.
	BreakLength int
	// MaxStringLength is how many characters of a string are shown, as
	// Node's maxStringLength: the rest is counted ("... 5 more
	// characters"); 0 means 10000, negative no limit.
	MaxStringLength int
	// MaxBytes bounds the whole text: once about that much is written,
	// objects not yet begun show as [Object] (or [Array], [Map], ...) and
	// those being written end with "... more items", and a text still
	// longer than half as much again is cut there, with a note of how
	// much; 0 means DefaultMaxBytes,
	// negative no limit. With Depth and MaxItems it bounds the work too,
	// whatever the value's shape (a graph of shared references that
	// would print as 2^40 leaves).
	MaxBytes int
}

// DefaultMaxBytes is the bound on Inspect's text when Options.MaxBytes is
// zero.
const DefaultMaxBytes = 1 << 20

// checkEvery is how many values Inspect formats between two looks at its
// context.
const checkEvery = 1024

// Inspect formats a value of rt (whose built-ins are js) as Node's
// util.inspect does (in its main points: quoting, nesting depth, Maps and
// Sets, typed arrays, class names, circular references, line breaking).
// It is what console.log prints for non-strings and what riot-worker eval
// prints for results that are not JSON. A getter that throws gives
// "[inspect: ...]".
func Inspect(rt *goja.Runtime, js *jsvalue.Intrinsics, v goja.Value, opts Options) string {
	out, _ := InspectContext(context.Background(), rt, js, v, opts)
	return out
}

// InspectContext is Inspect that stops when ctx ends: it then returns what
// it wrote so far, cut short, and ctx's error.
func InspectContext(ctx context.Context, rt *goja.Runtime, js *jsvalue.Intrinsics, v goja.Value, opts Options) (string, error) {
	if opts.Depth == 0 {
		opts.Depth = 2
	}
	if opts.MaxItems == 0 {
		opts.MaxItems = 100
	}
	if opts.BreakLength == 0 {
		opts.BreakLength = 80
	}
	if opts.MaxStringLength == 0 {
		opts.MaxStringLength = 10000
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	limit := opts.Depth
	if limit < 0 {
		limit = math.MaxInt
	}
	return inspectAt(ctx, rt, js, v, opts, limit)
}

// inspectAt is InspectContext with opts' defaults set and the deepest
// level shown (limit) given as Node's depth: -1 shows the value itself as
// [Object], 0 the objects nested in it.
func inspectAt(ctx context.Context, rt *goja.Runtime, js *jsvalue.Intrinsics, v goja.Value, opts Options, limit int) (string, error) {
	in := &inspector{ctx: ctx, rt: rt, js: js, opts: opts, limit: limit, refs: make(map[*goja.Object]int)}
	var out string
	if ex := rt.Try(func() { out = in.value(v, 0, true) }); ex != nil {
		return "[inspect: " + ex.Error() + "]", nil
	}
	if opts.MaxBytes > 0 && len(out) > opts.MaxBytes+opts.MaxBytes/2 {
		head := out[:opts.MaxBytes]
		for len(head) > 0 && !utf8.RuneStart(out[len(head)]) {
			head = head[:len(head)-1]
		}
		out = head + "... [output cut: " + strconv.Itoa(len(out)-len(head)) + " more bytes]"
	}
	if in.canceled {
		return out, ctx.Err()
	}
	return out, nil
}

type inspector struct {
	ctx      context.Context
	steps    int  // values formatted, for looks at ctx
	used     int  // bytes of text written so far, about
	canceled bool // ctx ended: write no more

	// nest is how many levels of objects the value just formatted holds
	// (0 for a primitive): Node puts an object on one line only when it
	// holds at most three levels and fits in breakLength.
	nest    int
	rt      *goja.Runtime
	js      *jsvalue.Intrinsics
	opts    Options
	limit   int // the deepest level shown, as Node's depth (math.MaxInt: all)
	stack   []*goja.Object
	refs    map[*goja.Object]int // circular targets and their numbers
	nextRef int
}

// FormatNumber writes a number as JavaScript does, -0 as "-0".
func FormatNumber(f float64) string {
	if f == 0 && math.Signbit(f) {
		return "-0"
	}
	var buf [64]byte
	return string(ftoa.FToStr(f, ftoa.ModeStandard, 0, buf[:0]))
}

// Quote writes a string as Node does inside objects: single quotes, unless
// the string holds some and no double quotes.
func Quote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatInt(int64(r)+0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// maxKeyLength is the longest key shown whole when strings are cut
// (Options.MaxStringLength): longer keys are cut at MaxStringLength.
const maxKeyLength = 10000

// key writes a property's key, counting it as written.
func (in *inspector) key(k string) string {
	s := propertyKey(k)
	if len(k) > maxKeyLength && in.opts.MaxStringLength >= 0 {
		s = in.quote(k)
	}
	in.used += len(s)
	return s
}

func propertyKey(k string) string {
	if jsvalue.IsIdentifier(k) {
		return k
	}
	return Quote(k)
}

// over reports whether the inspector must write no more: its text passed
// MaxBytes, or its context ended.
func (in *inspector) over() bool {
	return in.canceled || in.opts.MaxBytes >= 0 && in.used > in.opts.MaxBytes
}

// quote is Quote for a string shown inside a value, cut at
// MaxStringLength characters.
func (in *inspector) quote(s string) string {
	n := in.opts.MaxStringLength
	if n < 0 || len(s) <= n {
		return Quote(s)
	}
	chars := 0
	for i := range s {
		if chars == n {
			rest := utf8.RuneCountInString(s[i:])
			return Quote(s[:i]) + "... " + strconv.Itoa(rest) + " more character" + plural(rest)
		}
		chars++
	}
	return Quote(s)
}

func (in *inspector) value(v goja.Value, level int, top bool) string {
	s := in.value1(v, level, top)
	if _, isObj := v.(*goja.Object); isObj {
		in.used += 4*level + 4 // its brackets, each on a line of its own; its children and keys are counted as written
	} else {
		in.used += len(s)
	}
	return s
}

func (in *inspector) value1(v goja.Value, level int, top bool) string {
	in.nest = 0
	if in.steps++; in.steps%checkEvery == 0 && in.ctx.Err() != nil {
		in.canceled = true
	}
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	case goja.IsString(v):
		return in.quote(v.String())
	case goja.IsNumber(v):
		return FormatNumber(v.ToFloat())
	case goja.IsBigInt(v):
		return v.String() + "n"
	}
	if s, ok := v.(*goja.Symbol); ok {
		return symbolString(s)
	}
	o, ok := v.(*goja.Object)
	if !ok {
		return v.String()
	}
	for _, a := range in.stack {
		if a == o {
			n, ok := in.refs[o]
			if !ok {
				in.nextRef++
				n = in.nextRef
				in.refs[o] = n
			}
			return "[Circular *" + strconv.Itoa(n) + "]"
		}
	}
	in.stack = append(in.stack, o)
	deepest := -1 // stays -1 for an object shown without nested items
	s := in.object(o, level, &deepest)
	in.nest = deepest + 1
	in.stack = in.stack[:len(in.stack)-1]
	if n, ok := in.refs[o]; ok {
		s = "<ref *" + strconv.Itoa(n) + "> " + s
	}
	return s
}

// tooDeep reports whether an object at level shows as [Name]: past Depth,
// or once the text is long enough (over).
func (in *inspector) tooDeep(level int) bool {
	return level > in.limit || in.over()
}

// more is the item that ends a list of which n items are not shown.
func more(n int) string {
	return "... " + strconv.Itoa(n) + " more item" + plural(n)
}

func (in *inspector) object(o *goja.Object, level int, deepest *int) string {
	switch in.js.Classify(o) {
	case jsvalue.KindFunction:
		return in.function(o)
	case jsvalue.KindArray:
		if in.tooDeep(level) {
			*deepest = -1 // shown as [Name], which nests nothing
			return "[Array]"
		}
		n := int(o.Get("length").ToInteger())
		var items []string
		group := in.grouping(o, n)
		if _, dense := in.js.DenseArray(o); dense {
			items = make([]string, 0, min(n, in.opts.MaxItems)+1)
			i := 0
			for ; i < n && i < in.opts.MaxItems && !in.over(); i++ {
				items = append(items, in.child(o.Get(jsvalue.Index(i)), level+1, deepest))
			}
			if i < n {
				items = append(items, more(n-i))
			}
		} else {
			var extra bool
			items, extra = in.sparseItems(o, n, level, deepest)
			if extra {
				group = groupNone
			}
		}
		if syms := o.Symbols(); len(syms) > 0 {
			items = in.symbolItems(o, syms, items, level, deepest)
			group = groupNone
		}
		prefix := ""
		if p := o.Prototype(); p != in.js.ArrayProto {
			prefix = in.className(o, "Array") + "(" + strconv.Itoa(n) + ") "
		}
		return in.reduce(prefix+"[", "]", items, level, *deepest, group)
	case jsvalue.KindDate:
		ms, err := in.js.DateGetTime(o)
		if err != nil || math.IsNaN(ms.ToFloat()) {
			return "Invalid Date"
		}
		return time.UnixMilli(int64(ms.ToFloat())).UTC().Format("2006-01-02T15:04:05.000Z")
	case jsvalue.KindRegExp:
		src, _ := in.js.RegExpSource(o)
		flags, _ := in.js.RegExpFlags(o)
		return "/" + SafeString(src) + "/" + SafeString(flags)
	case jsvalue.KindError:
		stack := NormalizeStack(SafeString(o.Get("stack")))
		if stack == "" {
			stack = SafeString(o.Get("name")) + ": " + SafeString(o.Get("message"))
		}
		if level > 0 {
			return "[" + strings.SplitN(stack, "\n", 2)[0] + "]"
		}
		return stack
	case jsvalue.KindBoxed:
		inner := in.js.Unbox(in.rt, o)
		name := o.ClassName()
		if goja.IsBigInt(inner) {
			name = "BigInt"
		}
		return "[" + name + ": " + in.value(inner, level, false) + "]"
	case jsvalue.KindMap, jsvalue.KindSet:
		isMap := in.js.Classify(o) == jsvalue.KindMap
		name := in.className(o, map[bool]string{true: "Map", false: "Set"}[isMap])
		forEach := in.js.SetForEach
		if isMap {
			forEach = in.js.MapForEach
		}
		kv, err := jsvalue.Entries(in.rt, forEach, o)
		if err != nil {
			return "[" + name + "]"
		}
		count := len(kv) / 2
		head := name + "(" + strconv.Itoa(count) + ") "
		if in.tooDeep(level) {
			*deepest = -1 // shown as [Name], which nests nothing
			return "[" + name + "]"
		}
		items := make([]string, 0, min(count, in.opts.MaxItems)+1)
		i := 0
		for ; i < len(kv) && i/2 < in.opts.MaxItems && !in.over(); i += 2 {
			if isMap {
				items = append(items, in.child(kv[i], level+1, deepest)+" => "+in.child(kv[i+1], level+1, deepest))
			} else {
				items = append(items, in.child(kv[i], level+1, deepest))
			}
		}
		if i/2 < count {
			items = append(items, more(count-i/2))
		}
		return head + in.wrap("{", "}", items, level, *deepest)
	case jsvalue.KindArrayBuffer:
		data := o.Export().(goja.ArrayBuffer).Bytes()
		var hex []string
		for i, c := range data {
			if i == 50 {
				hex = append(hex, "... "+strconv.Itoa(len(data)-50)+" more bytes")
				break
			}
			hex = append(hex, strconv.FormatInt(int64(c)+0x100, 16)[1:])
		}
		return "ArrayBuffer { [Uint8Contents]: <" + strings.Join(hex, " ") + ">, byteLength: " + strconv.Itoa(len(data)) + " }"
	case jsvalue.KindTyped, jsvalue.KindDataView:
		name := "DataView"
		if n, ok := in.js.TypedName(o); ok {
			name = n
		}
		if name == "DataView" {
			bl, _ := in.js.ViewLength(o)
			off, _ := in.js.ViewOffset(o)
			return "DataView { byteLength: " + SafeString(bl) + ", byteOffset: " + SafeString(off) + " }"
		}
		n := int(o.Get("length").ToInteger())
		if in.tooDeep(level) {
			*deepest = -1 // shown as [Name], which nests nothing
			return "[" + name + "]"
		}
		items := make([]string, 0, min(n, in.opts.MaxItems)+1)
		i := 0
		for ; i < n && i < in.opts.MaxItems && !in.over(); i++ {
			items = append(items, in.child(o.Get(jsvalue.Index(i)), level+1, deepest))
		}
		if i < n {
			items = append(items, more(n-i))
		}
		return in.reduce(name+"("+strconv.Itoa(n)+") [", "]", items, level, *deepest, in.grouping(o, n))
	case jsvalue.KindPromise:
		p := o.Export().(*goja.Promise)
		switch p.State() {
		case goja.PromiseStatePending:
			return "Promise { <pending> }"
		case goja.PromiseStateRejected:
			return "Promise { <rejected> " + in.value(p.Result(), level+1, false) + " }"
		}
		return "Promise { " + in.value(p.Result(), level+1, false) + " }"
	case jsvalue.KindProxy:
		return "[Proxy]"
	case jsvalue.KindWeakMap:
		return "WeakMap { <items unknown> }"
	case jsvalue.KindWeakSet:
		return "WeakSet { <items unknown> }"
	}
	name := in.className(o, "Object")
	prefix := ""
	switch {
	case o.Prototype() == nil:
		prefix = "[Object: null prototype] "
	case name != "Object":
		prefix = name + " "
	}
	if in.tooDeep(level) {
		*deepest = -1 // shown as [Name], which nests nothing
		return "[" + name + "]"
	}
	if items, ok := in.webObject(o, name, level, deepest); ok {
		if name == "TextEncoder" {
			prefix = "" // as Node writes it
		}
		return prefix + in.wrap("{", "}", items, level, *deepest)
	}
	keys := o.Keys()
	items := make([]string, 0, len(keys))
	for i, k := range keys {
		if in.over() {
			items = append(items, more(len(keys)-i))
			break
		}
		items = append(items, in.key(k)+": "+in.child(o.Get(k), level+1, deepest))
	}
	items = in.symbolItems(o, o.Symbols(), items, level, deepest)
	if len(items) == 0 && prefix != "" {
		return prefix + "{}"
	}
	return prefix + in.wrap("{", "}", items, level, *deepest)
}

// sparseItems shows the items of an array of length n that has holes or
// other properties, as Node does: a run of holes as "<3 empty items>",
// then the other properties as "key: value" (extra reports some).
func (in *inspector) sparseItems(o *goja.Object, n, level int, deepest *int) (items []string, extra bool) {
	pos, shown := 0, 0
	cut := false
	var others []string
	for _, k := range o.Keys() {
		idx, ok := jsvalue.ArrayIndex(k)
		if !ok {
			others = append(others, k)
			continue
		}
		if cut {
			continue
		}
		if int(idx) > pos {
			if shown == in.opts.MaxItems || in.over() {
				cut = true
				continue
			}
			items = append(items, emptyItems(int(idx)-pos))
			shown++
		}
		if shown == in.opts.MaxItems || in.over() {
			pos, cut = int(idx), true
			continue
		}
		items = append(items, in.child(o.Get(k), level+1, deepest))
		shown++
		pos = int(idx) + 1
	}
	switch {
	case !cut && pos < n && shown < in.opts.MaxItems:
		items = append(items, emptyItems(n-pos))
	case cut || pos < n:
		items = append(items, more(n-pos))
	}
	for i, k := range others {
		if in.over() {
			items = append(items, more(len(others)-i))
			break
		}
		items = append(items, in.key(k)+": "+in.child(o.Get(k), level+1, deepest))
	}
	return items, len(others) > 0
}

// webGetters are the classes of the web globals (engine/bind_web.go) whose
// state is private, and the getters Node shows for their instances.
var webGetters = map[string][]string{
	"URL": {"href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname",
		"search", "searchParams", "hash"},
	"TextDecoder": {"encoding", "fatal", "ignoreBOM"},
	"TextEncoder": {"encoding"},
}

// webObject returns the items Node shows for an instance of a web class
// (whose prototype's Symbol.toStringTag is its class name): its getters,
// or a URLSearchParams' entries as "'name' => 'value'".
func (in *inspector) webObject(o *goja.Object, name string, level int, deepest *int) ([]string, bool) {
	getters, isWeb := webGetters[name]
	if !isWeb && name != "URLSearchParams" {
		return nil, false
	}
	if tag := o.GetSymbol(goja.SymToStringTag); tag == nil || tag.String() != name || len(o.Keys()) > 0 {
		return nil, false
	}
	var items []string
	if isWeb {
		for _, g := range getters {
			items = append(items, in.key(g)+": "+in.child(o.Get(g), level+1, deepest))
		}
		return items, true
	}
	entries, ok := goja.AssertFunction(o.Get("entries"))
	if !ok {
		return nil, false
	}
	it, err := entries(o)
	if err != nil {
		panic(err)
	}
	n := 0
	in.rt.ForOf(it, func(kv goja.Value) bool {
		if n == in.opts.MaxItems || in.over() {
			items = append(items, "...")
			return false
		}
		pair, _ := kv.(*goja.Object)
		if pair == nil {
			return false
		}
		items = append(items, in.child(pair.Get("0"), level+1, deepest)+" => "+in.child(pair.Get("1"), level+1, deepest))
		n++
		return true
	})
	return items, true
}

// symbolItems adds the enumerable symbol-keyed properties of o to items,
// as Node shows them after the others: "[Symbol(foo)]: 2".
func (in *inspector) symbolItems(o *goja.Object, syms []*goja.Symbol, items []string, level int, deepest *int) []string {
	for i, sym := range syms {
		if in.over() {
			return append(items, more(len(syms)-i))
		}
		k := "[" + symbolString(sym) + "]"
		in.used += len(k)
		items = append(items, k+": "+in.child(o.GetSymbol(sym), level+1, deepest))
	}
	return items
}

// symbolString writes a symbol as Node does: Symbol(description).
func symbolString(s *goja.Symbol) string {
	return "Symbol(" + s.String() + ")"
}

func emptyItems(n int) string {
	return "<" + strconv.Itoa(n) + " empty item" + plural(n) + ">"
}

// grouping says how an array's first items are grouped: right-aligned when
// they are all numbers or bigints.
func (in *inspector) grouping(o *goja.Object, n int) grouping {
	for i := 0; i < n && i < in.opts.MaxItems; i++ {
		v := o.Get(jsvalue.Index(i))
		if !goja.IsNumber(v) && !goja.IsBigInt(v) {
			return groupPadEnd
		}
	}
	return groupPadStart
}

// className returns the name of the object's constructor, as found on its
// prototype, or def.
func (in *inspector) className(o *goja.Object, def string) string {
	p := o.Prototype()
	if p == nil {
		return def
	}
	c, ok := p.Get("constructor").(*goja.Object)
	if !ok {
		return def
	}
	if n := SafeString(c.Get("name")); n != "" {
		return n
	}
	return def
}

func (in *inspector) function(o *goja.Object) string {
	name := SafeString(o.Get("name"))
	src := o.String()
	kind := "Function"
	switch {
	case strings.HasPrefix(src, "class"):
		if name == "" {
			return "[class (anonymous)]"
		}
		return "[class " + name + "]"
	case o.ClassName() == "AsyncFunction" || strings.HasPrefix(src, "async"):
		kind = "AsyncFunction"
	case o.ClassName() == "GeneratorFunction":
		kind = "GeneratorFunction"
	}
	if name == "" {
		return "[" + kind + " (anonymous)]"
	}
	return "[" + kind + ": " + name + "]"
}

// child formats a value inside the object being formatted, and keeps the
// deepest nesting among its children.
func (in *inspector) child(v goja.Value, level int, deepest *int) string {
	s := in.value(v, level, false)
	in.used += 2*level + 2 // its separator and indentation, if broken over lines
	*deepest = max(*deepest, in.nest)
	return s
}

// wrap joins items as Node's util.inspect does (reduceToSingleString): on
// one line when they fit in breakLength and hold at most three levels of
// objects, else one per line; the items of long arrays are grouped in
// aligned columns first (groupArrayElements).
func (in *inspector) wrap(open, closing string, items []string, level, deepest int) string {
	return in.reduce(open, closing, items, level, deepest, groupNone)
}

// grouping says whether and how array items are grouped in columns.
type grouping int

const (
	groupNone     grouping = iota
	groupPadEnd            // items of any kind, left-aligned
	groupPadStart          // numbers, right-aligned
)

func (in *inspector) reduce(open, closing string, items []string, level, deepest int, group grouping) string {
	if len(items) == 0 {
		return open + closing
	}
	output := items
	if group != groupNone && len(items) > 6 {
		output = in.group(items, level, group == groupPadStart)
	}
	if deepest < 3 && len(output) == len(items) {
		start := len(output) + level*2 + len(open) + 10
		total := len(output) + start
		multi := false
		for _, it := range output {
			total += len(it)
			if strings.Contains(it, "\n") {
				multi = true
			}
		}
		if !multi && total <= in.opts.BreakLength {
			return open + " " + strings.Join(output, ", ") + " " + closing
		}
	}
	indent := "\n" + strings.Repeat(" ", level*2)
	return open + indent + "  " + strings.Join(output, ","+indent+"  ") + indent + closing
}

// group arranges many short array items in columns, as Node does.
func (in *inspector) group(output []string, level int, padStart bool) []string {
	const separatorSpace = 2
	n := len(output)
	if strings.HasPrefix(output[n-1], "... ") && strings.HasSuffix(output[n-1], " more items") || strings.HasSuffix(output[n-1], " more item") {
		n-- // the "... more items" line is not grouped
	}
	total, maxLen := 0, 0
	for _, it := range output[:n] {
		total += len(it) + separatorSpace
		maxLen = max(maxLen, len(it))
	}
	actualMax := maxLen + separatorSpace
	if !(actualMax*3+level*2 < in.opts.BreakLength && (float64(total)/float64(actualMax) > 5 || maxLen <= 6)) {
		return output
	}
	averageBias := math.Sqrt(float64(actualMax) - float64(total)/float64(len(output)))
	biasedMax := math.Max(float64(actualMax)-3-averageBias, 1)
	columns := min(
		int(math.Round(math.Sqrt(2.5*biasedMax*float64(n))/biasedMax)),
		(in.opts.BreakLength-level*2)/actualMax,
		3*4,
		15,
	)
	if columns <= 1 {
		return output
	}
	widths := make([]int, columns)
	for i := range widths {
		w := 0
		for j := i; j < n; j += columns {
			w = max(w, len(output[j]))
		}
		widths[i] = w + separatorSpace
	}
	var rows []string
	for i := 0; i < n; i += columns {
		end := min(i+columns, n)
		var b strings.Builder
		for j := i; j < end-1; j++ {
			cell := output[j] + ", "
			b.WriteString(pad(cell, widths[j-i], padStart))
		}
		last := output[end-1]
		if padStart {
			b.WriteString(pad(last, widths[end-1-i]-separatorSpace, true))
		} else {
			b.WriteString(last)
		}
		rows = append(rows, b.String())
	}
	if n < len(output) {
		rows = append(rows, output[n])
	}
	return rows
}

func pad(s string, width int, start bool) string {
	if len(s) >= width {
		return s
	}
	fill := strings.Repeat(" ", width-len(s))
	if start {
		return fill + s
	}
	return s + fill
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// TableCell formats a value in a cell of console.table, as Node does: an
// object that is not an array and has more than two keys (manyKeys, which
// the caller counts once per object) as [Object] (or [Name]), any other
// object without the objects nested in it, at most three items of an
// array, Map or Set, and all on one line.
func TableCell(rt *goja.Runtime, js *jsvalue.Intrinsics, v goja.Value, manyKeys bool) string {
	limit := 0
	if o, ok := v.(*goja.Object); ok && manyKeys && js.Classify(o) != jsvalue.KindArray {
		limit = -1
	}
	opts := Options{Depth: 2, MaxItems: 3, BreakLength: math.MaxInt32, MaxStringLength: 10000, MaxBytes: DefaultMaxBytes}
	if _, ok := v.(*goja.Object); !ok {
		// A primitive runs no getter and refers to nothing: it needs no
		// guard, and no table of references.
		in := &inspector{ctx: context.Background(), rt: rt, js: js, opts: opts, limit: limit}
		return in.value(v, 0, true)
	}
	out, _ := inspectAt(context.Background(), rt, js, v, opts, limit)
	return out
}
