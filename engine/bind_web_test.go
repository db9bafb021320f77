package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// webCase is an expression (or, in braces, a function body) and what Node
// 20 gives for it: a string as it is, another value as JSON, a thrown
// error as "ERR name code: message". Where riot differs, the case says
// what Node gives, and why riot's is kept.
type webCase struct{ src, want string }

// runWebCases evaluates each case in a workunit and compares.
func runWebCases(t *testing.T, cases []webCase) {
	t.Helper()
	e := newEngine(t, Options{Slots: 1})
	var b strings.Builder
	b.WriteString("const out = [];\nconst t = (f) => { try { const v = f(); out.push(typeof v === 'string' ? v : JSON.stringify(v)) } catch (e) { out.push('ERR ' + e.name + ' ' + e.code + ': ' + e.message) } };\n")
	for _, c := range cases {
		if strings.HasPrefix(c.src, "{") {
			b.WriteString("t(() => " + c.src + ");\n")
		} else {
			b.WriteString("t(() => (" + c.src + "));\n")
		}
	}
	b.WriteString("out")
	got := evalValue(t, e, b.String()).([]any)
	for i, c := range cases {
		assert.Equal(t, c.want, got[i], c.src)
	}
}

// URL and URLSearchParams follow the WHATWG URL standard as Node does:
// parsing against a base, dot segments, percent-encoding by part, hosts
// (IPv4 numbers, IPv6, Punycode), default ports, setters, and
// searchParams kept in step with the URL.
func TestWeb_URL(t *testing.T) {
	t.Parallel()
	runWebCases(t, []webCase{
		{"{ const u = new URL('http://a.com/x'); u.pathname = '//y'; return u.href }", "http://a.com//y"},
		{"{ const u = new URL('http://a.com/x'); u.pathname = 'a/b/../c'; return u.href }", "http://a.com/a/c"},
		{"{ const u = new URL('foo://h/x'); u.pathname = 'q r'; return u.href }", "foo://h/q%20r"},
		{"{ const u = new URL('foo:/x'); u.pathname = '//z'; return u.href }", "foo:/.//z"},
		{"{ const u = new URL('file:///C:/x'); u.pathname = '/D:/y'; return u.href }", "file:///D:/y"},
		{"{ const u = new URL('http://a.com/x'); u.pathname = '%zz?#'; return u.href }", "http://a.com/%zz%3F%23"},
		{"{ const u = new URL('http://a.com/x'); u.pathname = ''; return u.href }", "http://a.com/"},
		{"new URL('https://user:pw@Example.com:8080/a/../b/c?x=1&y=%20z#frag').href", "https://user:pw@example.com:8080/b/c?x=1&y=%20z#frag"},
		{"{ const u = new URL('https://example.com/p?q=1'); return [u.protocol,u.host,u.hostname,u.port,u.pathname,u.search,u.hash,u.origin,u.username].join('|') }", "https:|example.com|example.com||/p|?q=1||https://example.com|"},
		{"new URL('/x/y?z', 'http://a.com/b/c').href", "http://a.com/x/y?z"},
		{"new URL('../up', 'http://a.com/b/c/d').href", "http://a.com/b/up"},
		{"new URL('nope')", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('http://a.com/ä b').href", "http://a.com/%C3%A4%20b"},
		{"new URL('http://münchen.de/').href", "http://xn--mnchen-3ya.de/"},
		{"new URL('http://Bücher.example/').href", "http://xn--bcher-kva.example/"},
		{"new URL('file:///etc/passwd').href", "file:///etc/passwd"},
		{"new URL('file:///C:/x/../y').href", "file:///C:/y"},
		{"new URL('file://localhost/x').href", "file:///x"},
		{"new URL('mailto:a@b.c').href", "mailto:a@b.c"},
		{"{ const u = new URL('http://a.com'); u.searchParams.append('k', 'a b&c'); u.searchParams.append('k','2'); return u.href }", "http://a.com/?k=a+b%26c&k=2"},
		{"{ const u = new URL('http://a.com/?a=1'); u.searchParams.delete('a'); return u.href }", "http://a.com/"},
		{"{ const u = new URL('http://a.com/?a=1'); const p = u.searchParams; u.search = '?b=2'; return p.get('b') + u.href }", "2http://a.com/?b=2"},
		{"new URLSearchParams('a=1&b=2&a=3').getAll('a')", "[\"1\",\"3\"]"},
		{"new URLSearchParams({x: 'y z', w: '+'}).toString()", "x=y+z&w=%2B"},
		{"new URLSearchParams('?q=%zz&r=%C3%A9&s=a+b&t').toString()", "q=%25zz&r=%C3%A9&s=a+b&t="},
		{"[...new URLSearchParams([['a','1'],['b','2']])].join(';')", "a,1;b,2"},
		{"{ const p = new URLSearchParams('b=2&a=1&c=3&a=0'); p.sort(); return p.toString() }", "a=1&a=0&b=2&c=3"},
		{"new URLSearchParams('a=1&b=2').size", "2"},
		{"new URLSearchParams([['a']])", "ERR TypeError ERR_INVALID_TUPLE: Each query pair must be an iterable [name, value] tuple"},
		{"JSON.stringify(new URL('http://a.com/x'))", "\"http://a.com/x\""},
		{"new URL('HTTP://A.COM:80/').href", "http://a.com/"},
		{"new URL('http://[::1]:3000/x').host", "[::1]:3000"},
		{"new URL('http://[0:0:0:0:0:ffff:1.2.3.4]/').host", "[::ffff:102:304]"},
		{"new URL('http://[2001:db8:0:0:1:0:0:1]/').host", "[2001:db8::1:0:0:1]"},
		{"new URL('http://0x7f.1/').host", "127.0.0.1"},
		{"new URL('http://192.168.0.257/').host", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('http://999999999999/')", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('http://a.com/?q=a+b').searchParams.get('q')", "a b"},
		{"Object.keys(URL.prototype).join()", "toString,href,origin,protocol,username,password,host,hostname,port,pathname,search,searchParams,hash,toJSON"},
		{"URL.canParse('nope')", "false"},
		{"new URL('http://a.com/x').toString()", "http://a.com/x"},
		{"new URL('http://a.com/%zz').href", "http://a.com/%zz"},
		{"new URL('http://a com/')", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('blob:http://a.com/x').origin", "http://a.com"},
		{"new URL('http://a.com#').href", "http://a.com/#"},
		{"new URL('http://a.com?').href", "http://a.com/?"},
		{"new URL('?x', 'http://a.com/p/q?y#z').href", "http://a.com/p/q?x"},
		{"new URL('#f', 'http://a.com/p/q?y#z').href", "http://a.com/p/q?y#f"},
		{"new URL('//b.org/x', 'https://a.com/').href", "https://b.org/x"},
		{"new URL('http:\\\\\\\\a.com\\\\x\\\\y').href", "http://a.com/x/y"},
		{"new URL('  http://a.com/\\n x  ').href", "http://a.com/%20x"},
		{"new URL('data:text/plain,hello world').href", "data:text/plain,hello world"},
		{"new URL('javascript:alert(1)').pathname", "alert(1)"},
		{"new URL('git+ssh://git@github.com/a/b.git').host", "github.com"},
		{"new URL('foo://h/a/./b/../c').href", "foo://h/a/c"},
		{"new URL('http://a.com/a/%2e%2E/b').href", "http://a.com/b"},
		{"new URL(\"http://a.com/?'x'\").href", "http://a.com/?%27x%27"},
		{"new URL(\"foo://a.com/?'x'\").href", "foo://a.com/?'x'"},
		{"new URL('http://a.com/`{}').href", "http://a.com/%60%7B%7D"},
		{"new URL('http://u@:80')", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('http://a.com:65536')", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('http://a.com:0080/').href", "http://a.com/"},
		{"new URL('ws://a.com:80/').href", "ws://a.com/"},
		{"{ const u = new URL('http://a.com/p'); u.pathname = 'x y/z'; u.hash = 'h h'; u.port = '8080'; u.hostname = 'B.com'; u.protocol = 'https'; u.username = 'me'; u.password = 'p@ss'; return u.href }", "https://me:p%40ss@b.com:8080/x%20y/z#h%20h"},
		{"{ const u = new URL('http://a.com/p'); u.protocol = 'foo'; u.port = '80'; return u.href }", "http://a.com/p"},
		{"{ const u = new URL('http://a.com/p'); u.host = 'c.org:81'; u.search = 'a=b c'; return u.href }", "http://c.org:81/p?a=b%20c"},
		{"{ const u = new URL('http://a.com/p'); u.href = 'https://z.z/'; return u.href }", "https://z.z/"},
		{"{ const u = new URL('http://a.com/p'); u.href = 'bad'; return u.href }", "ERR TypeError ERR_INVALID_URL: Invalid URL"},
		{"new URL('https://測試.com/').hostname", "xn--g6w251d.com"},
		{"Object.prototype.toString.call(new URL('http://a'))", "[object URL]"},
		{"new URL('http://a.com/').searchParams.toString()", ""},
		{"new URL('non-spec:/.//p').href", "non-spec:/.//p"},
		{"new URL('http://%41.com/').host", "a.com"},
		{"new URL('http://a.com/~user/ä?ä#ä').href", "http://a.com/~user/%C3%A4?%C3%A4#%C3%A4"},
		{"new URL('HtTpS://a.com').protocol", "https:"},
		{"new URL(' sc://ñ.test/'). host", "%C3%B1.test"},
	})
}

// TextEncoder and TextDecoder: UTF-8 as the Encoding standard writes and
// reads it (U+FFFD for each maximal invalid sequence, the BOM, fatal,
// streams), encodeInto, and Node's errors; atob and btoa as the HTML
// standard's forgiving base64, with Node's InvalidCharacterError.
func TestWeb_Encoding(t *testing.T) {
	t.Parallel()
	runWebCases(t, []webCase{
		{"new TextEncoder().encodeInto('x', 5)", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received type number (5)"},
		{"new TextEncoder().encodeInto('x', true)", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received type boolean (true)"},
		{"new TextEncoder().encodeInto('x', 10n)", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received type bigint (10n)"},
		{"new TextEncoder().encodeInto('x', Symbol('s'))", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received type symbol (Symbol(s))"},
		{"new TextEncoder().encodeInto('x', 'abcdefghijklmnopqrstuvwxyz0123456789')", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received type string ('abcdefghijklmnopqrstuvwxy...')"},
		{"new TextEncoder().encodeInto('x', null)", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received null"},
		{"new TextEncoder().encodeInto('x', {})", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received an instance of Object"},
		{"new TextEncoder().encodeInto('x', [])", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received an instance of Array"},
		{"new TextEncoder().encodeInto('x', () => 1)", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received function "},
		{"new TextEncoder().encodeInto('x', function named() {})", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received function named"},
		{"new TextDecoder('xyz')", "ERR RangeError ERR_ENCODING_NOT_SUPPORTED: The \"xyz\" encoding is not supported (riot's TextDecoder decodes utf-8 only)"}, // Node: "ERR RangeError ERR_ENCODING_NOT_SUPPORTED: The \"xyz\" encoding is not supported"
		{"new TextDecoder(' UTF8 ').encoding", "utf-8"},
		{"new TextDecoder('utf-8',{fatal:true}).decode(new Uint8Array([0xff]))", "ERR TypeError ERR_ENCODING_INVALID_ENCODED_DATA: The encoded data was not valid for encoding utf-8"},
		{"new TextDecoder().decode('abc')", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"input\" argument must be an instance of ArrayBuffer or ArrayBufferView. Received type string ('abc')"}, // Node: "ERR TypeError ERR_INVALID_ARG_TYPE: The \"list\" argument must be an instance of SharedArrayBuffer, ArrayBuffer or ArrayBufferView."
		{"new TextDecoder().decode(new Uint8Array([0xE2,0x82,0x61,0xF0,0x9F,0x98,0x80,0xED,0xA0,0x80, 0xC0, 0x80, 0xF4, 0x90]))", "�a😀�������"},
		{"new TextDecoder().decode(new Uint8Array([0xEF,0xBB,0xBF,0x61]))", "a"},
		{"new TextDecoder('utf-8',{ignoreBOM:true}).decode(new Uint8Array([0xEF,0xBB,0xBF,0x61]))", "\ufeffa"},
		{"{const d=new TextDecoder(); return d.decode(new Uint8Array([0xE2,0x82]),{stream:true})+'|'+d.decode(new Uint8Array([0xAC]))}", "|€"},
		{"{const d=new TextDecoder(); return d.decode(new Uint8Array([0xE2,0x82]),{stream:true})+'|'+d.decode()}", "|�"},
		{"new TextDecoder().decode(new Uint16Array([0x6968]).buffer)", "hi"},
		{"new TextDecoder().decode(new DataView(new Uint8Array([104,105,33]).buffer, 1))", "i!"},
		{"new TextDecoder().decode(new Uint8Array([104,105,33]).subarray(1))", "i!"},
		{"[new TextDecoder().fatal, new TextDecoder('utf8', {fatal: 1}).fatal, new TextDecoder().ignoreBOM]", "[false,true,false]"},
		{"new TextEncoder().encodeInto('aé😀', new Uint8Array(4))", "{\"read\":2,\"written\":3}"},
		{"new TextEncoder().encodeInto('aé😀', new Uint8Array(10))", "{\"read\":4,\"written\":7}"},
		{"new TextEncoder().encodeInto('aé😀', [])", "ERR TypeError ERR_INVALID_ARG_TYPE: The \"dest\" argument must be an instance of Uint8Array. Received an instance of Array"},
		{"Array.from(new TextEncoder().encode('\\ud800x'))", "[239,191,189,120]"},
		{"Array.from(new TextEncoder().encode('€'))", "[226,130,172]"},
		{"new TextEncoder().encode() instanceof Uint8Array", "true"},
		{"Array.from(new TextEncoder().encode(null))", "[110,117,108,108]"},
		{"new TextEncoder().encoding", "utf-8"},
		{"btoa('\\u0100')", "ERR InvalidCharacterError 5: Invalid character"},
		{"atob('a')", "ERR InvalidCharacterError 5: The string to be decoded is not correctly encoded."},
		{"atob(' YW Jj ')", "abc"},
		{"atob('YWJj=')", "ERR InvalidCharacterError 5: Invalid character"},
		{"atob('YQ')", "a"},
		{"atob('YR==')", "a"},
		{"atob('YQ=')", "ERR InvalidCharacterError 5: Invalid character"},
		{"atob('YQ===')", "ERR InvalidCharacterError 5: Invalid character"},
		{"atob(undefined)", "ERR InvalidCharacterError 5: The string to be decoded is not correctly encoded."},
		{"btoa()", "ERR TypeError ERR_MISSING_ARGS: The \"input\" argument must be specified"},
		{"atob()", "ERR TypeError ERR_MISSING_ARGS: The \"input\" argument must be specified"},
		{"btoa(null)", "bnVsbA=="},
		{"btoa('é')", "6Q=="},
		{"atob('6Q==')", "é"},
		{"btoa(String.fromCharCode(...Array.from({length: 256}, (_, i) => i))).length", "344"},
	})
}

// structuredClone copies what travels between a master and a worker, as
// the same codec does, and refuses what it refuses with a DataCloneError
// (a DOMException, code 25) that names what and where. Node writes the
// value itself in its message; riot names its kind and its path.
func TestWeb_StructuredClone(t *testing.T) {
	t.Parallel()
	runWebCases(t, []webCase{
		{"structuredClone(()=>{})", "ERR DataCloneError 25: a function could not be cloned."},                            // Node: "ERR DataCloneError 25: ()=>{} could not be cloned."
		{"structuredClone({a:[1,Symbol('x')]})", "ERR DataCloneError 25: a symbol (at value.a[1]) could not be cloned."}, // Node: "ERR DataCloneError 25: Symbol(x) could not be cloned."
		{"structuredClone(new WeakMap())", "ERR DataCloneError 25: a WeakMap could not be cloned."},                      // Node: "ERR DataCloneError 25: #<WeakMap> could not be cloned."
		{"structuredClone()", "ERR TypeError ERR_MISSING_ARGS: The value argument must be specified"},
		{"structuredClone(Object(Symbol()))", "ERR DataCloneError 25: a Symbol object could not be cloned."}, // Node: "ERR DataCloneError 25: [object Symbol] could not be cloned."
		{"{ const o = {a: 1}; o.self = o; const c = structuredClone(o); return [c !== o, c.self === c] }", "[true,true]"},
		{"{ const d = new Date(0); const c = structuredClone({d, m: new Map([[1, {x: 2}]]), s: new Set([1]), r: /x/gi, b: 10n, u: undefined, n: -0, ta: new Uint8Array([1,2])}); return [c.d instanceof Date, c.d.getTime(), c.m.get(1).x, c.s.has(1), String(c.r), typeof c.b, 'u' in c, Object.is(c.n, -0), c.ta[1]] }", "[true,0,2,true,\"/x/gi\",\"bigint\",true,true,2]"},
		{"{ class K { constructor() { this.x = 1 } }; const c = structuredClone(new K()); return [c.constructor === Object, c.x] }", "[true,1]"},
		{"{ const e = structuredClone(new RangeError('boom')); return [e instanceof RangeError, e.name, e.message] }", "[true,\"RangeError\",\"boom\"]"},
		{"{ const a = [1,,3]; const c = structuredClone(a); return [1 in c, c.length] }", "[false,3]"},
		{"structuredClone(Promise.resolve())", "ERR DataCloneError 25: a Promise could not be cloned."}, // Node: "ERR DataCloneError 25: #<Promise> could not be cloned."
		{"structuredClone(1, {transfer: []})", "1"},
	})
}

// crypto.getRandomValues fills integer typed arrays of up to 65536 bytes
// and refuses others as Node does; randomUUID gives version 4 UUIDs.
func TestWeb_Crypto(t *testing.T) {
	t.Parallel()
	runWebCases(t, []webCase{
		{"crypto.getRandomValues(new Float64Array(1))", "ERR TypeMismatchError 17: The data argument must be an integer-type TypedArray"},
		{"crypto.getRandomValues(new Uint8Array(65537))", "ERR QuotaExceededError 22: The requested length exceeds 65,536 bytes"},
		{"crypto.getRandomValues(new Uint8Array(65536)).length", "65536"},
		{"crypto.getRandomValues(new Uint32Array(16384)).length", "16384"},
		{"crypto.getRandomValues(new Uint32Array(16385)).length", "ERR QuotaExceededError 22: The requested length exceeds 65,536 bytes"},
		{"crypto.getRandomValues([1])", "ERR TypeMismatchError 17: The data argument must be an integer-type TypedArray"},
		{"crypto.getRandomValues(new DataView(new ArrayBuffer(4)))", "ERR TypeMismatchError 17: The data argument must be an integer-type TypedArray"},
		{"crypto.getRandomValues(new BigInt64Array(2)).length", "2"},
		{"{ const a = new Uint8Array(8); return crypto.getRandomValues(a) === a }", "true"},
		{"/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID())", "true"},
		{"[typeof DOMException, new DOMException('m', 'DataCloneError').code, new DOMException('m').name, new DOMException() instanceof Error, Object.prototype.toString.call(new DOMException())]", "[\"function\",25,\"Error\",true,\"[object DOMException]\"]"},
		{"Object.prototype.toString.call(crypto)", "[object Crypto]"},
	})
}

// What the web globals allocate for a workunit's input is checked against
// the worker's memory before it is allocated: a huge input is a RangeError
// naming the call, not a worker that runs out of memory.
func TestWeb_Bounded(t *testing.T) {
	// Not parallel: the memory limit is judged by the heap of the whole
	// test process, which parallel tests would share.
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 96 << 20, Timeout: time.Minute})
	for _, tc := range []struct{ src, msg string }{
		{"new TextEncoder().encode('x'.repeat(2 ** 25))", "TextEncoder.encode: a Uint8Array of 96.0 MiB"},
		{"btoa('x'.repeat(2 ** 25))", "btoa: a string of 96.0 MiB"},
		{"atob('A'.repeat(2 ** 24 + 2 ** 23))", "atob: a string of 96.0 MiB"},
		{"new TextDecoder().decode(new Uint8Array(2 ** 25))", "TextDecoder.decode: a string of 96.0 MiB"},
		{"new URL('http://a/' + 'x'.repeat(2 ** 23))", "URL: a URL of 96.0 MiB"},
		{"new URLSearchParams('a=' + 'x'.repeat(2 ** 24))", "URLSearchParams: a list of 128.0 MiB"},
		{"structuredClone(new Uint8Array(2 ** 25))", "structuredClone: the copy would take more than 24.0 MiB"},
	} {
		werr, _ := evalError(t, e, evalReq(tc.src))
		assert.Equal(t, "RangeError", werr.Name, tc.src)
		assert.Contains(t, werr.Message, tc.msg, tc.src)
	}
	// The engine still serves.
	assert.Equal(t, "aGk=", evalValue(t, e, "btoa('hi')"))
}
