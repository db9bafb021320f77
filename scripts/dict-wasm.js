// dict-wasm.js: dict.js's search (compound dictionary words: words in the
// dictionary made by concatenating two other dictionary words), its inner
// loop in WebAssembly (scripts/wasm/dict.wat, built into dict.wasm).
//
//   riot-worker eval scripts/dict-wasm.js [--limit N] [--chunk N] [--words FILE] [--wasm FILE] [--all 1]
//
// --words, --limit  as in dict.js: the same words, the same answer
// --chunk  first words per workunit (default 100)
// --wasm   the module (default scripts/wasm/dict.wasm)
// --all    print every combination, in order, instead of a sample
//
// The module's bytes, the dictionary's bytes and its words are captured by
// every workunit: each travels as a blob, fetched once by each worker, and
// the worker compiles the module once (by the hash of its bytes).

function options(args) {
  const opts = { words: '/usr/share/dict/words', limit: 0, chunk: 100, wasm: 'scripts/wasm/dict.wasm', all: 0 };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i].replace(/^--?/, '');
    if (!(flag in opts) || i + 1 >= args.length) {
      throw new Error(`usage: dict-wasm.js [--limit N] [--chunk N] [--words FILE] [--wasm FILE] [--all 1] (bad argument ${args[i]})`);
    }
    opts[flag] = flag === 'words' || flag === 'wasm' ? args[++i] : Number(args[++i]);
  }
  return opts;
}

// utf8 appends the UTF-8 bytes of s to out.
function utf8(s, out) {
  for (let i = 0; i < s.length; i++) {
    let c = s.codePointAt(i);
    if (c > 0xffff) i++;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
}

const opts = options(riot.args);
let words = riot.readLines(opts.words).filter((word) => word.length >= 3);
if (opts.limit > 0) {
  words = words.filter((word) => word[0] !== word[0].toUpperCase()).slice(0, opts.limit);
}
// The dictionary's words, each once, in dict.js's order, and their bytes.
const list = [...new Set(words)];
const bytes = [];
const offsets = new Int32Array(list.length + 1);
list.forEach((word, k) => {
  offsets[k] = bytes.length;
  utf8(word, bytes);
});
offsets[list.length] = bytes.length;
const data = Uint8Array.from(bytes);
const WASM = riot.readFile(opts.wasm, null);

// One workunit: the combinations of the first words from lo to hi.
function combinationsOf([lo, hi]) {
  const n = list.length;
  const { exports: wasm } = new WebAssembly.Instance(new WebAssembly.Module(WASM));
  const bits = Math.max(4, Math.ceil(Math.log2(2 * n + 1)));
  const slots = 2 ** bits;
  const align = (x) => (x + 7) & ~7;
  const offsAt = align(data.length);
  const tableAt = offsAt + 4 * (n + 1);
  const hashesAt = tableAt + 4 * slots;
  const powsAt = hashesAt + 4 * n;
  const outAt = powsAt + 4 * n;
  const need = outAt + 4 * n;
  const have = wasm.memory.buffer.byteLength;
  if (need > have) wasm.memory.grow(Math.ceil((need - have) / 65536));
  const mem = wasm.memory.buffer;
  new Uint8Array(mem).set(data, 0);
  new Int32Array(mem, offsAt, n + 1).set(offsets);
  wasm.build(n, offsAt, tableAt, 32 - bits, hashesAt, powsAt);
  const out = new Int32Array(mem, outAt, n);
  const found = [];
  for (let i = lo; i < hi; i++) {
    const count = wasm.search(i, n, offsAt, tableAt, 32 - bits, hashesAt, powsAt, outAt);
    for (let c = 0; c < count; c++) found.push([list[i], list[out[c]]]);
  }
  return found;
}

/** @type {[number, number][]} */
const ranges = [];
for (let lo = 0; lo < list.length; lo += opts.chunk) {
  ranges.push([lo, Math.min(lo + opts.chunk, list.length)]);
}
const start = performance.now();
const combinations = riot.forWork(ranges, combinationsOf).flat();
console.log(`real time: ${Math.round(performance.now() - start)} ms`);
console.log(`There are ${combinations.length} words.`);

if (opts.all) {
  console.log(JSON.stringify(combinations));
} else {
  // Print a random subset of the results.
  const sample = combinations.slice();
  for (let i = sample.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [sample[i], sample[j]] = [sample[j], sample[i]];
  }
  console.log(JSON.stringify(sample.slice(0, 20)));
}
