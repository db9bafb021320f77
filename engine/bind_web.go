package engine

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// maxRandomBytes is the most bytes crypto.getRandomValues fills in one
// call, as the Web Crypto API says.
const maxRandomBytes = 65536

// web is the Go side of the web globals of one realm (bindWeb): the
// helpers its script calls, and the DOMException constructor they throw.
type web struct {
	rl     *realm
	domExc goja.Constructor
}

// bindWeb installs the globals of the web platform that Node has too:
// DOMException, structuredClone, TextEncoder, TextDecoder, atob, btoa,
// URL, URLSearchParams, Crypto and crypto (getRandomValues, randomUUID).
// Their classes are JavaScript (webScript), over Go functions that only it
// holds; what they allocate is checked against the worker's memory
// (checkAlloc) before it is allocated.
//
// They are built on first use: bindWeb defines each global as an accessor
// (lazyWebScript) that builds them all (buildWeb) when a script first
// reads or assigns one of them, and then replaces every one of them that
// is still its accessor by a data property, as Node has it. A realm whose
// workunits never touch them (most) keeps none of their objects, which
// every collection of the Go heap would mark. What the classes take from
// the built-ins when they are built (String, Uint8Array, Error,
// Object.defineProperty, Symbol, Array.isArray) is taken here, before any
// user script ran, so that a workunit that rewrote those globals first
// gets the same classes.
func bindWeb(rl *realm) error {
	prg, err := lazyWebProgram()
	if err != nil {
		return err
	}
	v, err := rl.rt.RunProgram(prg)
	if err != nil {
		return err
	}
	lazy, ok := goja.AssertFunction(v)
	if !ok {
		return fmt.Errorf("engine: the lazy web globals script gave %v, not a function", v)
	}
	w := &web{rl: rl}
	_, err = lazy(goja.Undefined(), rl.rt.ToValue(w.build))
	return err
}

// build is buildWeb for the lazy web globals' accessors: it throws what
// building threw.
func (w *web) build(call goja.FunctionCall) goja.Value {
	list, err := w.buildWeb(call.Argument(0))
	if err != nil {
		if jsErr, ok := err.(*goja.Exception); ok {
			panic(jsErr.Value())
		}
		panic(w.rl.rt.NewGoError(err))
	}
	return list
}

// buildWeb builds the web globals with the built-ins that prims holds
// (taken when the realm was made), and returns them as the null-prototype
// object {0: name, 1: value, 2: enumerable, 3: name, ...} for the lazy
// accessors to define; it keeps their DOMException for throwDOM.
func (w *web) buildWeb(prims goja.Value) (goja.Value, error) {
	rl := w.rl
	helpers := rl.rt.NewObject()
	if err := rl.setFuncs(helpers, []Func{
		{"structuredClone", w.structuredClone},
		{"encode", w.encode},
		{"encodeInto", w.encodeInto},
		{"newDecoder", func(goja.FunctionCall) goja.Value { return rl.rt.ToValue(&utf8Decoder{}) }},
		{"decode", w.decode},
		{"atob", w.atob},
		{"btoa", w.btoa},
		{"getRandomValues", w.getRandomValues},
		{"randomUUID", w.randomUUID},
		{"parseURL", w.parseURL},
		{"urlGet", w.urlGet},
		{"urlSet", w.urlSet},
		{"formEncode", w.formEncode},
		{"formDecode", w.formDecode},
		{"throwCode", func(call goja.FunctionCall) goja.Value {
			w.throwCode(call.Argument(0).String(), call.Argument(1).String(), "%s", call.Argument(2).String())
			return nil
		}},
	}); err != nil {
		return nil, err
	}
	prg, err := webProgram()
	if err != nil {
		return nil, err
	}
	v, err := rl.rt.RunProgram(prg)
	if err != nil {
		return nil, err
	}
	install, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fmt.Errorf("engine: the web globals script gave %v, not a function", v)
	}
	list, err := install(goja.Undefined(), helpers, prims)
	if err != nil {
		return nil, err
	}
	obj, ok := list.(*goja.Object)
	if !ok {
		return nil, fmt.Errorf("engine: the web globals script gave %v, not its globals", list)
	}
	if w.domExc, ok = goja.AssertConstructor(obj.Get("1")); !ok || obj.Get("0").String() != "DOMException" {
		return nil, fmt.Errorf("engine: the web globals script did not give DOMException first")
	}
	return obj, nil
}

