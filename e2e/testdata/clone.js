// Structured clone, end to end: every kind of value that the web platform's
// structured clone keeps (docs/values.md), sent to a worker as an argument
// and as a captured free variable, checked there, and checked again when
// it comes back as the result. Values that structured clone refuses are a
// DataCloneError naming their path, on the master and on the worker.
//
// It prints one line per direction and a line per problem, and throws at
// the end if there was one.

// same compares a copy with what it should be and returns the problems:
// the same kinds, prototypes, primitives (Object.is), own enumerable keys
// in the same order, and the same sharing of objects (seen maps objects of
// one side to the other's, both ways).
function same(copy, want, path = 'value', seen = [new Map(), new Map()]) {
  const problems = [];
  const bad = (what) => problems.push(path + ': ' + what);
  if (typeof copy !== typeof want) {
    bad(`typeof ${typeof copy}, want ${typeof want}`);
    return problems;
  }
  if (copy === null || want === null || (typeof want !== 'object' && typeof want !== 'function')) {
    if (!Object.is(copy, want)) bad(`${show(copy)}, want ${show(want)}`);
    return problems;
  }
  const [fwd, back] = seen;
  if (fwd.has(want) || back.has(copy)) {
    if (fwd.get(want) !== copy || back.get(copy) !== want) bad('not shared as in the original');
    return problems;
  }
  fwd.set(want, copy);
  back.set(copy, want);
  if (copy === want) bad('the original, not a copy');
  if (Object.getPrototypeOf(copy) !== Object.getPrototypeOf(want)) bad('another prototype');
  const tag = Object.prototype.toString.call(want);
  if (Object.prototype.toString.call(copy) !== tag) bad(`${Object.prototype.toString.call(copy)}, want ${tag}`);
  if (Array.isArray(copy) !== Array.isArray(want)) bad('Array.isArray differs');
  switch (tag) {
    case '[object Number]': case '[object String]': case '[object Boolean]': case '[object BigInt]':
      if (!Object.is(copy.valueOf(), want.valueOf())) bad(`holds ${show(copy.valueOf())}, want ${show(want.valueOf())}`);
      break;
    case '[object Date]':
      if (!Object.is(copy.getTime(), want.getTime())) bad(`time ${copy.getTime()}, want ${want.getTime()}`);
      break;
    case '[object RegExp]':
      for (const k of ['source', 'flags', 'lastIndex']) {
        if (copy[k] !== want[k]) bad(`${k} ${show(copy[k])}, want ${show(want[k])}`);
      }
      break;
    case '[object Error]':
      for (const k of ['name', 'message']) {
        if (copy[k] !== want[k]) bad(`${k} ${show(copy[k])}, want ${show(want[k])}`);
      }
      if (Object.hasOwn(copy, 'message') !== Object.hasOwn(want, 'message')) bad('own message differs');
      if (Object.hasOwn(copy, 'name') !== Object.hasOwn(want, 'name')) bad('own name differs');
      if (typeof copy.stack !== 'string') bad('no stack');
      if (Object.hasOwn(copy, 'cause') !== Object.hasOwn(want, 'cause')) bad('own cause differs');
      else if (Object.hasOwn(want, 'cause')) problems.push(...same(copy.cause, want.cause, path + '.cause', seen));
      break;
  }
  if (Array.isArray(want) && copy.length !== want.length) bad(`length ${copy.length}, want ${want.length}`);
  const ck = Object.keys(copy), wk = Object.keys(want);
  if (ck.join('\u0001') !== wk.join('\u0001')) bad(`keys [${ck.map(show)}], want [${wk.map(show)}]`);
  for (const k of wk) {
    if (Object.hasOwn(copy, k)) problems.push(...same(copy[k], want[k], path + '[' + show(k) + ']', seen));
  }
  return problems;
}

// show writes a value for a problem line, with lone surrogates escaped.
function show(v) {
  if (typeof v === 'bigint') return v + 'n';
  if (typeof v === 'string') {
    return JSON.stringify(v).replace(/[\ud800-\udfff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16));
  }
  if (Object.is(v, -0)) return '-0';
  return String(v);
}

// Each case makes its value afresh (make) and says what a copy must be
// (want, by default another value made the same way), and may check more
// (extra, on the copy).
const primitives = () => [undefined, null, true, false, '', '\ud800', '\udc00', '\u0000', '\udbff\udffd', 0.2, 0, -0, NaN,
  Infinity, -Infinity, 2 ** 53, -(2 ** 53), 2 ** 53 + 2, -(2 ** 53 + 2), 0n, -0n, -9007199254740994000n,
  -(10n ** 70n + 7n)];
