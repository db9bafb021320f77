// low-level.js: Riot's lower-level client API (manual, section 4), with a
// job script acting as both the master that adds a workunit and the
// "worker" that takes it and completes it.
//
//   riot-worker eval --workers 0 scripts/low-level.js
//
// (With --workers 0 the embedded tracker has no workers of its own, so the
// workunit is surely taken by this script. Where a worker is connected, it
// takes the workunit first, and this script would wait for work for ever:
// it checks, and says so.)

const client = riot.currentClient();
console.log(`who am I: ${typeof client.whoAmI()}`);

const id = client.addWorkunit((a, b) => a * b, 6, 7);
const [status, worker] = client.workunitInfo(id);
if (status !== 'waiting') {
  throw new Error(`worker ${worker} took the workunit (now ${status}) before this script could: ` +
    'run the script where no worker is connected, as in riot-worker eval --workers 0 scripts/low-level.js');
}
console.log('info:', status); // waiting

const [key, work] = client.waitForWork();
console.log('took my own workunit:', key === id, work.kind);
const fnWork = /** @type {Extract<riot.Work, {kind: 'fn'}>} */ (work); // a function's, as added above
client.completeWorkunit(key, false, fnWork.fn(...fnWork.args));

const [, finished, , result] = client.waitForFinishedWorkunit(id);
console.log('finished:', finished, result);
client.callWithWorkunitInfo(id, (status, who, result, lastChange) =>
  console.log('info:', status, result, lastChange instanceof Date));