// webNames are the web globals, in the order that webScript makes them,
// and whether each is enumerable (a class is not, a function is, as in
// Node).
const webNames = `['DOMException', false, 'structuredClone', true, 'TextEncoder', false, 'TextDecoder', false,
	'atob', true, 'btoa', true, 'Crypto', false, 'crypto', true, 'URL', false, 'URLSearchParams', false]`

// lazyWebScript defines the web globals as accessors that build them
// (build: web.build) on first use, and takes the built-ins that building
// them needs. An accessor replaced by a data property before the others
// were built (assigned, deleted, redefined by the script) is left as the
// script made it.
const lazyWebScript = `(function () {
'use strict';
return function lazy(build) {
	const G = globalThis, defineProperty = Object.defineProperty, getOwn = Object.getOwnPropertyDescriptor;
	const prims = { __proto__: null, defineProperty, String, Uint8Array, Error, Symbol, isArray: Array.isArray,
		iterator: Symbol.iterator, toStringTag: Symbol.toStringTag };
	const names = ` + webNames + `;
	const getters = { __proto__: null };
	let built = null;
	const load = () => {
		if (built !== null) return built;
		const list = build(prims);
		const values = { __proto__: null };
		for (let i = 0; list[i] !== undefined; i += 3) values[list[i]] = list[i + 1];
		built = values;
		for (let i = 0; list[i] !== undefined; i += 3) {
			const name = list[i], d = getOwn(G, name);
			if (d !== undefined && d.get === getters[name] && d.configurable) {
				defineProperty(G, name, { __proto__: null, value: list[i + 1], writable: true, configurable: true, enumerable: list[i + 2] });
			}
		}
		return built;
	};
	for (let i = 0; i < names.length; i += 2) {
		const name = names[i], enumerable = names[i + 1];
		const get = () => load()[name];
		const set = (v) => {
			load();
			const d = getOwn(G, name);
			if (d !== undefined && d.get === get) {
				if (!d.configurable) throw new TypeError('Cannot assign to read only property \'' + name + '\' of object');
				defineProperty(G, name, { __proto__: null, value: v, writable: true, configurable: true, enumerable });
				return;
			}
			G[name] = v;
		};
		getters[name] = get;
		defineProperty(G, name, { __proto__: null, get, set, configurable: true, enumerable });
	}
};
})()`

// lazyWebProgram is lazyWebScript compiled, once per process.
var lazyWebProgram = sync.OnceValues(func() (*goja.Program, error) {
	return goja.Compile(jsvalue.InternalFile, lazyWebScript, true)
})

// webProgram is webScript compiled, once per process: a goja program is
// immutable and runs in any runtime.
var webProgram = sync.OnceValues(func() (*goja.Program, error) {
	return goja.Compile(jsvalue.InternalFile, "(function () {\n'use strict';\n"+urlScript+webScript+"})()", true)
})

// throwDOM throws a DOMException of the given name, as the web platform
// (and Node) throw from structuredClone, atob and crypto.
func (w *web) throwDOM(name, format string, args ...any) {
	o, err := w.domExc(nil, w.rl.rt.ToValue(fmt.Sprintf(format, args...)), w.rl.rt.ToValue(name))
	if err != nil {
		panic(err)
	}
	panic(o)
}

