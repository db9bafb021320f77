package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job script has the globals a workunit has (structuredClone,
// TextEncoder, TextDecoder, URL, URLSearchParams, atob, btoa, crypto,
// DOMException, console's table, group, count and time), and
// structuredClone keeps what a round trip through a workunit keeps.
func TestMaster_WebGlobals(t *testing.T) {
	t.Parallel()
	sr := runScript(t, map[string]string{"main.js": `
		const names = ['structuredClone', 'TextEncoder', 'TextDecoder', 'URL', 'URLSearchParams', 'atob', 'btoa', 'crypto', 'DOMException'];
		console.log(names.map((n) => typeof globalThis[n]).join());
		const u = new URL('../b?x=1#h', 'https://Example.com/a/c');
		u.searchParams.append('y', 'a b');
		console.log(u.href);
		console.log(new TextDecoder().decode(new TextEncoder().encode('héllo')), atob(btoa('hi')), crypto.randomUUID().length);
		const v = {d: new Date(0), m: new Map([[1, [1, , 3]]]), s: new Set(['x']), b: 5n, t: new Uint8Array([1, 2])};
		v.self = v;
		const local = structuredClone(v);
		const remote = riot.waitUntilDone(riot.doWork((x) => x, v));
		console.log(local !== v, local.self === local, remote.self === remote);
		console.log(local);
		console.log(remote);
		try { structuredClone({f() {}}) } catch (e) { console.log(e.name, e.code, e.message) }
		console.log(riot.waitUntilDone(riot.doWork(() => [typeof structuredClone, typeof URL, btoa('ok'), new URLSearchParams({q: 'a&b'}).toString()])));
		console.group('group');
		console.table([{a: 1}, {b: 'x'}]);
		console.count();
		console.groupEnd();
		console.count();
	`})
	require.NoError(t, sr.err)
	assert.Equal(t, `function,function,function,function,function,function,function,object,function
https://example.com/b?x=1&y=a+b#h
héllo hi 36
true true true
<ref *1> {
  d: 1970-01-01T00:00:00.000Z,
  m: Map(1) { 1 => [ 1, <1 empty item>, 3 ] },
  s: Set(1) { 'x' },
  b: 5n,
  t: Uint8Array(2) [ 1, 2 ],
  self: [Circular *1]
}
<ref *1> {
  d: 1970-01-01T00:00:00.000Z,
  m: Map(1) { 1 => [ 1, <1 empty item>, 3 ] },
  s: Set(1) { 'x' },
  b: 5n,
  t: Uint8Array(2) [ 1, 2 ],
  self: [Circular *1]
}
DataCloneError 25 a function (at value.f) could not be cloned.
[ 'function', 'function', 'b2s=', 'q=a%26b' ]
group
  ┌─────────┬───┬─────┐
  │ (index) │ a │ b   │
  ├─────────┼───┼─────┤
  │ 0       │ 1 │     │
  │ 1       │   │ 'x' │
  └─────────┴───┴─────┘
  default: 1
default: 2
`, sr.stdout.String())
}
