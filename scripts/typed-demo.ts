// typed-demo.ts: a job script in TypeScript. It splits a word list into
// chunks, counts each chunk's letters in a workunit (riot.forWork), finds
// the longest word in another (riot.doWork), awaited at the top level, and
// prints the totals.
//
//   riot-worker eval scripts/typed-demo.ts [WORDS_FILE [CHUNKS]]
//
// The master bundles the script and ./lib/letters.ts with esbuild: types
// are stripped, and letterHistogram, imported from the module, travels to
// the workers by content like a function of the script. Errors and stacks
// name this file's lines. `riot-worker types` prints the typings that
// scripts/tsconfig.json gives editors and tsc.
import { letterHistogram, merge, top, type Histogram } from './lib/letters';

interface Chunk {
  first: number; // the index of its first word
  words: string[];
}

const file: string = riot.args[0] ?? 'scripts/testdata/words.txt';
const chunks: number = Number(riot.args[1] ?? 3);
const words = riot.readLines(file).filter((w) => w.length > 0);

const size = Math.max(1, Math.ceil(words.length / chunks));
const parts: Chunk[] = [];
for (let first = 0; first < words.length; first += size) {
  parts.push({ first, words: words.slice(first, first + size) });
}

// One workunit per chunk; letterHistogram is a free variable of the arrow.
const histograms: Histogram[] = riot.forWork(parts, (part: Chunk) => letterHistogram(part.words));

// One more workunit, whose result the top level awaits.
const longestId = riot.doWork((ws: string[]): string => ws.reduce((a, b) => (b.length > a.length ? b : a), ''), words);
const longest = await new Promise<string>((resolve, reject) => {
  riot.callWhenDone(longestId, (isError, _worker, result) => (isError ? reject(new Error(result)) : resolve(result)));
});

const total = merge(histograms);
console.log(`${words.length} words in ${parts.length} workunits; the longest is ${longest}`);
console.log(`most common letters: ${top(total, 3).map(([letter, n]) => `${letter} ${n}`).join(', ')}`);