// throwCode throws a built-in error (TypeError, RangeError) with a code
// property, as Node's errors have: ERR_INVALID_ARG_TYPE.
func (w *web) throwCode(ctor, code, format string, args ...any) {
	c := w.rl.in.ErrorCtors[ctor]
	if c == nil {
		c = w.rl.in.ErrorCtors["Error"]
	}
	o, err := c(nil, w.rl.rt.ToValue(fmt.Sprintf(format, args...)))
	if err != nil {
		panic(err)
	}
	if err := o.DefineDataProperty("code", w.rl.rt.ToValue(code), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
	panic(o)
}

// missing throws Node's error for a call without its argument.
func (w *web) missing(call goja.FunctionCall, name string) {
	if len(call.Arguments) == 0 {
		w.throwCode("TypeError", "ERR_MISSING_ARGS", "The %q argument must be specified", name)
	}
}

// structuredClone(value) copies value as it would travel between a master
// and a worker (package value's documents: the structured clone of the web
// platform, as docs/values.md says), through the same codec.
func (w *web) structuredClone(call goja.FunctionCall) goja.Value {
	rl := w.rl
	if len(call.Arguments) == 0 {
		w.throwCode("TypeError", "ERR_MISSING_ARGS", "The value argument must be specified")
	}
	if opts, ok := call.Argument(1).(*goja.Object); ok {
		if t := opts.Get("transfer"); t != nil && !goja.IsUndefined(t) {
			if to, ok := t.(*goja.Object); ok && to.Get("length").ToInteger() > 0 {
				w.throwDOM("DataCloneError", "structuredClone: transfer is not supported in riot (a transferred buffer would be copied, not moved); leave it out")
			}
		}
	}
	const dest = "by structuredClone"
	limit := int(min(rl.eng.allocCap/4, uint64(1<<62)))
	enc := jsvalue.NewEncoder(rl.rt, rl.in, jsvalue.EncodeOptions{Root: "value", Dest: dest, Limit: limit})
	var data []byte
	var err error
	if ex := rl.rt.Try(func() { data, err = enc.EncodeValue(call.Argument(0)) }); ex != nil {
		panic(ex.Value())
	}
	var u *jsvalue.UnsendableError
	switch {
	case errors.As(err, &u):
		what := strings.TrimSuffix(u.Msg, " cannot be sent "+dest)
		if p := u.Path("value"); p != "value" {
			what += " (at " + p + ")"
		}
		w.throwDOM("DataCloneError", "%s could not be cloned.", what)
	case errors.Is(err, jsvalue.ErrTooLarge):
		rl.throw("RangeError", "structuredClone: the copy would take more than %s, the most one copy may take on this worker", formatBytes(uint64(limit)))
	case err != nil:
		panic(rl.rt.NewGoError(err))
	}
	rl.checkAlloc(float64(len(data))*2, "structuredClone: a copy")
	data = enc.TakeBytes()
	dec := jsvalue.NewDecoder(rl.rt, rl.in, rl.fns, rl)
	v, err := dec.DecodeOwnedValue(data)
	if err != nil {
		panic(rl.rt.NewGoError(fmt.Errorf("structuredClone: %w", err)))
	}
	return v
}

// bytesOf returns the bytes a BufferSource (an ArrayBuffer, a typed array
// or a DataView) holds, not a copy, and the name of its kind.
func (w *web) bytesOf(v goja.Value) ([]byte, string, bool) {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil, "", false
	}
	in := w.rl.in
	var buf, off, n goja.Value
	var err error
	name := ""
	size := int64(1)
	switch in.Classify(o) {
	case jsvalue.KindArrayBuffer:
		return o.Export().(goja.ArrayBuffer).Bytes(), "ArrayBuffer", true
	case jsvalue.KindTyped:
		name, _ = in.TypedName(o)
		size = typedSize[name]
		if buf, err = in.TypedBuffer(o); err == nil {
			if off, err = in.TypedOffset(o); err == nil {
				n, err = in.TypedLength(o)
			}
		}
	case jsvalue.KindDataView:
		name = "DataView"
		if buf, err = in.ViewBuffer(o); err == nil {
			if off, err = in.ViewOffset(o); err == nil {
				n, err = in.ViewLength(o)
			}
		}
	default:
		return nil, "", false
	}
	if err != nil {
		panic(err)
	}
	bo, ok := buf.(*goja.Object)
	if !ok || size == 0 {
		return nil, "", false
	}
	b := bo.Export().(goja.ArrayBuffer).Bytes()
	start, end := off.ToInteger(), off.ToInteger()+n.ToInteger()*size
	if start < 0 || end > int64(len(b)) || start > end {
		return nil, name, true // detached, or shrunk under the view
	}
	return b[start:end], name, true
}

