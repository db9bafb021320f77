// nested-fib.js: workunits that make workunits. fib(n) splits into the
// workunits fib(n - 1) and fib(n - 2) down to a cut-off, below which it
// computes locally. Each workunit submits its children on behalf of this
// job (the same memo scope), so equal calls are one workunit, memoized
// across the cluster; a workunit that waits for its children gives up its
// slot, so one worker with one slot finishes it.
//
//   riot-worker eval scripts/nested-fib.js            # fib(20)
//   riot-worker eval scripts/nested-fib.js 25 15      # fib(25), cut-off 15

const n = Number(riot.args[0] ?? 20);
const cutoff = Number(riot.args[1] ?? 12);

// local is captured by fib: it travels with fib to every worker, and from
// each workunit on to its children.
function local(k) {
  return k < 2 ? k : local(k - 1) + local(k - 2);
}

// fib refers to itself: a workunit sends its own function on.
function fib(k) {
  if (k < cutoff) {
    return local(k);
  }
  const a = riot.doWork(fib, k - 1);
  const b = riot.doWork(fib, k - 2);
  return riot.waitUntilDone(a) + riot.waitUntilDone(b);
}

console.log(`fib(${n}) = ${riot.waitUntilDone(riot.doWork(fib, n))}`);
