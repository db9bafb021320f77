// free-variables.js: workunits that refer to free variables (Riot's
// manual, section 3.4). The function given to riot.doWork is sent to a
// worker with the values of its free variables: masterRandomNumber, a local
// of run(), and x, the loop's own binding, are captured when each workunit
// is made; the worker's Math.random() runs on the worker.
//
//   riot-worker eval scripts/free-variables.js

function run() {
  const masterRandomNumber = Math.round(100 * Math.random());
  const runningWorkunits = [];
  for (let x = 0; x < 10; x++) {
    runningWorkunits.push(riot.doWork(() =>
      `Workunit #${x}: Master chose ${masterRandomNumber}, but we choose ${Math.round(100 * Math.random())}.`));
  }
  for (const workunit of runningWorkunits) {
    console.log(riot.waitUntilDone(workunit));
  }
}

run();