const keyed = (list) => { const o = {}; list.forEach((v, i) => { o['k' + i + (typeof v === 'string' ? v : '')] = v; }); return o; };
const numbers = () => [0.2, 0, -0, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 53), 2 ** 53 + 2, -(2 ** 53 + 2)];
const strings = () => ['', '\ud800', '\udc00', '\u0000', '\udbff\udffd'];
const dates = () => [0, -0, -8.64e15, 8.64e15, 1700000000123].map((t) => new Date(t));
const regexps = () => {
  const g = /foo/gim;
  g.lastIndex = 2;
  return [g, new RegExp('foo', 'y'), new RegExp('foo', 'u'), new RegExp(''), new RegExp('/'), new RegExp('\n'), new RegExp('a[/]b', 's')];
};
const regexpsWant = () => [/foo/gim, /foo/y, /foo/u, /(?:)/, /\//, /\n/, /a[\/]b/s];
const errorCtors = () => [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError];

const cases = [];
const add = (name, make, want = make, extra = () => []) => cases.push({ name, make, want, extra });

primitives().forEach((_, i) => add('primitive #' + i, () => primitives()[i]));
add('Array of primitives', primitives);
add('Object of primitives', () => keyed(primitives()));
add('Boolean objects', () => [new Boolean(true), new Boolean(false)]);
add('Object of Boolean objects', () => ({ t: new Boolean(true), f: new Boolean(false) }));
strings().forEach((_, i) => add('String object #' + i, () => new String(strings()[i])));
add('Array of String objects', () => strings().map((s) => new String(s)));
add('Object of String objects', () => keyed(strings().map((s) => new String(s))));
numbers().forEach((_, i) => add('Number object #' + i, () => new Number(numbers()[i])));
add('BigInt object', () => Object(-9007199254740994n));
add('Array of Number objects', () => numbers().map((n) => new Number(n)));
add('Object of Number objects', () => keyed(numbers().map((n) => new Number(n))));
add('a wrapper twice', () => { const n = new Number(7); return [n, { n }]; });
dates().forEach((_, i) => add('Date #' + i, () => dates()[i]));
add('Array of Dates', dates);
add('Object of Dates', () => keyed(dates()));
regexps().forEach((_, i) => add('RegExp #' + i, () => regexps()[i], () => regexpsWant()[i]));
add('Array of RegExps', regexps, regexpsWant);
add('Object of RegExps', () => keyed(regexps()), () => keyed(regexpsWant()));
add('Error without a message', () => new Error());
add('Error with an empty message', () => new Error(''));
errorCtors().forEach((_, i) => add('Error ' + errorCtors()[i].name, () => {
  const e = new (errorCtors()[i])('Error message here');
  e.foo = 'testing';
  return e;
}, () => new (errorCtors()[i])('Error message here')));
add('AggregateError', () => new AggregateError([1], 'all failed'), () => new AggregateError([], 'all failed'));
add('Error with a name of its own', () => { const e = new RangeError('m'); e.name = 'Mine'; return e; }, () => new Error('m'));
add('Error subclass', () => {
  class Failure extends TypeError { constructor(m) { super(m); this.code = 7; } }
  return new Failure('m\ud800');
}, () => new TypeError('m\ud800'));
add('Error with a cause', () => new Error('outer', { cause: { inner: [1, , 3] } }));
add('Array with holes', () => [1, , 3, , ]);
add('sparse Array', () => new Array(10));
add('Array with non-index properties', () => { const a = [1, 2]; a.foo = 'bar'; a['-1'] = -1; a['\udc00'] = 'low'; return a; });
add('Object with index property and length', () => ({ 0: 'foo', length: 1 }));
add('Object with keys holding lone surrogates', () => { const o = {}; o['a\ud800'] = 5; o['a\udbff'] = 6; o['\ufffd'] = 7; return o; });
add('Array with a circular reference', () => { const a = []; a[0] = a; return a; });
add('Object with a circular reference', () => { const o = {}; o.x = o; return o; });
add('Array with identical property values', () => { const o = {}; return [o, o]; });
add('Object with identical property values', () => { const o = {}; return { x: o, y: o }; });
add('Object with a property on its prototype', () => { function Foo() {} Foo.prototype = { foo: 'bar' }; return new Foo(); }, () => ({}));
add('Object with a non-enumerable property', () => Object.defineProperty({}, 'foo', { value: 'bar', enumerable: false }), () => ({}));
add('Object with a non-writable property', () => Object.defineProperty({}, 'foo', { value: 'bar', enumerable: true, writable: false, configurable: true }),
  () => ({ foo: 'bar' }), (c) => { const d = Object.getOwnPropertyDescriptor(c, 'foo'); return d.writable ? [] : ['foo is not writable']; });
add('Object with a non-configurable property', () => Object.defineProperty({}, 'foo', { value: 'bar', enumerable: true, writable: true, configurable: false }),
  () => ({ foo: 'bar' }), (c) => { const d = Object.getOwnPropertyDescriptor(c, 'foo'); return d.configurable ? [] : ['foo is not configurable']; });
add('Object with a getter', () => ({ get g() { return 'got'; } }), () => ({ g: 'got' }));
add('Object.prototype', () => Object.prototype, () => ({}), (c) => { Object.setPrototypeOf(c, { some: 'proto' }); return c.some === 'proto' ? [] : ['prototype cannot be set']; });
add('Map and Set', () => { const k = { k: 1 }; return [new Map([[k, new Set([k, 'a\ud800'])]]), k]; });

// The three directions: as an argument, as a captured free variable, and
// back as the result (checked on the master for both).
const failures = [];
const ids = cases.map((c) => {
  const { make, want, extra } = c;
  const check = (v) => [...same(v, want()), ...extra(v)];
  const captured = make();
  const submit = (f) => { try { return f(); } catch (e) { return e; } };
  return [
    submit(() => riot.doWork((x) => [check(x), x], make())),
    submit(() => riot.doWork(() => [check(captured), captured])),
  ];
});
let checked = 0;
cases.forEach((c, i) => {
  const check = (v) => [...same(v, c.want()), ...c.extra(v)];
  ids[i].forEach((id, j) => {
    const how = j === 0 ? 'argument' : 'free variable';
    checked++;
    let onWorker, back;
    try {
      if (id instanceof Error) throw id;
      [onWorker, back] = riot.waitUntilDone(id);
    } catch (e) {
      failures.push(`${c.name}, ${how}: ${e.name}: ${e.message}`);
      return;
    }
    for (const p of onWorker) failures.push(`${c.name}, ${how}, on the worker: ${p}`);
    for (const p of check(back)) failures.push(`${c.name}, ${how}, back on the master: ${p}`);
  });
});

// What structured clone refuses, on the master and on the worker.
const refused = [
  ['a Symbol object', () => Object(Symbol('s'))],
  ['a generator', () => (function* () {})()],
  ['an Array Iterator', () => [1].values()],
  ['a Map Iterator', () => new Map().entries()],
  ['a Set Iterator', () => new Set().values()],
  ['an arguments object', () => (function () { return arguments; })(1)],
  ['a WeakMap', () => new WeakMap()],
  ['a Promise', () => Promise.resolve(1)],
  ['a symbol', () => Symbol('s')],
];
for (const [what, make] of refused) {
  const expect = (e, where, msg) => {
    if (!(e instanceof Error) || e.name !== 'DataCloneError' || !e.message.includes(msg)) {
      failures.push(`${what}, ${where}: threw ${e && e.name}: ${e && e.message}, want a DataCloneError with ${msg}`);
    }
  };
  try { riot.doWork((x) => x, { list: [0, make()] }); failures.push(`${what}, argument: sent`); }
  catch (e) { expect(e, 'argument', `args[0].list[1]: ${what} cannot be sent to a worker`); }
  const v = make();
  try { riot.doWork(() => v); failures.push(`${what}, free variable: sent`); }
  catch (e) { expect(e, 'free variable', `free variable v: ${what} cannot be sent to a worker`); }
  try { riot.waitUntilDone(riot.doWork(() => ({ r: make() }))); failures.push(`${what}, result: sent`); }
  catch (e) { expect(e.cause, 'result', `result.r: ${what} cannot be sent back to the master`); }
  checked += 3;
}

// A getter that throws: the clone throws what it threw.
const thrown = new Error('from a getter');
try {
  riot.doWork((x) => x, { get boom() { throw thrown; } });
  failures.push('getter: sent');
} catch (e) {
  if (e !== thrown) failures.push(`getter: threw ${e}, want the getter's error`);
}
checked++;

console.log(`${cases.length} values, ${checked} checks`);
for (const f of failures) console.log('FAIL ' + f);
if (failures.length) throw new Error(`${failures.length} structured clone checks failed`);
console.log('all pass');
