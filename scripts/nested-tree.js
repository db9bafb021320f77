// nested-tree.js: a tree of workunits three levels deep. The root
// workunit splits a range in two children, each child splits its half in
// two grandchildren, which sum their quarter; every level reports where it
// ran. A child's failure reaches its parent as the WorkunitError a master
// gets, and the parent may catch it.
//
//   riot-worker eval scripts/nested-tree.js

// split is sent on by each level: a workunit sends on the functions it
// received (here, the function itself and sum).
function sum(lo, hi) {
  let s = 0;
  for (let i = lo; i < hi; i++) s += i;
  return s;
}

function split(lo, hi, depth) {
  if (depth === 2) {
    return { sum: sum(lo, hi), workers: [riot.worker.name] };
  }
  const mid = (lo + hi) >> 1;
  const parts = [riot.doWork(split, lo, mid, depth + 1), riot.doWork(split, mid, hi, depth + 1)].map(riot.waitUntilDone);
  return { sum: parts[0].sum + parts[1].sum, workers: [riot.worker.name, ...parts[0].workers, ...parts[1].workers] };
}

const tree = riot.waitUntilDone(riot.doWork(split, 0, 1000, 0));
console.log(`sum: ${tree.sum}, workunits: ${tree.workers.length}`);

// A child that throws: its parent catches the WorkunitError, names the
// child's error and rethrows its own.
function check(x) {
  if (x < 0) throw new RangeError(`${x} is negative`);
  return x;
}
function guarded(xs) {
  try {
    return riot.forWork(xs, check);
  } catch (e) {
    return `caught ${e.name}: ${e.cause.name}: ${e.cause.message}`;
  }
}
console.log(riot.waitUntilDone(riot.doWork(guarded, [1, -2, 3])));