// typedSize is the bytes per element of each typed array.
var typedSize = map[string]int64{
	"Int8Array": 1, "Uint8Array": 1, "Uint8ClampedArray": 1, "Int16Array": 2, "Uint16Array": 2,
	"Int32Array": 4, "Uint32Array": 4, "Float32Array": 4, "Float64Array": 8,
	"BigInt64Array": 8, "BigUint64Array": 8, "Float16Array": 2,
}

// encode(string) returns the UTF-8 bytes of a string, lone surrogates as
// U+FFFD, in an ArrayBuffer (TextEncoder.prototype.encode).
func (w *web) encode(call goja.FunctionCall) goja.Value {
	s := call.Argument(0)
	if gs, ok := s.(goja.String); ok {
		w.rl.checkAlloc(float64(gs.Length())*3, "TextEncoder.encode: a Uint8Array")
	}
	return w.rl.rt.ToValue(w.rl.rt.NewArrayBuffer([]byte(s.String())))
}

// encodeInto(string, dest) writes as much of a string as UTF-8 into the
// Uint8Array dest as fits whole characters, and returns [read, written]:
// UTF-16 units read, bytes written (TextEncoder.prototype.encodeInto).
func (w *web) encodeInto(call goja.FunctionCall) goja.Value {
	b, name, ok := w.bytesOf(call.Argument(1))
	if !ok || name != "Uint8Array" {
		w.throwCode("TypeError", "ERR_INVALID_ARG_TYPE", "The \"dest\" argument must be an instance of Uint8Array. Received %s", received(call.Argument(1)))
	}
	read, written := 0, 0
	for _, r := range call.Argument(0).String() {
		var tmp [utf8.UTFMax]byte
		n := utf8.EncodeRune(tmp[:], r)
		if written+n > len(b) {
			break
		}
		copy(b[written:], tmp[:n])
		written += n
		read++
		if r > 0xFFFF {
			read++
		}
	}
	return w.rl.rt.ToValue([]any{read, written})
}

// received describes a value as the end of Node's ERR_INVALID_ARG_TYPE
// messages does.
func received(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if o, ok := v.(*goja.Object); ok {
		if _, fn := goja.AssertFunction(o); fn {
			return "function " + o.Get("name").String()
		}
		if c, ok := o.Get("constructor").(*goja.Object); ok {
			if n := c.Get("name"); n != nil && n.String() != "" {
				return "an instance of " + n.String()
			}
		}
		return "an instance of Object"
	}
	if sym, ok := v.(*goja.Symbol); ok {
		return "type symbol (Symbol(" + sym.String() + "))"
	}
	s := v.String()
	switch {
	case goja.IsString(v):
		if r := []rune(s); len(r) > 28 {
			s = string(r[:25]) + "..."
		}
		return "type string ('" + s + "')"
	case goja.IsBigInt(v):
		return "type bigint (" + s + "n)"
	case goja.IsNumber(v):
		return "type number (" + s + ")"
	}
	return "type boolean (" + s + ")"
}

