#!/bin/sh
# dict-bench.sh: the dictionary search for N words (default 3000), RUNS
# times each (default 3), in one sitting: serial Node, serial goja (one
# eval workunit in riot-worker eval's in-process engine), riot dict.js on
# 2 slots and riot dict-wasm.js on 2 slots (riot-worker eval's embedded
# tracker and worker). Each line is the search's own time in ms (the
# script's "real time", performance.now() around the loop or the
# forWork) and the process's wall time. docs/benchmarks.md has figures.
#
#   scripts/dict-bench.sh [N] [RUNS]     (riot-worker on PATH, or RIOT_WORKER=path)
set -e
N=${1:-3000}
RUNS=${2:-3}
RW=${RIOT_WORKER:-riot-worker}
WORDS=${WORDS:-/usr/share/dict/words}
cd "$(dirname "$0")/.."
src=$(mktemp)
trap 'rm -f "$src"' EXIT
# The same words as dict.js --limit N, as a literal for the eval workunit.
node -e '
const fs = require("fs");
let words = fs.readFileSync(process.argv[1], "utf8").split("\n").filter((w) => w.length >= 3);
words = words.filter((w) => w[0] !== w[0].toUpperCase()).slice(0, Number(process.argv[2]));
process.stdout.write(`const dictionary = new Set(${JSON.stringify(words)});
const start = performance.now();
let found = 0;
for (const a of dictionary) for (const b of dictionary) if (dictionary.has(a + b)) found++;
"real time: " + Math.round(performance.now() - start) + " ms, " + found + " words"`);
' "$WORDS" "$N" > "$src"
wall() { s=$(date +%s%N); "$@" > /tmp/dict-bench.$$ 2>&1; e=$(date +%s%N); echo "$(grep -o 'real time: [0-9]* ms' /tmp/dict-bench.$$ | head -1), wall $(( (e - s) / 1000000 )) ms, $(grep -o '[0-9]* words' /tmp/dict-bench.$$ | head -1)"; rm -f /tmp/dict-bench.$$; }
for i in $(seq "$RUNS"); do
  echo "run $i"
  printf '  node serial:        '; wall node scripts/dict-node.js --limit "$N" --words "$WORDS"
  printf '  goja serial:        '; wall "$RW" eval -e "$(cat "$src")"
  printf '  riot dict.js, 2:    '; wall "$RW" eval --workers 2 scripts/dict.js --limit "$N" --words "$WORDS"
  printf '  riot dict-wasm, 2:  '; wall "$RW" eval --workers 2 scripts/dict-wasm.js --limit "$N" --words "$WORDS"
done
