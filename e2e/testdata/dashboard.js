// dashboard.js: the job of the dashboard's browser test (e2e/dashboard_test.go)
// and of its screenshots (scripts/dashboard-screenshots.sh):
//
//   riot-worker eval --tracker HOST:2355 --job NAME e2e/testdata/dashboard.js [N] [SECONDS]
//
// One workunit that fails with a TypeError, then N workunits (default 200)
// that take SECONDS each (default 0.05), waited for in order. A canceled
// workunit (from the dashboard) ends the wait for the rest quietly.

const n = Number(riot.args[0] || 200);
const seconds = Number(riot.args[1] || 0.05);

function parseRow(row) {
  const v = Number(row);
  if (Number.isNaN(v)) throw new TypeError(`row ${JSON.stringify(row)} is not a number`);
  return v;
}
riot.callWhenDone(riot.doWork(parseRow, 'three'), (isError, worker, result) => {
  console.log(`parseRow('three'): error? ${isError}: ${result}`);
});

const ids = [];
for (let i = 0; i < n; i++) {
  ids.push(riot.doWork((i, s) => {
    sleep(s);
    return i * i;
  }, i, seconds));
}
let done = 0;
let canceled = 0;
for (const id of ids) {
  try {
    riot.waitUntilDone(id);
    done++;
  } catch (e) {
    if (!(e instanceof riot.WorkunitError) || e.kind !== 'canceled') throw e;
    canceled++;
  }
}
console.log(`done ${done}, canceled ${canceled}`);