// decode(state, input, fatal, ignoreBOM, stream) decodes UTF-8 bytes as
// the WHATWG Encoding standard does (TextDecoder.prototype.decode).
func (w *web) decode(call goja.FunctionCall) goja.Value {
	d, ok := call.Argument(0).Export().(*utf8Decoder)
	if !ok {
		w.rl.throw("TypeError", "TextDecoder.decode: not a TextDecoder")
	}
	var in []byte
	if input := call.Argument(1); !goja.IsUndefined(input) {
		b, _, ok := w.bytesOf(input)
		if !ok {
			w.throwCode("TypeError", "ERR_INVALID_ARG_TYPE", "The \"input\" argument must be an instance of ArrayBuffer or ArrayBufferView. Received %s", received(input))
		}
		in = b
	}
	w.rl.checkAlloc(float64(len(in))*3, "TextDecoder.decode: a string")
	out, ok := d.decode(in, call.Argument(2).ToBoolean(), call.Argument(3).ToBoolean(), !call.Argument(4).ToBoolean())
	if !ok {
		w.throwCode("TypeError", "ERR_ENCODING_INVALID_ENCODED_DATA", "The encoded data was not valid for encoding utf-8")
	}
	return w.rl.rt.ToValue(out)
}

// utf8Decoder is the state of a TextDecoder between calls of a stream: the
// UTF-8 decoder of the Encoding standard.
type utf8Decoder struct {
	needed, seen int
	cp           rune
	lower, upper byte
	started      bool // a code point of the stream was given (or its BOM dropped)
}

// decode decodes in, and returns false for invalid bytes when fatal. When
// flush is false, an unfinished sequence at the end waits for the next
// call.
func (d *utf8Decoder) decode(in []byte, fatal, ignoreBOM, flush bool) (string, bool) {
	var b strings.Builder
	b.Grow(len(in))
	if d.lower == 0 {
		d.lower, d.upper = 0x80, 0xBF
	}
	emit := func(r rune) {
		if !d.started {
			d.started = true
			if r == 0xFEFF && !ignoreBOM {
				return
			}
		}
		b.WriteRune(r)
	}
	reset := func() { d.needed, d.seen, d.cp, d.lower, d.upper = 0, 0, 0, 0x80, 0xBF }
	for i := 0; i < len(in); i++ {
		c := in[i]
		if d.needed == 0 {
			switch {
			case c <= 0x7F:
				emit(rune(c))
			case c >= 0xC2 && c <= 0xDF:
				d.needed, d.cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					d.lower = 0xA0
				} else if c == 0xED {
					d.upper = 0x9F
				}
				d.needed, d.cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					d.lower = 0x90
				} else if c == 0xF4 {
					d.upper = 0x8F
				}
				d.needed, d.cp = 3, rune(c&0x7)
			default:
				if fatal {
					*d = utf8Decoder{}
					return "", false
				}
				emit(0xFFFD)
			}
			continue
		}
		if c < d.lower || c > d.upper {
			reset()
			if fatal {
				*d = utf8Decoder{}
				return "", false
			}
			emit(0xFFFD)
			i-- // the byte starts anew
			continue
		}
		d.lower, d.upper = 0x80, 0xBF
		d.cp = d.cp<<6 | rune(c&0x3F)
		if d.seen++; d.seen == d.needed {
			cp := d.cp
			reset()
			emit(cp)
		}
	}
	if flush {
		pending := d.needed != 0
		*d = utf8Decoder{}
		if pending {
			if fatal {
				return "", false
			}
			b.WriteRune(0xFFFD)
		}
	}
	return b.String(), true
}

