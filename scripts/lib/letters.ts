// letters.ts: letter counts, the module of scripts/typed-demo.ts. A module
// of the job, imported with `import`: its functions are sent to workers by
// content, like the script's own, as plain JavaScript (types stripped).

/** How many times each letter (a to z) occurs. */
export type Histogram = Record<string, number>;

/** The letters of words, counted, ignoring case and anything but a to z. */
export function letterHistogram(words: readonly string[]): Histogram {
  const h: Histogram = {};
  for (const word of words) {
    for (const ch of word.toLowerCase()) {
      if (ch >= 'a' && ch <= 'z') {
        h[ch] = (h[ch] ?? 0) + 1;
      }
    }
  }
  return h;
}

/** The sum of histograms. */
export function merge(histograms: readonly Histogram[]): Histogram {
  const total: Histogram = {};
  for (const h of histograms) {
    for (const [letter, n] of Object.entries(h)) {
      total[letter] = (total[letter] ?? 0) + n;
    }
  }
  return total;
}

/** The n most common letters with their counts, most common first (ties by letter). */
export function top(h: Histogram, n: number): Array<[string, number]> {
  return Object.entries(h)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    .slice(0, n);
}
