// dict-node.js: dict.js's search serially in one Node process, the
// baseline of docs/benchmarks.md ("CPU-bound code").
//
//   node scripts/dict-node.js [--limit N] [--words FILE]
//
// The same words as dict.js (--limit: the first N of at least three
// letters that start with a lowercase letter), the same brute force: for
// each first word, every second word whose concatenation is a word.
const fs = require('fs');

const opts = { words: '/usr/share/dict/words', limit: 0 };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) {
  const flag = args[i].replace(/^--?/, '');
  if (!(flag in opts) || i + 1 >= args.length) throw new Error(`usage: dict-node.js [--limit N] [--words FILE] (bad argument ${args[i]})`);
  opts[flag] = flag === 'words' ? args[i + 1] : Number(args[i + 1]);
}
let words = fs.readFileSync(opts.words, 'utf8').split('\n').filter((word) => word.length >= 3);
if (opts.limit > 0) {
  words = words.filter((word) => word[0] !== word[0].toUpperCase()).slice(0, opts.limit);
}
const dictionary = new Set(words);

const start = performance.now();
const combinations = [];
for (const firstWord of dictionary) {
  for (const secondWord of dictionary) {
    if (dictionary.has(firstWord + secondWord)) combinations.push([firstWord, secondWord]);
  }
}
console.log(`real time: ${Math.round(performance.now() - start)} ms`);
console.log(`There are ${combinations.length} words.`);
