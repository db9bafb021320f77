// dict.js: compound dictionary words (Riot's manual, section 2): words in
// the dictionary made by concatenating two other dictionary words.
//
//   riot-worker eval scripts/dict.js [--limit N] [--chunk N] [--words FILE] [--all 1]
//
// --words  the word list (default /usr/share/dict/words, from Debian's
//          wamerican package)
// --limit  use only the first N words of at least three letters that start
//          with a lowercase letter (the full list takes hours on one
//          machine, as it did for Riot; proper nouns, which come first in
//          the list, rarely make compounds)
// --chunk  put N first words in each workunit instead of one: the seed's
//          third run, "fewer and larger workunits"
// --all    print every combination, in order, instead of a random sample
//          (to compare with scripts/dict-wasm.js)
//
// The dictionary is read on the master and captured by every workunit. It
// travels as a blob: uploaded to the tracker once and fetched once by each
// worker, whatever the number of workunits.

function options(args) {
  const opts = { words: '/usr/share/dict/words', limit: 0, chunk: 0, all: 0 };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i].replace(/^--?/, '');
    if (!(flag in opts) || i + 1 >= args.length) {
      throw new Error(`usage: dict.js [--limit N] [--chunk N] [--words FILE] [--all 1] (bad argument ${args[i]})`);
    }
    opts[flag] = flag === 'words' ? args[++i] : Number(args[++i]);
  }
  return opts;
}

const opts = options(riot.args);
let words = riot.readLines(opts.words).filter((word) => word.length >= 3);
if (opts.limit > 0) {
  words = words.filter((word) => word[0] !== word[0].toUpperCase()).slice(0, opts.limit);
}
const dictionary = new Set(words);

// The seed's brute force, as written: for each first word, every second
// word whose concatenation is a word.
function combinationsOf(firstWord) {
  const found = [];
  for (const secondWord of dictionary) {
    if (dictionary.has(firstWord + secondWord)) {
      found.push([firstWord, secondWord]);
    }
  }
  return found;
}

function wordCombinations() {
  if (opts.chunk > 1) {
    const chunks = [];
    for (let i = 0; i < words.length; i += opts.chunk) {
      chunks.push(words.slice(i, i + opts.chunk));
    }
    return riot.forWork(chunks, (chunk) => chunk.flatMap(combinationsOf)).flat();
  }
  return riot.forWork(dictionary, combinationsOf).flat();
}

const start = performance.now();
const combinations = wordCombinations();
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