// isASCIIWhitespace is the ASCII whitespace of the forgiving base64 of the
// HTML standard: tab, line feed, form feed, carriage return and space.
func isASCIIWhitespace(c byte) bool {
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

// atob decodes base64 as the HTML standard's forgiving base64 (and Node)
// does: ASCII whitespace is skipped, padding optional, and each byte is a
// character of the string it returns.
func (w *web) atob(call goja.FunctionCall) goja.Value {
	w.missing(call, "input")
	s := call.Argument(0).String()
	w.rl.checkAlloc(float64(len(s))*4, "atob: a string")
	clean := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if !isASCIIWhitespace(s[i]) {
			clean = append(clean, s[i])
		}
	}
	if len(clean)%4 == 0 {
		for k := 0; k < 2 && len(clean) > 0 && clean[len(clean)-1] == '='; k++ {
			clean = clean[:len(clean)-1]
		}
	}
	for _, c := range clean {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			w.throwDOM("InvalidCharacterError", "Invalid character")
		}
	}
	if len(clean)%4 == 1 {
		w.throwDOM("InvalidCharacterError", "The string to be decoded is not correctly encoded.")
	}
	out, err := base64.RawStdEncoding.DecodeString(string(clean))
	if err != nil {
		w.throwDOM("InvalidCharacterError", "The string to be decoded is not correctly encoded.")
	}
	var b strings.Builder
	b.Grow(len(out) * 2)
	for _, c := range out {
		b.WriteRune(rune(c))
	}
	return w.rl.rt.ToValue(b.String())
}

// btoa encodes a string of characters up to U+00FF, each a byte, as
// base64.
func (w *web) btoa(call goja.FunctionCall) goja.Value {
	w.missing(call, "input")
	v := call.Argument(0)
	if gs, ok := v.(goja.String); ok {
		w.rl.checkAlloc(float64(gs.Length())*3, "btoa: a string")
	}
	s := v.String()
	raw := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xFF {
			w.throwDOM("InvalidCharacterError", "Invalid character")
		}
		raw = append(raw, byte(r))
	}
	return w.rl.rt.ToValue(base64.StdEncoding.EncodeToString(raw))
}

// getRandomValues fills an integer typed array with cryptographically
// strong random values, and returns it.
func (w *web) getRandomValues(call goja.FunctionCall) goja.Value {
	w.missing(call, "typedArray")
	v := call.Argument(0)
	b, name, ok := w.bytesOf(v)
	switch name {
	case "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
		"BigInt64Array", "BigUint64Array":
	default:
		ok = false
	}
	if !ok {
		w.throwDOM("TypeMismatchError", "The data argument must be an integer-type TypedArray")
	}
	if len(b) > maxRandomBytes {
		w.throwDOM("QuotaExceededError", "The requested length exceeds 65,536 bytes")
	}
	if _, err := rand.Read(b); err != nil {
		panic(w.rl.rt.NewGoError(fmt.Errorf("crypto.getRandomValues: %w", err)))
	}
	return v
}

// randomUUID returns a random (version 4) UUID, in lower case.
func (w *web) randomUUID(goja.FunctionCall) goja.Value {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(w.rl.rt.NewGoError(fmt.Errorf("crypto.randomUUID: %w", err)))
	}
	u[6] = u[6]&0x0F | 0x40
	u[8] = u[8]&0x3F | 0x80
	h := hex.EncodeToString(u[:])
	return w.rl.rt.ToValue(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

// webScript returns the function that installs the web globals; urlScript
// comes before it, in the same function.
const webScript = `
// It runs when a workunit first touches one of them (bindWeb), and uses
// only the built-ins of P, taken before any user script ran: it returns
// the globals as {0: name, 1: value, 2: enumerable, ...}, DOMException
// first, for lazyWebScript to define.
return function install(go, P) {
	const defineProperty = P.defineProperty;
	const U8 = P.Uint8Array, StringC = P.String, ErrorC = P.Error, SymbolC = P.Symbol;
	const out = { __proto__: null };
	let n = 0;
	// A global as Node has it: a class is not enumerable, a function is.
	const global = (name, value, enumerable) => { out[n++] = name; out[n++] = value; out[n++] = enumerable; };
	const tag = (C, name) => defineProperty(C.prototype, P.toStringTag, { __proto__: null, value: name, configurable: true });
	const methodsOf = (C, names) => {
		for (let i = 0; i < names.length; i++) defineProperty(C.prototype, names[i], { __proto__: null, enumerable: true });
	};

	const codes = {
		IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
		NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
		SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
		TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
		QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
	};
	class DOMException extends ErrorC {
		#code;
		constructor(message = '', options = 'Error') {
			super(StringC(message));
			const name = options !== null && typeof options === 'object' ? StringC(options.name === undefined ? 'Error' : options.name) : StringC(options);
			defineProperty(this, 'name', { __proto__: null, value: name, writable: true, configurable: true });
			this.#code = codes[name] || 0;
		}
		get code() { return this.#code; }
	}
	tag(DOMException, 'DOMException');
	global('DOMException', DOMException, false);

	global('structuredClone', function structuredClone(value, options) {
		return arguments.length === 0 ? go.structuredClone() : go.structuredClone(value, options);
	}, true);

	class TextEncoder {
		get encoding() { return 'utf-8'; }
		encode(input = '') { return new U8(go.encode(StringC(input))); }
		encodeInto(src, dest) {
			const r = go.encodeInto(StringC(src), dest);
			return { read: r[0], written: r[1] };
		}
	}
	tag(TextEncoder, 'TextEncoder');
	methodsOf(TextEncoder, ['encoding', 'encode', 'encodeInto']);
	global('TextEncoder', TextEncoder, false);

	const utf8Labels = ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'];
	class TextDecoder {
		#state; #fatal; #ignoreBOM;
		constructor(encoding = 'utf-8', options = undefined) {
			const label = StringC(encoding).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase();
			if (!utf8Labels.includes(label)) {
				go.throwCode('RangeError', 'ERR_ENCODING_NOT_SUPPORTED', 'The "' + StringC(encoding) + '" encoding is not supported' +
					' (riot\'s TextDecoder decodes utf-8 only)');
			}
			if (options !== undefined && options !== null && typeof options !== 'object') {
				go.throwCode('TypeError', 'ERR_INVALID_ARG_TYPE', 'The "options" argument must be of type object.');
			}
			this.#fatal = Boolean(options && options.fatal);
			this.#ignoreBOM = Boolean(options && options.ignoreBOM);
			this.#state = go.newDecoder();
		}
		get encoding() { return 'utf-8'; }
		get fatal() { return this.#fatal; }
		get ignoreBOM() { return this.#ignoreBOM; }
		decode(input = undefined, options = undefined) {
			const stream = Boolean(options && options.stream);
			return go.decode(this.#state, input, this.#fatal, this.#ignoreBOM, stream);
		}
	}
	tag(TextDecoder, 'TextDecoder');
	methodsOf(TextDecoder, ['encoding', 'fatal', 'ignoreBOM', 'decode']);
	global('TextDecoder', TextDecoder, false);

	global('atob', function atob(input) { return arguments.length === 0 ? go.atob() : go.atob(StringC(input)); }, true);
	global('btoa', function btoa(input) { return arguments.length === 0 ? go.btoa() : go.btoa(StringC(input)); }, true);

	const cryptoKey = SymbolC('riot:crypto');
	class Crypto {
		constructor(key = undefined) {
			if (key !== cryptoKey) go.throwCode('TypeError', 'ERR_ILLEGAL_CONSTRUCTOR', 'Illegal constructor');
		}
		getRandomValues(typedArray) { return arguments.length === 0 ? go.getRandomValues() : go.getRandomValues(typedArray); }
		randomUUID() { return go.randomUUID(); }
	}
	tag(Crypto, 'Crypto');
	methodsOf(Crypto, ['getRandomValues', 'randomUUID']);
	global('Crypto', Crypto, false);
	global('crypto', new Crypto(cryptoKey), true);

	installURL(go, P, global, tag, methodsOf);
	return out;
};
`
